// Builds the PROV-O triples of each explain step.
#include "schema/explain_builder.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>

#include "base/fnv.hpp"
#include "base/time_format.hpp"
#include "schema/triple_sink.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema::explain {
namespace {

namespace v = vocab;

// Writes a step's triples to a sink, each chunk or document described once. Every subject and
// object IRI it is handed (a request's parent_uri, a store's entity, chunk and document IRIs)
// goes out as writable_iri(): one N-Triples rejects never enters a trace. Predicates and
// classes are the vocabulary's own.
class Emitter {
public:
    explicit Emitter(TripleSink& out) : out_(out) {}
    void iri(std::string_view s, std::string_view p, std::string_view o) {
        if (!writable(s) || !writable(o)) {
            out_.iri(writable_iri(s), p, writable_iri(o));
        } else {
            out_.iri(s, p, o);
        }
    }
    void literal(std::string_view s, std::string_view p, std::string_view value,
                 std::string_view datatype = {}) {
        if (!writable(s) || (!datatype.empty() && !writable(datatype))) {
            out_.literal(writable_iri(s), p, value,
                         datatype.empty() ? std::string() : writable_iri(datatype));
        } else {
            out_.literal(s, p, value, datatype);
        }
    }
    void integer(std::string_view s, std::string_view p, std::uint64_t value) {
        out_.integer(s, p, value);
    }
    void number(std::string_view s, std::string_view p, double value) { out_.number(s, p, value); }
    void time(std::string_view s, std::string_view p, TimePoint t) {
        out_.literal(s, p, base::format_xsd_datetime(t), kXsdDateTime);
    }
    void term(std::string_view s, std::string_view p, const Term& o) {
        if (o.is_iri() && !writable(o.as_iri().value)) {
            out_.iri(writable_iri(s), p, writable_iri(o.as_iri().value));
        } else if (o.is_literal() && !o.as_literal().datatype.empty() &&
                   !writable(o.as_literal().datatype)) {
            Literal fixed = o.as_literal();
            fixed.datatype = writable_iri(fixed.datatype);
            out_.term(writable_iri(s), p, Term(std::move(fixed)));
        } else if (!writable(s)) {
            out_.term(writable_iri(s), p, o);
        } else {
            out_.term(s, p, o);
        }
    }
    // `cls` is one of the vocabulary's classes (writable): only the subject is checked.
    void type(std::string_view s, std::string_view cls) {
        if (writable(s)) {
            out_.iri(s, v::kRdfType, cls);
        } else {
            out_.iri(writable_iri(s), v::kRdfType, cls);
        }
    }
    // True the first time `resource` is named: a chunk or document shared by several selections
    // is described once per message (the same triples again would add nothing to the graph).
    // The views point into the builder's arguments, which outlive the Emitter.
    bool first_mention(std::string_view resource) { return described_.emplace(resource).second; }

private:
    // is_writable_iri(iri), with the IRIs found writable remembered (a table placed by their
    // length and last 8 bytes, the match decided by the whole text): a step names its own URI
    // and each selection's several times, and the entities of explored edges again and again;
    // comparing costs less than looking at each byte anew. Short IRIs are simply checked.
    bool writable(std::string_view iri) {
        if (iri.size() < 8) return is_writable_iri(iri);
        std::uint64_t tail = 0;
        std::memcpy(&tail, iri.data() + iri.size() - 8, sizeof tail);
        auto& known = writable_[base::mix64(tail ^ iri.size()) % writable_.size()];
        if (known == iri) return true;
        if (!is_writable_iri(iri)) return false;
        known.assign(iri);
        return true;
    }

