// Typed answer candidates in a sentence: capitalised names, quoted titles, dates, numbers.
#include "reasoner/detail/answer_spans.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner::detail {

namespace {

struct Word {
    std::string text;  // punctuation stripped
    std::string lower;
    bool punct_before = false;  // "(" or a quote before it
    bool punct_after = false;   // , ; : . ) or a quote after it: a name does not go on past it
    bool possessive = false;    // written with "'s": "NBA TV's"
    std::size_t offset = 0;     // where it starts in the sentence (its punctuation included)
};

bool strip_front(std::string& s, bool& stripped) {
    for (std::string_view p : {"\xE2\x80\x9C", "\xE2\x80\x98"}) {
        if (s.starts_with(p)) {
            s.erase(0, p.size());
            stripped = true;
            return true;
        }
    }
    if (!s.empty() && std::string_view("\"'([{*_").find(s.front()) != std::string_view::npos) {
        s.erase(0, 1);
        stripped = true;
        return true;
    }
    return false;
}

bool strip_back(std::string& s, bool& stripped, bool& possessive) {
    for (std::string_view p : {"\xE2\x80\x9D", "\xE2\x80\x99", "\xE2\x80\xA6"}) {
        if (s.size() > p.size() && s.ends_with(p)) {
            s.resize(s.size() - p.size());
            stripped = true;
            return true;
        }
    }
    if (s.size() > 1 && s.ends_with("'s")) {  // a possessive ends a name: "NBA TV's"
        s.resize(s.size() - 2);
        stripped = true;
        possessive = true;
        return true;
    }
    if (!s.empty() && std::string_view("\"',;:.!?)]}*_").find(s.back()) != std::string_view::npos) {
        // "U.S." and initials ("J.") keep their dot.
        if (s.back() == '.' && s.size() <= 2) return false;
        s.pop_back();
        stripped = true;
        return true;
    }
    return false;
}

// The whitespace-separated pieces of `s`, as written.
std::vector<std::string> split_words_raw(std::string_view s) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < s.size()) {
        while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
        std::size_t end = pos;
        while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end]))) ++end;
        if (end > pos) out.emplace_back(s.substr(pos, end - pos));
        pos = end;
    }
    return out;
}

