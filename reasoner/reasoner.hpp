// The extractive model: deterministic classical methods behind every built-in template
// (concept extraction, edge scoring and reasoning, answers composed from facts or sentences).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::llm {

// Asked now and then during long work: true means the caller's request was cancelled (or its
// deadline passed) and the work should stop.
using CancelCheck = std::function<bool()>;

// A knowledge-graph edge as the templates carry it: human-readable labels.
struct LabelledEdge {
    std::string id;
    std::string s;
    std::string p;
    std::string o;
};

// A document chunk as document-synthesis carries it.
struct TextChunk {
    std::string id;
    std::string text;
    std::string title;
};

// What a synthesis template answers: the short answer alone, the marker ids it rests on, and
// the sentences that state it (the first leads with it), each ending with its markers. Joined
// with single spaces the sentences form the answer text.
struct ComposedAnswer {
    std::string answer;                   // an entity's label, a literal, "yes"/"no"; empty: undecided
    std::vector<std::string> answer_ids;  // marker ids the short answer rests on, in order
    std::vector<std::string> sentences;
};

// Stateless and thread-safe; every method is deterministic (same input, same output).
class ExtractiveModel {
public:
    static constexpr std::string_view kModelName = "glassbox-extractive-v1";

    // Entity mentions (underscore-joined names, quoted strings, capitalised spans, all-caps
    // words, possessive owners), numbers, then content-word phrases and words; most salient
    // first, case-insensitively distinct, at most `limit`.
    std::vector<std::string> extract_concepts(std::string_view question,
                                              std::size_t limit = 10) const;

    // One score in 0..1 per edge, in order. Lexical evidence (the edge's entities against the
    // concepts and the question; its predicate against the question's relation words, with
    // light stemming, a relation-word lexicon and character trigrams), spread along paths
    // from the entities the question names. `embedding_similarity`, when given, holds one
    // cosine per edge (question against "s p o") and is blended in. The path search is
    // near-linear in the edges (edges alike between two nodes are walked once, a path's last
    // hops grouped) and stops after a fixed number of steps. nullopt when `cancelled` said so
    // (asked every few thousand steps).
    std::optional<std::vector<double>> score_edges(
        std::string_view question, const std::vector<std::string>& concepts,
        const std::vector<LabelledEdge>& edges,
        const std::vector<double>* embedding_similarity = nullptr,
        const CancelCheck& cancelled = {}) const;

    // One short factual sentence per edge: what of the question it matches. nullopt when
    // `cancelled` said so.
    std::optional<std::vector<std::string>> reason_edges(
        std::string_view question, const std::vector<LabelledEdge>& edges,
        const CancelCheck& cancelled = {}) const;

    // The answer from the edges: the short answer (the end node of the best path from a
    // named entity along the relations the question asks for, or empty when the edges do not
    // decide), the ids it rests on, and the sentences, the first stating the answer, each
    // ending with the markers of the edges it states ("Cruz Azul FC is in Mexico [e1].").
    ComposedAnswer answer_from_edges(std::string_view question,
                                     const std::vector<LabelledEdge>& edges) const;

    // The answer from the chunks: the short answer (a span of the best sentence, "yes"/"no",
    // or empty), the chunk ids it rests on, and at most three sentences quoted exactly, the
    // best answer first, each followed by its chunk's marker ("The tower opened in 1889. [c2]").
    ComposedAnswer answer_from_chunks(std::string_view question,
                                      const std::vector<TextChunk>& chunks) const;
};

// Whitespace-separated tokens: the extractive provider's "token" count (a word count).
std::size_t count_words(std::string_view text);

}  // namespace glassbox::llm