    TripleSink& out_;
    std::unordered_set<std::string_view> described_;
    std::array<std::string, 64> writable_;
};

std::size_t code_points(std::string_view text) {
    std::size_t n = 0;
    for (char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    }
    return n;
}

// The parts every step shares.
// `uri` was made by `model` (a prov:SoftwareAgent typed gb:Model), named by gb:model too.
void attribute_to_model(Emitter& e, std::string_view uri, const std::string& model) {
    const auto agent = model_agent_uri(model);
    e.type(agent, v::kProvSoftwareAgent);
    e.type(agent, v::kModel);
    e.literal(agent, v::kRdfsLabel, model);
    e.iri(uri, v::kProvWasAttributedTo, agent);
    e.literal(uri, v::kModelName, model);
}

// The embeddings call a step made, on the step (the model's name only: the embedder is no agent
// of the step's content).
void embeddings_call(Emitter& e, std::string_view uri, const EmbeddingsCall& call) {
    if (!call.model.empty()) e.literal(uri, v::kEmbeddingModel, call.model);
    e.integer(uri, v::kEmbeddingInputs, call.inputs);
    e.integer(uri, v::kEmbeddingDimensions, call.dimensions);
    e.time(uri, v::kEmbeddingStartedAt, call.started_at);
    e.integer(uri, v::kEmbeddingDurationMs,
              static_cast<std::uint64_t>(std::max<std::int64_t>(0, call.duration.count())));
}

void step_header(Emitter& e, const RunUris& run, std::string_view uri, std::string_view cls,
                 const StepInfo& step) {
    e.type(uri, v::kProvEntity);
    e.type(uri, cls);
    e.iri(uri, v::kProvWasGeneratedBy, run.question());
    e.time(uri, v::kProvGeneratedAtTime, step.generated_at);
    if (step.derived_from && !step.derived_from->empty()) {
        e.iri(uri, v::kProvWasDerivedFrom, *step.derived_from);
    }
    if (step.duration) {
        e.literal(uri, v::kDurationMs, std::to_string(step.duration->count()), kXsdInteger);
    }
    if (step.input_tokens) e.integer(uri, v::kInputTokens, *step.input_tokens);
    if (step.output_tokens) e.integer(uri, v::kOutputTokens, *step.output_tokens);
    if (step.model && !step.model->empty()) attribute_to_model(e, uri, *step.model);
    if (step.embeddings) embeddings_call(e, uri, *step.embeddings);
}

void data_tier(Emitter& e, std::string_view uri, int tier) {
    if (tier >= 1 && tier <= 4) e.integer(uri, v::kDataTier, static_cast<std::uint64_t>(tier));
}

// A source document, typed, with its freshness when known (once per message).
void describe_document(Emitter& e, const std::string& document, const SourceRef& src) {
    if (!e.first_mention(document)) return;
    e.type(document, v::kProvEntity);
    e.type(document, v::kDocument);
    if (base::is_xsd_datetime(src.loaded_at))
        e.literal(document, v::kProvGeneratedAtTime, src.loaded_at, kXsdDateTime);
    if (!src.date.empty()) {
        // An xsd:date ("2020-01-01") or an xsd:dateTime, typed as what it is.
        e.literal(document, v::kDctermsDate, src.date,
                  base::is_xsd_datetime(src.date) ? kXsdDateTime : kXsdDate);
    }
    if (!src.max_age.empty()) e.literal(document, v::kMaxAge, src.max_age);
    if (src.stale) e.literal(document, v::kStale, *src.stale ? "true" : "false", kXsdBoolean);
}

// `from` (a selection) → its chunk → the chunk's document, with offsets; or `from` → its
// document when it was loaded from a whole file. Shared chunks and documents described once.
void source(Emitter& e, std::string_view from, const SourceRef& src) {
    if (src.chunk.empty()) {
        // Loaded from a whole file or document, not a chunk of one: the selection points there.
        if (src.document.empty()) return;
        e.iri(from, v::kSourceDocument, src.document);
        e.iri(from, v::kProvWasDerivedFrom, src.document);
        describe_document(e, src.document, src);
        return;
    }
    e.iri(from, v::kSourceChunk, src.chunk);
    e.iri(from, v::kProvWasDerivedFrom, src.chunk);
    if (!src.document.empty()) e.iri(from, v::kSourceDocument, src.document);
    if (!e.first_mention(src.chunk)) return;
    e.type(src.chunk, v::kProvEntity);
    e.type(src.chunk, v::kChunk);
    if (src.char_offset) e.integer(src.chunk, v::kCharOffset, *src.char_offset);
    if (src.char_length) e.integer(src.chunk, v::kCharLength, *src.char_length);
    if (!src.document.empty()) {
        e.iri(src.chunk, v::kProvWasDerivedFrom, src.document);
        describe_document(e, src.document, src);
    }
}

// Describes `edge` as an rdf:Statement named `uri`. A quoted triple in any position becomes a
// further statement `<uri>:s|p|o`, so the trace stays plain RDF 1.1.
void reify(Emitter& e, const std::string& uri, const Triple& edge) {
    e.type(uri, v::kRdfStatement);
    const std::array parts{std::pair{&edge.s, std::pair{v::kRdfSubject, ":s"}},
                           std::pair{&edge.p, std::pair{v::kRdfPredicate, ":p"}},
                           std::pair{&edge.o, std::pair{v::kRdfObject, ":o"}}};
    for (const auto& [term, names] : parts) {
        if (term->is_triple()) {
            const std::string inner = uri + names.second;
            reify(e, inner, term->as_triple());
            e.iri(uri, names.first, inner);
        } else {
            e.term(uri, names.first, *term);
        }
    }
}

void stored_text(Emitter& e, std::string_view uri, const StoredText& text,
                 std::string_view text_property, std::string_view ref_property) {
    if (text.ref && !text.ref->empty()) {
        e.iri(uri, ref_property, *text.ref);
    } else {
        e.literal(uri, text_property, text.text);
    }
}

}  // namespace