std::vector<Word> split_words(std::string_view sentence) {
    std::vector<Word> out;
    std::size_t pos = 0;
    while (pos < sentence.size()) {
        while (pos < sentence.size() && std::isspace(static_cast<unsigned char>(sentence[pos])))
            ++pos;
        std::size_t end = pos;
        while (end < sentence.size() && !std::isspace(static_cast<unsigned char>(sentence[end])))
            ++end;
        if (end == pos) break;
        Word w;
        w.offset = pos;
        w.text = std::string(sentence.substr(pos, end - pos));
        pos = end;
        while (strip_front(w.text, w.punct_before)) {
        }
        while (strip_back(w.text, w.punct_after, w.possessive)) {
        }
        if (w.text.empty()) {
            if (!out.empty()) out.back().punct_after = true;
            continue;
        }
        w.lower = text::lower(w.text);
        out.push_back(std::move(w));
    }
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_month(std::string_view w) {
    static const std::unordered_set<std::string_view> months{
        "january",   "february", "march",    "april",    "may",  "june", "july", "august",
        "september", "october",  "november", "december", "jan",  "feb",  "mar",  "apr",
        "jun",       "jul",      "aug",      "sep",      "sept", "oct",  "nov",  "dec"};
    return months.contains(w);
}

bool is_year(std::string_view w) {
    if (w.size() == 5 && w.back() == 's') w.remove_suffix(1);  // "1970s"
    if (!all_digits(w) || w.size() != 4) return false;
    return w.front() == '1' || (w.front() == '2' && w[1] == '0');
}

bool is_day(std::string_view w) {
    return all_digits(w) && w.size() <= 2 && std::stoi(std::string(w)) >= 1 &&
           std::stoi(std::string(w)) <= 31;
}

bool is_ordinal(std::string_view w) {
    if (w.size() < 3) return false;
    const auto suffix = w.substr(w.size() - 2);
    return all_digits(w.substr(0, w.size() - 2)) &&
           (suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th");
}

bool is_count_word(std::string_view w) {
    static const std::unordered_set<std::string_view> words{
        "one",      "two",     "three",   "four",    "five",   "six",    "seven",
        "eight",    "nine",    "ten",     "eleven",  "twelve", "twenty", "thirty",
        "forty",    "fifty",   "sixty",   "seventy", "eighty", "ninety", "hundred",
        "thousand", "million", "billion", "dozen",   "once",   "twice",  "thrice"};
    return words.contains(w);
}

bool is_scale_word(std::string_view w) {
    return w == "hundred" || w == "thousand" || w == "million" || w == "billion";
}

bool is_number(std::string_view w) {
    bool digit = false;
    for (char c : w) {
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c != ',' && c != '.')
            return false;
    }
    return digit;
}

bool capitalised(const Word& w) {
    const unsigned char c = static_cast<unsigned char>(w.text.front());
    return (c >= 'A' && c <= 'Z');
}

// Lower-case words that may join two capitalised ones inside a name: "Medal of Honor".
bool name_connector(std::string_view w) {
    static const std::unordered_set<std::string_view> words{
        "of", "de", "von", "van", "der", "den", "da", "del", "di", "du", "la", "le", "the", "&"};
    return words.contains(w);
}

std::string join(const std::vector<Word>& words, std::size_t first, std::size_t last) {
    std::string out;
    for (std::size_t i = first; i <= last; ++i) {
        if (!out.empty()) out += ' ';
        out += words[i].text;
    }
    return out;
}

// True when every letter of `w` is upper case and it has two or more: "TV", "NFL".
bool acronym(std::string_view w) {
    std::size_t letters = 0;
    for (const char c : w) {
        if (std::islower(static_cast<unsigned char>(c))) return false;
        letters += std::isupper(static_cast<unsigned char>(c)) ? 1 : 0;
    }
    return letters >= 2;
}

// A name span that reads as an adjective or a verb, not an answer: a nationality before a
// lower-case word ("American actor"), an acronym before one ("TV executive Reg Watson", "NFL
// team"), a capitalised verb form opening the sentence ("Producing 46 tornadoes"), a month alone
// ("every November").
bool reads_as_modifier(const std::vector<Word>& words, std::size_t first, std::size_t last) {
    const auto& end = words[last].lower;
    const bool next_lower = last + 1 < words.size() && !words[last].punct_after &&
                            !capitalised(words[last + 1]) &&
                            !text::is_stopword(words[last + 1].lower);
    const auto ends = [&](std::string_view suffix) {
        return end.size() > suffix.size() + 2 && end.ends_with(suffix);
    };
    bool modifier = false;
    if (next_lower && (ends("an") || ends("ese") || ends("ish") || ends("ic") || ends("ine")))
        modifier = true;
    if (next_lower && first == last && acronym(words[last].text)) modifier = true;
    if (first == 0 && first == last && (ends("ing") || ends("ed") || ends("ly"))) modifier = true;
    if (first == last && is_month(end)) modifier = true;
    return modifier;
}

// The spans found so far in one sentence, and the words they hold (a word is in one span).
struct SpanSet {
    const std::vector<Word>& words;
    std::vector<AnswerSpan> out;
    std::vector<bool> used;

    explicit SpanSet(const std::vector<Word>& w) : words(w), used(w.size(), false) {}

    void add(std::size_t first, std::size_t last, SpanKind kind) {
        AnswerSpan span{join(words, first, last),
                        first,
                        last,
                        kind,
                        first > 0 ? words[first - 1].lower : std::string(),
                        words[first].punct_before || (first > 0 && words[first - 1].punct_after),
                        false,
                        false};
        if (kind == SpanKind::kName) {
            span.modifier = reads_as_modifier(words, first, last);
            span.owner = words[last].possessive && last + 1 < words.size() &&
                         capitalised(words[last + 1]) && !text::is_stopword(words[last + 1].lower);
        }
        out.push_back(std::move(span));
        for (std::size_t i = first; i <= last; ++i) used[i] = true;
    }
};

// Dates and years: "April 5, 1975", "5 April 1975", "July 1980", "1984", "1970s", and
// centuries: "19th century".
void add_times(SpanSet& spans) {
    const auto& words = spans.words;
    for (std::size_t i = 0; i < words.size(); ++i) {
        const auto& w = words[i].lower;
        if (is_ordinal(w) && i + 1 < words.size() && words[i + 1].lower == "century") {
            spans.add(i, i + 1, SpanKind::kTime);
            ++i;
            continue;
        }
        if (!is_year(w)) continue;
        std::size_t first = i;
        // "12 May 1890" and "May 12 1890", then "May 1890".
        if (i >= 2 && ((is_day(words[i - 1].lower) && is_month(words[i - 2].lower)) ||
                       (is_month(words[i - 1].lower) && is_day(words[i - 2].lower)))) {
            first = i - 2;
        } else if (i >= 1 && is_month(words[i - 1].lower)) {
            first = i - 1;
        }
        while (first < i && spans.used[first]) ++first;
        spans.add(first, i, SpanKind::kTime);
    }
}

// Numbers and count words, with a scale word after them: "2.5 million", "twice".
void add_numbers(SpanSet& spans) {
    const auto& words = spans.words;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (spans.used[i]) continue;
        const auto& w = words[i].lower;
        if (!is_number(w) && !is_count_word(w)) continue;
        if (w == "one" && i + 1 < words.size() && words[i + 1].lower == "of") continue;
        std::size_t last = i;
        while (last + 1 < words.size() && !spans.used[last + 1] && !words[last].punct_after &&
               is_scale_word(words[last + 1].lower))
            ++last;
        spans.add(i, last, SpanKind::kNumber);
        i = last;
    }
}

