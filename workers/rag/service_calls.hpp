// The calls a RAG worker makes (llm, embeddings, store), each one round trip through the broker,
// with every reply checked against its message type.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "text/builtin_embeddings.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::rag {

using text::BuiltinEmbeddings;  // the worker's gate (text/builtin_embeddings.hpp)

class ServiceCalls {
public:
    // `builtin`: the worker's gate (none: every embedding is asked of the service).
    ServiceCalls(runtime::RequestContext& context, const RagConfig& config, std::string collection,
                 BuiltinEmbeddings* builtin = nullptr);

    // One template; with `on_text` the call streams and each PARTIAL text piece is passed on.
    // A JSON template's reply without `json` is an UpstreamError.
    base::Result<schema::LlmResponse> llm(
        std::string_view template_name, std::map<std::string, std::string> variables,
        const std::function<void(std::string_view)>& on_text = {});
    // One vector per text.
    base::Result<std::vector<std::vector<double>>> embed(const std::vector<std::string>& texts);
    // The same, with what the call was, for the step that made it to record (none when there was
    // nothing to embed: no call is made).
    struct Embedded {
        std::vector<std::vector<double>> vectors;
        std::optional<schema::explain::EmbeddingsCall> call;
    };
    base::Result<Embedded> embed_recorded(const std::vector<std::string>& texts);

    // Store operations (docs/knowledge.md §8) on this request's collection.
    // The nearest entities of each vector (results[i] for vectors[i], at most `limit` each):
    // one `entities-batch` request.
    base::Result<std::vector<std::vector<schema::EntityMatch>>> entities(
        const std::vector<std::vector<double>>& vectors, std::uint32_t limit);
    // The matches of each pattern (results[i] for patterns[i]); with `with_labels`, the labels
    // of their terms too, in the same requests (labels[i]: subject, predicate and object of each
    // triple of results[i], as `labels` names them), unless the store gave none (one from before
    // the option: `labelled` false, and the caller asks `labels`). With `rows`, results[i] holds
    // at most the first `rows` matches (a store from before the option answers them all), and
    // counts[i] is always patterns[i]'s number of matches up to `limit`.
    struct Matches {
        std::vector<std::vector<schema::Triple>> results;
        std::vector<std::vector<std::string>> labels;
        std::vector<std::uint32_t> counts;
        bool labelled = false;
    };
    base::Result<Matches> triples_batch(const std::vector<schema::TriplePattern>& patterns,
                                        std::uint32_t limit, bool with_labels = false,
                                        std::optional<std::uint32_t> rows = std::nullopt);
    base::Result<std::vector<std::string>> labels(const std::vector<schema::Term>& terms);
    base::Result<std::vector<std::vector<schema::FactSource>>> fact_sources(
        const std::vector<schema::Triple>& triples);
    // An LLM template and the sources of `triples`, both requests in flight at once.
    struct LlmAndSources {
        schema::LlmResponse response;
        std::vector<std::vector<schema::FactSource>> sources;  // one list per triple
    };
    base::Result<LlmAndSources> llm_and_fact_sources(std::string_view template_name,
                                                     std::map<std::string, std::string> variables,
                                                     const std::vector<schema::Triple>& triples);
    base::Result<std::vector<schema::ChunkMatch>> chunks_vector(const std::vector<double>& vector,
                                                                std::uint32_t limit);
    base::Result<std::vector<schema::ChunkMatch>> chunks_keyword(const std::string& query,
                                                                 std::uint32_t limit);
    base::Result<std::vector<schema::Chunk>> chunks_fetch(
        const std::vector<std::string>& chunk_ids);

private:
    runtime::CallSpec llm_call(std::string_view template_name,
                               std::map<std::string, std::string> variables, bool streaming) const;
    base::Result<schema::LlmResponse> llm_reply(const runtime::CallResult& called) const;
    runtime::CallSpec store_call(std::string_view op, nlohmann::json body) const;
    // A store request written as JSON text (schema/service_requests_fast.hpp: the tree path's
    // bytes, no tree built), its FINAL handed back as text only for a tree-free decoder.
    template <typename Request>
    runtime::CallSpec store_text_call(std::string_view op, const Request& request) const;
    // A triples-batch reply's labels: one list per result, three labels per triple; its counts:
    // one per result, none below the result's size.
    base::Result<void> check_labels(const schema::TriplesBatchResponse& reply) const;
    base::Result<void> check_counts(const schema::TriplesBatchResponse& reply) const;
    base::Result<std::vector<std::vector<schema::FactSource>>> fact_sources_reply(
        const runtime::CallResult& called, std::size_t facts) const;
    // context.call_all with the calls' time logged at debug level (component "rag").
    base::Result<std::vector<runtime::CallResult>> timed_call_all(
        std::span<const runtime::CallSpec> calls, std::string_view what);
    // A store operation's FINAL: as a JSON tree, or (kTextOnly) in CallResult::final_text.
    base::Result<runtime::CallResult> store(
        std::string_view op, nlohmann::json body,
        runtime::FinalBody final_body = runtime::FinalBody::kJson);
    // context.call (call_text for a text body) with the call's time logged at debug level
    // (component "rag").
    base::Result<runtime::CallResult> timed_call(
        const runtime::CallSpec& call, std::string_view what,
        const std::function<void(const bus::Reply&)>& on_reply = {});

    // The vectors of `texts` computed here, as the service's built-in model would answer.
    Embedded embed_builtin(const std::vector<std::string>& texts, std::uint32_t dim) const;

    runtime::RequestContext& context_;
    const RagConfig& config_;
    std::string collection_;
    BuiltinEmbeddings* builtin_;
};

}  // namespace glassbox::rag