Term datetime_literal(TimePoint time) { return xsd_datetime(base::format_xsd_datetime(time)); }

void question(TripleSink& out, const RunUris& run, std::string_view query, TimePoint started,
              std::string_view worker_agent, std::optional<std::string_view> parent_uri,
              std::optional<std::string_view> conversation, std::string_view request_id,
              std::string_view collection, std::string_view revision_of) {
    Emitter e(out);
    const auto q = run.question();
    e.type(q, v::kProvActivity);
    e.type(q, v::kQuestion);
    e.literal(q, v::kQuery, query);
    e.time(q, v::kProvStartedAtTime, started);
    if (!worker_agent.empty()) {
        e.type(worker_agent, v::kProvSoftwareAgent);
        e.type(worker_agent, v::kWorker);
        e.iri(q, v::kProvWasAssociatedWith, worker_agent);
    }
    if (parent_uri && !parent_uri->empty()) {
        e.iri(q, v::kProvUsed, *parent_uri);
        if (auto parent_run = RunUris::from_uri(*parent_uri);
            parent_run && parent_run->uuid() != run.uuid()) {
            e.iri(q, v::kProvWasInformedBy, parent_run->question());
        }
    }
    if (conversation && !conversation->empty()) e.literal(q, v::kConversation, *conversation);
    if (!request_id.empty()) e.literal(q, v::kRequestId, request_id);
    if (!collection.empty()) e.literal(q, v::kCollection, collection);
    if (!revision_of.empty()) e.iri(q, v::kProvWasRevisionOf, revision_of);
}

void trace_end(TripleSink& out, const RunUris& run, TimePoint ended, TraceStatus status) {
    Emitter e(out);
    const auto q = run.question();
    e.time(q, v::kProvEndedAtTime, ended);
    const auto name = to_string(status);
    e.literal(q, v::kStatus, name.empty() ? std::string_view("complete") : name);
}

void grounding(TripleSink& out, const RunUris& run, const StepInfo& step,
               const std::vector<std::string>& concepts) {
    Emitter e(out);
    const auto uri = run.grounding();
    step_header(e, run, uri, v::kGrounding, step);
    for (const auto& c : concepts) e.literal(uri, v::kConcept, c);
}

void graph_exploration(TripleSink& out, const RunUris& run, const StepInfo& step,
                       const std::vector<std::string>& seed_entities, std::uint64_t edge_count,
                       const std::vector<ExploredEdge>& explored) {
    std::vector<ExploredEdgeRef> refs;
    refs.reserve(std::min(explored.size(), kMaxExploredEdges));
    for (const auto& edge : explored) {
        if (refs.size() == kMaxExploredEdges) break;
        refs.push_back(ExploredEdgeRef{&edge.edge, edge.hop});
    }
    graph_exploration(out, run, step, seed_entities, edge_count, refs);
}

void graph_exploration(TripleSink& out, const RunUris& run, const StepInfo& step,
                       const std::vector<std::string>& seed_entities, std::uint64_t edge_count,
                       std::span<const ExploredEdgeRef> explored) {
    Emitter e(out);
    const auto uri = run.exploration();
    step_header(e, run, uri, v::kExploration, step);
    e.integer(uri, v::kEdgeCount, edge_count);
    for (const auto& s : seed_entities) e.iri(uri, v::kSeedEntity, s);
    const auto n = std::min(explored.size(), kMaxExploredEdges);
    // run.explored_edge(i) is the stem then i: the stem is built once, the number replaced.
    std::string edge = run.explored_edge(0);
    const std::size_t stem = edge.size() - 1;
    for (std::size_t i = 0; i < n; ++i) {
        char digits[24];
        const auto written = std::to_chars(std::begin(digits), std::end(digits), i);
        edge.resize(stem);
        edge.append(digits, written.ptr);
        e.iri(uri, v::kExploredEdgeProperty, edge);
        e.type(edge, v::kExploredEdge);
        reify(e, edge, *explored[i].edge);
        e.integer(edge, v::kHop, explored[i].hop);
    }
}

