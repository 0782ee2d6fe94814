// What a question asks for, from its words: the expected answer type, the named entities and
// the chain of relations.
#include "reasoner/detail/question_intent.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "reasoner/detail/relation_cues.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner::detail {

namespace {

const std::unordered_set<std::string_view>& auxiliaries() {
    static const std::unordered_set<std::string_view> words{
        "is",   "are", "was",  "were",  "do",     "does",  "did", "can",   "could", "has",
        "have", "had", "will", "would", "should", "shall", "may", "might", "must",  "am"};
    return words;
}

// Words after "which" / "what" that are not the class asked for.
const std::unordered_set<std::string_view>& not_a_class() {
    static const std::unordered_set<std::string_view> words{
        "the", "a",   "an",    "of",   "one",   "ones", "kind", "type", "sort",
        "is",  "are", "was",   "were", "do",    "does", "did",  "has",  "have",
        "had", "can", "could", "will", "would", "in",   "on",   "at",   "to",
        "for", "by",  "from",  "with", "other", "two",  "both"};
    return words;
}

const std::unordered_set<std::string_view>& time_classes() {
    static const std::unordered_set<std::string_view> words{
        "year", "years", "date", "day", "month", "decade", "century", "time", "era", "season"};
    return words;
}

const std::unordered_set<std::string_view>& place_classes() {
    static const std::unordered_set<std::string_view> words{
        "city",   "country", "town",   "place",    "state",   "region",   "continent",
        "nation", "county",  "island", "province", "village", "location", "area"};
    return words;
}

// True when the phrase after a question word ends before word k: the end, an auxiliary or a
// stopword.
bool ends_phrase(const std::vector<std::string>& w, std::size_t k) {
    return k >= w.size() || auxiliaries().contains(w[k]) || text::is_stopword(w[k]);
}

// Of two content words, the first is the noun: a plural first word (modifiers are singular:
// "ships built in …"), or a participle second word ("… built", "… living").
bool head_first(const std::vector<std::string>& w, std::size_t k) {
    const auto& a = w[k];
    const auto& b = w[k + 1];
    return (a.size() > 3 && a.ends_with('s') && !a.ends_with("ss")) || b.ends_with("ed") ||
           b.ends_with("ing");
}

// The class word after "which"/"what" at position i: the first content word, skipping articles
// and adjectives we cannot tell apart only when a noun follows directly. Of two content words
// the second is the noun when the phrase ends there ("which soccer club is …" → club); otherwise
// the first ("which team Lionel_MESSI plays for" → team), unless head_first. Empty: none.
std::string class_after(const std::vector<std::string>& w, std::size_t i) {
    for (std::size_t k = i + 1; k < w.size() && k <= i + 3; ++k) {
        if (not_a_class().contains(w[k])) {
            if (w[k] == "the" || w[k] == "a" || w[k] == "an" || w[k] == "kind" || w[k] == "type" ||
                w[k] == "sort" || w[k] == "of" || w[k] == "some")
                continue;
            return {};
        }
        if (!ends_phrase(w, k + 1) && k + 1 < w.size() && !not_a_class().contains(w[k + 1]) &&
            ends_phrase(w, k + 2) && !head_first(w, k))
            return w[k + 1];
        return w[k];
    }
    return {};
}

// The answer a class word asks for: a time ("year"), a place ("city"), else one of the class.
void set_class(QuestionIntent& intent, const std::string& c) {
    intent.class_word = c;
    if (time_classes().contains(c)) {
        intent.type = AnswerType::kTime;
    } else if (place_classes().contains(c)) {
        intent.type = AnswerType::kPlace;
    } else {
        intent.type = AnswerType::kClass;
    }
}

// Word i read as a question word: true (and the intent set) when it is one.
bool classify_question_word(QuestionIntent& intent, const std::vector<std::string>& w,
                            std::size_t i) {
    const std::string& q = w[i];
    intent.wh = q;
    if (q == "who" || q == "whom" || q == "whose") {
        intent.type = AnswerType::kAgent;
        return true;
    }
    if (q == "when") {
        intent.type = AnswerType::kTime;
        return true;
    }
    if (q == "where") {
        intent.type = AnswerType::kPlace;
        return true;
    }
    if (q == "how") {
        if (i + 1 < w.size()) {
            static const std::unordered_set<std::string_view> amounts{
                "many",  "much", "old",   "long", "tall", "far",  "big",
                "large", "high", "heavy", "wide", "deep", "often"};
            if (amounts.contains(w[i + 1])) {
                intent.type = AnswerType::kNumber;
                intent.class_word = w[i + 1];
                return true;
            }
        }
        intent.type = AnswerType::kAny;
        return true;
    }
    if (q == "which" || q == "what") {
        const std::string c = class_after(w, i);
        if (c.empty()) {
            intent.type = AnswerType::kAny;
            return true;
        }
        set_class(intent, c);
        return true;
    }
    return false;
}

QuestionIntent expected_answer(std::string_view question) {
    const std::vector<std::string> w = text::words(question);
    QuestionIntent intent;
    if (w.empty()) return intent;
    // An instruction for an answer of a class: "name a soccer club in France", "list the
    // ships built in 1898", "give me a city on the coast".
    static const std::unordered_set<std::string_view> requests{"name", "list", "give", "mention"};
    if (requests.contains(w.front())) {
        std::size_t at = 0;
        if (w.size() > 1 && w[1] == "me") at = 1;
        if (const std::string c = class_after(w, at); !c.empty()) {
            set_class(intent, c);
            return intent;
        }
    }
    // "Is X's father a man or a woman?" asks which of the alternatives, not yes or no.
    if (auxiliaries().contains(w.front())) {
        if (std::find(w.begin(), w.end(), "or") == w.end()) intent.type = AnswerType::kYesNo;
        return intent;
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
        // "In which year …", "… is in which country", "The founder of X was who?"
        if (classify_question_word(intent, w, i)) return intent;
    }
    intent.wh.clear();
    return intent;
}

// A plural English noun as written: "children", "people", or an -s plural that is not "-ss",
// "-us" or "-is" ("players", "professions", not "address", "status", "analysis").
bool plural_noun(std::string_view w) {
    if (w == "children" || w == "people" || w == "men" || w == "women" || w == "wives") return true;
    return w.size() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") &&
           !w.ends_with("is");
}

// Whether the question asks for every answer, and the noun to count them with (list, list_noun).
void read_list_cues(QuestionIntent& intent, std::string_view question,
                    const QuestionRelations& relations) {
    const std::vector<std::string> w = text::words(question);
    if (w.empty() || intent.type == AnswerType::kYesNo || intent.type == AnswerType::kNumber)
        return;
    static const std::unordered_set<std::string_view> plural_verbs{"are", "were", "have"};
    const bool instruction = w.front() == "list" ||
                             std::find(w.begin(), w.end(), "all") != w.end() ||
                             std::find(w.begin(), w.end(), "every") != w.end();
    bool plural_verb = false;
    for (std::size_t i = 0; i + 1 < w.size(); ++i)
        if (w[i] == intent.wh && plural_verbs.contains(w[i + 1])) plural_verb = true;
    std::string noun;
    if (plural_noun(intent.class_word)) noun = intent.class_word;
    // The relation asked about is the chain's last (outermost) one: "the nationality of X's
    // children" asks for one nationality.
    if (noun.empty() && !relations.chain.empty())
        for (std::size_t k : relations.mentions[relations.chain.back()].words)
            if (plural_noun(relations.words[k].surface)) noun = relations.words[k].surface;
    intent.list = instruction || plural_verb || !noun.empty();
    if (noun.empty()) noun = intent.type == AnswerType::kAgent ? "people" : "things";
    intent.list_noun = noun;
}

}  // namespace

