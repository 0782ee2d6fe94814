// The evidence features of an answer (docs/confidence.md): what graph RAG and document RAG
// measured about the evidence behind their short answer, whichever model wrote it. A calibrator
// (reasoner/answer_confidence.hpp) turns them into a probability.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reasoner/answer_confidence.hpp"
#include "reasoner/stated_confidence.hpp"
#include "schema/explain_builder.hpp"
#include "workers/rag/rag_answer.hpp"

namespace glassbox::rag {

// A kept edge as the features read it: its ends numbered within the run, in words, its score
// and its sources.
struct EvidenceEdge {
    std::uint32_t s = 0;
    std::uint32_t o = 0;
    std::string s_label;
    std::string p_label;
    std::string o_label;
    double score = 0.0;
    std::vector<std::string> sources;
    int tier = 0;  // of its best source; 0: not known
};

struct GraphEvidence {
    std::string question;
    std::vector<EvidenceEdge> kept;
    std::vector<std::uint32_t> seeds;  // the question's entities, numbered as the edges' ends
    double seed_match = 0.0;           // the best seed's similarity to its concept
    std::optional<std::string> short_answer;
    std::vector<std::size_t> answer_edges;  // kept edges the short answer cites
};

// answered, answer_found, answer_is_seed, path_linked, path_hops, hop_excess (hops beyond the
// question's relation words), answer_via_type (reached over a type edge: a class, not an
// instance), type_mismatch, question_coverage, answer_score, margin, competitors, path_sources,
// weakest_tier, seed_match.
reasoner::EvidenceFeatures graph_features(const GraphEvidence& evidence);

// What of the question the answer covers (docs/confidence.md, completeness): the question's
// relation parts against the predicates and end names of the edges the short answer cites, and
// for a question
// asking for a list, the answers the kept edges have (every far end of an answer edge's star:
// the same predicate from the same node) against those `answer_text` names.
schema::explain::AnswerCompleteness graph_completeness(const GraphEvidence& evidence,
                                                       std::string_view answer_text);

// Two kept edges giving different values for one single-valued fact: `stated` is an edge the
// short answer cites, `rival` one with the same subject and predicate, another object, and
// sources of its own (none shared). A predicate is single-valued unless the question asks for a
// list or a source gives one subject two objects by it (then it is a list, not a dispute).
struct EdgeConflict {
    std::size_t stated = 0;
    std::size_t rival = 0;
};
std::vector<EdgeConflict> graph_conflicts(const GraphEvidence& evidence);

// The values of one disputed fact that the short answer names together, as if a list ("1879 and
// 1881": the synthesis named the end of every fact it found). `stated` is the value the answer
// should state: the better supported (the most distinct sources over the kept edges giving it,
// then the best tier, then the best-kept edge); `rivals` the others. Each value with the kept
// edges that give it (among those the short answer cites), in kept order. nullopt when the short
// answer names no two values of a conflict (graph_conflicts).
struct DisputedValue {
    std::string value;               // the edges' object label
    std::vector<std::size_t> edges;  // kept edges the short answer cites for it
};
struct DisputedValues {
    DisputedValue stated;
    std::vector<DisputedValue> rivals;
};
std::optional<DisputedValues> listed_disputed_values(const GraphEvidence& evidence);

// `marked_text` (an answer with `[eN]` markers) restated for one value of a disputed fact: the
// first place that names `listing` (the short answer that named the values together) names the
// stated value alone, the rivals' markers are dropped from where they stood, and the sentence
// ends with the rivals as another source's, each cited by its own markers: "Saltspire Light was
// built in 1879 [e1]; another source gives 1881 [e2]." `id_of(k)` is kept edge k's marker id.
// nullopt when the listing names something besides the values or the text does not hold it (a
// model's own wording is left as it is).
std::optional<std::string> restate_disputed(std::string_view marked_text, std::string_view listing,
                                            const DisputedValues& disputed,
                                            const std::function<std::string(std::size_t)>& id_of);

// Lowering the confidence for conflicts and saying them: shared with the agent, in the reasoner.
using reasoner::conflicts_note;
using reasoner::lower_for_conflicts;

// What the answer adds about its completeness, after the answer: the asked parts no evidence
// states ("Nothing found says when."), when some other part is stated, and answers a list
// question's evidence has that the answer does not name. "" when there is nothing to add.
std::string completeness_note(const schema::explain::AnswerCompleteness& completeness);

// A kept chunk as the features read it, in the order the answer was given them.
struct EvidenceChunk {
    std::string text;
    std::string document;
    std::string title;   // its document's title
    double score = 0.0;  // its retrieval (fusion) score
};

struct DocumentEvidence {
    std::string question;
    std::vector<EvidenceChunk> kept;
    std::optional<std::string> short_answer;
    std::vector<std::size_t> answer_chunks;  // kept chunks the short answer cites
    std::vector<std::size_t> cited_chunks;   // kept chunks the answer text cites
};

// answered, yes_no, yes_no_question, answer_in_question, type_mismatch, answer_words,
// answer_documents, answer_rank, question_coverage, cited_documents, sentence_coverage (the
// question's content words in the sentence that states the answer), retrieval_margin (how far the
// best chunk's score stands above the runner-up's), answer_titled (the answer names a kept
// document's title, or the title names it: an entity the collection has a document on) and
// who_not_name (the question asks who, and the answer is not shaped like a name: one word, an
// acronym, words in lower case); where the short answer is read (the first chunk it cites):
// answer_top_chunk (the best-ranked chunk: for a two-hop question, the document of the entity it
// names, a hop short), answer_far_chunk (past the five best) and answer_chunk_share (that
// chunk's retrieval score as a share of the best's), answer_top_chunk_chained (read from the best
// chunk, and the question chains two relations or more: only there is the best chunk a hop
// short; a one-hop answer usually stands in it); withheld (0: withhold_weak_short_answer sets
// it).
reasoner::EvidenceFeatures document_features(const DocumentEvidence& evidence);

// Two kept chunks of different documents giving different values for the one the question asks
// (a time or a number; not a list): `stated` holds the sentence that states the short answer,
// `rival` one of another document with every word of the slot (the question's words the stated
// sentence has besides the value, at least two: its subject and relation) and exactly one value
// of the same kind, which neither is nor contains the answer. Conservative: at most one.
struct ChunkConflict {
    std::size_t stated = 0;
    std::size_t rival = 0;
    std::string stated_value;
    std::string rival_value;
    std::string slot;  // the slot's word stems, in the question's order
};
std::vector<ChunkConflict> document_conflicts(const DocumentEvidence& evidence);

// Withholds a weak short answer (docs/confidence.md, withholding): when `engine`'s calibrator
// has a withhold_below, the request allows abstaining (`floor` > 0), the short answer is not yes
// or no, and its calibrated probability is below withhold_below, `synthesised` loses its short
// answer (its text and citations stay: their first sentence answers) and `features` say so
// ("answered" 0, "withheld" 1), so that its confidence is that of an answer without one.
// Returns whether it withheld.
bool withhold_weak_short_answer(SynthesisResult& synthesised, reasoner::EvidenceFeatures& features,
                                std::string_view engine, double floor);

// The answer's confidence as the trace records it: `features`, scored by the calibrator shipped
// for `engine` when there is one (probability, version, each feature's effect).
schema::explain::AnswerConfidence answer_confidence(const reasoner::EvidenceFeatures& features,
                                                    std::string_view engine);

// When the calibrated confidence is below `floor` (docs/confidence.md, abstention): the answer
// as it is given instead, which says it does not know, what the evidence points to and why it
// is unsure (the feature that lowered the confidence most), then what was found (the original
// text, its citations moved along); no short answer. nullopt when the answer stands (no
// calibrated confidence, or at least `floor`).
std::optional<SynthesisResult> abstained_answer(const SynthesisResult& synthesised,
                                                const schema::explain::AnswerConfidence& confidence,
                                                double floor);

// Adds the confidence to a FINAL body: "confidence" (when calibrated), "confidence_words",
// "calibrator", "evidence" ([{"name", "value", "effect"}]), "conflicts" (when there are any)
// and, when measured, "completeness" ({"asked", "covered", "list", "answers_found",
// "answers_named"}).
void add_confidence(nlohmann::json& final, const schema::explain::AnswerConfidence& confidence);

}  // namespace glassbox::rag
