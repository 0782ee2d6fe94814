// POST /api/v1/search (retrieval only: chunks and edges with scores and sources) and
// GET /api/v1/graph/stats, over the store and embeddings services (docs/knowledge.md §3).
#include "gateway/explain_view.hpp"
#include "gateway/gateway_state.hpp"
#include "schema/collection_name.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

constexpr std::uint32_t kDefaultSearchLimit = 10;
constexpr std::uint32_t kMaxSearchLimit = 100;
// Facts read per matched entity before the best `limit` are kept.
constexpr std::uint32_t kFactsPerEntity = 20;
constexpr std::string_view kSearchFields[] = {"query", "kind", "collection", "limit"};
constexpr std::string_view kStatsParameters[] = {"collection"};

struct SearchInput {
    std::string query;
    std::string collection;
    bool chunks = true;
    bool edges = true;
    std::uint32_t limit = kDefaultSearchLimit;
};

base::Result<SearchInput> search_input(const json& body) {
    SearchInput in;
    if (auto known = only_known_fields(body, kSearchFields); !known) return known.error();
    const auto query = body.find("query");
    if (query == body.end() || !query->is_string() ||
        is_blank(query->get_ref<const std::string&>()) ||
        query->get_ref<const std::string&>().size() > std::size_t{16} * 1024)
        return make_error(
            ErrorType::kInvalidRequest,
            "query must be a string of 1 to 16384 bytes holding more than white space");
    in.query = query->get<std::string>();
    if (const auto kind = body.find("kind"); kind != body.end() && !kind->is_null()) {
        if (!kind->is_string() || (*kind != "chunks" && *kind != "edges" && *kind != "both"))
            return make_error(ErrorType::kInvalidRequest, "kind must be chunks, edges or both");
        in.chunks = *kind != "edges";
        in.edges = *kind != "chunks";
    }
    if (const auto c = body.find("collection"); c != body.end() && !c->is_null()) {
        if (!c->is_string() || c->get_ref<const std::string&>().size() > 256)
            return make_error(ErrorType::kInvalidRequest,
                              "collection must be a string of at most 256 bytes");
        if (auto name = schema::validate_collection(c->get_ref<const std::string&>()); !name)
            return name.error();
        in.collection = c->get<std::string>();
    }
    if (const auto l = body.find("limit"); l != body.end() && !l->is_null()) {
        if (!l->is_number_integer() || l->get<long long>() < 1 ||
            l->get<long long>() > kMaxSearchLimit)
            return make_error(ErrorType::kInvalidRequest, "limit must be an integer from 1 to 100");
        in.limit = l->get<std::uint32_t>();
    }
    return in;
}

// One call whose FINAL decodes as T.
template <typename T>
base::Result<T> call_as(Gateway::State& state, std::string_view service, const json& body) {
    auto reply = state.bus.call(service, body, state.config.call_timeout);
    if (!reply) return reply.error();
    return schema::decode<T>(*reply);
}

template <typename T>
json store_op(const T& request, std::string_view op) {
    json body = schema::encode(request);
    body["op"] = op;
    return body;
}

base::Result<json> search_chunks(Gateway::State& state, const SearchInput& in,
                                 const std::vector<double>& vector) {
    auto matches = call_as<schema::ChunkMatchResponse>(
        state, schema::services::kStore,
        store_op(schema::HybridChunkQuery{in.query, {vector}, in.limit, in.collection},
                 "chunks-hybrid"));
    if (!matches) return matches.error();
    json out = json::array();
    if (matches->chunks.empty()) return out;
    schema::ChunkFetchRequest fetch;
    fetch.collection = in.collection;
    for (const auto& m : matches->chunks) fetch.chunk_ids.push_back(m.chunk_id);
    auto fetched = call_as<schema::ChunkFetchResponse>(state, schema::services::kStore,
                                                       store_op(fetch, "chunks-fetch"));
    if (!fetched) return fetched.error();
    for (const auto& m : matches->chunks) {
        json item{{"chunk", m.chunk_id}, {"score", m.score}, {"document", nullptr},
                  {"title", ""},         {"text", ""},       {"tier", 0}};
        for (const auto& c : fetched->chunks) {
            if (c.chunk_id != m.chunk_id) continue;
            item["document"] = c.document_id;
            item["title"] = c.document_title;
            item["text"] = c.text;
            item["tier"] = c.tier;
            item["char_offset"] = c.char_offset;
            item["char_end"] = c.char_offset + c.char_length;
        }
        out.push_back(std::move(item));
    }
    return out;
}