QuestionIntent question_intent(std::string_view question) {
    return question_intent(question, detail::analyze_question(question));
}

QuestionIntent question_intent(std::string_view question,
                               const detail::QuestionAnalysis& analysis) {
    QuestionIntent intent = expected_answer(question);
    for (const auto& c : analysis.candidates)
        if (c.entity) intent.entities.push_back(c.text);
    const auto relations = question_relations(analysis);
    for (auto m : relations.chain) intent.chain.push_back(relations.mentions[m].key);
    read_list_cues(intent, question, relations);
    return intent;
}

std::shared_ptr<const AnalysedQuestion> analysed_question(std::string_view question) {
    // A handful of questions per thread: a worker thread answers the steps of the few questions
    // in flight at once, interleaved. Replaced round the ring, oldest first.
    constexpr std::size_t kRemembered = 8;
    struct Remembered {
        std::string question;
        std::shared_ptr<const AnalysedQuestion> analysed;
    };
    thread_local std::array<Remembered, kRemembered> ring;
    thread_local std::size_t next = 0;
    for (const auto& r : ring)
        if (r.analysed && r.question == question) return r.analysed;
    auto analysed = std::make_shared<AnalysedQuestion>();
    analysed->analysis = detail::analyze_question(question);
    analysed->intent = question_intent(question, analysed->analysis);
    analysed->relations = question_relations(analysed->analysis);
    auto& slot = ring[next];
    next = (next + 1) % kRemembered;
    slot.question.assign(question);
    slot.analysed = analysed;
    return analysed;
}

