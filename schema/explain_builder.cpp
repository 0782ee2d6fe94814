// Builds the PROV-O triples of each explain step.
#include "schema/explain_builder.hpp"

#include <array>
#include <cstdio>
#include <ctime>
#include <string>
#include <unordered_set>

#include "schema/vocabulary.hpp"

namespace glassbox::schema::explain {
namespace {

namespace v = vocab;

// Appends triples in the retrieval graph.
class Emitter {
public:
    // `expected`: about how many triples the message will have (the vector grows past it).
    explicit Emitter(std::size_t expected = 16) { out_.reserve(expected); }
    void add(std::string_view s, std::string_view p, Term o) {
        out_.push_back(Triple{iri(s), iri(p), std::move(o), std::string(v::kRetrievalGraph)});
    }
    void add(const Term& s, std::string_view p, Term o) {
        out_.push_back(Triple{s, iri(p), std::move(o), std::string(v::kRetrievalGraph)});
    }
    void type(std::string_view s, std::string_view cls) { add(s, v::kRdfType, iri(cls)); }
    // True the first time `resource` is named: a chunk or document shared by several selections
    // is described once per message (the same triples again would add nothing to the graph).
    bool first_mention(std::string_view resource) { return described_.emplace(resource).second; }
    std::vector<Triple> take() { return std::move(out_); }

private:
    std::vector<Triple> out_;
    std::unordered_set<std::string> described_;
};

Term integer(std::uint64_t value) {
    return typed_literal(std::to_string(value), kXsdInteger);
}

std::size_t code_points(std::string_view text) {
    std::size_t n = 0;
    for (char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    }
    return n;
}

// The parts every step shares.
void step_header(Emitter& e, const RunUris& run, std::string_view uri, std::string_view cls,
                 const StepInfo& step) {
    e.type(uri, v::kProvEntity);
    e.type(uri, cls);
    e.add(uri, v::kProvWasGeneratedBy, iri(run.question()));
    e.add(uri, v::kProvGeneratedAtTime, datetime_literal(step.generated_at));
    if (step.derived_from && !step.derived_from->empty()) {
        e.add(uri, v::kProvWasDerivedFrom, iri(*step.derived_from));
    }
    if (step.duration) {
        e.add(uri, v::kDurationMs, typed_literal(std::to_string(step.duration->count()), kXsdInteger));
    }
    if (step.input_tokens) e.add(uri, v::kInputTokens, integer(*step.input_tokens));
    if (step.output_tokens) e.add(uri, v::kOutputTokens, integer(*step.output_tokens));
    if (step.model && !step.model->empty()) {
        const auto agent = model_agent_uri(*step.model);
        e.type(agent, v::kProvSoftwareAgent);
        e.type(agent, v::kModel);
        e.add(agent, v::kRdfsLabel, literal(*step.model));
        e.add(uri, v::kProvWasAttributedTo, iri(agent));
        e.add(uri, v::kModelName, literal(*step.model));
    }
}

void data_tier(Emitter& e, std::string_view uri, int tier) {
    if (tier >= 1 && tier <= 4) e.add(uri, v::kDataTier, integer(static_cast<std::uint64_t>(tier)));
}

// A source document, typed (once per message).
void describe_document(Emitter& e, const std::string& document) {
    if (!e.first_mention(document)) return;
    e.type(document, v::kProvEntity);
    e.type(document, v::kDocument);
}

// `from` (a selection) → its chunk → the chunk's document, with offsets; or `from` → its
// document when it was loaded from a whole file. Shared chunks and documents described once.
void source(Emitter& e, std::string_view from, const SourceRef& src) {
    if (src.chunk.empty()) {
        // Loaded from a whole file or document, not a chunk of one: the selection points there.
        if (src.document.empty()) return;
        e.add(from, v::kSourceDocument, iri(src.document));
        e.add(from, v::kProvWasDerivedFrom, iri(src.document));
        describe_document(e, src.document);
        return;
    }
    e.add(from, v::kSourceChunk, iri(src.chunk));
    e.add(from, v::kProvWasDerivedFrom, iri(src.chunk));
    if (!src.document.empty()) e.add(from, v::kSourceDocument, iri(src.document));
    if (!e.first_mention(src.chunk)) return;
    e.type(src.chunk, v::kProvEntity);
    e.type(src.chunk, v::kChunk);
    if (src.char_offset) e.add(src.chunk, v::kCharOffset, integer(*src.char_offset));
    if (src.char_length) e.add(src.chunk, v::kCharLength, integer(*src.char_length));
    if (!src.document.empty()) {
        e.add(src.chunk, v::kProvWasDerivedFrom, iri(src.document));
        describe_document(e, src.document);
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
            e.add(uri, names.first, iri(inner));
        } else {
            e.add(uri, names.first, *term);
        }
    }
}

void stored_text(Emitter& e, std::string_view uri, const StoredText& text,
                 std::string_view text_property, std::string_view ref_property) {
    if (text.ref && !text.ref->empty()) {
        e.add(uri, ref_property, iri(*text.ref));
    } else {
        e.add(uri, text_property, literal(text.text));
    }
}

}  // namespace

