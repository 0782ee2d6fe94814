// Scoring one answer against accepted answers (cli/eval/answer_scoring.hpp).
#include "cli/eval/answer_scoring.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "base/ascii.hpp"
#include "reasoner/stated_confidence.hpp"
#include "text/tokenize.hpp"

namespace glassbox::cli::eval {
namespace {

using base::ascii_lower;

// A word byte as the tokenizer's (text/tokenize.hpp), and the underscore, as regular
// expressions' \w (bench/quality/run's whole-word test) counts it.
bool is_word_byte(char c) noexcept {
    return text::is_word_byte(static_cast<unsigned char>(c)) || c == '_';
}

bool is_punctuation(char c) noexcept {
    static constexpr std::string_view kPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    return kPunctuation.find(c) != std::string_view::npos;
}

bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::vector<std::string> words_of(std::string_view normalised) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < normalised.size()) {
        const std::size_t end = std::min(normalised.find(' ', i), normalised.size());
        if (end > i) out.emplace_back(normalised.substr(i, end - i));
        i = end + 1;
    }
    return out;
}

bool is_article(std::string_view word) noexcept {
    return word == "a" || word == "an" || word == "the";
}

// A sentence ends at `i` (a full stop, question or exclamation mark): the two characters
// before it close a word, white space follows, then a capital or a digit.
bool ends_sentence(std::string_view text, std::size_t i) {
    const auto closes = [](char c) {
        return is_word_byte(c) || c == ')' || c == ']' || c == '"' || c == '\'';
    };
    if (i < 2 || !closes(text[i - 1]) || !closes(text[i - 2])) return false;
    std::size_t j = i + 1;
    if (j >= text.size() || !is_space(text[j])) return false;
    while (j < text.size() && is_space(text[j])) ++j;
    return j < text.size() &&
           ((text[j] >= 'A' && text[j] <= 'Z') || (text[j] >= '0' && text[j] <= '9'));
}

}  // namespace

std::string squad_normalise(std::string_view text) {
    std::string kept;
    kept.reserve(text.size());
    for (const char c : text) {
        if (is_punctuation(c)) continue;
        kept.push_back(is_space(c) ? ' ' : ascii_lower(c));
    }
    std::string out;
    for (const auto& word : words_of(kept)) {
        if (is_article(word)) continue;
        if (!out.empty()) out.push_back(' ');
        out += word;
    }
    return out;
}

double token_f1(std::string_view prediction, std::string_view gold) {
    const auto p = words_of(squad_normalise(prediction));
    const auto g = words_of(squad_normalise(gold));
    if (p.empty() || g.empty()) return p == g ? 1.0 : 0.0;
    std::map<std::string_view, std::size_t> gold_counts;
    for (const auto& word : g) ++gold_counts[word];
    std::size_t same = 0;
    for (const auto& word : p) {
        auto it = gold_counts.find(word);
        if (it != gold_counts.end() && it->second > 0) {
            --it->second;
            ++same;
        }
    }
    if (same == 0) return 0.0;
    const double precision = static_cast<double>(same) / static_cast<double>(p.size());
    const double recall = static_cast<double>(same) / static_cast<double>(g.size());
    return 2.0 * precision * recall / (precision + recall);
}

std::string readable_answer(std::string_view gold) {
    std::string out(gold);
    for (char& c : out) c = c == '_' ? ' ' : ascii_lower(c);
    return out;
}

bool names(std::string_view text, std::string_view phrase) {
    if (phrase.empty() || phrase.size() > text.size()) return false;
    const auto same = [](char a, char b) { return ascii_lower(a) == ascii_lower(b); };
    for (auto it = text.begin();; ++it) {
        it = std::search(it, text.end(), phrase.begin(), phrase.end(), same);
        if (it == text.end()) return false;
        const auto at = static_cast<std::size_t>(it - text.begin());
        const std::size_t after = at + phrase.size();
        if ((at == 0 || !is_word_byte(text[at - 1])) &&
            (after == text.size() || !is_word_byte(text[after])))
            return true;
    }
}

std::string_view first_sentence(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if ((c == '.' || c == '?' || c == '!') && ends_sentence(text, i))
            return text.substr(0, i + 1);
    }
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

std::string_view found_text(std::string_view abstained_answer) {
    const auto at = abstained_answer.find(reasoner::kWhatWasFound);
    return at == std::string_view::npos
               ? std::string_view{}
               : abstained_answer.substr(at + reasoner::kWhatWasFound.size());
}

AnswerScore score_answer(const std::optional<std::string>& short_answer, std::string_view text,
                         std::span<const std::string> accepted) {
    AnswerScore score;
    score.judged =
        short_answer && !short_answer->empty() ? *short_answer : std::string(first_sentence(text));
    for (const auto& gold : accepted) {
        const std::string readable = readable_answer(gold);
        if (names(score.judged, readable)) score.hit = true;
        if (!squad_normalise(gold).empty() &&
            squad_normalise(score.judged) == squad_normalise(readable))
            score.exact = 1.0;
        score.f1 = std::max(score.f1, token_f1(score.judged, readable));
    }
    return score;
}

double named_share(const std::optional<std::string>& short_answer, std::string_view text,
                   std::span<const std::string> accepted) {
    if (accepted.empty()) return 0.0;
    std::size_t named = 0;
    for (const auto& gold : accepted) {
        const std::string phrase = readable_answer(gold);
        if (names(text, phrase) || (short_answer && names(*short_answer, phrase))) ++named;
    }
    return static_cast<double>(named) / static_cast<double>(accepted.size());
}

}  // namespace glassbox::cli::eval