namespace {

// looks_like_time and looks_like_number of a value given as its text::words.
bool words_look_like_time(const std::vector<std::string>& w) {
    if (w.empty() || w.size() > 4) return false;
    static const std::unordered_set<std::string_view> months{
        "january", "february",  "march",   "april",    "may",      "june", "july",
        "august",  "september", "october", "november", "december", "jan",  "feb",
        "mar",     "apr",       "jun",     "jul",      "aug",      "sep",  "sept",
        "oct",     "nov",       "dec",     "bc",       "bce",      "ad",   "ce"};
    bool year = false;
    for (const auto& word : w) {
        const bool digits =
            std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
        const bool decade =
            word.size() == 5 && word.back() == 's' &&  // "1890s"
            std::all_of(word.begin(), word.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
        if ((digits && word.size() >= 3 && word.size() <= 4) || decade) {
            year = true;
        } else if (!(digits && word.size() <= 2) && !months.contains(word)) {
            return false;
        }
    }
    return year;
}

bool words_look_like_number(const std::vector<std::string>& w) {
    if (w.empty() || w.size() > 4) return false;
    static const std::unordered_set<std::string_view> numerals{
        "one",   "two",   "three",   "four",     "five",    "six",     "seven",
        "eight", "nine",  "ten",     "eleven",   "twelve",  "twenty",  "thirty",
        "forty", "fifty", "hundred", "thousand", "million", "billion", "dozen"};
    const auto& first = w.front();
    const bool digits =
        std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; });
    return digits || numerals.contains(first);
}

}  // namespace

bool looks_like_time(std::string_view value) { return words_look_like_time(text::words(value)); }

bool looks_like_number(std::string_view value) {
    return words_look_like_number(text::words(value));
}

// The label's words are split once for both tests (called per node of every edge set).
bool answer_type_mismatch(const QuestionIntent& intent, std::string_view label) {
    switch (intent.type) {
        case AnswerType::kClass: {
            // "which number does X wear", "what age": a number is the answer.
            static const std::unordered_set<std::string_view> counted{
                "number", "age",   "amount", "size",       "score", "rank",
                "jersey", "shirt", "height", "population", "total", "count"};
            if (counted.contains(intent.class_word)) return !looks_like_number(label);
            const auto w = text::words(label);
            return words_look_like_time(w) || words_look_like_number(w);
        }
        case AnswerType::kAgent:
        case AnswerType::kPlace: {
            const auto w = text::words(label);
            return words_look_like_time(w) || words_look_like_number(w);
        }
        case AnswerType::kTime:
            return !looks_like_time(label);
        case AnswerType::kNumber:
            return !looks_like_number(label);
        case AnswerType::kAny:
        case AnswerType::kYesNo:
            return false;
    }
    return false;
}

