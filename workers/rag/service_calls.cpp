// Round trips to llm, embeddings and store, with typed checks of every reply.
#include "workers/rag/service_calls.hpp"

#include <algorithm>
#include <chrono>

#include "base/log.hpp"
#include "schema/json_fast.hpp"
#include "schema/service_requests_fast.hpp"
#include "text/builtin_embeddings.hpp"
#include "text/feature_hashing.hpp"

namespace glassbox::rag {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

// A reply that does not have the promised shape is the callee's fault.
base::Error bad_reply(std::string_view service, const base::Error& why) {
    return make_error(ErrorType::kUpstreamError,
                      std::string(service) + " answered an unexpected body: " + why.message);
}

// Looked up once: every call logs (at debug), and the lookup takes the registry's locks and
// builds the name, on every handler thread at once.
spdlog::logger& call_logger() {
    static const auto logger = base::component_logger("rag");
    return *logger;
}

}  // namespace

base::Result<runtime::CallResult> ServiceCalls::timed_call(
    const runtime::CallSpec& call, std::string_view what,
    const std::function<void(const bus::Reply&)>& on_reply) {
    const auto started = std::chrono::steady_clock::now();
    auto result = call.text_body ? context_.call_text(call.service, *call.text_body, call.deadline,
                                                      on_reply, call.final_body)
                                 : context_.call(call.service, call.body, call.deadline, on_reply,
                                                 call.final_body);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
    call_logger().debug("event=call request_id={} service={} what={} us={} ok={}",
                        context_.meta().request_id, call.service, what, us.count(), result.ok());
    return result;
}

ServiceCalls::ServiceCalls(runtime::RequestContext& context, const RagConfig& config,
                           std::string collection, BuiltinEmbeddings* builtin)
    : context_(context), config_(config), collection_(std::move(collection)), builtin_(builtin) {}

template <typename Request>
runtime::CallSpec ServiceCalls::store_text_call(std::string_view op, const Request& request) const {
    return runtime::CallSpec{config_.store_service,
                             {},
                             config_.call_timeout,
                             runtime::FinalBody::kTextOnly,
                             schema::encode_store_request(op, request)};
}

runtime::CallSpec ServiceCalls::llm_call(std::string_view template_name,
                                         std::map<std::string, std::string> variables,
                                         bool streaming) const {
    schema::LlmRequest request;
    request.template_name = std::string(template_name);
    request.variables = std::move(variables);
    request.streaming = streaming;
    // Written and sent as text, with no tree (the variables are the largest bodies graph-rag
    // sends); the reply is decoded from its text: only its JSON answer becomes a tree.
    return runtime::CallSpec{config_.llm_service,
                             {},
                             config_.call_timeout,
                             runtime::FinalBody::kTextOnly,
                             schema::encode_text(request)};
}

base::Result<schema::LlmResponse> ServiceCalls::llm_reply(const runtime::CallResult& called) const {
    auto response = schema::decode_text<schema::LlmResponse>(called.final_text);
    if (!response) return bad_reply(config_.llm_service, response.error());
    return response;
}

base::Result<schema::LlmResponse> ServiceCalls::llm(
    std::string_view template_name, std::map<std::string, std::string> variables,
    const std::function<void(std::string_view)>& on_text) {
    const auto call = llm_call(template_name, std::move(variables), static_cast<bool>(on_text));
    std::function<void(const bus::Reply&)> on_reply;
    if (on_text) {
        on_reply = [&on_text](const bus::Reply& reply) {
            if (reply.kind != bus::ReplyKind::kData || !reply.body.is_object()) return;
            const auto text = reply.body.find("text");
            if (text != reply.body.end() && text->is_string())
                on_text(text->get_ref<const std::string&>());
        };
    }
    auto called = timed_call(call, template_name, on_reply);
    if (!called) return std::move(called).error();
    return llm_reply(*called);
}

base::Result<std::vector<runtime::CallResult>> ServiceCalls::timed_call_all(
    std::span<const runtime::CallSpec> calls, std::string_view what) {
    const auto started = std::chrono::steady_clock::now();
    auto results = context_.call_all(calls);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
    call_logger().debug("event=call request_id={} what={} calls={} us={} ok={}",
                        context_.meta().request_id, what, calls.size(), us.count(), results.ok());
    return results;
}

