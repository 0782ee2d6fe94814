// The offline reasoner: deterministic classical methods that answer a question without a model.
// Analyse a question (its concepts), score evidence (knowledge-graph edges), write an answer
// (from edges, from document chunks) and plan an agent's next step. The llm worker's extractive
// provider answers the built-in templates with it; its internals are in reasoner/detail/.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::reasoner {

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
    std::string answer;  // an entity's label, a literal, "yes"/"no"; empty: undecided
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
    std::optional<std::vector<std::string>> reason_edges(std::string_view question,
                                                         const std::vector<LabelledEdge>& edges,
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

// ---- planning an agent step ----------------------------------------------------------------
// The answer to the agent-react template: a planner that turns a multi-hop question into a chain
// of single-relation lookups (resolve the named entity, follow one relation per step, feed each
// step's answers into the next) and stops when the chain is complete or a lookup comes back empty.

// Bounds of the planner, documented in docs/agent.md.
struct PlannerLimits {
    // Entities carried from one hop to the next (each is one triples-query call, sent together).
    std::size_t frontier = 4;
    // A predicate must match the hop's relation at least this well (relation_cues scale: 1 same
    // stem, 0.8 a shared cue) to be followed.
    double min_match = 0.45;
    // Ends of a complete chain the final answer names; more are counted ("and 3 others").
    std::size_t listed = 12;
};

// One step of the plan, in the agent-react reply form (Thought / Action / Args / Final Answer).
struct PlannerStep {
    std::string thought;
    struct Call {
        std::string tool;
        nlohmann::json args;
    };
    std::vector<Call> calls;   // empty: the step gives the final answer
    std::string final_answer;  // the short answer ("" when the lookups did not decide)
    std::string response;      // the sentence(s) after the Final Answer line
};

// The next step for `question` given the `tools` offered (the template's JSON list of
// {"name", ...}) and the `steps` so far (the template's JSON list of {"thought", "calls":
// [{"tool", "args", "observation", "error"}]}). Deterministic: the same input, the same step.
// `exclude`: labels a follow-up's "else" leaves out (text::already_answered); a chain that ends
// at several entities answers with the others. A chain that ends at several entities names them
// all (at most limits.listed, the rest counted): "A and B", with the count in the response.
PlannerStep plan_agent_step(std::string_view question, const nlohmann::json& tools,
                            const nlohmann::json& steps, const PlannerLimits& limits = {},
                            const std::vector<std::string>& exclude = {});

// The next step for a question asked in a conversation: `history` is the template's JSON list of
// earlier turns ({"question", "answer", "short_answer"}, oldest first). A reference of the
// question to the previous turn ("Who founded it?") is resolved first (text/reference_resolution,
// docs/agent.md §5), the plan made for the rewritten question, and the first step's thought says
// how the reference was read; "else" leaves out what the previous turn was about.
PlannerStep plan_agent_turn(std::string_view question, const nlohmann::json& tools,
                            const nlohmann::json& steps, const nlohmann::json& history,
                            const PlannerLimits& limits = {});

// How well a predicate's label ("was built by", "plays_in_club") expresses a relation phrase
// ("built by", "play for club"): the weighted share of the phrase's relation words the label's
// words match (relation_cues), less a little for each label word the phrase does not ask for;
// 0..1. The agent's graph-query tool maps a query's relation words onto the store's predicates
// with it.
double relation_phrase_match(std::string_view predicate_label, std::string_view phrase);

// The step as the agent-react template asks for it.
std::string render_react(const PlannerStep& step);

}  // namespace glassbox::reasoner
