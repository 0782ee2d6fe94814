// The extractive model's answer from document chunks: sentences split and scored against the
// question, the one that answers it first (expected answer type present, a two-step question's
// bridge followed; yes/no and either-or questions decided from the evidence when it can be),
// quoted exactly with their chunk markers; the short answer; and the word count.
// Deterministic: ties broken by input order.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "reasoner/detail/answer_spans.hpp"
#include "reasoner/detail/question_analysis.hpp"
#include "reasoner/detail/question_intent.hpp"
#include "reasoner/reasoner.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner {

// The question's analysis (reasoner/detail/) under the names the writers use.
using detail::AnswerType;
using detail::question_intent;
using detail::QuestionIntent;

namespace {

using detail::valid_marker_id;
using text::lower;
using text::normalize;

}  // namespace

namespace {

struct Sentence {
    std::size_t chunk = 0;
    std::size_t order = 0;  // within its chunk
    std::string text;
    std::vector<std::string> stems;
    std::vector<std::string> words;         // lower-case, the positions spans count
    std::vector<detail::AnswerSpan> spans;  // typed answer candidates
    std::string padded_norm;                // normalised, with a space at either end
};

// True if the line starting at `i` is a Markdown ATX heading: up to three spaces, 1-6 '#',
// then a space or the end of the line.
bool heading_line_at(std::string_view s, std::size_t i) {
    std::size_t k = i;
    while (k < s.size() && k - i < 3 && s[k] == ' ') ++k;
    std::size_t hashes = 0;
    while (k < s.size() && s[k] == '#') ++k, ++hashes;
    if (hashes == 0 || hashes > 6) return false;
    return k == s.size() || s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r';
}

// Sentences of `s`: ends at . ! ? followed by a space and an upper-case letter, digit or quote,
// and at blank lines; "Mr." and single initials do not end one. A Markdown heading line ends the
// sentence before it and is not a sentence itself (a title, not a claim to quote).
std::vector<std::string> split_sentences(std::string_view s) {
    static const std::unordered_set<std::string_view> abbreviations{
        "mr",  "mrs", "ms",  "dr",  "st",   "jr",     "sr",   "vs", "etc",
        "inc", "ltd", "co",  "no",  "prof", "gen",    "col",  "lt", "sgt",
        "mt",  "ft",  "u.s", "e.g", "i.e",  "approx", "dept", "est"};
    std::vector<std::string> out;
    std::size_t start = 0;
    const auto push = [&](std::size_t end) {
        std::string_view piece = s.substr(start, end - start);
        while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.front())))
            piece.remove_prefix(1);
        while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.back())))
            piece.remove_suffix(1);
        if (!piece.empty()) out.emplace_back(piece);
        start = end;
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        if ((i == 0 || s[i - 1] == '\n') && heading_line_at(s, i)) {
            push(i);
            const auto eol = s.find('\n', i);
            i = eol == std::string_view::npos ? s.size() : eol;
            start = i;
            continue;
        }
        const char c = s[i];
        if (c == '\n' && i + 1 < s.size() && s[i + 1] == '\n') {
            push(i);
            continue;
        }
        if (c != '.' && c != '!' && c != '?') continue;
        std::size_t j = i + 1;
        while (j < s.size() && (s[j] == '"' || s[j] == '\'' || s[j] == ')')) ++j;
        if (j >= s.size()) continue;
        if (!std::isspace(static_cast<unsigned char>(s[j]))) continue;
        std::size_t k = j;
        while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
        if (k >= s.size()) continue;
        const unsigned char next = static_cast<unsigned char>(s[k]);
        if (!(std::isupper(next) || std::isdigit(next) || next == '"' || next >= 0x80)) continue;
        if (c == '.') {
            std::size_t w = i;
            while (w > 0 && (std::isalpha(static_cast<unsigned char>(s[w - 1])) || s[w - 1] == '.'))
                --w;
            const std::string word = lower(s.substr(w, i - w));
            if (word.size() == 1 && std::isupper(static_cast<unsigned char>(s[w])))
                continue;  // "J. Smith"
            if (abbreviations.contains(word)) continue;
        }
        push(j);
    }
    push(s.size());
    return out;
}

}  // namespace

