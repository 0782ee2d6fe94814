// One `labels` request to the store for the entities a trace names.
#include "cli/trace_labels.hpp"

#include <algorithm>
#include <chrono>

#include "bus/bus_client.hpp"
#include "cli/settings.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli {
namespace {

// Labels are a nicety: a store that does not answer soon does not hold up the trace.
constexpr std::chrono::milliseconds kLabelsDeadline{3'000};
// A trace names at most a few hundred entities (seeds and kept edges per run); bound the
// request all the same.
constexpr std::size_t kMaxTerms = 2'000;

// The collection the trace's Question records (gb:collection), else the one its summary names.
std::string collection_of(const schema::TraceDetail& trace) {
    const schema::Term question = schema::iri(trace.session.session);
    for (const auto& event : trace.events) {
        for (const auto& triple : event.triples) {
            if (triple.s == question && triple.p.is_iri() &&
                triple.p.as_iri().value == schema::vocab::kCollection && triple.o.is_literal())
                return triple.o.as_literal().value;
        }
    }
    return trace.session.collection.value_or("");
}

}  // namespace

render::Labels ask_store_labels(const ClientOptions& client, const std::string& collection,
                                std::vector<std::string> iris) {
    if (iris.empty()) return {};
    if (iris.size() > kMaxTerms) iris.resize(kMaxTerms);
    schema::LabelsRequest request;
    request.collection = collection;
    for (const auto& iri : iris) request.terms.push_back(schema::iri(iri));
    nlohmann::json body = schema::encode(request);
    body["op"] = "labels";
    try {
        bus::BusClient bus(client.bus_config());
        auto replies =
            bus.call(schema::services::kStore, body, std::min(kLabelsDeadline, client.timeout()));
        if (!replies || replies->empty()) return {};
        auto decoded = schema::decode<schema::LabelsResponse>(replies->back().body);
        if (!decoded || decoded->labels.size() != iris.size()) return {};
        render::Labels labels;
        for (std::size_t i = 0; i < iris.size(); ++i) {
            if (!decoded->labels[i].empty()) labels.emplace(iris[i], decoded->labels[i]);
        }
        return labels;
    } catch (const std::exception&) {
        return {};  // a bus that cannot be set up: local names are shown
    }
}

render::Labels fetch_trace_labels(const ClientOptions& client, const schema::TraceDetail& trace) {
    std::string collection = collection_of(trace);
    if (collection.empty()) collection = settings().text("client.collection");
    return ask_store_labels(client, collection, render::iris_to_label(trace));
}

render::Labeler store_labeler(const ClientOptions& client, std::string collection) {
    return [client, collection = std::move(collection)](const std::vector<std::string>& iris) {
        return ask_store_labels(client, collection, iris);
    };
}

}  // namespace glassbox::cli