std::string format_datetime(TimePoint time) {
    using namespace std::chrono;
    const auto ms = floor<milliseconds>(time.time_since_epoch());
    const auto secs = floor<seconds>(ms);
    const auto millis = (ms - secs).count();
    const std::time_t t = static_cast<std::time_t>(secs.count());
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::array<char, 96> buf{};  // room for any int the format could print
    std::snprintf(buf.data(), buf.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(millis));
    return buf.data();
}

Term datetime_literal(TimePoint time) { return xsd_datetime(format_datetime(time)); }

std::vector<Triple> question(const RunUris& run, std::string_view query, TimePoint started,
                             std::string_view worker_agent,
                             std::optional<std::string_view> parent_uri) {
    Emitter e;
    const auto q = run.question();
    e.type(q, v::kProvActivity);
    e.type(q, v::kQuestion);
    e.add(q, v::kQuery, literal(query));
    e.add(q, v::kProvStartedAtTime, datetime_literal(started));
    if (!worker_agent.empty()) {
        e.type(worker_agent, v::kProvSoftwareAgent);
        e.type(worker_agent, v::kWorker);
        e.add(q, v::kProvWasAssociatedWith, iri(worker_agent));
    }
    if (parent_uri && !parent_uri->empty()) {
        e.add(q, v::kProvUsed, iri(*parent_uri));
        if (auto parent_run = RunUris::from_uri(*parent_uri);
            parent_run && parent_run->uuid() != run.uuid()) {
            e.add(q, v::kProvWasInformedBy, iri(parent_run->question()));
        }
    }
    return e.take();
}

std::vector<Triple> trace_end(const RunUris& run, TimePoint ended, TraceStatus status) {
    Emitter e;
    const auto q = run.question();
    e.add(q, v::kProvEndedAtTime, datetime_literal(ended));
    const auto name = to_string(status);
    e.add(q, v::kStatus, literal(name.empty() ? std::string_view("complete") : name));
    return e.take();
}

std::vector<Triple> grounding(const RunUris& run, const StepInfo& step,
                              const std::vector<std::string>& concepts) {
    Emitter e;
    const auto uri = run.grounding();
    step_header(e, run, uri, v::kGrounding, step);
    for (const auto& c : concepts) e.add(uri, v::kConcept, literal(c));
    return e.take();
}

std::vector<Triple> graph_exploration(const RunUris& run, const StepInfo& step,
                                      const std::vector<std::string>& seed_entities,
                                      std::uint64_t edge_count) {
    Emitter e;
    const auto uri = run.exploration();
    step_header(e, run, uri, v::kExploration, step);
    e.add(uri, v::kEdgeCount, integer(edge_count));
    for (const auto& s : seed_entities) e.add(uri, v::kSeedEntity, iri(s));
    return e.take();
}

std::vector<Triple> graph_focus(const RunUris& run, const StepInfo& step,
                                const std::vector<SelectedEdge>& edges) {
    Emitter e(24 + 16 * edges.size());
    const auto uri = run.focus();
    step_header(e, run, uri, v::kFocus, step);
    e.add(uri, v::kEdgeCount, integer(edges.size()));
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto& edge = edges[i];
        const auto sel = run.edge_selection(i);
        e.add(uri, v::kSelectedEdge, iri(sel));
        e.type(sel, v::kProvEntity);
        e.type(sel, v::kEdgeSelection);
        reify(e, sel, edge.edge);
        e.add(sel, v::kScore, xsd_double(edge.score));
        if (!edge.concept_label.empty()) e.add(sel, v::kConcept, literal(edge.concept_label));
        if (!edge.reasoning.empty()) e.add(sel, v::kReasoning, literal(edge.reasoning));
        data_tier(e, sel, edge.data_tier);
        if (edge.source) source(e, sel, *edge.source);
    }
    return e.take();
}

namespace {

// A chunk chosen by a step: linked from the step by `link`, an entity with its score.
void chunk_selection(Emitter& e, const std::string& step, std::string_view link, const std::string& sel,
                     double score) {
    e.add(step, link, iri(sel));
    e.type(sel, v::kProvEntity);
    e.type(sel, v::kChunkSelection);
    e.add(sel, v::kScore, xsd_double(score));
}

}  // namespace

std::vector<Triple> document_exploration(const RunUris& run, const StepInfo& step,
                                         const std::vector<RetrievedChunk>& chunks) {
    Emitter e(24 + 16 * chunks.size());
    const auto uri = run.exploration();
    step_header(e, run, uri, v::kExploration, step);
    e.add(uri, v::kChunkCount, integer(chunks.size()));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const auto sel = run.retrieved_chunk(i);
        chunk_selection(e, uri, v::kRetrievedChunk, sel, chunks[i].score);
        data_tier(e, sel, chunks[i].data_tier);
        if (chunks[i].vector_rank) e.add(sel, v::kVectorRank, integer(*chunks[i].vector_rank));
        if (chunks[i].vector_score) e.add(sel, v::kVectorScore, xsd_double(*chunks[i].vector_score));
        if (chunks[i].keyword_rank) e.add(sel, v::kKeywordRank, integer(*chunks[i].keyword_rank));
        if (chunks[i].keyword_score) e.add(sel, v::kKeywordScore, xsd_double(*chunks[i].keyword_score));
        if (chunks[i].title_rank) e.add(sel, v::kTitleRank, integer(*chunks[i].title_rank));
        if (chunks[i].title_score) e.add(sel, v::kTitleScore, xsd_double(*chunks[i].title_score));
        if (chunks[i].link_rank) e.add(sel, v::kLinkRank, integer(*chunks[i].link_rank));
        source(e, sel, chunks[i].source);
    }
    return e.take();
}

