// GET /api/v1/traces and /api/v1/traces/{id}: the `trace` service's list and show
// (docs/traces.md §2), over HTTP; GET /api/v1/traces/compare: its compare.
#include <array>
#include <charconv>

#include "gateway/gateway_state.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"
#include "schema/trace_rdf.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

base::Result<long long> integer_param(const std::string& name, const std::string& text,
                                      long long min, long long max) {
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
        return make_error(ErrorType::kInvalidRequest, name + " must be an integer from " +
                                                          std::to_string(min) + " to " +
                                                          std::to_string(max));
    return value;
}

namespace {

constexpr std::size_t kMaxParamBytes = 1024;

// The list's filters. Unknown parameters are refused (admit) so a misspelt filter cannot
// silently list everything.
constexpr std::string_view kListParameters[] = {
    "kind", "status", "since", "until", "search", "parent", "all", "limit", "offset", "after",
    "exact_total", "evaluated",
    // What the runs used, their text, whether a change affected them (docs/traces.md).
    "uses_source", "uses_document", "uses_fact", "entity", "model", "text", "affected"};

// The list request from the query string (its names already checked against kListParameters).
base::Result<json> list_request(const httplib::Request& req) {
    json request{{"op", "list"}};
    for (const auto& [name, value] : req.params) {
        if (value.size() > kMaxParamBytes)
            return make_error(ErrorType::kInvalidRequest, name + " is longer than 1024 bytes");
        if (name == "kind" || name == "status" || name == "since" || name == "until" ||
            name == "search" || name == "parent" || name == "after" || name == "uses_source" ||
            name == "uses_document" || name == "uses_fact" || name == "entity" || name == "model" ||
            name == "text") {
            request[name] = value;
        } else if (name == "all" || name == "exact_total" || name == "evaluated" ||
                   name == "affected") {
            if (value != "true" && value != "false" && value != "1" && value != "0" &&
                !value.empty())
                return make_error(ErrorType::kInvalidRequest, name + " must be true or false");
            request[name == "all" ? "include_subtraces" : name] =
                value.empty() || value == "true" || value == "1";
        } else if (name == "limit") {
            auto limit = integer_param(name, value, 1, 10'000);
            if (!limit) return limit.error();
            request["limit"] = *limit;
        } else if (name == "offset") {
            auto offset = integer_param(name, value, 0, 1'000'000'000);
            if (!offset) return offset.error();
            request["offset"] = *offset;
        }
    }
    return request;
}

// The representations of a trace: its JSON, or an RDF serialisation.
enum class TraceFormat { kJson, kTurtle, kNTriples, kNQuads, kJsonLd };

struct FormatName {
    std::string_view param;
    std::string_view media_type;
    TraceFormat format;
};
constexpr FormatName kFormats[] = {
    {"json", "application/json", TraceFormat::kJson},
    {"turtle", "text/turtle", TraceFormat::kTurtle},
    {"ntriples", "application/n-triples", TraceFormat::kNTriples},
    {"nquads", "application/n-quads", TraceFormat::kNQuads},
    {"jsonld", "application/ld+json", TraceFormat::kJsonLd},
};

constexpr std::string_view kShowParameters[] = {"format"};
// kFormats' media types, in its order: JSON first, for a client that accepts anything.
constexpr auto kTraceMediaTypes = [] {
    std::array<std::string_view, std::size(kFormats)> types{};
    for (std::size_t i = 0; i < types.size(); ++i) types[i] = kFormats[i].media_type;
    return types;
}();

// ?format= wins (for links, whatever Accept says); else the one Accept prefers. Nullopt once a
// problem is answered: an unknown parameter or format (400), an Accept that admits none (406).
std::optional<TraceFormat> trace_format(const httplib::Request& req, httplib::Response& res) {
    if (auto known = only_known_params(req, kShowParameters); !known) {
        send_error(res, known.error());
        return std::nullopt;
    }
    if (req.has_param("format")) {
        const std::string name = req.get_param_value("format");
        for (const auto& f : kFormats)
            if (f.param == name) return f.format;
        send_error(res, make_error(ErrorType::kInvalidRequest,
                                   "format must be json, turtle, ntriples, nquads or jsonld"));
        return std::nullopt;
    }
    const auto chosen = negotiate(req, kTraceMediaTypes);
    if (!chosen) {
        send_problem(res, not_acceptable(kTraceMediaTypes));
        return std::nullopt;
    }
    return kFormats[*chosen].format;
}

void send_trace(httplib::Response& res, TraceFormat format, const json& reply) {
    if (format == TraceFormat::kJson) return send_json(res, 200, reply);
    auto trace = schema::decode<schema::TraceDetail>(reply);
    if (!trace) return send_error(res, trace.error());
    const auto triples = schema::rdf::trace_triples(*trace);
    res.status = 200;
    switch (format) {
        case TraceFormat::kTurtle:
            return res.set_content(schema::rdf::render_turtle(triples),
                                   "text/turtle; charset=utf-8");
        case TraceFormat::kNTriples:
            return res.set_content(schema::rdf::render_ntriples(triples), "application/n-triples");
        case TraceFormat::kNQuads:
            return res.set_content(schema::rdf::render_nquads(triples), "application/n-quads");
        case TraceFormat::kJsonLd:
            return res.set_content(schema::rdf::render_jsonld(triples).dump(
                                       -1, ' ', false, json::error_handler_t::replace),
                                   "application/ld+json");
        case TraceFormat::kJson:
            break;
    }
}

// GET /api/v1/traces/compare?a=&b=: the trace service's compare (docs/traces.md, "Replay and
// compare"); both runs named as show takes them.
constexpr std::string_view kCompareParameters[] = {"a", "b"};

void compare_route(Gateway::State& state, const httplib::Request& req, httplib::Response& res) {
    if (!admit(req, res, RouteShape{kCompareParameters, kJsonOnly})) return;
    json request{{"op", "compare"}};
    for (const char* name : {"a", "b"}) {
        const std::string value = req.get_param_value(name);
        if (value.empty() || value.size() > kMaxParamBytes) {
            send_error(res, make_error(ErrorType::kInvalidRequest,
                                       std::string(name) +
                                           " must name a trace: a session URI or a UUID prefix "
                                           "of at most 1024 bytes"));
            return;
        }
        request[name] = value;
    }
    auto reply = state.bus.call(schema::services::kTrace, request, state.config.call_timeout);
    if (!reply) {
        send_error(res, reply.error());
        return;
    }
    ServerPaths::instance().redact_json(*reply);
    send_json(res, 200, *reply);
}

}  // namespace

void add_trace_routes(Gateway::State& state) {
    state.server.Get("/api/v1/traces", [&state](const httplib::Request& req,
                                                httplib::Response& res) {
        if (!admit(req, res, RouteShape{kListParameters, kJsonOnly})) return;
        auto request = list_request(req);
        if (!request) {
            send_error(res, request.error());
            return;
        }
        auto reply = state.bus.call(schema::services::kTrace, *request, state.config.call_timeout);
        if (!reply) {
            send_error(res, reply.error());
            return;
        }
        // A row's stored error, and its question, may name a file of the server (old traces).
        ServerPaths::instance().redact_json(*reply);
        send_json(res, 200, *reply);
    });
    // Registered before /api/v1/traces/{id}, which would take "compare" for an id.
    state.server.Get("/api/v1/traces/compare",
                     [&state](const httplib::Request& req, httplib::Response& res) {
                         compare_route(state, req, res);
                     });
    // The id is a session URI (URL-encoded; httplib decodes the path) or a unique UUID prefix.
    state.server.Get(R"(/api/v1/traces/([^/]{1,1024}))", [&state](const httplib::Request& req,
                                                                  httplib::Response& res) {
        const std::string id = req.matches[1];
        const auto format = trace_format(req, res);
        if (!format) return;
        auto reply = state.bus.call(schema::services::kTrace, json{{"op", "show"}, {"session", id}},
                                    state.config.call_timeout);
        if (!reply) {
            send_error(res, reply.error());
            return;
        }
        // Rows, stored errors and literal texts; the trace's IRIs stay as stored.
        ServerPaths::instance().redact_json(*reply);
        send_trace(res, *format, *reply);
    });
}

}  // namespace glassbox::gateway
