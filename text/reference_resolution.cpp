// The reference rule: find the reference, pick the previous turn's entity, rewrite the question.
#include "text/reference_resolution.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "base/ascii.hpp"

namespace glassbox::text {

// Named, not anonymous: the library is built as one unity file, where another file's anonymous
// helpers (a Word, a stem) would meet these.
namespace reference_rule {

struct Word {
    std::string text;  // as written
    std::string lower;
    std::size_t begin = 0;
    std::size_t end = 0;  // one past the last byte
};

bool word_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || c == '_' || c == '-' || u >= 0x80;
}

std::vector<Word> words_of(std::string_view text) {
    std::vector<Word> out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (!word_char(text[i])) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < text.size() && word_char(text[j])) ++j;
        const std::string_view w = text.substr(i, j - i);
        out.push_back({std::string(w), base::ascii_lower(w), i, j});
        i = j;
    }
    return out;
}

template <std::size_t N>
bool one_of(const std::string& word, const std::array<std::string_view, N>& list) {
    return std::find(list.begin(), list.end(), word) != list.end();
}

constexpr std::array<std::string_view, 6> kPersonal = {"he", "she", "they", "him", "them", "her"};
constexpr std::array<std::string_view, 3> kPossessive = {"his", "their", "its"};
constexpr std::array<std::string_view, 10> kQuestionWords = {
    "who", "whom", "whose", "what", "which", "where", "when", "why", "how", "is"};
// Words after which "that" is no relative pronoun: prepositions and forms of be / do / have.
constexpr std::array<std::string_view, 24> kBeforeDemonstrative = {
    "in", "of",  "about", "for", "to",   "by",  "from", "with", "on",  "at",   "did",   "does",
    "do", "was", "is",    "are", "were", "has", "have", "had",  "and", "into", "after", "before"};
// Words that follow "her" as an object, not as a possessive determiner.
constexpr std::array<std::string_view, 11> kNotNouns = {"in",   "of",  "to", "by", "for", "from",
                                                        "with", "and", "or", "at", "on"};
constexpr std::array<std::string_view, 4> kYesNo = {"yes", "no", "true", "false"};

bool verb_like(const std::string& w) { return w.size() > 3 && w.ends_with("ed"); }

// The reference of `words`: [first, last] word indices, whether it is possessive, and its noun.
struct Reference {
    std::size_t first = 0;
    std::size_t last = 0;
    bool possessive = false;
    bool personal = false;
    std::string noun;
};

std::optional<Reference> find_reference(const std::vector<Word>& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i].lower;
        const bool has_next = i + 1 < words.size();
        if (w == "it") return Reference{i, i, false, false, {}};
        if (one_of(w, kPossessive) && has_next) return Reference{i, i, true, w != "its", {}};
        if (w == "her" && has_next && !one_of(words[i + 1].lower, kNotNouns))
            return Reference{i, i, true, true, {}};
        if (one_of(w, kPersonal)) return Reference{i, i, false, true, {}};
        if (!has_next) continue;
        const std::string& next = words[i + 1].lower;
        if (w == "this") return Reference{i, i + 1, false, false, next};
        if (w == "same" && i > 0 && words[i - 1].lower == "the")
            return Reference{i - 1, i + 1, false, false, next};
        if (w == "that" && !verb_like(next) &&
            (i == 0 || one_of(words[i - 1].lower, kBeforeDemonstrative) ||
             verb_like(words[i - 1].lower)))
            return Reference{i, i + 1, false, false, next};
    }
    return std::nullopt;
}

bool capitalised(const std::string& w) {
    return !w.empty() && std::isupper(static_cast<unsigned char>(w.front()));
}

// The noun a question asks for: "which company built …" → "company".
std::string asked_noun(const std::vector<Word>& words) {
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
        if ((words[i].lower == "which" || words[i].lower == "what") &&
            !one_of(words[i + 1].lower, kQuestionWords) && words[i + 1].lower != "was" &&
            words[i + 1].lower != "did" && words[i + 1].lower != "does" &&
            words[i + 1].lower != "are")
            return words[i + 1].lower;
    }
    return {};
}

