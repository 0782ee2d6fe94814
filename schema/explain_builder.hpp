// Triple builders for every step of every explain chain (DESIGN §4, docs/vocabulary.md).
//
// Every builder returns plain RDF 1.1 triples in the named graph urn:graph:retrieval:
//  - the run's Question is a prov:Activity (gb:query, prov:startedAtTime, prov:wasAssociatedWith
//    the worker); trace_end() adds prov:endedAtTime and gb:status once the end is known;
//  - every step is a prov:Entity, prov:wasGeneratedBy the Question, with
//    prov:generatedAtTime, and prov:wasDerivedFrom the previous step when StepInfo names one
//    (the first step has none: an entity is never derived from an activity);
//  - per step, when given: gb:durationMs, gb:inputTokens, gb:outputTokens (xsd:integer), and
//    the model as a prov:SoftwareAgent via prov:wasAttributedTo plus gb:model; the embeddings
//    call it made (gb:embeddingModel, gb:embeddingInputs, gb:embeddingDimensions,
//    gb:embeddingStartedAt, gb:embeddingDurationMs);
//  - times are xsd:dateTime in UTC with milliseconds ("2025-01-02T03:04:05.678Z").
//
// Chains (see docs/vocabulary.md for their Turtle shape):
//   graph RAG     question → grounding → graph_exploration → graph_focus → synthesis
//   document RAG  question → grounding → document_exploration → [document_focus] → synthesis
//   agent         question → analysis(0) → observation(0) → analysis(1) … → conclusion
//   query routing question → routing_decision → <engine sub-trace> → [escalation(n) →
//                 <next sub-trace>] → conclusion (derived from the last sub-trace entity)
//   echo          echo_question → echo_synthesis
// then trace_end for each of them. A sub-trace's question() takes the calling step's URI
// (parent_uri): the sub-run's Question prov:used it and prov:wasInformedBy the calling run.
//
// Each builder comes twice: returning the triples as a list, and writing them into a
// TripleSink (triple_sink.hpp) — triple_json() writes the wire JSON of an explain message's
// triples in place, with no Term built (the hot path of the RAG workers).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "schema/triple_sink.hpp"

