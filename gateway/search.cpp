// Chunks and edges for a query, over the embeddings and store services.
#include "gateway/search.hpp"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway {

namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

constexpr std::size_t kMaxQueryBytes = 4096;
constexpr std::size_t kMaxCollectionBytes = 256;
constexpr std::uint32_t kDefaultLimit = 10;
constexpr std::uint32_t kMaxLimit = 50;
// Triples read around each matched entity, before the best `limit` are kept.
constexpr std::uint32_t kTriplesPerEntity = 10;

struct SearchInput {
    std::string query;
    std::string collection;
    std::uint32_t limit = kDefaultLimit;
    bool chunks = true;
    bool edges = true;
};

base::Result<SearchInput> search_input(const json& body) {
    if (!body.is_object()) return make_error(ErrorType::kInvalidRequest, "the search body is an object");
    SearchInput in;
    for (const auto& [key, value] : body.items()) {
        if (key == "query" && value.is_string() && !value.get_ref<const std::string&>().empty() &&
            value.get_ref<const std::string&>().size() <= kMaxQueryBytes) {
            in.query = value.get<std::string>();
        } else if (key == "collection" && value.is_string() &&
                   value.get_ref<const std::string&>().size() <= kMaxCollectionBytes) {
            in.collection = value.get<std::string>();
        } else if (key == "limit" && value.is_number_integer() && value.get<long long>() >= 1 &&
                   value.get<long long>() <= kMaxLimit) {
            in.limit = value.get<std::uint32_t>();
        } else if (key == "kind" && (value == "chunks" || value == "edges" || value == "both")) {
            in.chunks = value != "edges";
            in.edges = value != "chunks";
        } else {
            return make_error(ErrorType::kInvalidRequest,
                              "search: '" + key + "' must be " +
                                  (key == "query"        ? "a string of 1 to 4096 bytes"
                                   : key == "collection" ? "a string of at most 256 bytes"
                                   : key == "limit"      ? "an integer from 1 to 50"
                                   : key == "kind"       ? "chunks, edges or both"
                                                         : "absent (unknown field)"));
        }
    }
    if (in.query.empty()) return make_error(ErrorType::kInvalidRequest, "search: query is required");
    return in;
}

template <typename T>
base::Result<T> call_as(BusPool& bus, std::string_view service, std::string_view op, json body,
                        const SearchLimits& limits) {
    if (!op.empty()) body["op"] = op;
    auto reply = bus.call(service, body, limits.call_timeout);
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode<T>(*reply);
    if (!decoded) {
        return make_error(ErrorType::kUpstreamError, std::string(service) + " " + std::string(op) +
                                                         ": " + decoded.error().message);
    }
    return std::move(decoded).value();
}

std::string term_value(const schema::Term& t) {
    if (t.is_iri()) return t.as_iri().value;
    if (t.is_literal()) return t.as_literal().value;
    return schema::encode(t).dump();
}

base::Result<json> chunks_for(BusPool& bus, const SearchInput& in, const std::vector<double>& vector,
                              const SearchLimits& limits) {
    auto matches = call_as<schema::ChunkMatchResponse>(
        bus, schema::services::kStore, "chunks-hybrid",
        schema::encode(schema::HybridChunkQuery{in.query, {vector}, in.limit, in.collection}), limits);
    if (!matches) return std::move(matches).error();
    json out = json::array();
    if (matches->chunks.empty()) return out;
    std::vector<std::string> ids;
    for (const auto& m : matches->chunks) ids.push_back(m.chunk_id);
    auto fetched = call_as<schema::ChunkFetchResponse>(
        bus, schema::services::kStore, "chunks-fetch",
        schema::encode(schema::ChunkFetchRequest{ids, in.collection}), limits);
    if (!fetched) return std::move(fetched).error();
    for (const auto& m : matches->chunks) {
        for (const auto& c : fetched->chunks) {
            if (c.chunk_id != m.chunk_id) continue;
            out.push_back({{"chunk", c.chunk_id}, {"document", c.document_id}, {"title", c.document_title},
                           {"text", c.text}, {"score", m.score}, {"tier", c.tier},
                           {"char_offset", c.char_offset}, {"char_end", c.char_offset + c.char_length}});
        }
    }
    return out;
}

