// The extractive model's question analysis: tokens, entity mentions and concepts
// (extract_concepts). Deterministic: ties broken by input order.
#include "reasoner/detail/question_analysis.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "reasoner/detail/question_intent.hpp"
#include "reasoner/detail/relation_cues.hpp"
#include "reasoner/reasoner.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner {

namespace detail {

namespace {

using text::lower;
using text::normalize;

bool strip_possessive(std::string& s) {
    for (std::string_view suffix :
         {std::string_view("'s"), std::string_view("\xE2\x80\x99s"), std::string_view("'S")}) {
        if (s.size() > suffix.size() && s.ends_with(suffix)) {
            s.resize(s.size() - suffix.size());
            return true;
        }
    }
    if (s.size() > 1 && (s.back() == '\'')) {  // "players'"
        s.pop_back();
        return true;
    }
    return false;
}

bool punctuation_byte(std::string_view s, std::size_t i, bool leading) {
    const char c = s[i];
    if (leading) return std::string_view("\"'([{<*").find(c) != std::string_view::npos;
    return std::string_view("\"'?!.,;:)]}>*").find(c) != std::string_view::npos;
}

// Curly quotes and other 3-byte punctuation (U+2018/2019/201C/201D, U+2026) at either end.
bool strip_unicode_punct_front(std::string& s) {
    for (std::string_view p : {"\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99"}) {
        if (s.starts_with(p)) {
            s.erase(0, p.size());
            return true;
        }
    }
    return false;
}
bool strip_unicode_punct_back(std::string& s) {
    for (std::string_view p :
         {"\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99", "\xE2\x80\xA6"}) {
        if (s.ends_with(p)) {
            s.resize(s.size() - p.size());
            return true;
        }
    }
    return false;
}

const std::unordered_set<std::string_view>& connectors() {
    static const std::unordered_set<std::string_view> set{
        "of", "de", "the", "and", "von", "van", "der", "den",  "da", "del",  "di",
        "du", "la", "le",  "y",   "des", "for", "on",  "upon", "&",  "from", "to"};
    return set;
}

// Nouns that name a type when written next to an entity: "the club Chelsea_FC".
const std::unordered_set<std::string_view>& type_nouns() {
    static const std::unordered_set<std::string_view> set{
        "position", "club",    "team",     "player",     "country",      "city",        "town",
        "company",  "band",    "film",     "movie",      "album",        "song",        "book",
        "novel",    "river",   "mountain", "university", "school",       "family",      "province",
        "state",    "county",  "region",   "soccer",     "football",     "singer",      "actor",
        "actress",  "writer",  "author",   "magazine",   "newspaper",    "show",        "series",
        "game",     "village", "island",   "lake",       "organization", "organisation"};
    return set;
}

// Punctuation before a word: ASCII and Unicode quotes, brackets and the like.
void strip_leading_punct(std::string& piece) {
    bool changed = true;
    while (changed && !piece.empty()) {
        changed = false;
        if (punctuation_byte(piece, 0, true)) {
            piece.erase(0, 1);
            changed = true;
        } else if (strip_unicode_punct_front(piece)) {
            changed = true;
        }
    }
}

// What stripping a word's end found.
struct WordEnd {
    bool possessive = false;      // a possessive 's (removed)
    bool trailing_break = false;  // punctuation other than a quote: the phrase ends here
    bool sentence_end = false;    // . ? or !
};

// Punctuation and a possessive after a word. An initial ("E. B. White") keeps its dot, "f(x)" its
// closing parenthesis, "1._FC_Nuernberg" its inner dot (only a final one is punctuation).
WordEnd strip_trailing_punct(std::string& piece) {
    WordEnd end;
    bool changed = true;
    while (changed && !piece.empty()) {
        changed = false;
        const char last = piece.back();
        if (last == '.' && piece.size() == 2 && is_ascii_upper(piece.front())) break;
        if (last == ')' && piece.find('(') != std::string::npos) break;
        if (punctuation_byte(piece, piece.size() - 1, false)) {
            if (last == '.' || last == '?' || last == '!') end.sentence_end = true;
            if (last != '\'' && last != '"') end.trailing_break = true;
            piece.pop_back();
            changed = true;
        } else if (strip_unicode_punct_back(piece)) {
            changed = true;
        } else if (!end.possessive && strip_possessive(piece)) {
            end.possessive = true;
            changed = true;
        }
    }
    return end;
}

// A token of the word `piece` (punctuation stripped): its case and kind.
Token make_token(const std::string& piece, std::size_t index, bool sentence_initial,
                 const WordEnd& end) {
    Token t;
    t.text = piece;
    t.lower = lower(piece);
    t.index = index;
    t.possessive = end.possessive;
    t.sentence_initial = sentence_initial;
    t.break_after = end.trailing_break || end.possessive;
    t.punct_after = end.trailing_break;
    t.underscore = piece.find('_') != std::string::npos;
    t.capitalized = is_ascii_upper(piece.front());
    std::size_t letters = 0;
    bool lower_seen = false;
    bool digit_seen = false;
    bool other_seen = false;
    for (char c : piece) {
        if (is_ascii_upper(c))
            ++letters;
        else if (is_ascii_lower(c))
            lower_seen = true;
        else if (c >= '0' && c <= '9')
            digit_seen = true;
        else if (c != '.' && c != ',' && c != '-')
            other_seen = true;
    }
    t.all_caps = letters >= 2 && !lower_seen;
    t.number = digit_seen && letters == 0 && !lower_seen && !other_seen;
    t.stop = text::is_stopword(t.lower);
    return t;
}

std::vector<Token> tokenize_question(std::string_view question) {
    std::vector<Token> tokens;
    bool next_initial = true;
    std::size_t pos = 0;
    while (pos < question.size()) {
        while (pos < question.size() && std::isspace(static_cast<unsigned char>(question[pos])))
            ++pos;
        if (pos >= question.size()) break;
        std::size_t end = pos;
        while (end < question.size() && !std::isspace(static_cast<unsigned char>(question[end])))
            ++end;
        std::string piece(question.substr(pos, end - pos));
        pos = end;

        if (piece == "'s" || piece == "\xE2\x80\x99s" || piece == "'") {
            if (!tokens.empty()) {
                tokens.back().possessive = true;
                tokens.back().break_after = true;
            }
            continue;
        }
        strip_leading_punct(piece);
        const WordEnd word_end = strip_trailing_punct(piece);
        if (piece.empty()) {
            // Punctuation alone: it ends the phrase (and maybe the sentence) before it.
            if (!tokens.empty()) {
                tokens.back().break_after = true;
                tokens.back().punct_after = true;
            }
            if (word_end.sentence_end) next_initial = true;
            continue;
        }
        tokens.push_back(make_token(piece, tokens.size(), next_initial, word_end));
        next_initial = word_end.sentence_end;
    }
    return tokens;
}

void add_candidate(std::vector<Candidate>& out, std::string text, int score, std::size_t position,
                   bool entity) {
    if (normalize(text).empty()) return;
    out.push_back({std::move(text), score, position, entity});
}

std::string join_tokens(const std::vector<Token>& tokens, std::size_t begin, std::size_t end) {
    std::string out;
    for (std::size_t i = begin; i < end; ++i) {
        if (!out.empty()) out += ' ';
        out += tokens[i].text;
    }
    return out;
}

// Quoted strings, as written.
void add_quoted(std::vector<Candidate>& found, std::string_view question) {
    for (const auto& [open, close] : {std::pair<std::string_view, std::string_view>{"\"", "\""},
                                      {"\xE2\x80\x9C", "\xE2\x80\x9D"}}) {
        std::size_t from = 0;
        while (true) {
            const std::size_t start = question.find(open, from);
            if (start == std::string_view::npos) break;
            const std::size_t stop = question.find(close, start + open.size());
            if (stop == std::string_view::npos) break;
            std::string inner(question.substr(start + open.size(), stop - start - open.size()));
            if (!inner.empty() && inner.size() <= 200) {
                std::replace(inner.begin(), inner.end(), '_', ' ');
                add_candidate(found, inner, 95, start, true);
            }
            from = stop + close.size();
        }
    }
}

// Underscore-joined names: "Cruz_Azul_FC" -> "Cruz Azul FC".
void add_underscored(std::vector<Candidate>& found, std::vector<Token>& tokens) {
    for (auto& t : tokens) {
        if (!t.underscore) continue;
        std::string name = t.text;
        std::replace(name.begin(), name.end(), '_', ' ');
        add_candidate(found, name, 100, t.index, true);
        t.in_entity = true;
    }
}

// Where the capitalised span starting at token `i` ends (one past its last token): capitalised
// and all-caps words, numbers after the first, and up to two connectors between capitalised
// words ("Bank of America", "Welcome to the Show"); "Arthur's Magazine" goes on past the
// possessive, "Henry's wife" ends there.
std::size_t capitalised_span_end(const std::vector<Token>& tokens, std::size_t i) {
    std::size_t end = i + 1;
    while (end < tokens.size() && !tokens[end - 1].punct_after) {
        const Token& t = tokens[end];
        if (t.underscore) break;
        if (tokens[end - 1].possessive && !(t.capitalized || t.all_caps)) break;
        if (t.capitalized || t.all_caps || (t.number && end > i)) {
            ++end;
            continue;
        }
        std::size_t after = end;
        while (after < tokens.size() && after - end < 2 &&
               connectors().contains(tokens[after].lower) && !tokens[after].break_after)
            ++after;
        if (after > end && after < tokens.size() &&
            (tokens[after].capitalized || tokens[after].all_caps) && !tokens[after].underscore) {
            end = after + 1;
            continue;
        }
        break;
    }
    return end;
}

// How salient the capitalised span [i, end) is as an entity: 90 two words or more, 85 an
// all-caps word or a capital inside the sentence, 60 a capital at the start that is no stopword
// or relation word ("Paris is ..." may be a name), else 0 (no entity).
int capitalised_span_score(const std::vector<Token>& tokens, std::size_t i, std::size_t end) {
    if (end - i >= 2) return 90;
    if (tokens[i].all_caps) return 85;
    if (!tokens[i].sentence_initial) return 85;
    if (!tokens[i].stop && relation_cues(tokens[i].lower).empty()) return 60;
    return 0;
}

// Capitalised spans ("New England Revolution", "Arthur's Magazine") and all-caps words.
void add_capitalised_spans(std::vector<Candidate>& found, std::vector<Token>& tokens) {
    const auto starts = [&](const Token& t) {
        return !t.underscore && !t.in_entity && (t.capitalized || t.all_caps) &&
               !(t.sentence_initial && t.stop);
    };
    for (std::size_t i = 0; i < tokens.size();) {
        if (!starts(tokens[i])) {
            ++i;
            continue;
        }
        std::size_t end = capitalised_span_end(tokens, i);
        // "Mark King and Nick Hexum": two names. The whole span stays as a weaker
        // candidate for titles like "In Love and War".
        for (std::size_t k = i + 1; k + 1 < end; ++k) {
            if (tokens[k].lower == "and" || tokens[k].lower == "or") {
                add_candidate(found, join_tokens(tokens, i, end), 75, i, true);
                end = k;  // the left part here; the right part starts its own span
                break;
            }
        }
        const int score = capitalised_span_score(tokens, i, end);
        if (score > 0) {
            // A possessive inside the span: the span as written and its owner alone.
            std::string as_written;
            for (std::size_t k = i; k < end; ++k) {
                if (!as_written.empty()) as_written += ' ';
                as_written += tokens[k].text;
                if (tokens[k].possessive && k + 1 < end) as_written += "'s";
            }
            add_candidate(found, as_written, score, i, true);
            for (std::size_t k = i; k + 1 < end; ++k) {
                if (tokens[k].possessive)
                    add_candidate(found, join_tokens(tokens, i, k + 1), score - 2, i, true);
            }
            for (std::size_t k = i; k < end; ++k) tokens[k].in_entity = true;
        }
        i = end;
    }
}

// Possessive owners written in lower case ("khufu 's children"), then numbers.
void add_owners_and_numbers(std::vector<Candidate>& found, std::vector<Token>& tokens) {
    for (auto& t : tokens) {
        if (t.possessive && !t.in_entity && !t.stop && !t.number &&
            relation_cues(t.lower).empty()) {
            add_candidate(found, t.text, 80, t.index, true);
            t.in_entity = true;
        }
    }
    for (auto& t : tokens) {
        if (t.number && !t.in_entity) {
            add_candidate(found, t.text, 70, t.index, false);
            t.in_entity = true;
        }
    }
}

// Type words next to an entity ("the soccer team Cruz_Azul_FC", "Forward position").
void mark_appositives(std::vector<Token>& tokens) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (!tokens[i].in_entity) continue;
        for (std::size_t k = i; k > 0; --k) {
            Token& before = tokens[k - 1];
            if (before.in_entity || before.stop || before.break_after || before.possessive) break;
            before.appositive = true;
        }
        if (i + 1 < tokens.size() && !tokens[i].break_after) {
            Token& after = tokens[i + 1];
            if (!after.in_entity && type_nouns().contains(after.lower)) after.appositive = true;
        }
    }
}