// The last word of the run of capitalised words starting at `i`: up to two connectors between
// capitalised words ("Medal of Honor"), never past punctuation or a word already in a span.
std::size_t name_run_end(const SpanSet& spans, std::size_t i) {
    const auto& words = spans.words;
    std::size_t last = i;
    while (last + 1 < words.size() && !words[last].punct_after) {
        const std::size_t next = last + 1;
        if (spans.used[next] || words[next].punct_before) break;
        if (capitalised(words[next])) {
            last = next;
            continue;
        }
        std::size_t after = next;
        while (after < words.size() && after - next < 2 && name_connector(words[after].lower) &&
               !words[after].punct_after)
            ++after;
        if (after > next && after < words.size() && !spans.used[after] &&
            capitalised(words[after]) && !words[after].punct_before) {
            last = after;
            continue;
        }
        break;
    }
    return last;
}

// Runs of capitalised words; a stopword or a preposition does not start one ("The", "In", "He",
// "Near Marrow Island" → Marrow Island).
void add_names(SpanSet& spans) {
    static const std::unordered_set<std::string_view> prepositions{
        "near",  "since",      "outside", "inside",  "beyond", "across",  "behind", "amid",
        "upon",  "throughout", "besides", "despite", "toward", "towards", "along",  "around",
        "below", "beneath",    "beside",  "between", "off",    "onto",    "past",   "via"};
    const auto& words = spans.words;
    for (std::size_t i = 0; i < words.size();) {
        if (spans.used[i] || !capitalised(words[i]) || text::is_stopword(words[i].lower) ||
            prepositions.contains(words[i].lower)) {
            ++i;
            continue;
        }
        const std::size_t last = name_run_end(spans, i);
        spans.add(i, last, SpanKind::kName);
        i = last + 1;
    }
}

// Quoted titles, as a name even when written in lower case: "Falling Away from Me". At most ten
// words; they may overlap other spans.
void add_quoted_titles(SpanSet& spans, std::string_view sentence) {
    const auto& words = spans.words;
    for (const auto& [open, close] : {std::pair<std::string_view, std::string_view>{"\"", "\""},
                                      {"\xE2\x80\x9C", "\xE2\x80\x9D"}}) {
        std::size_t from = 0;
        while (true) {
            const std::size_t start = sentence.find(open, from);
            if (start == std::string_view::npos) break;
            const std::size_t stop = sentence.find(close, start + open.size());
            if (stop == std::string_view::npos) break;
            // Single spaces inside: a short answer is one line.
            std::string inner;
            for (const auto& w :
                 split_words_raw(sentence.substr(start + open.size(), stop - start - open.size())))
                inner += (inner.empty() ? "" : " ") + w;
            while (!inner.empty() &&
                   std::string_view(",. ").find(inner.back()) != std::string_view::npos)
                inner.pop_back();
            const auto inner_words = text::words(inner);
            if (!inner_words.empty() && inner_words.size() <= 10) {
                // Its word position: the number of words that start before the quote.
                const auto at = std::lower_bound(
                    words.begin(), words.end(), start,
                    [](const Word& w, std::size_t offset) { return w.offset < offset; });
                const std::size_t first = static_cast<std::size_t>(at - words.begin());
                const std::size_t last = first + split_words(inner).size() - 1;
                spans.out.push_back(
                    {inner, first, last, SpanKind::kName,
                     first > 0 && first - 1 < words.size() ? words[first - 1].lower : std::string(),
                     true, false});
            }
            from = stop + close.size();
        }
    }
}

}  // namespace

std::vector<std::string> sentence_words(std::string_view sentence) {
    std::vector<std::string> out;
    for (auto& w : split_words(sentence)) out.push_back(std::move(w.lower));
    return out;
}

// Times first, then numbers, then names, each kind taking only words no earlier span holds;
// quoted titles last, over any.
std::vector<AnswerSpan> answer_spans(std::string_view sentence) {
    const auto words = split_words(sentence);
    SpanSet spans(words);
    add_times(spans);
    add_numbers(spans);
    add_names(spans);
    add_quoted_titles(spans, sentence);
    std::stable_sort(spans.out.begin(), spans.out.end(),
                     [](const AnswerSpan& a, const AnswerSpan& b) { return a.first < b.first; });
    return std::move(spans.out);
}

}  // namespace glassbox::reasoner::detail