base::Result<std::vector<std::vector<double>>> ServiceCalls::embed(
    const std::vector<std::string>& texts) {
    auto embedded = embed_recorded(texts);
    if (!embedded) return std::move(embedded).error();
    return std::move(embedded->vectors);
}

base::Result<ServiceCalls::Embedded> ServiceCalls::embed_recorded(
    const std::vector<std::string>& texts) {
    if (texts.empty()) return Embedded{};
    if (builtin_ != nullptr) {
        if (const std::uint32_t dim = builtin_->dim_now(); dim > 0)
            return embed_builtin(texts, dim);
    }
    const runtime::CallSpec call{config_.embeddings_service,
                                 {},
                                 config_.call_timeout,
                                 runtime::FinalBody::kTextOnly,
                                 schema::encode_text(schema::EmbeddingsRequest{texts})};
    const auto started_at = std::chrono::system_clock::now();
    const auto started = std::chrono::steady_clock::now();
    auto called = timed_call(call, "embed");
    if (!called) return std::move(called).error();
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    auto response = schema::decode_text<schema::EmbeddingsResponse>(called->final_text);
    if (!response) return bad_reply(config_.embeddings_service, response.error());
    if (response->vectors.size() != texts.size()) {
        return make_error(ErrorType::kUpstreamError, config_.embeddings_service + " answered " +
                                                         std::to_string(response->vectors.size()) +
                                                         " vectors for " +
                                                         std::to_string(texts.size()) + " texts");
    }
    if (builtin_ != nullptr) builtin_->saw(response->model, response->dim);
    schema::explain::EmbeddingsCall made{response->model, texts.size(), response->dim, started_at,
                                         took};
    // A reply without its dimension: the vectors' own.
    if (made.dimensions == 0) made.dimensions = response->vectors.front().size();
    return Embedded{std::move(response->vectors), std::move(made)};
}

ServiceCalls::Embedded ServiceCalls::embed_builtin(const std::vector<std::string>& texts,
                                                   std::uint32_t dim) const {
    const auto started_at = std::chrono::system_clock::now();
    const auto started = std::chrono::steady_clock::now();
    Embedded embedded;
    embedded.vectors = text::feature_vectors(texts, dim);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    embedded.call = schema::explain::EmbeddingsCall{std::string(text::kFeatureHashingModel),
                                                    texts.size(), dim, started_at, took};
    return embedded;
}

base::Result<runtime::CallResult> ServiceCalls::store(std::string_view op, json body,
                                                      runtime::FinalBody final_body) {
    auto call = store_call(op, std::move(body));
    call.final_body = final_body;
    return timed_call(call, op);
}

base::Result<std::vector<std::vector<schema::EntityMatch>>> ServiceCalls::entities(
    const std::vector<std::vector<double>>& vectors, std::uint32_t limit) {
    if (vectors.empty()) return std::vector<std::vector<schema::EntityMatch>>{};
    constexpr std::string_view kOp = "entities-batch";
    auto reply = timed_call(
        store_text_call(kOp, schema::GraphEmbeddingsQuery{vectors, limit, collection_}), kOp);
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode_text<schema::GraphEmbeddingsBatchResponse>(reply->final_text);
    if (!decoded) return bad_reply(config_.store_service, decoded.error());
    if (decoded->results.size() != vectors.size()) {
        return make_error(ErrorType::kUpstreamError,
                          "store answered " + std::to_string(decoded->results.size()) +
                              " match lists for " + std::to_string(vectors.size()) + " vectors");
    }
    return std::move(decoded->results);
}