// Content-word phrases (two to four words) and words outside the entities.
void add_content_words(std::vector<Candidate>& found, const std::vector<Token>& tokens) {
    const auto content = [&](const Token& t) { return !t.in_entity && !t.stop && !t.number; };
    for (std::size_t i = 0; i < tokens.size();) {
        if (!content(tokens[i])) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;
        while (end < tokens.size() && !tokens[end - 1].break_after && content(tokens[end])) ++end;
        const std::size_t length = end - i;
        if (length >= 2 && length <= 4) {
            add_candidate(found, join_tokens(tokens, i, end), 50 + 5 * static_cast<int>(length), i,
                          false);
        }
        for (std::size_t k = i; k < end; ++k) {
            const bool relation = !relation_cues(tokens[k].lower).empty();
            const int score =
                (length == 1 ? 55 : 40) + (relation ? 3 : 0) - (tokens[k].appositive ? 10 : 0);
            add_candidate(found, tokens[k].text, score, k, false);
        }
        i = end;
    }
}

// The candidates most salient first (then in question order), each normalised text once.
std::vector<Candidate> most_salient_first(std::vector<Candidate> found) {
    std::stable_sort(found.begin(), found.end(), [](const Candidate& x, const Candidate& y) {
        if (x.score != y.score) return x.score > y.score;
        return x.position < y.position;
    });
    std::vector<Candidate> out;
    std::set<std::string> seen;
    for (auto& c : found) {
        if (seen.insert(normalize(c.text)).second) out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

// Entity mentions first, each kind marking its tokens so that later kinds skip them: quoted,
// underscore-joined, capitalised, lower-case owners, numbers; then the content words.
QuestionAnalysis analyze_question(std::string_view question) {
    QuestionAnalysis a;
    a.tokens = tokenize_question(question);
    std::vector<Candidate> found;
    add_quoted(found, question);
    add_underscored(found, a.tokens);
    add_capitalised_spans(found, a.tokens);
    add_owners_and_numbers(found, a.tokens);
    mark_appositives(a.tokens);
    add_content_words(found, a.tokens);
    a.candidates = most_salient_first(std::move(found));
    return a;
}

}  // namespace detail

std::vector<std::string> ExtractiveModel::extract_concepts(std::string_view question,
                                                           std::size_t limit) const {
    const auto analysed = detail::analysed_question(question);
    std::vector<std::string> out;
    for (const auto& c : analysed->analysis.candidates) {
        if (out.size() >= limit) break;
        out.push_back(c.text);
    }
    return out;
}

}  // namespace glassbox::reasoner