namespace glassbox::schema::explain {

using TimePoint = std::chrono::system_clock::time_point;

// "2025-01-02T03:04:05.678Z" (UTC, milliseconds).
Term datetime_literal(TimePoint time);

// One call of the embeddings service a step made (a RAG Exploration's, embedding its question or
// concepts): gb:embeddingModel, gb:embeddingInputs, gb:embeddingDimensions,
// gb:embeddingStartedAt and gb:embeddingDurationMs on the step.
struct EmbeddingsCall {
    std::string model;             // as the embeddings service answered
    std::uint64_t inputs = 0;      // texts embedded
    std::uint64_t dimensions = 0;  // of each vector
    TimePoint started_at{};        // wall clock
    std::chrono::milliseconds duration{};
};

// What every step records besides its own content.
struct StepInfo {
    TimePoint generated_at{};
    std::optional<std::string> derived_from{};  // the previous step's URI; none for the first step
    std::optional<std::chrono::milliseconds> duration{};
    std::optional<std::uint64_t> input_tokens{};
    std::optional<std::uint64_t> output_tokens{};
    std::optional<std::string> model{};          // model name, e.g. "extractive" or "gpt-4o-mini"
    std::optional<EmbeddingsCall> embeddings{};  // the embeddings call the step made
};

// A text that may be stored once in the trace store: with `ref` set, the triples reference
// it (gb:answerRef / gb:observationRef) instead of carrying it; `text` is still needed to
// check citation spans.
struct StoredText {
    std::string text;
    std::optional<std::string> ref;  // e.g. RunUris::text("answer")
};

// Where a selected edge or chunk came from: chunk → document, with the chunk's character
// offsets in its document. A fact loaded from a whole file has no chunk: `document` alone
// (the file's URI) is then the source.
struct SourceRef {
    std::string chunk;     // chunk IRI (empty: the source is `document` itself)
    std::string document;  // document IRI (may be empty if unknown)
    std::optional<std::uint64_t> char_offset;
    std::optional<std::uint64_t> char_length;
    // The document's freshness (docs/knowledge.md §3), recorded on it: prov:generatedAtTime
    // (when it was loaded, an xsd:dateTime), dcterms:date (its own date), gb:maxAge and gb:stale
    // (when its collection declares a revalidation age). Empty / none: not recorded.
    std::string loaded_at{};
    std::string date{};
    std::string max_age{};
    std::optional<bool> stale{};
};

// Data tiers: 1 authoritative … 4 inferred; 0 = unknown (not emitted).
struct SelectedEdge {
    Triple edge;  // a knowledge-graph triple; quoted-triple parts are reified as well
    double score = 0.0;
    std::string concept_label;
    std::string reasoning;
    std::optional<SourceRef> source;
    int data_tier = 0;
};

// An edge graph RAG's traversal found, kept by Focus or not, and the hop it was found at (1: out
// of or into a seed entity).
struct ExploredEdge {
    Triple edge;  // quoted-triple parts are reified as for SelectedEdge
    std::uint32_t hop = 1;
};

// An explored edge the caller holds: graph RAG records hundreds per question, and a copy of each
// triple would cost more than writing it. The triple must outlive the building of the step.
struct ExploredEdgeRef {
    const Triple* edge = nullptr;
    std::uint32_t hop = 1;
};

// An Exploration records at most this many explored edges (the first, in traversal order):
// gb:edgeCount stays the total. 500 covers graph_rag.max_subgraph_size's default (150) several
// times over, and bounds a trace of a run configured to explore up to 10,000.
inline constexpr std::size_t kMaxExploredEdges = 500;

struct RetrievedChunk {
    SourceRef source;
    double score = 0.0;
    int data_tier = 0;
    // Fusion contributions (gb:vectorRank/Score, gb:keywordRank/Score): the chunk's best rank,
    // from 1, and its score there, in the vector and keyword rankings that found it.
    std::optional<std::uint64_t> vector_rank{};
    std::optional<double> vector_score{};
    std::optional<std::uint64_t> keyword_rank{};
    std::optional<double> keyword_score{};
    // gb:titleRank / gb:titleScore: rank and score in the title ranking (share of the
    // document title's words the question names), when that ranking found the chunk.
    std::optional<std::uint64_t> title_rank{};
    std::optional<double> title_score{};
    // gb:linkRank: rank in the link ranking (the document's title appears in the text of the
    // best retrieved documents), when that ranking found the chunk.
    std::optional<std::uint64_t> link_rank{};
};

// A re-ranked chunk: points at RetrievedChunk number `retrieved_index` of the exploration.
struct RankedChunk {
    std::size_t retrieved_index = 0;
    double score = 0.0;
    std::string reasoning;
};

// Characters [span_start, span_end) of the answer (Unicode code points) are supported by the
// listed selections (RunUris::edge_selection / retrieved_chunk / ranked_chunk of this run).
// A citation whose span is empty or outside the answer, or with no supporting selection of
// this run, does not resolve and is left out.
struct Citation {
    std::uint64_t span_start = 0;
    std::uint64_t span_end = 0;
    std::vector<std::string> supported_by;
};

// The short answer a synthesis states ("" when the evidence does not decide) and the selections
// it rests on (as Citation::supported_by; selections not of this run are left out).
struct ShortAnswer {
    std::string text;
    std::vector<std::string> supported_by;
};

// One evidence feature of an answer's confidence: its value and, when a calibrator scored the
// answer, its term of the log-odds (positive: it raised the confidence).
struct EvidenceFeatureRecord {
    std::string name;
    double value = 0.0;
    std::optional<double> effect;
};

// How far to trust an answer: the calibrated probability and its calibrator's version when one
// scored it, and the features measured (recorded even without a calibrator, so a fit can read
// them from traces).
// How much of the question the answer covers (gb:Completeness): the parts the question asks
// (its relations, "children", "born"), those the answer's evidence states, and, for a question
// asking for a list, how many answers the evidence has and how many the answer names.
struct AnswerCompleteness {
    std::vector<std::string> asked;
    std::vector<std::string> covered;
    bool list = false;
    std::size_t answers_found = 0;  // distinct answers the evidence has (a list question)
    std::size_t answers_named = 0;  // of those, named by the answer
};

// Two sources giving different values for one single-valued fact (gb:Conflict): the value the
// answer states and a rival, each with the selection that kept it and its sources.
struct AnswerConflict {
    std::string subject;  // in words, as the facts give them
    std::string predicate;
    std::string stated;
    std::string rival;
    std::string stated_selection;  // the step entity that kept each fact
    std::string rival_selection;
    std::vector<std::string> stated_sources;
    std::vector<std::string> rival_sources;
    // Each value's number among the answer's citations when the caller knows it (0: the citation
    // carrying its selection): an agent's looked-up fact has no selection of its own. Not traced.
    std::uint32_t stated_citation = 0;
    std::uint32_t rival_citation = 0;
};

struct AnswerConfidence {
    std::optional<double> probability;
    std::string calibrator;
    std::vector<EvidenceFeatureRecord> features;
    bool abstained = false;  // below the floor: the answer says it does not know
    std::optional<AnswerCompleteness> completeness;
    std::vector<AnswerConflict> conflicts;
};

struct AgentAction {
    std::string thought;
    std::string action;     // tool name; empty when the iteration used no tool
    std::string arguments;  // the tool arguments as JSON text
    // Further tools called in the same iteration, side by side (gb:action once per tool;
    // `arguments` is then the JSON array of every call's {"tool", "args"}).
    std::vector<std::string> more_actions{};
    std::vector<std::string> candidates{};  // gb:toolCandidate: the tools the model was offered
};

// What an agent Observation records besides its text: whether a tool failed (gb:toolStatus
// "error", else "ok") and the last steps of the tool calls' sub-runs it was derived from.
struct ObservationInfo {
    bool error = false;
    std::vector<std::string> sub_run_steps{};
};

struct Routing {
    std::string method;  // "rules", "classifier", "default", "explicit"
    std::vector<std::string> rules_fired;
    double confidence = 0.0;
    std::string engine;  // "graph-rag", "document-rag", "agent"
    // gb:routeScore "<name> <score>": the classifier's similarity per route and the
    // collection's signals ("graph-entities 2"), in order.
    std::vector<std::pair<std::string, double>> scores{};
    // A follow-up's reference resolved against the previous turn (both "" when none):
    // gb:resolvedQuestion, the question passed on; gb:resolvedReference "it -> X (rule)".
    std::string resolved_question{};
    std::string resolved_reference{};
    // A follow-up's "else": gb:excludes, what the engine is asked to leave out of its answer.
    std::vector<std::string> excluded{};
    // gb:questionType: the deciding rule's question type ("" when none said).
    std::string question_type{};
};

// How relevant an engine's answer was judged (docs/query.md §3): a gb:Reflection node
// <step>:reflection, linked from the step by gb:reflection.
struct ReflectionInfo {
    std::string method;      // gb:reflectionMethod: "llm" or "model-free"
    double score = 0.0;      // gb:reflectionScore
    std::string reason{};    // gb:reflectionReason
    std::string fallback{};  // gb:reflectionFallback: why an llm judgement was not used
    // The judge's (only when a model was asked): gb:model / prov:wasAttributedTo, tokens, time.
    std::string model{};
    std::optional<std::uint64_t> input_tokens{};
    std::optional<std::uint64_t> output_tokens{};
    std::optional<std::chrono::milliseconds> duration{};
};

struct EscalationInfo {
    std::string reason;
    double relevance = 0.0;
    std::string next_engine;
    std::string from_engine{};                   // gb:fromEngine, when known
    std::optional<ReflectionInfo> reflection{};  // of the answer escalated past
    std::string rephrased_question{};  // gb:rephrasedQuestion: what the next engine is asked
    std::string rephrase_fallback{};   // gb:rephraseFallback: why it is asked the original
};

// One source a routed answer rests on (gb:AnswerSource): prov:wasDerivedFrom `source`.
struct AnswerSourceInfo {
    std::string source;                    // the file, document or chunk IRI
    int data_tier = 0;                     // 1..4; 0: not known (not emitted)
    std::string engine;                    // the engine that found it
    std::optional<double> fusion_score{};  // its RRF contribution, with several engines
    // Its freshness as the engine's citation gave it (docs/knowledge.md §3): when it was loaded
    // (prov:generatedAtTime), its own date (dcterms:date), and whether it is past its
    // collection's revalidation age (gb:stale; none when the collection declares no age).
    std::string loaded_at{};
    std::string date{};
    std::optional<bool> stale{};
};

// The epistemic provenance of a routed answer, added to its Conclusion.
struct AnswerProvenance {
    std::string derivation_chain;  // "route:rules > graph-rag:traversal > llm:extractive"
    int aggregate_tier = 0;        // the weakest tier the answer depends on; 0: not emitted
    std::string engine;            // the engine whose answer won
    std::vector<AnswerSourceInfo> sources;
};

// The aggregate tier of an answer resting on `sources`: the weakest (highest) tier among them,
// a source of unknown tier counting as 4, and 4 for no source at all (conservative).
int aggregate_tier(const std::vector<AnswerSourceInfo>& sources) noexcept;

// ---- the run ------------------------------------------------------------------------------

// The Question activity. `worker_agent` is worker_agent_uri(service). With `parent_uri`
// (the calling step), the Question prov:used it and, if it is a glassbox URI,
// prov:wasInformedBy the calling run's Question. With a non-empty `conversation` (the request's
// session_id), gb:conversation: the run is a turn of that conversation. Workers pass it for
// top-level runs only (no parent_uri); a sub-run belongs to its caller's turn. A non-empty
// `request_id` (the query request's, from the HTTP gateway) becomes gb:requestId; a non-empty
// `collection`, the knowledge collection the run asks, gb:collection. A non-empty `revision_of`
// (the Question IRI of an earlier run this one asks again: `glassbox traces replay`) becomes
// prov:wasRevisionOf.
std::vector<Triple> question(const RunUris& run, std::string_view query, TimePoint started,
                             std::string_view worker_agent,
                             std::optional<std::string_view> parent_uri = std::nullopt,
                             std::optional<std::string_view> conversation = std::nullopt,
                             std::string_view request_id = {}, std::string_view collection = {},
                             std::string_view revision_of = {});

// prov:endedAtTime and gb:status ("complete" | "error" | "incomplete") of the Question.
std::vector<Triple> trace_end(const RunUris& run, TimePoint ended, TraceStatus status);

// ---- steps ----------------------------------------------------------------------------------

std::vector<Triple> grounding(const RunUris& run, const StepInfo& step,
                              const std::vector<std::string>& concepts);
// gb:edgeCount `edge_count` (every edge explored), a gb:seedEntity per seed and a
// gb:exploredEdge per explored edge, at most kMaxExploredEdges of them (the first):
// <exploration>:edge:N, a gb:ExploredEdge and rdf:Statement with its gb:hop.
std::vector<Triple> graph_exploration(const RunUris& run, const StepInfo& step,
                                      const std::vector<std::string>& seed_entities,
                                      std::uint64_t edge_count,
                                      const std::vector<ExploredEdge>& explored = {});
std::vector<Triple> graph_focus(const RunUris& run, const StepInfo& step,
                                const std::vector<SelectedEdge>& edges);
std::vector<Triple> document_exploration(const RunUris& run, const StepInfo& step,
                                         const std::vector<RetrievedChunk>& chunks);
std::vector<Triple> document_focus(const RunUris& run, const StepInfo& step,
                                   const std::vector<RankedChunk>& chunks);
std::vector<Triple> synthesis(const RunUris& run, const StepInfo& step, const StoredText& answer,
                              const std::vector<Citation>& citations = {},
                              const std::optional<ShortAnswer>& short_answer = std::nullopt,
                              const AnswerConfidence* confidence = nullptr);
// Agent iteration n: gb:Analysis, plus gb:ToolUse when it calls a tool.
std::vector<Triple> analysis(const RunUris& run, std::size_t n, const StepInfo& step,
                             const AgentAction& action);
std::vector<Triple> observation(const RunUris& run, std::size_t n, const StepInfo& step,
                                const StoredText& text, const ObservationInfo& info = {});
// With `termination` (agent runs): gb:terminationReason ("final-answer", "max-iterations", …).
std::vector<Triple> conclusion(const RunUris& run, const StepInfo& step, const StoredText& answer,
                               std::string_view termination = {},
                               const std::optional<std::string>& short_answer = std::nullopt);
std::vector<Triple> routing_decision(const RunUris& run, const StepInfo& step,
                                     const Routing& routing);
// A routed query's Conclusion (as conclusion()) with its epistemic provenance: gb:engine,
// gb:derivationChain, gb:aggregateTier and a gb:answerSource per source
// (<conclusion>:source:N, a gb:AnswerSource with gb:dataTier, gb:engine, gb:fusionScore).
std::vector<Triple> routed_conclusion(
    const RunUris& run, const StepInfo& step, const StoredText& answer,
    const AnswerProvenance& provenance,
    const std::optional<std::string>& short_answer = std::nullopt);
std::vector<Triple> escalation(const RunUris& run, std::size_t n, const StepInfo& step,
                               const EscalationInfo& info);
// The gb:Reflection of `step_uri` (a routed Conclusion's, of the winning answer).
std::vector<Triple> reflection(std::string_view step_uri, const ReflectionInfo& info);

// ---- the echo chain (Question → Synthesis), for the diagnostic echo worker -------------------

// = question(run, question, time, worker_agent, parent_uri).
std::vector<Triple> echo_question(const RunUris& run, std::string_view question, TimePoint time,
                                  std::string_view worker_agent,
                                  std::optional<std::string_view> parent_uri = std::nullopt);
// The Synthesis (the first and only step: no derivation), carrying the answer text.
std::vector<Triple> echo_synthesis(const RunUris& run, std::string_view answer, TimePoint time,
                                   std::chrono::milliseconds duration);

// ---- the same builders, writing into a sink -------------------------------------------------

// Sinks for the builders' triples, in urn:graph:retrieval.
TripleList triple_list(std::size_t expected = 16);
// Appends the JSON array of the triples to `out` (closed by close() or at destruction).
TripleJson triple_json(std::string& out);

void question(TripleSink& out, const RunUris& run, std::string_view query, TimePoint started,
              std::string_view worker_agent,
              std::optional<std::string_view> parent_uri = std::nullopt,
              std::optional<std::string_view> conversation = std::nullopt,
              std::string_view request_id = {}, std::string_view collection = {},
              std::string_view revision_of = {});
void trace_end(TripleSink& out, const RunUris& run, TimePoint ended, TraceStatus status);
void grounding(TripleSink& out, const RunUris& run, const StepInfo& step,
               const std::vector<std::string>& concepts);
void graph_exploration(TripleSink& out, const RunUris& run, const StepInfo& step,
                       const std::vector<std::string>& seed_entities, std::uint64_t edge_count,
                       const std::vector<ExploredEdge>& explored = {});
// The same triples from edges held by the caller.
void graph_exploration(TripleSink& out, const RunUris& run, const StepInfo& step,
                       const std::vector<std::string>& seed_entities, std::uint64_t edge_count,
                       std::span<const ExploredEdgeRef> explored);
// A follow-up's "else" on `step_uri` (a graph-rag Focus): gb:excludes for each label the
// answer leaves out, gb:excludedEdgeCount for the edges dropped because they name one.
void excluded_answers(TripleSink& out, std::string_view step_uri,
                      const std::vector<std::string>& labels, std::size_t edges);
void graph_focus(TripleSink& out, const RunUris& run, const StepInfo& step,
                 const std::vector<SelectedEdge>& edges);
void document_exploration(TripleSink& out, const RunUris& run, const StepInfo& step,
                          const std::vector<RetrievedChunk>& chunks);
void document_focus(TripleSink& out, const RunUris& run, const StepInfo& step,
                    const std::vector<RankedChunk>& chunks);
// With `short_answer`: gb:shortAnswer and gb:shortAnswerSupportedBy on the Synthesis.
// With `confidence`: gb:answerConfidence, gb:calibrator and each gb:evidenceFeature.
void synthesis(TripleSink& out, const RunUris& run, const StepInfo& step, const StoredText& answer,
               const std::vector<Citation>& citations = {},
               const std::optional<ShortAnswer>& short_answer = std::nullopt,
               const AnswerConfidence* confidence = nullptr);
void analysis(TripleSink& out, const RunUris& run, std::size_t n, const StepInfo& step,
              const AgentAction& action);
void observation(TripleSink& out, const RunUris& run, std::size_t n, const StepInfo& step,
                 const StoredText& text, const ObservationInfo& info = {});
void conclusion(TripleSink& out, const RunUris& run, const StepInfo& step, const StoredText& answer,
                std::string_view termination = {},
                const std::optional<std::string>& short_answer = std::nullopt);
void routing_decision(TripleSink& out, const RunUris& run, const StepInfo& step,
                      const Routing& routing);
// With `short_answer`, gb:shortAnswer too (a conversation's next turn reads it).
void routed_conclusion(TripleSink& out, const RunUris& run, const StepInfo& step,
                       const StoredText& answer, const AnswerProvenance& provenance,
                       const std::optional<std::string>& short_answer = std::nullopt);
// The confidence of the answer a Conclusion states (a routed query's: its engine's; with
// gb:answerConfidence, gb:calibrator, gb:abstained and each gb:evidenceFeature, as synthesis()).
std::vector<Triple> conclusion_confidence(const RunUris& run, const AnswerConfidence& confidence);
// The same on the Conclusion a builder is writing (an agent's: its own answer's confidence).
void conclusion_confidence(TripleSink& out, const RunUris& run, const AnswerConfidence& confidence);
// The confidence a FINAL body carries ("confidence", "calibrator", "abstained", "evidence":
// [{"name", "value", "effect"}], "conflicts": [{"subject", "predicate", "stated", "rival",
// "stated_sources", "rival_sources", "stated_selection", "rival_selection"}]), read leniently
// (a conflict without both values is skipped): nullopt when it has no evidence features and no
// confidence.
std::optional<AnswerConfidence> answer_confidence_of(const nlohmann::json& final);
// The provenance part of routed_conclusion alone, on the run's Conclusion (an agent's
// Conclusion, written by conclusion() with its termination, adds its answer's sources so).
void answer_provenance(TripleSink& out, const RunUris& run, const AnswerProvenance& provenance);
void escalation(TripleSink& out, const RunUris& run, std::size_t n, const StepInfo& step,
                const EscalationInfo& info);
void reflection(TripleSink& out, std::string_view step_uri, const ReflectionInfo& info);
void echo_question(TripleSink& out, const RunUris& run, std::string_view question, TimePoint time,
                   std::string_view worker_agent,
                   std::optional<std::string_view> parent_uri = std::nullopt);
void echo_synthesis(TripleSink& out, const RunUris& run, std::string_view answer, TimePoint time,
                    std::chrono::milliseconds duration);

}  // namespace glassbox::schema::explain
