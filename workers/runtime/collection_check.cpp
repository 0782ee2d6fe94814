// Asking the store whether a collection was ever loaded.
#include "workers/runtime/collection_check.hpp"

#include "schema/messages.hpp"

namespace glassbox::runtime {

base::Result<void> check_collection(RequestContext& context, std::string_view store_service,
                                    const std::string& collection,
                                    std::chrono::milliseconds timeout) {
    schema::TriplesQuery probe;
    probe.limit = 1;
    probe.collection = collection;
    nlohmann::json body = schema::encode(probe);
    body["op"] = "triples";
    auto answered = context.call(store_service, body, timeout);
    if (!answered) return std::move(answered).error();
    return {};
}

}  // namespace glassbox::runtime