void graph_focus(TripleSink& out, const RunUris& run, const StepInfo& step,
                 const std::vector<SelectedEdge>& edges) {
    Emitter e(out);
    const auto uri = run.focus();
    step_header(e, run, uri, v::kFocus, step);
    e.integer(uri, v::kEdgeCount, edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto& edge = edges[i];
        const auto sel = run.edge_selection(i);
        e.iri(uri, v::kSelectedEdge, sel);
        e.type(sel, v::kProvEntity);
        e.type(sel, v::kEdgeSelection);
        reify(e, sel, edge.edge);
        e.number(sel, v::kScore, edge.score);
        if (!edge.concept_label.empty()) e.literal(sel, v::kConcept, edge.concept_label);
        if (!edge.reasoning.empty()) e.literal(sel, v::kReasoning, edge.reasoning);
        data_tier(e, sel, edge.data_tier);
        if (edge.source) source(e, sel, *edge.source);
    }
}

void excluded_answers(TripleSink& out, std::string_view step_uri,
                      const std::vector<std::string>& labels, std::size_t edges) {
    if (labels.empty()) return;
    Emitter e(out);
    for (const auto& label : labels) e.literal(step_uri, v::kExcludes, label);
    e.integer(step_uri, v::kExcludedEdgeCount, edges);
}

namespace {

// A chunk chosen by a step: linked from the step by `link`, an entity with its score.
void chunk_selection(Emitter& e, const std::string& step, std::string_view link,
                     const std::string& sel, double score) {
    e.iri(step, link, sel);
    e.type(sel, v::kProvEntity);
    e.type(sel, v::kChunkSelection);
    e.number(sel, v::kScore, score);
}

}  // namespace

void document_exploration(TripleSink& out, const RunUris& run, const StepInfo& step,
                          const std::vector<RetrievedChunk>& chunks) {
    Emitter e(out);
    const auto uri = run.exploration();
    step_header(e, run, uri, v::kExploration, step);
    e.integer(uri, v::kChunkCount, chunks.size());
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const auto sel = run.retrieved_chunk(i);
        chunk_selection(e, uri, v::kRetrievedChunk, sel, chunks[i].score);
        data_tier(e, sel, chunks[i].data_tier);
        if (chunks[i].vector_rank) e.integer(sel, v::kVectorRank, *chunks[i].vector_rank);
        if (chunks[i].vector_score) e.number(sel, v::kVectorScore, *chunks[i].vector_score);
        if (chunks[i].keyword_rank) e.integer(sel, v::kKeywordRank, *chunks[i].keyword_rank);
        if (chunks[i].keyword_score) e.number(sel, v::kKeywordScore, *chunks[i].keyword_score);
        if (chunks[i].title_rank) e.integer(sel, v::kTitleRank, *chunks[i].title_rank);
        if (chunks[i].title_score) e.number(sel, v::kTitleScore, *chunks[i].title_score);
        if (chunks[i].link_rank) e.integer(sel, v::kLinkRank, *chunks[i].link_rank);
        source(e, sel, chunks[i].source);
    }
}

void document_focus(TripleSink& out, const RunUris& run, const StepInfo& step,
                    const std::vector<RankedChunk>& chunks) {
    Emitter e(out);
    const auto uri = run.focus();
    step_header(e, run, uri, v::kFocus, step);
    e.integer(uri, v::kChunkCount, chunks.size());
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const auto sel = run.ranked_chunk(i);
        chunk_selection(e, uri, v::kSelectedChunk, sel, chunks[i].score);
        if (!chunks[i].reasoning.empty()) e.literal(sel, v::kReasoning, chunks[i].reasoning);
        e.iri(sel, v::kProvWasDerivedFrom, run.retrieved_chunk(chunks[i].retrieved_index));
    }
}

namespace {

// The confidence a Synthesis or Conclusion states (`step` names it in the feature URIs).
void answer_confidence(Emitter& e, const RunUris& run, std::string_view uri, std::string_view step,
                       const AnswerConfidence& confidence) {
    if (confidence.probability) e.number(uri, v::kAnswerConfidence, *confidence.probability);
    if (!confidence.calibrator.empty()) e.literal(uri, v::kCalibrator, confidence.calibrator);
    if (confidence.abstained) e.literal(uri, v::kAbstained, "true", kXsdBoolean);
    for (std::size_t i = 0; i < confidence.features.size(); ++i) {
        const auto& f = confidence.features[i];
        const auto node = run.evidence_feature(step, i);
        e.iri(uri, v::kEvidenceFeatureProperty, node);
        e.type(node, v::kProvEntity);
        e.type(node, v::kEvidenceFeature);
        e.literal(node, v::kFeatureName, f.name);
        e.number(node, v::kFeatureValue, f.value);
        if (f.effect) e.number(node, v::kFeatureEffect, *f.effect);
    }
    for (std::size_t i = 0; i < confidence.conflicts.size(); ++i) {
        const auto& c = confidence.conflicts[i];
        const auto node = run.conflict(step, i);
        e.iri(uri, v::kConflictProperty, node);
        e.type(node, v::kProvEntity);
        e.type(node, v::kConflict);
        e.literal(node, v::kStatedValue, c.stated);
        e.literal(node, v::kRivalValue, c.rival);
        if (!c.stated_selection.empty()) e.iri(node, v::kStatedSelection, c.stated_selection);
        if (!c.rival_selection.empty()) e.iri(node, v::kRivalSelection, c.rival_selection);
        for (const auto& s : c.stated_sources) e.iri(node, v::kStatedSource, s);
        for (const auto& s : c.rival_sources) e.iri(node, v::kRivalSource, s);
    }
    if (const auto& c = confidence.completeness) {
        const auto node = run.completeness(step);
        e.iri(uri, v::kCompletenessProperty, node);
        e.type(node, v::kProvEntity);
        e.type(node, v::kCompleteness);
        for (const auto& part : c->asked) e.literal(node, v::kAskedPart, part);
        for (const auto& part : c->covered) e.literal(node, v::kCoveredPart, part);
        if (c->list) {
            e.literal(node, v::kListQuestion, "true", kXsdBoolean);
            e.integer(node, v::kAnswersFound, c->answers_found);
            e.integer(node, v::kAnswersNamed, c->answers_named);
        }
    }
}

}  // namespace