namespace {

constexpr std::size_t kMaxSentences = 3;
constexpr std::size_t kNone = static_cast<std::size_t>(-1);
constexpr std::size_t kBridgeStarts = 5;  // best-matching sentences a bridge may start from
constexpr double kChainMargin = 0.05;     // how much more of the question a chain must cover

// A title without a trailing parenthetical, normalised: "Frozen (2013 film)" -> "frozen".
std::string base_title_norm(std::string_view title) {
    std::string t(title);
    const auto paren = t.find(" (");
    if (paren != std::string::npos && t.ends_with(")")) t.resize(paren);
    return normalize(t);
}

bool mentions(const std::string& padded_norm, const std::string& phrase_norm) {
    return !phrase_norm.empty() && padded_norm.find(" " + phrase_norm + " ") != std::string::npos;
}

// Everything the writer knows about the question and the sentences.
struct Material {
    std::vector<Sentence> sentences;
    std::vector<double> lexical;                       // the question-match score of each sentence
    std::vector<std::string> q_stems;                  // distinct, sorted
    std::unordered_map<std::string, double> q_weight;  // idf of each question stem
    double q_total = 0.0;
    std::set<std::string> q_words;       // the question's words, lower-case, and their stems
    std::set<std::string> entity_stems;  // stems of the entities the question names
    QuestionIntent intent;
};

double coverage(const Material& m, const std::set<std::string>& stems) {
    if (m.q_total <= 0.0) return 0.0;
    double matched = 0.0;
    for (const auto& w : m.q_stems)
        if (stems.contains(w)) matched += m.q_weight.at(w);
    return matched / m.q_total;
}

// The share of the question's relation words (its words outside the entities it names:
// "directed", "founded", "film") that `stems` hold.
double relation_coverage(const Material& m, const std::set<std::string>& stems) {
    double total = 0.0;
    double matched = 0.0;
    for (const auto& w : m.q_stems) {
        if (m.entity_stems.contains(w)) continue;
        total += m.q_weight.at(w);
        if (stems.contains(w)) matched += m.q_weight.at(w);
    }
    return total > 0.0 ? matched / total : 0.0;
}

// True when every content word of `span` is a word of the question: the question's own entity,
// not an answer.
bool in_question(const Material& m, std::string_view span) {
    const auto w = text::words(span);
    for (const auto& x : w) {
        if (text::is_stopword(x)) continue;
        if (!m.q_words.contains(x) && !m.q_words.contains(text::stem(x))) return false;
    }
    return true;
}

bool fits(const detail::AnswerSpan& span, AnswerType type) {
    if (span.modifier) return false;
    switch (type) {
        case AnswerType::kTime:
            return span.kind == detail::SpanKind::kTime;
        case AnswerType::kNumber:
            return span.kind == detail::SpanKind::kNumber;
        case AnswerType::kAgent:
        case AnswerType::kPlace:
        case AnswerType::kClass:
            return span.kind == detail::SpanKind::kName;
        case AnswerType::kAny:  // a plain "what": no type to look for
        case AnswerType::kYesNo:
            return false;
    }
    return false;
}

// Class nouns that name the same kind of thing: "the same band" is answered by "girl group X".
bool same_class(const std::string& word_stem, const std::string& class_stem) {
    if (word_stem == class_stem) return true;
    static const std::vector<std::set<std::string>> kinds{
        {"band", "group"}, {"film", "movie"}, {"company", "firm"}, {"town", "city"}};
    for (const auto& kind : kinds)
        if (kind.contains(word_stem) && kind.contains(class_stem)) return true;
    return false;
}

// True when the name ends in a word that makes it an organisation or a building, not a place:
// "Stony Brook University", "National Football League" do not answer "in what city".
bool organisation_name(std::string_view name) {
    static const std::unordered_set<std::string_view> heads{
        "university",  "college",    "school",      "academy",    "institute", "league",
        "association", "company",    "corporation", "inc",        "ltd",       "group",
        "club",        "team",       "party",       "foundation", "records",   "network",
        "restaurant",  "steakhouse", "hotel",       "airport",    "stadium",   "church"};
    const auto w = text::words(name);
    return !w.empty() && heads.contains(w.back());
}

// True when sentence `s` defines the name at its start as one of the class asked: "Navvulata
// (English: Joke) is a 1998 Telugu comedy film" for "which comedy". The class stem within a few
// words after the first "is a" / "was the" of the sentence's opening.
bool defines_as_class(const Sentence& s, const detail::AnswerSpan& span,
                      const std::string& class_stem) {
    if (class_stem.empty() || span.first != 0) return false;
    constexpr std::size_t kCopulaWithin = 8;  // words from the name's end to its "is"
    constexpr std::size_t kClassWithin = 6;   // words from "is" to the class noun
    for (std::size_t k = span.last + 1; k < s.words.size() && k <= span.last + kCopulaWithin; ++k) {
        const auto& w = s.words[k];
        if (w != "is" && w != "was" && w != "are" && w != "were") continue;
        // A definition: "is a …", "was the …"; not "was awarded the Medal".
        if (k + 1 >= s.words.size() ||
            (s.words[k + 1] != "a" && s.words[k + 1] != "an" && s.words[k + 1] != "the"))
            return false;
        for (std::size_t j = k + 1; j < s.words.size() && j <= k + kClassWithin; ++j)
            if (same_class(text::stem(s.words[j]), class_stem)) return true;
        return false;
    }
    return false;
}

// True when "by" comes just before the span, or before the few lower-case title words
// before it: "directed by Gopi Chand", "created by TV executive Reg Watson".
bool after_by(const Sentence& s, const detail::AnswerSpan& span) {
    if (span.before == "by") return true;
    constexpr std::size_t kTitleWords = 3;
    for (std::size_t back = 1; back <= kTitleWords + 1 && back <= span.first; ++back) {
        const auto& w = s.words[span.first - back];
        if (w == "by") return back > 1;
        if (text::is_stopword(w)) return false;
    }
    return false;
}

// The span of sentence `i` that best answers: of the expected type, not the question's own
// words, near the words it shares with the question; -1 score when there is none.
struct SpanChoice {
    double score = -1.0;
    std::string text;
    bool class_named = false;  // the span names the class a "which X" asks, or is defined as one
};

SpanChoice best_span(const Material& m, std::size_t i) {
    const auto& s = m.sentences[i];
    std::vector<std::size_t> matched;
    for (std::size_t k = 0; k < s.words.size(); ++k) {
        if (text::is_stopword(s.words[k])) continue;
        if (m.q_words.contains(s.words[k]) || m.q_words.contains(text::stem(s.words[k])))
            matched.push_back(k);
    }
    const bool death =
        m.q_words.contains("die") || m.q_words.contains("died") || m.q_words.contains("death");
    const std::string class_stem =
        m.intent.class_word.empty() ? std::string() : text::stem(m.intent.class_word);
    SpanChoice best;
    std::set<std::string> seen;
    for (const auto& span : s.spans) {
        if (!fits(span, m.intent.type) || in_question(m, span.text)) continue;
        // For "who", a name after "in" / "at" / "from" is a place.
        if (m.intent.type == AnswerType::kAgent &&
            (span.before == "in" || span.before == "at" || span.before == "from" ||
             span.before == "near" || span.before == "to"))
            continue;
        if (m.intent.type == AnswerType::kPlace && organisation_name(span.text)) continue;
        if (!seen.insert(normalize(span.text)).second) continue;
        double score = 1.0;
        // "NBA TV" of "NBA TV's NBA Inside Stuff": the thing asked is the name after, unless
        // who owns it is asked.
        if (span.owner && m.intent.type != AnswerType::kAgent) score -= 0.3;
        std::size_t distance = s.words.size();
        for (auto k : matched) {
            const std::size_t d =
                k < span.first ? span.first - k : (k > span.last ? k - span.last : 0);
            distance = std::min(distance, d);
        }
        score -= 0.02 * static_cast<double>(std::min<std::size_t>(distance, 20));
        // A span that repeats some of the question's words is less likely the answer.
        const auto span_words = text::words(span.text);
        std::size_t content = 0, shared = 0;
        for (const auto& w : span_words) {
            if (text::is_stopword(w)) continue;
            ++content;
            shared += (m.q_words.contains(w) || m.q_words.contains(text::stem(w))) ? 1 : 0;
        }
        if (content > 0) score -= 0.2 * static_cast<double>(shared) / static_cast<double>(content);
        const auto& before = span.before;
        if (m.intent.type == AnswerType::kAgent && after_by(s, span)) score += 0.2;
        if (m.intent.type == AnswerType::kPlace &&
            (before == "in" || before == "at" || before == "near" || before == "from"))
            score += 0.2;
        bool class_named = false;
        if (!class_stem.empty()) {
            // "Medal of Honor" for "what medal", "Senator Barnaby Joyce" for "which senator".
            for (const auto& w : span_words)
                if (text::stem(w) == class_stem) class_named = true;
            if (text::stem(before) == class_stem) class_named = true;  // also 'the song "…"'
            if (defines_as_class(s, span, class_stem)) class_named = true;
            if (class_named) score += 0.3;
        }
        // Of two candidates alike, the fuller: "Salt and Rain" over "Salt".
        score += 0.01 * static_cast<double>(std::min<std::size_t>(span.last - span.first, 5));
        // "(October 31, 1887 – April 5, 1975)": a death date is the second of the two.
        if (death && m.intent.type == AnswerType::kTime)
            score += 0.01 * static_cast<double>(span.first);
        if (score > best.score) best = SpanChoice{score, span.text, class_named};
    }
    return best;
}

// The sentences that speak of `entity`: those of the chunks it is the title of (first
// sentences first), else those that name it (at most three); and their stems.
struct Evidence {
    std::vector<std::size_t> sentences;
    std::set<std::string> stems;
    bool own_chunk = false;
};

Evidence evidence_for(const Material& m, const std::vector<TextChunk>& chunks,
                      std::string_view entity) {
    Evidence e;
    std::string name = normalize(entity);
    if (name.starts_with("the ")) name.erase(0, 4);
    if (name.empty()) return e;
    for (std::size_t i = 0; i < m.sentences.size(); ++i) {
        std::string title = base_title_norm(chunks[m.sentences[i].chunk].title);
        if (title.starts_with("the ")) title.erase(0, 4);
        if (title == name && m.sentences[i].order < 3) {
            e.sentences.push_back(i);
            e.own_chunk = true;
        }
    }
    if (e.sentences.empty()) {
        for (std::size_t i = 0; i < m.sentences.size() && e.sentences.size() < 3; ++i)
            if (mentions(m.sentences[i].padded_norm, name)) e.sentences.push_back(i);
    }
    for (auto i : e.sentences)
        e.stems.insert(m.sentences[i].stems.begin(), m.sentences[i].stems.end());
    return e;
}

// The first year written in the evidence (its first sentence first), 0 when none.
int first_year(const Material& m, const Evidence& e) {
    for (auto i : e.sentences) {
        for (const auto& span : m.sentences[i].spans) {
            if (span.kind != detail::SpanKind::kTime) continue;
            for (const auto& w : text::words(span.text)) {
                if (w.size() == 4 &&
                    std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; }))
                    return std::stoi(w);
            }
        }
    }
    return 0;
}