base::Result<json> edges_for(BusPool& bus, const SearchInput& in, const std::vector<double>& vector,
                             const SearchLimits& limits) {
    auto entities = call_as<schema::GraphEmbeddingsResponse>(
        bus, schema::services::kStore, "entities",
        schema::encode(schema::GraphEmbeddingsQuery{{vector}, in.limit, in.collection}), limits);
    if (!entities) return std::move(entities).error();
    json out = json::array();
    if (entities->entities.empty()) return out;
    schema::TriplesQueryBatch batch;
    batch.limit = kTriplesPerEntity;
    batch.collection = in.collection;
    for (const auto& e : entities->entities) batch.patterns.push_back({e.entity, std::nullopt, std::nullopt, std::nullopt});
    auto found = call_as<schema::TriplesBatchResponse>(bus, schema::services::kStore, "triples-batch",
                                                       schema::encode(batch), limits);
    if (!found) return std::move(found).error();
    // Entities come best first: their triples keep that order, each once, up to the limit.
    std::vector<schema::Triple> triples;
    std::vector<double> scores;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < found->results.size() && i < entities->entities.size(); ++i) {
        for (auto& t : found->results[i]) {
            if (triples.size() >= in.limit) break;
            // A label is what `text` already shows: the entity's other facts say more.
            if (t.p.is_iri() && t.p.as_iri().value == schema::vocab::kRdfsLabel) continue;
            if (!seen.insert(schema::encode(t).dump()).second) continue;
            triples.push_back(std::move(t));
            scores.push_back(entities->entities[i].score);
        }
    }
    if (triples.empty()) return out;
    std::vector<schema::Term> terms;
    for (const auto& t : triples) {
        terms.push_back(t.s);
        terms.push_back(t.p);
        terms.push_back(t.o);
    }
    auto labels = call_as<schema::LabelsResponse>(bus, schema::services::kStore, "labels",
                                                  schema::encode(schema::LabelsRequest{in.collection, terms}), limits);
    if (!labels) return std::move(labels).error();
    auto sources = call_as<schema::FactSourcesResponse>(
        bus, schema::services::kStore, "fact-sources",
        schema::encode(schema::FactSourcesRequest{in.collection, triples}), limits);
    if (!sources) return std::move(sources).error();
    if (labels->labels.size() != terms.size() || sources->sources.size() != triples.size()) {
        return make_error(ErrorType::kUpstreamError, "store: labels or sources do not match the facts asked");
    }
    for (std::size_t i = 0; i < triples.size(); ++i) {
        json from = json::array();
        for (const auto& s : sources->sources[i]) {
            from.push_back({{"source", s.source}, {"kind", s.kind}, {"document", s.document.value_or("")},
                            {"tier", s.tier}});
        }
        out.push_back({{"s", term_value(triples[i].s)},
                       {"p", term_value(triples[i].p)},
                       {"o", term_value(triples[i].o)},
                       {"text", labels->labels[3 * i] + " " + labels->labels[3 * i + 1] + " " + labels->labels[3 * i + 2]},
                       {"score", scores[i]},
                       {"sources", std::move(from)}});
    }
    return out;
}

}  // namespace

base::Result<json> search_knowledge(BusPool& bus, const json& body, const SearchLimits& limits) {
    auto in = search_input(body);
    if (!in) return std::move(in).error();
    auto embedded = call_as<schema::EmbeddingsResponse>(
        bus, schema::services::kEmbeddings, "", schema::encode(schema::EmbeddingsRequest{{in->query}}), limits);
    if (!embedded) return std::move(embedded).error();
    if (embedded->vectors.size() != 1) {
        return make_error(ErrorType::kUpstreamError, "embeddings: one vector expected for the query");
    }
    json out = {{"chunks", json::array()}, {"edges", json::array()}};
    if (in->chunks) {
        auto chunks = chunks_for(bus, *in, embedded->vectors[0], limits);
        if (!chunks) return std::move(chunks).error();
        out["chunks"] = std::move(*chunks);
    }
    if (in->edges) {
        auto edges = edges_for(bus, *in, embedded->vectors[0], limits);
        if (!edges) return std::move(edges).error();
        out["edges"] = std::move(*edges);
    }
    return out;
}

}  // namespace glassbox::gateway
