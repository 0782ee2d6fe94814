// The run both RAG chains share: the request opened and resolved, Grounding on the question's
// concepts, steps sent with a cancel check after each, tokens counted, and Synthesis ending it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "reasoner/answer_confidence.hpp"
#include "schema/collection_name.hpp"
#include "schema/messages.hpp"
#include "workers/rag/rag_answer.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/rag/rag_trace.hpp"
#include "workers/rag/service_calls.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::rag {

// Concepts the LLM may give (the extract-concepts template promises at most 10).
inline constexpr std::size_t kMaxConcepts = 10;

// Whether concepts that differ only in case are kept more than once.
enum class ConceptRepeats { kKeep, kDrop };

// The concepts of an extract-concepts reply: its strings, trimmed, non-empty, at most
// kMaxConcepts (counted after repeats are dropped).
std::vector<std::string> concepts_of(const schema::LlmResponse& response, ConceptRepeats repeats);

// The FINAL's citations: each id the answer cites (`id_prefix` + k+1), numbered in order of
// first appearance, with its selection (`supporter(k)`), what `describe(k, first claim)` says
// of it, and every span citing it.
std::vector<schema::RagCitation> reader_citations(
    const SynthesisResult& synthesised, std::string_view id_prefix,
    const std::function<std::string(std::size_t)>& supporter,
    const std::function<schema::RagCitation(std::size_t, std::string_view)>& describe);

// A request's min_confidence (absent: the worker's), which must be a number from 0 to 1.
base::Result<double> min_confidence_of(const std::optional<double>& requested,
                                       const RagConfig& config);

// One run of a RAG chain on one request: Question → Grounding → Exploration → Focus →
// Synthesis, the trace ended with the first error. A chain supplies how it reads the concepts
// and its own Exploration, Focus and Synthesis.
class RagRun {
public:
    RagRun(const RagRun&) = delete;
    RagRun& operator=(const RagRun&) = delete;
    virtual ~RagRun() = default;

protected:
    RagRun(runtime::RequestContext& context, const RagConfig& config, std::string_view service);

    // Decodes the body into `query` (the chain's member its steps read), opens the trace,
    // resolves the query's defaults and bounds, then runs the steps. A request that fails its
    // checks is traced too, with what its body holds of the question.
    template <typename Query>
    void run_request(Query& query,
                     base::Result<Query> (*resolve)(const Query& query, const RagConfig& config)) {
        const nlohmann::json& body = context_.body();
        auto decoded = decode_request<Query>(body);
        std::optional<std::string> parent;
        if (decoded && decoded->parent_uri && !decoded->parent_uri->empty()) {
            parent = decoded->parent_uri;
        }
        // A session_id the checks refuse is not recorded (the request fails below).
        std::string conversation;
        if (decoded && check_session_id(decoded->session_id)) conversation = decoded->session_id;
        std::string collection;  // recorded when it is a name the store could hold
        if (decoded) {
            if (auto named = schema::validate_collection(decoded->collection))
                collection = std::move(named).value();
        }
        const std::string revision_of = decoded ? decoded->revision_of.value_or("") : "";
        if (auto opened =
                trace_.open(decoded ? decoded->query : query_of(body), config_.trace_question_chars,
                            parent, conversation, collection, revision_of);
            !opened) {
            return trace_.fail(opened.error());
        }
        if (!decoded) return trace_.fail(decoded.error());
        auto resolved = resolve(*decoded, config_);
        if (!resolved) return trace_.fail(resolved.error());
        query = std::move(resolved).value();
        auto floor = min_confidence_of(query.min_confidence, config_);
        if (!floor) return trace_.fail(floor.error());
        min_confidence_ = *floor;
        calls_.emplace(context_, config_, query.collection, builtin_embeddings_);
        run_steps(query.query);
    }

    // The concepts the chain takes from the extract-concepts reply.
    virtual std::vector<std::string> concepts_in(const schema::LlmResponse& extracted) const = 0;
    virtual base::Result<void> exploration() = 0;
    virtual base::Result<void> focus() = 0;
    virtual base::Result<void> synthesis() = 0;

    base::Result<void> check_cancel() const;
    // Sends one step, then checks for cancel (the next step would be wasted work). The builder
    // runs later, when the step goes out (RagTrace::step): it must own what it reads.
    base::Result<void> send_step(const std::string& uri, RagTrace::Build build);
    // An LLM reply's tokens, in the run's totals and in its step's.
    void count_tokens(const schema::LlmResponse& response, StepTimer& timer);

    // The synthesis template (streamed when the query asks), its tokens counted; the markers
    // it may cite are `id_prefix` 1..`count`.
    base::Result<SynthesisResult> synthesise_answer(StepTimer& timer,
                                                    std::string_view template_name,
                                                    std::map<std::string, std::string> variables,
                                                    bool streaming, std::string_view id_prefix,
                                                    std::size_t count);
    // What the reader is told about marker `id_prefix`k+1: its kind, document, title, chunk,
    // offsets, tier and text, given the first claim of the answer that cites it.
    using DescribeSource =
        std::function<schema::RagCitation(std::size_t k, std::string_view claim)>;

    // Ends the trace with Synthesis (derived from `previous`; marker `id_prefix`k is supported
    // by `supporter(k - 1)`) and sends the FINAL reply naming `sources`, with the citations
    // numbered in order of first appearance and described by `describe`.
    // `features` are the answer's evidence features (answer_evidence.hpp): scored by the
    // engine's calibrator, recorded on the Synthesis and carried by the FINAL. `completeness`,
    // when measured, is recorded and carried the same way, and its note said after the answer;
    // `conflicts` lower the confidence (before abstention), are recorded, carried and said.
    base::Result<void> finish(
        const StepTimer& timer, const std::string& previous, const SynthesisResult& synthesised,
        std::string_view id_prefix, const std::function<std::string(std::size_t)>& supporter,
        const DescribeSource& describe, std::vector<std::string> sources,
        const reasoner::EvidenceFeatures& features,
        std::optional<schema::explain::AnswerCompleteness> completeness = std::nullopt,
        std::vector<schema::explain::AnswerConflict> conflicts = {});

    runtime::RequestContext& context_;
    const RagConfig& config_;
    RagTrace trace_;
    std::optional<ServiceCalls> calls_;                // set once the query is resolved
    BuiltinEmbeddings* builtin_embeddings_ = nullptr;  // the worker's gate, when it has one
    std::vector<std::string> concepts_;
    double min_confidence_ = 0.0;  // the request's, else the worker's (run_request)

private:
    std::string service_;
    void run_steps(const std::string& question);
    // A streamed answer's note (stale sources) goes out as one more chunk; nothing otherwise.
    base::Result<void> send_note_chunk(const std::string& text);
    bool streamed_ = false;  // the synthesis was streamed to the client
    base::Result<void> steps(const std::string& question);
    base::Result<void> grounding(const std::string& question);

    std::uint64_t in_tokens_ = 0;
    std::uint64_t out_tokens_ = 0;
};

}  // namespace glassbox::rag