// The facts about the entities nearest the question (by their label vectors), each scored by
// its entity's similarity, with labels and the sources each fact was loaded from.
base::Result<json> search_edges(Gateway::State& state, const SearchInput& in,
                                const std::vector<double>& vector) {
    auto entities = call_as<schema::GraphEmbeddingsResponse>(
        state, schema::services::kStore,
        store_op(schema::GraphEmbeddingsQuery{{vector}, in.limit, in.collection}, "entities"));
    if (!entities) return entities.error();
    struct Edge {
        schema::Triple triple;
        double score;
    };
    std::vector<Edge> edges;
    for (const auto& entity : entities->entities) {
        schema::TriplesQuery query;
        query.s = entity.entity;
        query.limit = kFactsPerEntity;
        query.collection = in.collection;
        auto triples = call_as<schema::TriplesResponse>(state, schema::services::kStore,
                                                        store_op(query, "triples"));
        if (!triples) return triples.error();
        for (auto& t : triples->triples) {
            edges.push_back({std::move(t), entity.score});
            if (edges.size() >= in.limit) break;
        }
        if (edges.size() >= in.limit) break;
    }
    json out = json::array();
    if (edges.empty()) return out;
    schema::LabelsRequest labels;
    labels.collection = in.collection;
    schema::FactSourcesRequest sources;
    sources.collection = in.collection;
    for (const auto& e : edges) {
        labels.terms.insert(labels.terms.end(), {e.triple.s, e.triple.p, e.triple.o});
        sources.triples.push_back(e.triple);
    }
    auto named = call_as<schema::LabelsResponse>(state, schema::services::kStore,
                                                 store_op(labels, "labels"));
    if (!named) return named.error();
    auto found = call_as<schema::FactSourcesResponse>(state, schema::services::kStore,
                                                      store_op(sources, "fact-sources"));
    if (!found) return found.error();
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto label = [&](std::size_t k) {
            return 3 * i + k < named->labels.size() ? named->labels[3 * i + k] : std::string();
        };
        json item_sources = json::array();
        if (i < found->sources.size()) {
            for (const auto& s : found->sources[i])
                item_sources.push_back(
                    json{{"source", s.source},
                         {"kind", s.kind},
                         {"document", s.document ? json(*s.document) : json(nullptr)},
                         {"tier", s.tier}});
        }
        out.push_back(json{{"s", schema::encode(edges[i].triple.s)},
                           {"p", schema::encode(edges[i].triple.p)},
                           {"o", schema::encode(edges[i].triple.o)},
                           {"text", label(0) + " " + label(1) + " " + label(2)},
                           {"score", edges[i].score},
                           {"sources", item_sources}});
    }
    return out;
}

}  // namespace

base::Result<json> search_knowledge(Gateway::State& state, const json& body) {
    auto in = search_input(body);
    if (!in) return std::move(in).error();
    auto embedded =
        call_as<schema::EmbeddingsResponse>(state, schema::services::kEmbeddings,
                                            schema::encode(schema::EmbeddingsRequest{{in->query}}));
    if (!embedded) return std::move(embedded).error();
    if (embedded->vectors.size() != 1)
        return make_error(ErrorType::kUpstreamError, "embeddings answered no vector");
    json out{{"chunks", json::array()}, {"edges", json::array()}};
    if (in->chunks) {
        auto chunks = search_chunks(state, *in, embedded->vectors.front());
        if (!chunks) return std::move(chunks).error();
        out["chunks"] = std::move(*chunks);
    }
    if (in->edges) {
        auto edges = search_edges(state, *in, embedded->vectors.front());
        if (!edges) return std::move(edges).error();
        out["edges"] = std::move(*edges);
    }
    return out;
}

void add_knowledge_routes(Gateway::State& state) {
    state.server.Post("/api/v1/search",
                      [&state](const httplib::Request& req, httplib::Response& res) {
                          if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
                          auto body = json_body(state, req);
                          if (!body) return send_error(res, body.error());
                          auto out = search_knowledge(state, *body);
                          if (!out) return send_error(res, out.error());
                          send_json(res, 200, *out);
                      });
    state.server.Get(
        "/api/v1/graph/stats", [&state](const httplib::Request& req, httplib::Response& res) {
            if (!admit(req, res, RouteShape{kStatsParameters, kJsonOnly})) return;
            const std::string collection = req.get_param_value("collection");
            if (auto name = schema::validate_collection(collection); !name)
                return send_error(res, name.error());
            auto stats = state.bus.call(schema::services::kStore,
                                        store_op(schema::StoreStatsRequest{collection}, "stats"),
                                        state.config.call_timeout);
            if (!stats) return send_error(res, stats.error());
            send_json(res, 200, *stats);
        });
}

}  // namespace glassbox::gateway