// Words of a comparison that no single document states ("larger", "taller"): not attributes.
bool comparative(std::string_view w) {
    static const std::unordered_set<std::string_view> words{
        "older",   "oldest",   "younger", "youngest", "larger",  "largest", "bigger",   "biggest",
        "smaller", "smallest", "taller",  "tallest",  "longer",  "longest", "higher",   "highest",
        "earlier", "earliest", "later",   "latest",   "first",   "last",    "newer",    "newest",
        "more",    "most",     "less",    "least",    "better",  "best",    "both",     "also",
        "same",    "two",      "one",     "either",   "neither", "other",   "different"};
    return words.contains(w);
}

// The question's content stems that say what is asked of the entities: not the entities' own
// words, not comparison words, not the question word.
std::vector<std::string> attribute_stems(std::string_view question,
                                         const std::vector<std::string>& entities,
                                         std::string_view class_word = {}) {
    std::set<std::string> entity_words{std::string(class_word)};
    for (const auto& e : entities)
        for (const auto& w : text::words(e)) entity_words.insert(w);
    std::vector<std::string> out;
    for (const auto& w : text::words(question)) {
        if (text::is_stopword(w) || comparative(w) || entity_words.contains(w)) continue;
        const auto st = text::stem(w);
        if (std::find(out.begin(), out.end(), st) == out.end()) out.push_back(st);
    }
    return out;
}

// The entities of an either-or question: "…, Mark King or Nick Hexum?" -> both names.
std::vector<std::string> choice_options(std::string_view question) {
    std::string q(question);
    while (!q.empty() && (q.back() == '?' || q.back() == ' ' || q.back() == '.')) q.pop_back();
    const auto or_at = q.rfind(" or ");
    if (or_at == std::string::npos) return {};
    std::string right = q.substr(or_at + 4);
    std::string left = q.substr(0, or_at);
    const auto comma = left.rfind(", ");
    if (comma != std::string::npos) {
        left = left.substr(comma + 2);
    } else {
        // No comma: the capitalised words just before "or" ("… first Arthur's Magazine or …").
        const auto words = detail::analyze_question(left).tokens;
        std::size_t k = words.size();
        while (k > 0 && (words[k - 1].capitalized || words[k - 1].all_caps ||
                         (k >= 2 && (words[k - 2].capitalized) && words[k - 1].stop &&
                          words[k - 1].lower != "is" && words[k - 1].lower != "was")))
            --k;
        if (k == words.size()) return {};
        std::string joined;
        for (std::size_t i = k; i < words.size(); ++i) {
            if (!joined.empty()) joined += ' ';
            joined += words[i].text;
            if (words[i].possessive) joined += "'s";
        }
        left = joined;
    }
    const auto strip_article = [](std::string s) {
        for (std::string_view a : {"the ", "The ", "a ", "an "})
            if (s.starts_with(a)) s.erase(0, a.size());
        return s;
    };
    left = strip_article(left);
    right = strip_article(right);
    if (left.empty() || right.empty() || text::words(left).size() > 8 ||
        text::words(right).size() > 8)
        return {};
    return {left, right};
}

