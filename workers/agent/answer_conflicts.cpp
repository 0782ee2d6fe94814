// Conflicts between a looked-up fact and a document passage (workers/agent/answer_conflicts.hpp).
#include "workers/agent/answer_conflicts.hpp"

#include <algorithm>
#include <set>

#include "text/tokenize.hpp"

namespace glassbox::agent {
namespace {

// `text` before its shortest tail of space-separated words that normalises to `value` (trailing
// spaces dropped); nullopt when no tail does.
std::optional<std::string> before_tail(std::string_view text, const std::string& value) {
    for (std::size_t end = text.size(); end > 0;) {
        while (end > 0 && text[end - 1] == ' ') --end;
        while (end > 0 && text[end - 1] != ' ') --end;
        if (text::normalize(text.substr(end)) != value) continue;
        while (end > 0 && text[end - 1] == ' ') --end;
        return std::string(text.substr(0, end));
    }
    return std::nullopt;
}

// A word of a sentence: lower-cased, where it starts, and whether it is written capitalised.
struct SentenceWord {
    std::string lower;
    std::size_t start = 0;
    bool capitalised = false;
};

std::vector<SentenceWord> sentence_words(std::string_view sentence) {
    std::vector<SentenceWord> out;
    text::for_each_word(sentence, [&](std::string_view word, std::size_t start) {
        const char first = sentence[start];
        out.push_back({std::string(word), start, first >= 'A' && first <= 'Z'});
    });
    return out;
}

// Words that may stand between a relation word and its name ("designed by the ...").
bool small_word(const std::string& w) {
    static const std::set<std::string> kSmall = {"by",  "in",   "at", "of",  "to", "from",
                                                 "for", "with", "as", "the", "a",  "an"};
    return kSmall.contains(w);
}

// Words that open another clause between the subject and a relation word: the relation is then
// another thing's ("... near Marrow Hall, which was designed by ...").
bool clause_word(const std::string& w) {
    return w == "which" || w == "that" || w == "who" || w == "whose" || w == "where" ||
           w == "and" || w == "but" || w == "while";
}

// The index of the first word after the first place `subject_words` run in `words`; nullopt
// when they do not.
std::optional<std::size_t> after_subject(const std::vector<SentenceWord>& words,
                                         const std::vector<std::string>& subject_words) {
    if (subject_words.empty() || words.size() < subject_words.size()) return std::nullopt;
    for (std::size_t i = 0; i + subject_words.size() <= words.size(); ++i) {
        bool match = true;
        for (std::size_t k = 0; k < subject_words.size() && match; ++k)
            match = words[i + k].lower == subject_words[k];
        if (match) return i + subject_words.size();
    }
    return std::nullopt;
}

// The capitalised run of words from `j` on, in the sentence's own spelling ("" when none).
std::string name_from(std::string_view sentence, const std::vector<SentenceWord>& words,
                      std::size_t j) {
    std::string name;
    for (; j < words.size() && words[j].capitalised; ++j) {
        const auto& w = words[j];
        if (!name.empty()) name += ' ';
        name += sentence.substr(w.start, w.lower.size());
    }
    return name;
}

// The sentences of a passage: split after '.', '!' or '?' followed by a space, and at line ends.
std::vector<std::string_view> sentences_of(std::string_view passage) {
    std::vector<std::string_view> out;
    std::size_t begin = 0;
    for (std::size_t i = 0; i < passage.size(); ++i) {
        const char c = passage[i];
        const bool end = c == '\n' || ((c == '.' || c == '!' || c == '?') &&
                                       (i + 1 == passage.size() || passage[i + 1] == ' '));
        if (!end) continue;
        if (i > begin) out.push_back(passage.substr(begin, i - begin));
        begin = i + 1;
    }
    if (begin < passage.size()) out.push_back(passage.substr(begin));
    return out;
}

bool has_digit(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<EvidenceValue> edge_answer_value(std::string_view answer,
                                               const schema::RagCitation& ground) {
    if (ground.kind != "edge") return std::nullopt;
    const std::string value = text::normalize(answer);
    if (value.empty()) return std::nullopt;
    EvidenceValue out;
    if (ground.subject && ground.predicate && ground.object) {
        // The fact in parts (graph-rag's citations since issue 35): its object must be the answer.
        if (ground.subject->empty() || text::normalize(*ground.object) != value)
            return std::nullopt;
        out.subject = *ground.subject;
        out.predicate = *ground.predicate;
    } else {
        // An older citation: the fact as one text, whose tail is the answer.
        const std::string fact = text::normalize(ground.text);
        if (fact.size() <= value.size() || !fact.ends_with(" " + value)) return std::nullopt;
        auto subject = before_tail(ground.text, value);
        if (!subject || subject->empty()) return std::nullopt;
        out.subject = std::move(*subject);
    }
    out.value = std::string(answer);
    out.selection = ground.selection;
    out.sources = {ground.chunk.empty() ? ground.document : ground.chunk};
    return out;
}

std::optional<std::string> sentence_rival_name(std::string_view sentence, std::string_view subject,
                                               std::string_view predicate, std::string_view value) {
    // How far after the subject the relation word may stand ("was first designed by").
    constexpr std::size_t kMaxGap = 4;
    const std::string padded = " " + text::normalize(sentence) + " ";
    const std::string said = text::normalize(value);
    if (said.empty() || text::contains_phrase(padded, said)) return std::nullopt;
    const auto words = sentence_words(sentence);
    const auto from = after_subject(words, text::words(subject));
    if (!from) return std::nullopt;
    std::set<std::string> cues;
    for (auto& stem : text::content_stems(predicate)) cues.insert(std::move(stem));
    for (const auto& stem : text::content_stems(subject)) cues.erase(stem);
    if (cues.empty()) return std::nullopt;
    for (std::size_t i = *from; i < words.size() && i <= *from + kMaxGap; ++i) {
        const auto& w = words[i];
        const std::size_t gap_start = words[i - 1].start + words[i - 1].lower.size();
        if (words[i].capitalised || clause_word(w.lower) ||
            sentence.substr(gap_start, w.start - gap_start).find_first_of(",;:()") !=
                std::string_view::npos)
            return std::nullopt;
        if (!cues.contains(text::stem(w.lower))) continue;
        std::size_t j = i + 1;
        for (std::size_t skipped = 0; j < words.size() && skipped < 3 && small_word(words[j].lower);
             ++skipped)
            ++j;
        const std::string name = name_from(sentence, words, j);
        if (name.empty() || !values_disagree(value, name)) return std::nullopt;
        return name;
    }
    return std::nullopt;
}

std::vector<EvidenceValue> disputing_sentences(const EvidenceValue& fact,
                                               const std::vector<schema::RagCitation>& passages) {
    std::vector<EvidenceValue> out;
    if (fact.subject.empty() || fact.predicate.empty() || has_digit(fact.value)) return out;
    for (const auto& passage : passages) {
        for (const auto sentence : sentences_of(passage.text)) {
            auto rival = sentence_rival_name(sentence, fact.subject, fact.predicate, fact.value);
            if (!rival) continue;
            out.push_back({{},
                           {},
                           std::move(*rival),
                           passage.selection,
                           {passage.chunk.empty() ? passage.document : passage.chunk},
                           0});
            break;
        }
    }
    return out;
}

std::vector<schema::explain::AnswerConflict> fact_passage_conflicts(
    std::string_view answer, const std::vector<EvidenceValue>& facts,
    const std::vector<EvidenceValue>& passages) {
    std::vector<schema::explain::AnswerConflict> out;
    const std::string said = text::normalize(answer);
    if (said.empty()) return out;
    for (const auto& fact : facts) {
        for (const auto& passage : passages) {
            if (!values_disagree(fact.value, passage.value)) continue;
            const bool fact_said = text::normalize(fact.value) == said;
            if (!fact_said && text::normalize(passage.value) != said) continue;
            const EvidenceValue& stated = fact_said ? fact : passage;
            const EvidenceValue& rival = fact_said ? passage : fact;
            schema::explain::AnswerConflict c;
            c.subject = fact.subject;
            c.predicate = fact.predicate;
            c.stated = stated.value;
            c.rival = rival.value;
            c.stated_selection = stated.selection;
            c.rival_selection = rival.selection;
            c.stated_sources = stated.sources;
            c.rival_sources = rival.sources;
            c.stated_citation = stated.citation;
            c.rival_citation = rival.citation;
            out.push_back(std::move(c));
        }
    }
    return out;
}

}  // namespace glassbox::agent
