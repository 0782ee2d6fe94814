// GET /api/v1/collections, GET and DELETE /api/v1/collections/{name}: the knowledge store's
// collections as things a user manages (docs/collections.md), over the `store` service. The
// scope of each is access.cpp's (DELETE needs `load`, as loading does).
#include "gateway/gateway_state.hpp"
#include "schema/collection_name.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"

namespace glassbox::gateway {

using nlohmann::json;

namespace {

// A name of the rule's characters only: anything else is refused by validate_collection with
// 400, so the pattern only has to keep the route apart from others.
constexpr const char* kCollectionRoute = R"(/api/v1/collections/([^/]{1,256}))";

// The store's FINAL for `body`, checked against the contract's type T and answered as its
// encoding (what the OpenAPI document describes), or the store's error as a problem.
template <typename T>
void answer_store(Gateway::State& state, httplib::Response& res, const json& body) {
    auto reply = state.bus.call(schema::services::kStore, body, state.config.call_timeout);
    if (!reply) return send_error(res, reply.error());
    auto typed = schema::decode<T>(*reply);
    if (!typed) return send_error(res, typed.error());
    send_json(res, 200, schema::encode(*typed));
}

// The {name} of the path, checked by the one rule for collection names (400 otherwise).
base::Result<std::string> collection_of(const httplib::Request& req) {
    const std::string name = req.matches[1];
    if (auto valid = schema::validate_collection(name); !valid) return valid.error();
    return name;
}

}  // namespace

void add_collection_routes(Gateway::State& state) {
    state.server.Get(
        "/api/v1/collections", [&state](const httplib::Request& req, httplib::Response& res) {
            if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
            answer_store<schema::CollectionList>(state, res, json{{"op", "collections"}});
        });
    state.server.Get(kCollectionRoute,
                     [&state](const httplib::Request& req, httplib::Response& res) {
                         if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
                         auto name = collection_of(req);
                         if (!name) return send_error(res, name.error());
                         json body = schema::encode(schema::StoreStatsRequest{*name});
                         body["op"] = "stats";
                         answer_store<schema::StoreStats>(state, res, body);
                     });
    state.server.Delete(
        kCollectionRoute, [&state](const httplib::Request& req, httplib::Response& res) {
            if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
            auto name = collection_of(req);
            if (!name) return send_error(res, name.error());
            answer_store<schema::CollectionDeleted>(
                state, res, json{{"op", "collection-delete"}, {"collection", *name}});
        });
}

}  // namespace glassbox::gateway