// The question without the years and capitalised words between its "which" / "what" and a
// lower-case noun: "Which 1988 Telugu comedy produced by …" -> "Which comedy produced by …" (a
// year or a name there modifies the class asked, it is not the class). Empty when there are
// none.
std::string without_class_modifiers(std::string_view question) {
    std::vector<std::string_view> raw;
    for (std::size_t pos = 0; pos < question.size();) {
        while (pos < question.size() && question[pos] == ' ') ++pos;
        std::size_t end = pos;
        while (end < question.size() && question[end] != ' ') ++end;
        if (end > pos) raw.push_back(question.substr(pos, end - pos));
        pos = end;
    }
    std::size_t wh = raw.size();
    for (std::size_t k = 0; k < raw.size() && wh == raw.size(); ++k) {
        const auto w = lower(raw[k]);
        if (w == "which" || w == "what") wh = k;
    }
    const auto modifier = [](std::string_view w) {
        const auto c = static_cast<unsigned char>(w.front());
        const bool plain = std::all_of(w.begin(), w.end(), [](char x) {
            return std::isalnum(static_cast<unsigned char>(x)) || x == '-';
        });
        return plain && (std::isdigit(c) || std::isupper(c));
    };
    std::size_t j = wh + 1;
    while (j < raw.size() && modifier(raw[j])) ++j;
    if (wh == raw.size() || j == wh + 1 || j >= raw.size() ||
        !std::islower(static_cast<unsigned char>(raw[j].front())) ||
        text::is_stopword(lower(raw[j])))
        return {};
    std::string out;
    for (std::size_t k = 0; k < raw.size(); ++k) {
        if (k > wh && k < j) continue;
        if (!out.empty()) out += ' ';
        out += raw[k];
    }
    return out;
}

// The question as the document writer reads it: a yes/no question may follow a statement ("X
// has an OBE. Does Y also have one?"), and a long question that does not open with its question
// word asks what its last one asks ("…, Chiang Kai-shek, who died on which date?").
QuestionIntent document_intent(std::string_view question) {
    QuestionIntent intent = question_intent(question);
    if (intent.type == AnswerType::kYesNo) return intent;
    if (const auto plain = without_class_modifiers(question); !plain.empty()) {
        const auto asked = question_intent(plain);
        if (asked.type == AnswerType::kClass || asked.type == AnswerType::kTime ||
            asked.type == AnswerType::kPlace) {
            intent.type = asked.type;
            intent.class_word = asked.class_word;
        }
    }
    std::string_view q = question;
    while (!q.empty() && (q.back() == '?' || q.back() == ' ')) q.remove_suffix(1);
    const auto stop = q.rfind(". ");
    if (stop != std::string_view::npos) {
        auto last = question_intent(q.substr(stop + 2));
        if (last.type == AnswerType::kYesNo) return last;
    }
    static const std::unordered_set<std::string_view> wh{"who",   "whom", "whose", "what",
                                                         "which", "when", "where", "how"};
    const auto words = text::words(question);
    // "What happened …", "what caused …": a verb after "what" names no class.
    if (intent.type == AnswerType::kClass &&
        (intent.class_word.ends_with("ed") || intent.class_word.ends_with("ing"))) {
        intent.type = AnswerType::kAny;
        intent.class_word.clear();
    }
    if (words.empty() || wh.contains(words[0]) || (words.size() > 1 && wh.contains(words[1])))
        return intent;
    std::size_t last_wh = std::string_view::npos;
    text::for_each_word(question, [&](std::string_view w, std::size_t start) {
        if (wh.contains(w)) last_wh = start;
    });
    if (last_wh == std::string_view::npos) return intent;
    auto last = question_intent(question.substr(last_wh));
    return last.type == AnswerType::kAny ? intent : last;
}

// A decided yes/no or either-or question: the short answer and the sentences that decide it,
// the deciding one first.
struct Decision {
    std::string answer;
    std::vector<std::size_t> sentences;
};

// The option as its own document names it at its start, when that is a fuller form of it: the
// capitalised words before the first "(", "," or "is" / "was" of the document's first sentence
// ("Nicholas Lofton \"Nick\" Hexum (born 1970) is …" for "Nick Hexum"), holding every word of the
// option in order. An either-or question is answered with the option; the document about it names
// it in full. The option itself otherwise.
std::string full_name(const Material& m, const Evidence& e, const std::string& option) {
    constexpr std::size_t kMaxNameWords = 6;
    if (!e.own_chunk || e.sentences.empty() || m.sentences[e.sentences.front()].order != 0)
        return option;
    const std::string& text = m.sentences[e.sentences.front()].text;
    std::size_t end = text.size();
    for (std::string_view stop : {" (", ",", " is ", " was "}) end = std::min(end, text.find(stop));
    const std::string name = text.substr(0, end);
    // Articles aside: "The Quill Review" is no fuller a name than "Quill Review".
    const auto without_articles = [](std::vector<std::string> w) {
        std::erase_if(w, [](const std::string& x) { return x == "the" || x == "a" || x == "an"; });
        return w;
    };
    const auto name_words = without_articles(text::words(name));
    const auto option_words = without_articles(text::words(option));
    if (name_words.size() <= option_words.size() || name_words.size() > kMaxNameWords)
        return option;
    for (std::size_t k = 0; k < name.size(); ++k) {
        const bool starts = k == 0 || name[k - 1] == ' ' || name[k - 1] == '"';
        if (starts && std::isalpha(static_cast<unsigned char>(name[k])) &&
            !std::isupper(static_cast<unsigned char>(name[k])))
            return option;  // a lower-case word: a description, not a name
    }
    std::size_t matched = 0;  // the option's words, in order, among the name's
    for (const auto& w : name_words)
        if (matched < option_words.size() && w == option_words[matched]) ++matched;
    return matched == option_words.size() ? name : option;
}