base::Result<ServiceCalls::Matches> ServiceCalls::triples_batch(
    const std::vector<schema::TriplePattern>& patterns, std::uint32_t limit, bool with_labels,
    std::optional<std::uint32_t> rows) {
    // Patterns per request: patterns × limit rows within store_batch_rows (limit 0 counts as
    // the store's default of 10,000), at least one.
    const std::uint64_t rows_per_pattern = limit == 0 ? 10'000 : limit;
    const std::size_t per_request = static_cast<std::size_t>(
        std::max<std::uint64_t>(1, config_.store_batch_rows / rows_per_pattern));
    Matches matches;
    matches.results.reserve(patterns.size());
    matches.labelled = with_labels;
    for (std::size_t first = 0; first < patterns.size(); first += per_request) {
        const std::size_t last = std::min(patterns.size(), first + per_request);
        std::vector<schema::TriplePattern> part(
            patterns.begin() + static_cast<std::ptrdiff_t>(first),
            patterns.begin() + static_cast<std::ptrdiff_t>(last));
        // The largest replies of a query: decoded from their text without a JSON tree.
        constexpr std::string_view kOp = "triples-batch";
        auto reply = timed_call(
            store_text_call(kOp, schema::TriplesQueryBatch{std::move(part), limit, collection_,
                                                           with_labels, rows}),
            kOp);
        if (!reply) return std::move(reply).error();
        auto decoded = schema::decode_text<schema::TriplesBatchResponse>(reply->final_text);
        if (!decoded) return bad_reply(config_.store_service, decoded.error());
        if (decoded->results.size() != last - first) {
            return make_error(ErrorType::kUpstreamError,
                              "store answered " + std::to_string(decoded->results.size()) +
                                  " results for " + std::to_string(last - first) + " patterns");
        }
        if (decoded->counts) {
            if (auto r = check_counts(*decoded); !r) return r.error();
            matches.counts.insert(matches.counts.end(), decoded->counts->begin(),
                                  decoded->counts->end());
        } else {
            for (const auto& list : decoded->results)
                matches.counts.push_back(static_cast<std::uint32_t>(list.size()));
        }
        if (!decoded->labels) matches.labelled = false;
        if (matches.labelled) {
            if (auto r = check_labels(*decoded); !r) return r.error();
            for (auto& names : *decoded->labels) matches.labels.push_back(std::move(names));
        }
        for (auto& list : decoded->results) matches.results.push_back(std::move(list));
    }
    if (!matches.labelled) matches.labels.clear();
    return matches;
}

base::Result<void> ServiceCalls::check_labels(const schema::TriplesBatchResponse& reply) const {
    if (reply.labels->size() != reply.results.size()) {
        return make_error(ErrorType::kUpstreamError,
                          "store answered " + std::to_string(reply.labels->size()) +
                              " label lists for " + std::to_string(reply.results.size()) +
                              " results");
    }
    for (std::size_t i = 0; i < reply.results.size(); ++i) {
        if ((*reply.labels)[i].size() != 3 * reply.results[i].size()) {
            return make_error(ErrorType::kUpstreamError,
                              "store answered " + std::to_string((*reply.labels)[i].size()) +
                                  " labels for the " + std::to_string(reply.results[i].size()) +
                                  " triples of result " + std::to_string(i));
        }
    }
    return {};
}

base::Result<void> ServiceCalls::check_counts(const schema::TriplesBatchResponse& reply) const {
    if (reply.counts->size() != reply.results.size()) {
        return make_error(ErrorType::kUpstreamError,
                          "store answered " + std::to_string(reply.counts->size()) +
                              " counts for " + std::to_string(reply.results.size()) + " results");
    }
    for (std::size_t i = 0; i < reply.results.size(); ++i) {
        if ((*reply.counts)[i] < reply.results[i].size()) {
            return make_error(ErrorType::kUpstreamError,
                              "store answered a count of " + std::to_string((*reply.counts)[i]) +
                                  " for the " + std::to_string(reply.results[i].size()) +
                                  " triples of result " + std::to_string(i));
        }
    }
    return {};
}

base::Result<std::vector<std::string>> ServiceCalls::labels(
    const std::vector<schema::Term>& terms) {
    if (terms.empty()) return std::vector<std::string>{};
    constexpr std::string_view kOp = "labels";
    auto reply = timed_call(store_text_call(kOp, schema::LabelsRequest{collection_, terms}), kOp);
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode_text<schema::LabelsResponse>(reply->final_text);
    if (!decoded) return bad_reply(config_.store_service, decoded.error());
    if (decoded->labels.size() != terms.size()) {
        return make_error(ErrorType::kUpstreamError,
                          "store answered " + std::to_string(decoded->labels.size()) +
                              " labels for " + std::to_string(terms.size()) + " terms");
    }
    return std::move(decoded->labels);
}