void synthesis(TripleSink& out, const RunUris& run, const StepInfo& step, const StoredText& answer,
               const std::vector<Citation>& citations,
               const std::optional<ShortAnswer>& short_answer, const AnswerConfidence* confidence) {
    Emitter e(out);
    const auto uri = run.synthesis();
    step_header(e, run, uri, v::kSynthesis, step);
    stored_text(e, uri, answer, v::kAnswerText, v::kAnswerRef);
    if (short_answer) {
        e.literal(uri, v::kShortAnswer, short_answer->text);
        for (const auto& s : short_answer->supported_by) {
            if (run.is_selection(s)) e.iri(uri, v::kShortAnswerSupportedBy, s);
        }
    }
    const auto length = code_points(answer.text);
    std::size_t emitted = 0;
    for (const auto& c : citations) {
        if (c.span_start >= c.span_end || c.span_end > length) continue;
        std::vector<std::string_view> supports;
        for (const auto& s : c.supported_by) {
            if (run.is_selection(s)) supports.push_back(s);
        }
        if (supports.empty()) continue;
        const auto cit = run.citation(emitted++);
        e.iri(uri, v::kCitationProperty, cit);
        e.type(cit, v::kProvEntity);
        e.type(cit, v::kCitation);
        e.integer(cit, v::kSpanStart, c.span_start);
        e.integer(cit, v::kSpanEnd, c.span_end);
        for (auto s : supports) e.iri(cit, v::kSupportedBy, s);
    }
    if (confidence) answer_confidence(e, run, uri, "synthesis", *confidence);
}

void analysis(TripleSink& out, const RunUris& run, std::size_t n, const StepInfo& step,
              const AgentAction& action) {
    Emitter e(out);
    const auto uri = run.analysis(n);
    step_header(e, run, uri, v::kAnalysis, step);
    e.integer(uri, v::kIteration, n);
    if (!action.thought.empty()) e.literal(uri, v::kThought, action.thought);
    if (!action.action.empty()) {
        e.type(uri, v::kToolUse);
        e.literal(uri, v::kAction, action.action);
        for (const auto& more : action.more_actions) e.literal(uri, v::kAction, more);
        if (!action.arguments.empty()) e.literal(uri, v::kArguments, action.arguments);
    }
    for (const auto& tool : action.candidates) e.literal(uri, v::kToolCandidate, tool);
}

void observation(TripleSink& out, const RunUris& run, std::size_t n, const StepInfo& step,
                 const StoredText& text, const ObservationInfo& info) {
    Emitter e(out);
    const auto uri = run.observation(n);
    step_header(e, run, uri, v::kObservation, step);
    e.integer(uri, v::kIteration, n);
    stored_text(e, uri, text, v::kObservationText, v::kObservationRef);
    e.literal(uri, v::kToolStatus, info.error ? "error" : "ok");
    for (const auto& sub : info.sub_run_steps) e.iri(uri, v::kProvWasDerivedFrom, sub);
}

void conclusion(TripleSink& out, const RunUris& run, const StepInfo& step, const StoredText& answer,
                std::string_view termination, const std::optional<std::string>& short_answer) {
    Emitter e(out);
    const auto uri = run.conclusion();
    step_header(e, run, uri, v::kConclusion, step);
    stored_text(e, uri, answer, v::kAnswerText, v::kAnswerRef);
    if (!termination.empty()) e.literal(uri, v::kTerminationReason, termination);
    if (short_answer) e.literal(uri, v::kShortAnswer, *short_answer);
}