// "Which is older, A or B?", "Which singer is American, A or B?": dates compared for older /
// first / younger / later, else the option whose own text holds the asked attributes.
std::optional<Decision> decide_choice(const Material& m, const std::vector<TextChunk>& chunks,
                                      std::string_view question) {
    const auto options = choice_options(question);
    if (options.size() != 2) return std::nullopt;
    const Evidence a = evidence_for(m, chunks, options[0]);
    const Evidence b = evidence_for(m, chunks, options[1]);
    if (a.sentences.empty() || b.sentences.empty()) return std::nullopt;
    int direction = 0;  // -1: the earlier date wins, +1: the later
    for (const auto& w : text::words(question)) {
        if (w == "older" || w == "oldest" || w == "first" || w == "earlier" || w == "earliest" ||
            w == "elder" || w == "before")
            direction = -1;
        if (w == "younger" || w == "youngest" || w == "later" || w == "latest" || w == "newer" ||
            w == "newest" || w == "recent" || w == "last")
            direction = 1;
    }
    if (direction != 0) {
        const int ya = first_year(m, a);
        const int yb = first_year(m, b);
        if (ya == 0 || yb == 0 || ya == yb) return std::nullopt;
        const bool first_wins = direction < 0 ? ya < yb : ya > yb;
        const auto& win = first_wins ? a : b;
        const auto& lose = first_wins ? b : a;
        return Decision{full_name(m, win, first_wins ? options[0] : options[1]),
                        {win.sentences.front(), lose.sentences.front()}};
    }
    // "Which plant is larger, A or B?": that both are plants is given, not asked.
    const auto attributes = attribute_stems(question, options, m.intent.class_word);
    std::size_t ca = 0, cb = 0;
    for (const auto& st : attributes) {
        ca += a.stems.contains(st) ? 1 : 0;
        cb += b.stems.contains(st) ? 1 : 0;
    }
    if (ca == cb) return std::nullopt;
    const bool first_wins = ca > cb;
    const auto& win = first_wins ? a : b;
    const auto& lose = first_wins ? b : a;
    return Decision{full_name(m, win, first_wins ? options[0] : options[1]),
                    {win.sentences.front(), lose.sentences.front()}};
}

// Name spans next to `class_word` in the sentence ("Jiangsu province", "the band Alphaville",
// "the State of Louisiana").
std::set<std::string> values_near(const Sentence& s, const std::string& class_stem) {
    std::set<std::string> out;
    for (std::size_t k = 0; k < s.words.size(); ++k) {
        if (!same_class(text::stem(s.words[k]), class_stem)) continue;
        for (const auto& span : s.spans) {
            if (span.kind != detail::SpanKind::kName) continue;
            const bool before = span.last + 1 == k;                        // "Jiangsu province"
            const bool after = span.first == k + 1 && !span.punct_before;  // "the band Alphaville"
            const bool of = span.first == k + 2 && k + 1 < s.words.size() &&
                            s.words[k + 1] == "of";  // "the province of Jiangsu"
            if (before || after || of) out.insert(normalize(span.text));
            if (span.first == k && k + 2 <= span.last && s.words[k + 1] == "of") {
                std::string rest;  // the name without the class word: "State of Louisiana"
                for (const auto& w : text::words(span.text)) {
                    if (same_class(text::stem(w), class_stem) || w == "of" || w == "the") continue;
                    rest += (rest.empty() ? "" : " ") + w;
                }
                if (!rest.empty()) out.insert(rest);
            }
        }
    }
    return out;
}

// "Are A and B both X?", "Does B also have one?", "Are A and B in the same state?": yes when
// every entity's own text holds what is asked, no when one holds it and another does not (or
// their values of "the same X" differ); nullopt otherwise.
std::optional<Decision> decide_yes_no(const Material& m, const std::vector<TextChunk>& chunks,
                                      std::string_view question) {
    const auto analysis = detail::analyze_question(question);
    std::vector<std::string> entities;
    std::vector<Evidence> evidence;
    for (const auto& c : analysis.candidates) {
        if (!c.entity) continue;
        Evidence e = evidence_for(m, chunks, c.text);
        if (!e.own_chunk) continue;
        bool repeat = false;
        for (const auto& other : evidence)
            if (other.sentences == e.sentences) repeat = true;
        if (repeat) continue;
        entities.push_back(c.text);
        evidence.push_back(std::move(e));
    }
    if (evidence.empty()) return std::nullopt;
    const auto words = text::words(question);
    const auto same = std::find(words.begin(), words.end(), "same");
    if (same != words.end() && same + 1 != words.end() && evidence.size() >= 2) {
        const std::string class_stem = text::stem(*(same + 1));
        std::vector<std::set<std::string>> values;
        for (const auto& e : evidence) {
            std::set<std::string> v;
            for (auto i : e.sentences) {
                auto near = values_near(m.sentences[i], class_stem);
                v.insert(near.begin(), near.end());
            }
            if (v.empty()) return std::nullopt;
            values.push_back(std::move(v));
        }
        bool shared = false;
        for (const auto& x : values[0])
            if (values[1].contains(x)) shared = true;
        return Decision{shared ? "yes" : "no",
                        {evidence[0].sentences.front(), evidence[1].sentences.front()}};
    }
    const auto attributes = attribute_stems(question, entities);
    std::set<std::string> informative;  // held by at least one entity's text
    for (const auto& st : attributes)
        for (const auto& e : evidence)
            if (e.stems.contains(st)) informative.insert(st);
    if (informative.empty()) return std::nullopt;
    for (std::size_t k = 0; k < evidence.size(); ++k) {
        for (const auto& st : informative) {
            if (evidence[k].stems.contains(st) || evidence.size() < 2) continue;
            // Entity k lacks what another has: no, its text first.
            std::vector<std::size_t> order{evidence[k].sentences.front()};
            for (std::size_t j = 0; j < evidence.size(); ++j)
                if (j != k) order.push_back(evidence[j].sentences.front());
            return Decision{"no", order};
        }
    }
    if (informative.size() < attributes.size() && evidence.size() < 2) return std::nullopt;
    std::vector<std::size_t> order;
    order.reserve(evidence.size());
    for (const auto& e : evidence) order.push_back(e.sentences.front());
    return Decision{"yes", order};
}

}  // namespace