runtime::CallSpec ServiceCalls::store_call(std::string_view op, json body) const {
    body["op"] = op;
    body["collection"] = collection_;
    return runtime::CallSpec{config_.store_service, std::move(body), config_.call_timeout};
}

base::Result<std::vector<std::vector<schema::FactSource>>> ServiceCalls::fact_sources_reply(
    const runtime::CallResult& called, std::size_t facts) const {
    auto decoded = schema::decode_text<schema::FactSourcesResponse>(called.final_text);
    if (!decoded) return bad_reply(config_.store_service, decoded.error());
    if (decoded->sources.size() != facts) {
        return make_error(ErrorType::kUpstreamError,
                          "store answered " + std::to_string(decoded->sources.size()) +
                              " source lists for " + std::to_string(facts) + " facts");
    }
    return std::move(decoded->sources);
}

base::Result<std::vector<std::vector<schema::FactSource>>> ServiceCalls::fact_sources(
    const std::vector<schema::Triple>& triples) {
    if (triples.empty()) return std::vector<std::vector<schema::FactSource>>{};
    constexpr std::string_view kOp = "fact-sources";
    auto reply =
        timed_call(store_text_call(kOp, schema::FactSourcesRequest{collection_, triples}), kOp);
    if (!reply) return std::move(reply).error();
    return fact_sources_reply(*reply, triples.size());
}

base::Result<ServiceCalls::LlmAndSources> ServiceCalls::llm_and_fact_sources(
    std::string_view template_name, std::map<std::string, std::string> variables,
    const std::vector<schema::Triple>& triples) {
    if (triples.empty()) {
        auto response = llm(template_name, std::move(variables));
        if (!response) return std::move(response).error();
        return LlmAndSources{std::move(response).value(), {}};
    }
    const std::vector<runtime::CallSpec> calls{
        llm_call(template_name, std::move(variables), false),
        store_text_call("fact-sources", schema::FactSourcesRequest{collection_, triples})};
    auto replies = timed_call_all(calls, std::string(template_name) + "+fact-sources");
    if (!replies) return std::move(replies).error();
    auto response = llm_reply((*replies)[0]);
    if (!response) return std::move(response).error();
    auto sources = fact_sources_reply((*replies)[1], triples.size());
    if (!sources) return std::move(sources).error();
    return LlmAndSources{std::move(response).value(), std::move(sources).value()};
}

base::Result<std::vector<schema::ChunkMatch>> ServiceCalls::chunks_vector(
    const std::vector<double>& vector, std::uint32_t limit) {
    auto reply =
        store("chunks-vector",
              schema::encode(schema::DocumentEmbeddingsQuery{{vector}, limit, collection_}));
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode<schema::ChunkMatchResponse>(reply->final);
    if (!decoded) return bad_reply(config_.store_service, decoded.error());
    return std::move(decoded->chunks);
}

base::Result<std::vector<schema::ChunkMatch>> ServiceCalls::chunks_keyword(const std::string& query,
                                                                           std::uint32_t limit) {
    auto reply = store("chunks-keyword",
                       schema::encode(schema::ChunkKeywordQuery{query, limit, collection_}));
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode<schema::ChunkMatchResponse>(reply->final);
    if (!decoded) return bad_reply(config_.store_service, decoded.error());
    return std::move(decoded->chunks);
}

base::Result<std::vector<schema::Chunk>> ServiceCalls::chunks_fetch(
    const std::vector<std::string>& chunk_ids) {
    if (chunk_ids.empty()) return std::vector<schema::Chunk>{};
    auto reply =
        store("chunks-fetch", schema::encode(schema::ChunkFetchRequest{chunk_ids, collection_}));
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode<schema::ChunkFetchResponse>(reply->final);
    if (!decoded) return bad_reply(config_.store_service, decoded.error());
    return std::move(decoded->chunks);
}

}  // namespace glassbox::rag