namespace {

// The chain of the mentions: outwards from the first named entity (a number is not one): those
// after it left to right, then those before it right to left (as written when none is named).
std::vector<std::size_t> relation_chain(const detail::QuestionAnalysis& a,
                                        const std::vector<RelationMention>& mentions) {
    std::size_t entity = a.tokens.size();
    for (const auto& t : a.tokens) {
        if (t.in_entity && !t.number) {
            entity = t.index;
            break;
        }
    }
    std::vector<std::size_t> after;
    std::vector<std::size_t> before;
    for (std::size_t m = 0; m < mentions.size(); ++m) {
        if (mentions[m].appositive) continue;
        (mentions[m].position > entity ? after : before).push_back(m);
    }
    const auto by_position = [&](std::size_t x, std::size_t y) {
        return mentions[x].position < mentions[y].position;
    };
    std::stable_sort(after.begin(), after.end(), by_position);
    std::stable_sort(before.begin(), before.end(), by_position);
    std::vector<std::size_t> chain = after;
    if (entity == a.tokens.size()) {
        chain.insert(chain.end(), before.begin(), before.end());  // no entity: as written
    } else {
        chain.insert(chain.end(), before.rbegin(), before.rend());
    }
    return chain;
}

}  // namespace

QuestionRelations question_relations(const detail::QuestionAnalysis& a) {
    QuestionRelations out;
    std::size_t segment = 0;
    std::map<std::pair<std::size_t, std::string>, std::size_t> mention_index;
    // The last relation word's segment and key, and whether only "and" and articles came since:
    // "the wives and husbands of X", "the mother and father of X" ask one relation, not two.
    std::size_t last_segment = 0;
    std::string last_key;
    bool coordinated = false;
    bool previous_was_relation = false;
    for (const auto& t : a.tokens) {
        const std::size_t words_before = out.words.size();
        // "or" joins alternatives of one relation ("a man or a woman"), not two relations.
        const bool separator = t.lower == "of" || t.lower == "and";
        if (separator) ++segment;
        if (t.lower == "and" && previous_was_relation) {
            coordinated = true;
        } else if (coordinated && t.lower != "the" && t.lower != "a" && t.lower != "an" &&
                   (t.in_entity || t.number || relation_cues(t.lower).empty())) {
            coordinated = false;
        }
        if (!t.in_entity && !t.number) {
            const auto& token_cues = relation_cues(t.lower);
            // Question words are stopwords, but "where", "when", "why" name a relation.
            if (!(t.stop && token_cues.empty())) {
                for (const auto& w : text::words(t.text)) {
                    if (text::is_stopword(w) && relation_cues(w).empty()) continue;
                    RelationWord r;
                    r.surface = w;
                    r.stem = text::stem(w);
                    if (r.stem.size() >= kTrigramStemMin) r.stem_trigrams = text::trigrams(r.stem);
                    r.cues = relation_cues(w);
                    r.weight = t.appositive ? 0.3 : 1.0;
                    std::string key = r.cues.empty() ? r.stem : std::string(r.cues.front());
                    // A type word beside an entity ("the club FC_Porto", "Forward position")
                    // is that entity's own mention: it neither merges with nor stands in for
                    // the clause's relation words.
                    std::size_t where = segment;
                    if (coordinated && key == last_key) where = last_segment;
                    if (t.appositive) {
                        key.insert(0, "type:");
                        where = std::numeric_limits<std::size_t>::max() - t.index;
                    }
                    auto [it, inserted] =
                        mention_index.emplace(std::pair{where, key}, out.mentions.size());
                    if (inserted) out.mentions.push_back({key, {}, 0.0, t.index, t.appositive});
                    auto& m = out.mentions[it->second];
                    if (!t.appositive) {
                        last_segment = where;
                        last_key = key;
                        coordinated = false;
                    }
                    m.words.push_back(out.words.size());
                    m.weight = std::max(m.weight, r.weight);
                    out.words.push_back(std::move(r));
                }
            }
        }
        previous_was_relation = out.words.size() > words_before && !t.appositive;
        if (t.break_after) ++segment;
    }
    for (const auto& m : out.mentions) out.total_weight += m.weight;

    out.chain = relation_chain(a, out.mentions);
    return out;
}

}  // namespace glassbox::reasoner::detail