namespace {

// The chunks' sentences, each with its stems, words, answer spans and normalised text; a chunk
// whose id no marker can cite is left out.
std::vector<Sentence> sentences_of(const std::vector<TextChunk>& chunks) {
    std::vector<Sentence> sentences;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        if (!valid_marker_id(chunks[c].id)) continue;
        const auto pieces = split_sentences(chunks[c].text);
        for (std::size_t k = 0; k < pieces.size(); ++k) {
            Sentence s{c, k, pieces[k], text::content_stems(pieces[k]), {}, {}, {}};
            s.words = detail::sentence_words(pieces[k]);
            s.spans = detail::answer_spans(pieces[k]);
            s.padded_norm = " " + normalize(pieces[k]) + " ";
            sentences.push_back(std::move(s));
        }
    }
    return sentences;
}

// What the question asks and its words: the intent, the stems of the entities it names, its
// words and their stems.
void read_question(Material& m, std::string_view question) {
    m.intent = document_intent(question);
    for (const auto& c : detail::analyze_question(question).candidates)
        if (c.entity)
            for (const auto& w : text::content_stems(c.text)) m.entity_stems.insert(w);
    for (const auto& w : text::words(question)) {
        m.q_words.insert(w);
        m.q_words.insert(text::stem(w));
    }
}

// The question's distinct stems, each weighted by its inverse document frequency over the
// candidate sentences.
void weigh_question_stems(Material& m, std::string_view question) {
    std::unordered_map<std::string, std::size_t> df;
    for (const auto& s : m.sentences) {
        std::set<std::string> unique(s.stems.begin(), s.stems.end());
        for (const auto& w : unique) ++df[w];
    }
    const double n = static_cast<double>(m.sentences.size());
    const auto idf = [&](const std::string& w) {
        const auto it = df.find(w);
        const double d = it == df.end() ? 0.0 : static_cast<double>(it->second);
        return std::log(1.0 + (n + 1.0) / (d + 0.5));
    };
    auto& q = m.q_stems;
    q = text::content_stems(question);
    std::sort(q.begin(), q.end());
    q.erase(std::unique(q.begin(), q.end()), q.end());
    // "In which year …", "how many …": the word naming the answer's type is not something a
    // sentence should match ("a year before" does not answer "which year").
    if ((m.intent.type == AnswerType::kTime || m.intent.type == AnswerType::kNumber) &&
        !m.intent.class_word.empty()) {
        const auto type_word = text::stem(m.intent.class_word);
        q.erase(std::remove(q.begin(), q.end(), type_word), q.end());
    }
    for (const auto& w : q) {
        m.q_weight[w] = idf(w);
        m.q_total += m.q_weight[w];
    }
}

// Each sentence's match to the question: its coverage of the question's stems, a little for the
// question's word pairs it holds, for its title's words, for opening its chunk, and for an
// earlier chunk.
std::vector<double> lexical_scores(const Material& m, const std::vector<TextChunk>& chunks,
                                   std::string_view question) {
    const auto& q = m.q_stems;
    std::set<std::pair<std::string, std::string>> q_bigrams;
    const auto qs = text::content_stems(question);
    for (std::size_t i = 0; i + 1 < qs.size(); ++i) q_bigrams.insert({qs[i], qs[i + 1]});
    std::vector<double> score(m.sentences.size(), 0.0);
    for (std::size_t i = 0; i < m.sentences.size(); ++i) {
        const auto& s = m.sentences[i];
        double bigrams = 0.0;
        for (std::size_t k = 0; k + 1 < s.stems.size(); ++k)
            if (q_bigrams.contains({s.stems[k], s.stems[k + 1]})) bigrams += 1.0;
        const auto title = text::content_stems(chunks[s.chunk].title);
        double title_hits = 0.0;
        for (const auto& w : title)
            if (std::binary_search(q.begin(), q.end(), w)) title_hits += 1.0;
        score[i] = coverage(m, std::set<std::string>(s.stems.begin(), s.stems.end())) +
                   0.05 * std::min(3.0, bigrams) + 0.03 * std::min(2.0, title_hits) +
                   (s.order == 0 ? 0.02 : 0.0) +
                   0.02 * (1.0 - static_cast<double>(s.chunk) / static_cast<double>(chunks.size()));
    }
    return score;
}

// False when `answer` is a third thing for an either-or question whose evidence did not decide
// it ("Which plant is larger, the Pterocarya or the Cotula?" is not answered "Cryptantha"): the
// answer is one of the two, and a guess between them is no answer. True for any other question.
bool names_an_option(const Material& m, const std::vector<TextChunk>& chunks,
                     std::string_view question, std::string_view answer) {
    if (answer.empty() || m.intent.type == AnswerType::kYesNo) return true;
    const auto options = choice_options(question);
    if (options.size() != 2) return true;
    if (evidence_for(m, chunks, options[0]).sentences.empty() ||
        evidence_for(m, chunks, options[1]).sentences.empty())
        return true;  // not two things the documents speak of: not an either-or
    const auto said = " " + normalize(answer) + " ";
    for (const auto& option : options)
        if (mentions(said, normalize(option))) return true;
    return false;
}