bool names_something(const std::string& short_answer) {
    const std::string lower = base::ascii_lower(short_answer);
    if (lower.empty() || one_of(lower, kYesNo)) return false;
    return std::any_of(short_answer.begin(), short_answer.end(),
                       [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}

// The noun stem compared: "films" and "film" alike.
std::string stem(std::string w) {
    if (w.size() > 3 && w.ends_with('s')) w.pop_back();
    return w;
}

// True when `entity` is known to be a `noun`: its name holds the noun ("Saltspire Light" for
// "that light"), or `answer` says "<entity> is a/an/the <noun>".
bool entity_is_a(const std::string& entity, const std::string& noun, const std::string& answer) {
    const std::string n = stem(noun);
    for (const auto& w : words_of(entity))
        if (stem(w.lower) == n) return true;
    const std::string text = base::ascii_lower(answer);
    const std::string name = base::ascii_lower(entity);
    for (std::string_view article : {" is a ", " is an ", " is the "}) {
        const std::string prefix = name + std::string(article);
        for (std::size_t at = text.find(prefix); at != std::string::npos;
             at = text.find(prefix, at + 1)) {
            const auto rest = words_of(std::string_view(text).substr(at + prefix.size()));
            // "is a lighthouse", "is a coastal lighthouse": the noun within the next two words.
            for (std::size_t k = 0; k < rest.size() && k < 2; ++k)
                if (stem(rest[k].lower) == n) return true;
        }
    }
    return false;
}

constexpr std::array<std::string_view, 6> kBesides = {"else",    "other", "others",
                                                      "another", "too",   "besides"};

// A short answer's items: "Saltspire Light and Greyhollow Light", "A, B and C".
std::vector<std::string> items_of(const std::string& short_answer) {
    std::vector<std::string> items;
    std::string rest = short_answer;
    for (std::string_view sep : {", and ", " and ", ", ", "; "}) {
        for (std::size_t at = rest.find(sep); at != std::string::npos; at = rest.find(sep, at + 1))
            rest.replace(at, sep.size(), "\n");
    }
    std::size_t begin = 0;
    while (begin <= rest.size()) {
        const std::size_t end = std::min(rest.find('\n', begin), rest.size());
        std::string item = rest.substr(begin, end - begin);
        while (!item.empty() && (item.back() == '.' || item.back() == ' ')) item.pop_back();
        while (!item.empty() && item.front() == ' ') item.erase(0, 1);
        if (names_something(item)) items.push_back(std::move(item));
        begin = end + 1;
    }
    return items;
}

}  // namespace reference_rule

std::string named_entity(std::string_view text) {
    using namespace reference_rule;
    const auto words = words_of(text);
    std::string best;
    std::size_t best_count = 0;
    for (std::size_t i = 0; i < words.size();) {
        const bool opening_question_word = i == 0 && one_of(words[i].lower, kQuestionWords);
        if (opening_question_word ||
            !(capitalised(words[i].text) || words[i].text.find('_') != std::string::npos)) {
            ++i;
            continue;
        }
        std::size_t j = i;
        std::string name;
        while (j < words.size() &&
               (capitalised(words[j].text) || words[j].text.find('_') != std::string::npos)) {
            // Words written apart in the text are one name only when a single space joins them.
            if (j > i && text.substr(words[j - 1].end, words[j].begin - words[j - 1].end) != " ")
                break;
            name += (j > i ? " " : "") + words[j].text;
            ++j;
        }
        std::replace(name.begin(), name.end(), '_', ' ');
        const std::size_t count =
            static_cast<std::size_t>(std::count(name.begin(), name.end(), ' ')) + 1;
        if (count > best_count) {
            best = name;
            best_count = count;
        }
        i = j;
    }
    return best;
}

ResolvedReference resolve_reference(std::string_view question,
                                    const std::vector<EarlierTurn>& turns) {
    using namespace reference_rule;
    ResolvedReference out;
    out.question = std::string(question);
    if (turns.empty()) return out;
    const auto words = words_of(question);
    const auto reference = find_reference(words);
    if (!reference) return out;
    const EarlierTurn& turn = turns.back();
    const auto turn_words = words_of(turn.question);
    const std::string answer =
        names_something(turn.short_answer) ? turn.short_answer : std::string();
    const std::string entity = named_entity(turn.question);
    const std::string asked = asked_noun(turn_words);
    const bool asked_who = !turn_words.empty() && (turn_words.front().lower == "who" ||
                                                   turn_words.front().lower == "whom");

    std::string chosen;
    std::string rule;
    const auto pick = [&](const std::string& first, const std::string& first_rule,
                          const std::string& second, const std::string& second_rule) {
        if (!first.empty()) {
            chosen = first;
            rule = first_rule;
        } else if (!second.empty()) {
            chosen = second;
            rule = second_rule;
        }
    };
    if (!reference->noun.empty()) {
        const bool answer_fits =
            !answer.empty() && !asked.empty() && stem(asked) == stem(reference->noun);
        const bool entity_fits =
            !entity.empty() && entity_is_a(entity, reference->noun, turn.answer);
        if (answer_fits) {
            pick(answer, "type:" + reference->noun, {}, {});
        } else if (entity_fits) {
            pick(entity, "type:" + reference->noun, {}, {});
        }
    }
    if (chosen.empty()) {
        const bool answer_first = reference->personal ? asked_who : !asked.empty();
        if (answer_first) {
            pick(answer, "answer", entity, "question-entity");
        } else {
            pick(entity, "question-entity", answer, "answer");
        }
    }
    if (chosen.empty()) return out;

    const std::size_t begin = words[reference->first].begin;
    const std::size_t end = words[reference->last].end;
    out.reference = std::string(question.substr(begin, end - begin));
    out.entity = chosen;
    out.rule = rule;
    out.question = std::string(question.substr(0, begin)) + chosen +
                   (reference->possessive ? " 's" : "") + std::string(question.substr(end));
    return out;
}

Exclusion already_answered(std::string_view question, const std::vector<EarlierTurn>& turns,
                           const ResolvedReference& resolved) {
    using namespace reference_rule;
    Exclusion out;
    if (turns.empty()) return out;
    for (const auto& w : words_of(question)) {
        if (one_of(w.lower, kBesides)) {
            out.marker = w.lower;
            break;
        }
    }
    if (out.marker.empty()) return out;
    const EarlierTurn& turn = turns.back();
    std::vector<std::string> candidates = items_of(turn.short_answer);
    candidates.push_back(named_entity(turn.question));
    const std::string resolved_to = base::ascii_lower(resolved.entity);
    for (auto& c : candidates) {
        const std::string lower = base::ascii_lower(c);
        if (c.empty() || lower == resolved_to) continue;
        const bool seen =
            std::any_of(out.entities.begin(), out.entities.end(),
                        [&](const std::string& e) { return base::ascii_lower(e) == lower; });
        if (!seen) out.entities.push_back(std::move(c));
    }
    return out;
}

}  // namespace glassbox::text