void routing_decision(TripleSink& out, const RunUris& run, const StepInfo& step,
                      const Routing& routing) {
    Emitter e(out);
    const auto uri = run.routing_decision();
    step_header(e, run, uri, v::kRoutingDecision, step);
    e.literal(uri, v::kRoutingMethod, routing.method);
    for (const auto& r : routing.rules_fired) e.literal(uri, v::kRuleFired, r);
    e.number(uri, v::kConfidence, routing.confidence);
    e.literal(uri, v::kEngine, routing.engine);
    for (const auto& [name, score] : routing.scores) {
        char value[32];
        std::snprintf(value, sizeof value, "%.4f", score);
        e.literal(uri, v::kRouteScore, name + " " + value);
    }
    if (!routing.resolved_question.empty())
        e.literal(uri, v::kResolvedQuestion, routing.resolved_question);
    if (!routing.resolved_reference.empty())
        e.literal(uri, v::kResolvedReference, routing.resolved_reference);
    for (const auto& label : routing.excluded) e.literal(uri, v::kExcludes, label);
    if (!routing.question_type.empty()) e.literal(uri, v::kQuestionType, routing.question_type);
}

void routed_conclusion(TripleSink& out, const RunUris& run, const StepInfo& step,
                       const StoredText& answer, const AnswerProvenance& provenance,
                       const std::optional<std::string>& short_answer) {
    conclusion(out, run, step, answer, {}, short_answer);
    answer_provenance(out, run, provenance);
}

int aggregate_tier(const std::vector<AnswerSourceInfo>& sources) noexcept {
    int weakest = 0;
    for (const auto& s : sources)
        weakest = std::max(weakest, s.data_tier >= 1 && s.data_tier <= 4 ? s.data_tier : 4);
    return weakest == 0 ? 4 : weakest;
}

void answer_provenance(TripleSink& out, const RunUris& run, const AnswerProvenance& provenance) {
    Emitter e(out);
    const auto uri = run.conclusion();
    if (!provenance.engine.empty()) e.literal(uri, v::kEngine, provenance.engine);
    if (!provenance.derivation_chain.empty())
        e.literal(uri, v::kDerivationChain, provenance.derivation_chain);
    if (provenance.aggregate_tier >= 1 && provenance.aggregate_tier <= 4)
        e.integer(uri, v::kAggregateTier, static_cast<std::uint64_t>(provenance.aggregate_tier));
    for (std::size_t i = 0; i < provenance.sources.size(); ++i) {
        const auto& source = provenance.sources[i];
        const std::string node = uri + ":source:" + std::to_string(i);
        e.iri(uri, v::kAnswerSourceProperty, node);
        e.type(node, v::kProvEntity);
        e.type(node, v::kAnswerSource);
        if (!source.source.empty()) e.iri(node, v::kProvWasDerivedFrom, source.source);
        data_tier(e, node, source.data_tier);
        if (!source.engine.empty()) e.literal(node, v::kEngine, source.engine);
        if (source.fusion_score) e.number(node, v::kFusionScore, *source.fusion_score);
        if (base::is_xsd_datetime(source.loaded_at))
            e.literal(node, v::kProvGeneratedAtTime, source.loaded_at, kXsdDateTime);
        if (!source.date.empty()) {
            e.literal(node, v::kDctermsDate, source.date,
                      base::is_xsd_datetime(source.date) ? kXsdDateTime : kXsdDate);
        }
        if (source.stale) e.literal(node, v::kStale, *source.stale ? "true" : "false", kXsdBoolean);
    }
}

void escalation(TripleSink& out, const RunUris& run, std::size_t n, const StepInfo& step,
                const EscalationInfo& info) {
    Emitter e(out);
    const auto uri = run.escalation(n);
    step_header(e, run, uri, v::kEscalation, step);
    e.literal(uri, v::kReason, info.reason);
    e.number(uri, v::kRelevance, info.relevance);
    e.literal(uri, v::kEngine, info.next_engine);
    if (!info.from_engine.empty()) e.literal(uri, v::kFromEngine, info.from_engine);
    if (!info.rephrased_question.empty())
        e.literal(uri, v::kRephrasedQuestion, info.rephrased_question);
    if (!info.rephrase_fallback.empty())
        e.literal(uri, v::kRephraseFallback, info.rephrase_fallback);
    if (info.reflection) reflection(out, uri, *info.reflection);
}

