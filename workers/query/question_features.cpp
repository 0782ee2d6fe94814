// Entity spans, relation chains and the text features of a question.
#include "workers/query/question_features.hpp"

#include <algorithm>

#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::query {
namespace {

// A piece of the question: a word as written, or a relation link ("'s", "of").
struct Piece {
    std::string text;
    bool link = false;
};

bool token_byte(unsigned char c) noexcept {
    return text::is_word_byte(c) || c == '_' || c == '-' || c == '.' || c == '\'';
}

// Words as written (case kept, underscores inside), with "'s" and "of" as links. A trailing
// period or apostrophe is punctuation, not part of the word.
std::vector<Piece> pieces(std::string_view question) {
    std::vector<Piece> out;
    std::size_t i = 0;
    while (i < question.size()) {
        if (!token_byte(static_cast<unsigned char>(question[i]))) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < question.size() && token_byte(static_cast<unsigned char>(question[end])))
            ++end;
        std::string token(question.substr(i, end - i));
        i = end;
        bool possessive = false;
        if (token.size() >= 2 && token.compare(token.size() - 2, 2, "'s") == 0) {
            possessive = true;
            token.resize(token.size() - 2);
        }
        while (!token.empty() &&
               (token.back() == '.' || token.back() == '\'' || token.back() == '-'))
            token.pop_back();
        while (!token.empty() && (token.front() == '\'' || token.front() == '-')) token.erase(0, 1);
        if (!token.empty()) out.push_back(Piece{token, token == "of"});
        if (possessive) out.push_back(Piece{"'s", true});
    }
    return out;
}

bool capitalised(const std::string& word) {
    return !word.empty() && word.front() >= 'A' && word.front() <= 'Z';
}

bool underscored(const std::string& word) { return word.find('_') != std::string::npos; }

std::string spaced(std::string word) {
    std::replace(word.begin(), word.end(), '_', ' ');
    return word;
}

}  // namespace

std::vector<EntitySpan> entity_spans(std::string_view question, std::size_t limit) {
    const auto all = pieces(question);
    std::vector<EntitySpan> spans;
    const auto add = [&](std::string span, double weight) {
        for (auto& s : spans) {
            if (s.text == span) {
                s.weight = std::max(s.weight, weight);
                return;
            }
        }
        spans.push_back(EntitySpan{std::move(span), weight});
    };
    std::vector<std::string> run;
    const auto close_run = [&] {
        if (run.size() >= 2) {
            std::string joined = run.front();
            for (std::size_t k = 1; k < run.size(); ++k) joined += " " + run[k];
            add(std::move(joined), 0.8);
        } else if (run.size() == 1 && !text::is_stopword(text::lower(run.front()))) {
            add(run.front(), 0.4);
        }
        run.clear();
    };
    for (const auto& piece : all) {
        if (!piece.link && underscored(piece.text)) {
            close_run();
            add(spaced(piece.text), 1.0);
        } else if (!piece.link && capitalised(piece.text)) {
            // A question word opening the sentence ("Which", "Who") is not part of a name.
            if (run.empty() && text::is_stopword(text::lower(piece.text))) continue;
            run.push_back(piece.text);
        } else {
            close_run();
        }
    }
    close_run();
    std::stable_sort(spans.begin(), spans.end(),
                     [](const EntitySpan& a, const EntitySpan& b) { return a.weight > b.weight; });
    if (spans.size() > limit) spans.resize(limit);
    return spans;
}

std::size_t relation_chain(std::string_view question) {
    const auto all = pieces(question);
    std::size_t best = 0;
    std::size_t chain = 0;
    std::size_t gap_words = 0;
    bool gap_ok = true;
    bool gap_entity = false;  // an underscored entity in the gap
    for (const auto& piece : all) {
        if (piece.link) {
            const bool joins =
                chain > 0 && gap_ok && (gap_entity ? gap_words == 1 : gap_words <= 2);
            chain = joins ? chain + 1 : 1;
            best = std::max(best, chain);
            gap_words = 0;
            gap_ok = true;
            gap_entity = false;
            continue;
        }
        ++gap_words;
        if (underscored(piece.text)) {
            gap_entity = true;
        } else if (capitalised(piece.text)) {
            gap_ok = false;
        }
    }
    return best;
}

QuestionFeatures question_features(std::string_view question) {
    QuestionFeatures features;
    features.question = std::string(question);
    features.words = text::words(question).size();
    features.relation_chain = relation_chain(question);
    features.spans = entity_spans(question);
    return features;
}

}  // namespace glassbox::query