std::vector<Triple> document_focus(const RunUris& run, const StepInfo& step,
                                   const std::vector<RankedChunk>& chunks) {
    Emitter e;
    const auto uri = run.focus();
    step_header(e, run, uri, v::kFocus, step);
    e.add(uri, v::kChunkCount, integer(chunks.size()));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const auto sel = run.ranked_chunk(i);
        chunk_selection(e, uri, v::kSelectedChunk, sel, chunks[i].score);
        if (!chunks[i].reasoning.empty()) e.add(sel, v::kReasoning, literal(chunks[i].reasoning));
        e.add(sel, v::kProvWasDerivedFrom, iri(run.retrieved_chunk(chunks[i].retrieved_index)));
    }
    return e.take();
}

std::vector<Triple> synthesis(const RunUris& run, const StepInfo& step, const StoredText& answer,
                              const std::vector<Citation>& citations) {
    Emitter e(24 + 6 * citations.size());
    const auto uri = run.synthesis();
    step_header(e, run, uri, v::kSynthesis, step);
    stored_text(e, uri, answer, v::kAnswerText, v::kAnswerRef);
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
        e.add(uri, v::kCitationProperty, iri(cit));
        e.type(cit, v::kProvEntity);
        e.type(cit, v::kCitation);
        e.add(cit, v::kSpanStart, integer(c.span_start));
        e.add(cit, v::kSpanEnd, integer(c.span_end));
        for (auto s : supports) e.add(cit, v::kSupportedBy, iri(s));
    }
    return e.take();
}

std::vector<Triple> analysis(const RunUris& run, std::size_t n, const StepInfo& step,
                             const AgentAction& action) {
    Emitter e;
    const auto uri = run.analysis(n);
    step_header(e, run, uri, v::kAnalysis, step);
    e.add(uri, v::kIteration, integer(n));
    if (!action.thought.empty()) e.add(uri, v::kThought, literal(action.thought));
    if (!action.action.empty()) {
        e.type(uri, v::kToolUse);
        e.add(uri, v::kAction, literal(action.action));
        if (!action.arguments.empty()) e.add(uri, v::kArguments, literal(action.arguments));
    }
    return e.take();
}

std::vector<Triple> observation(const RunUris& run, std::size_t n, const StepInfo& step,
                                const StoredText& text) {
    Emitter e;
    const auto uri = run.observation(n);
    step_header(e, run, uri, v::kObservation, step);
    e.add(uri, v::kIteration, integer(n));
    stored_text(e, uri, text, v::kObservationText, v::kObservationRef);
    return e.take();
}

std::vector<Triple> conclusion(const RunUris& run, const StepInfo& step, const StoredText& answer) {
    Emitter e;
    const auto uri = run.conclusion();
    step_header(e, run, uri, v::kConclusion, step);
    stored_text(e, uri, answer, v::kAnswerText, v::kAnswerRef);
    return e.take();
}

std::vector<Triple> routing_decision(const RunUris& run, const StepInfo& step,
                                     const Routing& routing) {
    Emitter e;
    const auto uri = run.routing_decision();
    step_header(e, run, uri, v::kRoutingDecision, step);
    e.add(uri, v::kRoutingMethod, literal(routing.method));
    for (const auto& r : routing.rules_fired) e.add(uri, v::kRuleFired, literal(r));
    e.add(uri, v::kConfidence, xsd_double(routing.confidence));
    e.add(uri, v::kEngine, literal(routing.engine));
    return e.take();
}

std::vector<Triple> escalation(const RunUris& run, std::size_t n, const StepInfo& step,
                               const EscalationInfo& info) {
    Emitter e;
    const auto uri = run.escalation(n);
    step_header(e, run, uri, v::kEscalation, step);
    e.add(uri, v::kReason, literal(info.reason));
    e.add(uri, v::kRelevance, xsd_double(info.relevance));
    e.add(uri, v::kEngine, literal(info.next_engine));
    return e.take();
}

std::vector<Triple> echo_question(const RunUris& run, std::string_view question_text,
                                  TimePoint time, std::string_view worker_agent,
                                  std::optional<std::string_view> parent_uri) {
    return question(run, question_text, time, worker_agent, parent_uri);
}

std::vector<Triple> echo_synthesis(const RunUris& run, std::string_view answer, TimePoint time,
                                   std::chrono::milliseconds duration) {
    StepInfo step;
    step.generated_at = time;
    step.duration = duration;
    return synthesis(run, step, StoredText{std::string(answer), std::nullopt});
}

}  // namespace glassbox::schema::explain