void reflection(TripleSink& out, std::string_view step_uri, const ReflectionInfo& info) {
    Emitter e(out);
    const std::string node = std::string(step_uri) + ":reflection";
    e.iri(step_uri, v::kReflectionProperty, node);
    e.type(node, v::kProvEntity);
    e.type(node, v::kReflection);
    e.literal(node, v::kReflectionMethod, info.method);
    e.number(node, v::kReflectionScore, info.score);
    if (!info.reason.empty()) e.literal(node, v::kReflectionReason, info.reason);
    if (!info.fallback.empty()) e.literal(node, v::kReflectionFallback, info.fallback);
    if (info.duration)
        e.literal(node, v::kDurationMs, std::to_string(info.duration->count()), kXsdInteger);
    if (info.input_tokens) e.integer(node, v::kInputTokens, *info.input_tokens);
    if (info.output_tokens) e.integer(node, v::kOutputTokens, *info.output_tokens);
    if (!info.model.empty()) attribute_to_model(e, node, info.model);
}

void echo_question(TripleSink& out, const RunUris& run, std::string_view question_text,
                   TimePoint time, std::string_view worker_agent,
                   std::optional<std::string_view> parent_uri) {
    question(out, run, question_text, time, worker_agent, parent_uri);
}

void echo_synthesis(TripleSink& out, const RunUris& run, std::string_view answer, TimePoint time,
                    std::chrono::milliseconds duration) {
    StepInfo step;
    step.generated_at = time;
    step.duration = duration;
    synthesis(out, run, step, StoredText{std::string(answer), std::nullopt});
}

// ---- the same, as lists of Triples ----------------------------------------------------------

TripleList triple_list(std::size_t expected) {
    return TripleList(std::string(v::kRetrievalGraph), expected);
}

TripleJson triple_json(std::string& out) { return TripleJson(out, v::kRetrievalGraph); }

namespace {

template <typename Build>
std::vector<Triple> listed(Build&& build, std::size_t expected = 16) {
    auto list = triple_list(expected);
    build(list);
    return list.take();
}

}  // namespace

std::vector<Triple> question(const RunUris& run, std::string_view query, TimePoint started,
                             std::string_view worker_agent,
                             std::optional<std::string_view> parent_uri,
                             std::optional<std::string_view> conversation,
                             std::string_view request_id, std::string_view collection,
                             std::string_view revision_of) {
    return listed([&](TripleSink& out) {
        question(out, run, query, started, worker_agent, parent_uri, conversation, request_id,
                 collection, revision_of);
    });
}

std::vector<Triple> trace_end(const RunUris& run, TimePoint ended, TraceStatus status) {
    return listed([&](TripleSink& out) { trace_end(out, run, ended, status); });
}

std::vector<Triple> grounding(const RunUris& run, const StepInfo& step,
                              const std::vector<std::string>& concepts) {
    return listed([&](TripleSink& out) { grounding(out, run, step, concepts); });
}

std::vector<Triple> graph_exploration(const RunUris& run, const StepInfo& step,
                                      const std::vector<std::string>& seed_entities,
                                      std::uint64_t edge_count,
                                      const std::vector<ExploredEdge>& explored) {
    return listed(
        [&](TripleSink& out) {
            graph_exploration(out, run, step, seed_entities, edge_count, explored);
        },
        16 + seed_entities.size() + 7 * std::min(explored.size(), kMaxExploredEdges));
}

std::vector<Triple> graph_focus(const RunUris& run, const StepInfo& step,
                                const std::vector<SelectedEdge>& edges) {
    return listed([&](TripleSink& out) { graph_focus(out, run, step, edges); },
                  24 + 16 * edges.size());
}

std::vector<Triple> document_exploration(const RunUris& run, const StepInfo& step,
                                         const std::vector<RetrievedChunk>& chunks) {
    return listed([&](TripleSink& out) { document_exploration(out, run, step, chunks); },
                  24 + 16 * chunks.size());
}

std::vector<Triple> document_focus(const RunUris& run, const StepInfo& step,
                                   const std::vector<RankedChunk>& chunks) {
    return listed([&](TripleSink& out) { document_focus(out, run, step, chunks); },
                  24 + 8 * chunks.size());
}

std::vector<Triple> synthesis(const RunUris& run, const StepInfo& step, const StoredText& answer,
                              const std::vector<Citation>& citations,
                              const std::optional<ShortAnswer>& short_answer,
                              const AnswerConfidence* confidence) {
    return listed(
        [&](TripleSink& out) {
            synthesis(out, run, step, answer, citations, short_answer, confidence);
        },
        24 + 6 * citations.size());
}

std::vector<Triple> analysis(const RunUris& run, std::size_t n, const StepInfo& step,
                             const AgentAction& action) {
    return listed([&](TripleSink& out) { analysis(out, run, n, step, action); });
}

std::vector<Triple> observation(const RunUris& run, std::size_t n, const StepInfo& step,
                                const StoredText& text, const ObservationInfo& info) {
    return listed([&](TripleSink& out) { observation(out, run, n, step, text, info); });
}

