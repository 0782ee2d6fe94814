// The expected answer type of a question, from its words.
#include "workers/llm/question_intent.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_set>
#include <vector>

#include "text/tokenize.hpp"

namespace glassbox::llm {

namespace {

const std::unordered_set<std::string_view>& auxiliaries() {
    static const std::unordered_set<std::string_view> words{
        "is",  "are",    "was",   "were",  "do",    "does",  "did",  "can",  "could", "has",
        "have", "had",   "will",  "would", "should", "shall", "may",  "might", "must", "am"};
    return words;
}

// Words after "which" / "what" that are not the class asked for.
const std::unordered_set<std::string_view>& not_a_class() {
    static const std::unordered_set<std::string_view> words{
        "the", "a", "an", "of", "one", "ones", "kind", "type", "sort", "is", "are", "was",
        "were", "do", "does", "did", "has", "have", "had", "can", "could", "will", "would",
        "in", "on", "at", "to", "for", "by", "from", "with", "other", "two", "both"};
    return words;
}

const std::unordered_set<std::string_view>& time_classes() {
    static const std::unordered_set<std::string_view> words{
        "year", "years", "date", "day", "month", "decade", "century", "time", "era", "season"};
    return words;
}

const std::unordered_set<std::string_view>& place_classes() {
    static const std::unordered_set<std::string_view> words{
        "city",  "country", "town",   "place", "state", "region", "continent",
        "nation", "county", "island", "province", "village", "location", "area"};
    return words;
}

}  // namespace

std::string_view answer_type_name(AnswerType type) noexcept {
    switch (type) {
        case AnswerType::kAny: return "any";
        case AnswerType::kAgent: return "agent";
        case AnswerType::kTime: return "time";
        case AnswerType::kPlace: return "place";
        case AnswerType::kNumber: return "number";
        case AnswerType::kClass: return "class";
        case AnswerType::kYesNo: return "yes/no";
    }
    return "any";
}

QuestionIntent question_intent(std::string_view question) {
    const std::vector<std::string> w = text::words(question);
    QuestionIntent intent;
    if (w.empty()) return intent;
    // The class word after "which"/"what" at position i: the first content word, skipping
    // articles and adjectives we cannot tell apart only when a noun follows directly.
    const auto class_after = [&](std::size_t i) -> std::string {
        for (std::size_t k = i + 1; k < w.size() && k <= i + 2; ++k) {
            if (not_a_class().contains(w[k])) {
                if (w[k] == "the" || w[k] == "a" || w[k] == "an" || w[k] == "kind" ||
                    w[k] == "type" || w[k] == "sort" || w[k] == "of")
                    continue;
                return {};
            }
            return w[k];
        }
        return {};
    };
    const auto classify = [&](std::size_t i) -> bool {
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
                    "many", "much", "old", "long", "tall", "far", "big", "large", "high",
                    "heavy", "wide", "deep", "often"};
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
            const std::string c = class_after(i);
            if (c.empty()) {
                intent.type = AnswerType::kAny;
                return true;
            }
            intent.class_word = c;
            if (time_classes().contains(c)) {
                intent.type = AnswerType::kTime;
            } else if (place_classes().contains(c)) {
                intent.type = AnswerType::kPlace;
            } else {
                intent.type = AnswerType::kClass;
            }
            return true;
        }
        return false;
    };
    if (auxiliaries().contains(w.front())) {
        intent.type = AnswerType::kYesNo;
        return intent;
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
        // "In which year …", "… is in which country", "The founder of X was who?"
        if (classify(i)) return intent;
    }
    intent.wh.clear();
    return intent;
}

bool looks_like_time(std::string_view value) {
    const auto w = text::words(value);
    if (w.empty() || w.size() > 4) return false;
    static const std::unordered_set<std::string_view> months{
        "january", "february", "march",   "april",    "may",      "june",     "july",
        "august",  "september", "october", "november", "december", "jan",      "feb",
        "mar",     "apr",       "jun",     "jul",      "aug",      "sep",      "sept",
        "oct",     "nov",       "dec",     "bc",       "bce",      "ad",       "ce"};
    bool year = false;
    for (const auto& word : w) {
        const bool digits = std::all_of(word.begin(), word.end(),
                                        [](char c) { return c >= '0' && c <= '9'; });
        if (digits && word.size() >= 3 && word.size() <= 4) {
            year = true;
        } else if (word.size() == 5 && word.back() == 's' &&
                   std::all_of(word.begin(), word.end() - 1,
                               [](char c) { return c >= '0' && c <= '9'; })) {
            year = true;  // "1890s"
        } else if (!(digits && word.size() <= 2) && !months.contains(word)) {
            return false;
        }
    }
    return year;
}

bool looks_like_number(std::string_view value) {
    const auto w = text::words(value);
    if (w.empty() || w.size() > 4) return false;
    static const std::unordered_set<std::string_view> numerals{
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand",
        "million", "billion", "dozen"};
    const auto& first = w.front();
    const bool digits = std::all_of(first.begin(), first.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
    return digits || numerals.contains(first);
}

}  // namespace glassbox::llm