// The sentences that must come first, in order, and the short answer they give.
struct Lead {
    std::vector<std::size_t> sentences;
    std::string answer;
    bool decided = false;  // a yes/no or either-or question the evidence decided
};

// A yes/no or either-or question the evidence decides; nullopt otherwise.
std::optional<Lead> decided_lead(const Material& m, const std::vector<TextChunk>& chunks,
                                 std::string_view question) {
    auto d = m.intent.type == AnswerType::kYesNo ? decide_yes_no(m, chunks, question)
                                                 : decide_choice(m, chunks, question);
    if (!d) return std::nullopt;
    return Lead{d->sentences, d->answer, true};
}

// One of the best-matching sentences, where a bridge to another chunk may start.
struct BridgeStart {
    std::size_t sentence;
    std::vector<std::string> bridges;  // names it writes, titles of chunks it names
    std::set<std::string> stems;
    double cover = 0.0;
    double relation_cover = 0.0;
};

// The best-matching few sentences (`order`: best first) and what they bridge to: the names of two
// words or more they write ("Grey Lantern"; not "American", "Texas") that are not the question's
// own, and the titles of the chunks they name.
std::vector<BridgeStart> bridge_starts(const Material& m, const std::vector<TextChunk>& chunks,
                                       const std::vector<std::size_t>& order) {
    std::vector<BridgeStart> steps;
    for (std::size_t k = 0; k < std::min<std::size_t>(kBridgeStarts, order.size()); ++k) {
        BridgeStart step{order[k], {}, {}, 0.0, 0.0};
        const auto& t = m.sentences[order[k]];
        for (const auto& span : t.spans)
            if (span.kind == detail::SpanKind::kName && !span.modifier && span.last > span.first &&
                !in_question(m, span.text))
                step.bridges.push_back(normalize(span.text));
        for (const auto& c : chunks) {
            const auto title = base_title_norm(c.title);
            if (title.size() >= 3 && mentions(t.padded_norm, title)) step.bridges.push_back(title);
        }
        step.stems.insert(t.stems.begin(), t.stems.end());
        step.cover = coverage(m, step.stems);
        step.relation_cover = relation_coverage(m, step.stems);
        steps.push_back(std::move(step));
    }
    return steps;
}

// Sentence `i` reached over a bridge: the best chained score of a bridge start of another chunk
// that names its title or a name it writes, and that start (kNone: no chain beats `score`). A
// chain counts only when it covers more of the question than any one sentence does (a question
// one sentence answers needs no bridge) and its second sentence adds a word of what is asked,
// not only of a name the question holds ("Greyhollow Light" adds nothing to "Saltspire Light").
std::pair<double, std::size_t> bridged_score(const Material& m,
                                             const std::vector<TextChunk>& chunks,
                                             const std::vector<BridgeStart>& steps,
                                             double best_single, std::size_t i) {
    const auto& s = m.sentences[i];
    double a = m.lexical[i];
    std::size_t from = kNone;
    const auto title = base_title_norm(chunks[s.chunk].title);
    for (const auto& step : steps) {
        if (m.sentences[step.sentence].chunk == s.chunk) continue;
        bool bridged = false;
        for (const auto& b : step.bridges)
            if (b == title || mentions(s.padded_norm, b)) bridged = true;
        if (!bridged) continue;
        std::set<std::string> joint = step.stems;
        joint.insert(s.stems.begin(), s.stems.end());
        const double joint_cover = coverage(m, joint);
        const double chained = m.lexical[step.sentence] + (joint_cover - step.cover) + 0.05;
        if (joint_cover > best_single + kChainMargin &&
            relation_coverage(m, joint) > step.relation_cover && chained > a) {
            a = chained;
            from = step.sentence;
        }
    }
    return {a, from};
}

// The best-matching sentences, and the sentences they bridge to: those of another chunk whose
// title they name or that write a name of theirs, and that add question words they lack ("… shot
// in Leland, such as Maximum Overdrive" -> "Maximum Overdrive is … directed by Stephen King").
// The answer is the one with the most of the question, together with the step before it, and a
// span of the expected type.
Lead best_answer_lead(const Material& m, const std::vector<TextChunk>& chunks) {
    const auto& sentences = m.sentences;
    const auto& score = m.lexical;
    std::vector<std::size_t> order(sentences.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return score[x] > score[y]; });
    double best_single = 0.0;
    for (const auto& s : sentences)
        best_single = std::max(best_single,
                               coverage(m, std::set<std::string>(s.stems.begin(), s.stems.end())));
    const std::vector<BridgeStart> steps = bridge_starts(m, chunks, order);
    const double best_lexical = score[order.front()];
    const auto relevance = [&](double a) {
        return best_lexical > 0.0 ? std::min(1.0, a / best_lexical) : 1.0;
    };
    std::size_t answer = order.front();
    double answer_score = -1.0;
    std::size_t answer_bridged_from = kNone;
    std::string answer_span;
    for (std::size_t i = 0; i < sentences.size(); ++i) {
        auto [a, from] = bridged_score(m, chunks, steps, best_single, i);
        const SpanChoice choice = best_span(m, i);
        const double fit = choice.score;
        // The expected type counts in proportion to how well the sentence matches, so a
        // stray date in an unrelated sentence does not lead; a name of the very class asked
        // ("the Medal of Honor" for "what medal") counts more than any name.
        if (fit > 0.0 && m.intent.type != AnswerType::kAny)
            a += (0.25 + 0.15 * std::min(1.5, fit) + (choice.class_named ? 0.1 : 0.0)) *
                 relevance(a);
        if (a > answer_score) {
            answer_score = a;
            answer = i;
            answer_bridged_from = from;
            answer_span = choice.text;
        }
    }
    Lead lead;
    lead.sentences.push_back(answer);
    if (answer_bridged_from != kNone) lead.sentences.push_back(answer_bridged_from);
    lead.answer = answer_span;
    return lead;
}