std::vector<Triple> conclusion(const RunUris& run, const StepInfo& step, const StoredText& answer,
                               std::string_view termination,
                               const std::optional<std::string>& short_answer) {
    return listed(
        [&](TripleSink& out) { conclusion(out, run, step, answer, termination, short_answer); });
}

std::vector<Triple> routing_decision(const RunUris& run, const StepInfo& step,
                                     const Routing& routing) {
    return listed([&](TripleSink& out) { routing_decision(out, run, step, routing); });
}

std::vector<Triple> conclusion_confidence(const RunUris& run, const AnswerConfidence& confidence) {
    return listed([&](TripleSink& out) { conclusion_confidence(out, run, confidence); });
}

void conclusion_confidence(TripleSink& out, const RunUris& run,
                           const AnswerConfidence& confidence) {
    Emitter e(out);
    answer_confidence(e, run, run.conclusion(), "conclusion", confidence);
}

std::optional<AnswerConfidence> answer_confidence_of(const nlohmann::json& final) {
    if (!final.is_object()) return std::nullopt;
    AnswerConfidence out;
    if (const auto p = final.find("confidence"); p != final.end() && p->is_number())
        out.probability = std::clamp(p->get<double>(), 0.0, 1.0);
    if (const auto c = final.find("calibrator"); c != final.end() && c->is_string())
        out.calibrator = c->get<std::string>();
    if (const auto a = final.find("abstained"); a != final.end() && a->is_boolean())
        out.abstained = a->get<bool>();
    if (const auto list = final.find("evidence"); list != final.end() && list->is_array()) {
        for (const auto& f : *list) {
            if (!f.is_object() || !f.contains("name") || !f["name"].is_string() ||
                !f.contains("value") || !f["value"].is_number())
                continue;
            EvidenceFeatureRecord record{f["name"].get<std::string>(), f["value"].get<double>(),
                                         std::nullopt};
            if (f.contains("effect") && f["effect"].is_number())
                record.effect = f["effect"].get<double>();
            out.features.push_back(std::move(record));
        }
    }
    if (const auto list = final.find("conflicts"); list != final.end() && list->is_array()) {
        const auto text = [](const nlohmann::json& c, const char* key) {
            const auto it = c.find(key);
            return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
        };
        const auto texts = [](const nlohmann::json& c, const char* key) {
            std::vector<std::string> out;
            const auto it = c.find(key);
            if (it == c.end() || !it->is_array()) return out;
            for (const auto& s : *it)
                if (s.is_string() && !s.get_ref<const std::string&>().empty())
                    out.push_back(s.get<std::string>());
            return out;
        };
        for (const auto& c : *list) {
            if (!c.is_object() || text(c, "stated").empty() || text(c, "rival").empty()) continue;
            AnswerConflict conflict;
            conflict.subject = text(c, "subject");
            conflict.predicate = text(c, "predicate");
            conflict.stated = text(c, "stated");
            conflict.rival = text(c, "rival");
            conflict.stated_selection = text(c, "stated_selection");
            conflict.rival_selection = text(c, "rival_selection");
            conflict.stated_sources = texts(c, "stated_sources");
            conflict.rival_sources = texts(c, "rival_sources");
            out.conflicts.push_back(std::move(conflict));
        }
    }
    if (!out.probability && out.features.empty()) return std::nullopt;
    return out;
}

std::vector<Triple> routed_conclusion(const RunUris& run, const StepInfo& step,
                                      const StoredText& answer, const AnswerProvenance& provenance,
                                      const std::optional<std::string>& short_answer) {
    return listed([&](TripleSink& out) {
        routed_conclusion(out, run, step, answer, provenance, short_answer);
    });
}

std::vector<Triple> escalation(const RunUris& run, std::size_t n, const StepInfo& step,
                               const EscalationInfo& info) {
    return listed([&](TripleSink& out) { escalation(out, run, n, step, info); });
}

std::vector<Triple> reflection(std::string_view step_uri, const ReflectionInfo& info) {
    return listed([&](TripleSink& out) { reflection(out, step_uri, info); });
}

std::vector<Triple> echo_question(const RunUris& run, std::string_view question_text,
                                  TimePoint time, std::string_view worker_agent,
                                  std::optional<std::string_view> parent_uri) {
    return listed([&](TripleSink& out) {
        echo_question(out, run, question_text, time, worker_agent, parent_uri);
    });
}

std::vector<Triple> echo_synthesis(const RunUris& run, std::string_view answer, TimePoint time,
                                   std::chrono::milliseconds duration) {
    return listed([&](TripleSink& out) { echo_synthesis(out, run, answer, time, duration); });
}

}  // namespace glassbox::schema::explain