// "Awarded what medal?": when the lead's short answer is a name that is not of the class asked
// and another quoted sentence names one ("the Medal of Honor"), that one answers; the sentences
// stay as picked, the answer's sentence is the one it is quoted from.
void prefer_class_named(const Material& m, const std::vector<std::size_t>& picked, Lead& lead) {
    if (m.intent.type != AnswerType::kClass || m.intent.class_word.empty() || lead.answer.empty() ||
        lead.sentences.empty() || best_span(m, lead.sentences.front()).class_named)
        return;
    for (auto i : picked) {
        const SpanChoice choice = best_span(m, i);
        if (choice.score > 0.0 && choice.class_named) {
            lead.answer = choice.text;
            lead.sentences = {i};
            return;
        }
    }
}

// True when `candidate` repeats a picked sentence: the same normalised text, or more than 80 %
// of their stems shared.
bool repeats(const Material& m, const std::vector<std::size_t>& picked, std::size_t candidate) {
    const auto& sentences = m.sentences;
    const std::set<std::string> b(sentences[candidate].stems.begin(),
                                  sentences[candidate].stems.end());
    const auto norm = normalize(sentences[candidate].text);
    for (auto p : picked) {
        if (normalize(sentences[p].text) == norm) return true;
        const std::set<std::string> a(sentences[p].stems.begin(), sentences[p].stems.end());
        std::size_t common = 0;
        for (const auto& w : b) common += a.contains(w) ? 1 : 0;
        const std::size_t all = a.size() + b.size() - common;
        if (all > 0 && static_cast<double>(common) / static_cast<double>(all) > 0.8) return true;
    }
    return false;
}

// The lead sentences, then the best of the rest, at most kMaxSentences: after each pick,
// sentences of the same chunk count a little less (so a comparison question gets both documents)
// and near-repeats are skipped.
std::vector<std::size_t> pick_sentences(const Material& m, const std::vector<std::size_t>& lead) {
    const auto& sentences = m.sentences;
    std::vector<bool> used(sentences.size(), false);
    std::vector<std::size_t> picked;
    std::vector<double> current = m.lexical;
    const auto take = [&](std::size_t best) {
        used[best] = true;
        picked.push_back(best);
        for (std::size_t i = 0; i < sentences.size(); ++i)
            if (!used[i] && sentences[i].chunk == sentences[best].chunk) current[i] *= 0.85;
    };
    for (auto i : lead) {
        if (picked.size() >= kMaxSentences || used[i]) continue;
        if (repeats(m, picked, i)) {
            used[i] = true;
            continue;
        }
        take(i);
    }
    const double first_score = m.lexical[picked.front()];
    while (picked.size() < kMaxSentences) {
        std::size_t best = sentences.size();
        for (std::size_t i = 0; i < sentences.size(); ++i) {
            if (used[i]) continue;
            if (best == sentences.size() || current[i] > current[best]) best = i;
        }
        if (best == sentences.size()) break;
        used[best] = true;
        if (current[best] <= 0.05 || current[best] < 0.35 * first_score) break;
        if (repeats(m, picked, best)) continue;
        take(best);
    }
    return picked;
}

// The picked sentences quoted, each with its chunk's marker (a decided yes/no leads with "Yes:"
// or "No:"), and the chunks the short answer rests on: the chunk of the sentence it is a span
// of; a decided question's, the chunks of the deciding sentences.
ComposedAnswer quote_sentences(const Material& m, const std::vector<TextChunk>& chunks,
                               const Lead& lead, const std::vector<std::size_t>& picked) {
    ComposedAnswer out;
    out.answer = lead.answer;
    for (std::size_t k = 0; k < picked.size(); ++k) {
        const auto& s = m.sentences[picked[k]];
        std::string line = s.text + " [" + chunks[s.chunk].id + "]";
        if (k == 0 && (out.answer == "yes" || out.answer == "no") &&
            m.intent.type == AnswerType::kYesNo)
            line.insert(0, out.answer == "yes" ? "Yes: " : "No: ");
        out.sentences.push_back(std::move(line));
    }
    if (!out.answer.empty() && !lead.decided) {
        // The chunk of the sentence the short answer is quoted from (the first picked, unless a
        // later one named the class asked).
        out.answer_ids.push_back(chunks[m.sentences[lead.sentences.front()].chunk].id);
    } else if (!out.answer.empty()) {
        for (std::size_t k = 0; k < std::min(lead.sentences.size(), picked.size()); ++k) {
            const auto& id = chunks[m.sentences[picked[k]].chunk].id;
            if (std::find(out.answer_ids.begin(), out.answer_ids.end(), id) == out.answer_ids.end())
                out.answer_ids.push_back(id);
        }
    }
    return out;
}

}  // namespace

ComposedAnswer ExtractiveModel::answer_from_chunks(std::string_view question,
                                                   const std::vector<TextChunk>& chunks) const {
    Material m;
    m.sentences = sentences_of(chunks);
    if (m.sentences.empty())
        return {{}, {}, {"The documents given hold no text for this question."}};
    read_question(m, question);
    weigh_question_stems(m, question);
    m.lexical = lexical_scores(m, chunks, question);
    // A decision always names the sentences it rests on.
    std::optional<Lead> decided = decided_lead(m, chunks, question);
    Lead lead = decided ? std::move(*decided) : best_answer_lead(m, chunks);
    if (!decided && !names_an_option(m, chunks, question, lead.answer)) lead.answer.clear();
    const auto picked = pick_sentences(m, lead.sentences);
    if (!decided) prefer_class_named(m, picked, lead);
    return quote_sentences(m, chunks, lead, picked);
}

std::size_t count_words(std::string_view s) {
    // std::isspace of the "C" locale (glassbox never sets another), without the call; a word
    // starts at each non-space byte after a space (or at the start), counted without a branch.
    const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    if (s.empty()) return 0;
    std::size_t count = space(s[0]) ? 0 : 1;
    for (std::size_t i = 1; i < s.size(); ++i)
        count += static_cast<std::size_t>(space(s[i - 1]) && !space(s[i]));
    return count;
}

}  // namespace glassbox::reasoner
