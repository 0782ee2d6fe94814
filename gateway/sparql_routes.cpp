// POST /api/v1/sparql: a SPARQL 1.1 query over the mirrored traces and collections
// (docs/sparql.md), passed to the configured engine; its results as JSON, CSV or TSV.
#include <cctype>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/utf8.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/request_reader.hpp"
#include "http/sparql_client.hpp"
#include "http/sparql_query_form.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;

namespace {

// SPARQL 1.1 Protocol §2.1.3: the query results formats, JSON first for a client that accepts
// anything.
constexpr std::string_view kResultTypes[] = {http::kSparqlJson, http::kSparqlCsv, http::kSparqlTsv};
// No default-graph-uri / named-graph-uri: a query names its graphs in its own text.
constexpr std::span<const std::string_view> kNoParameters{};

// The media type of the request's body, without parameters, in lower case.
std::string body_media_type(const httplib::Request& req) {
    std::string type = req.get_header_value("Content-Type");
    if (const auto semicolon = type.find(';'); semicolon != std::string::npos)
        type.resize(semicolon);
    while (!type.empty() && type.back() == ' ') type.pop_back();
    for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return type;
}

// The query of a SPARQL 1.1 Protocol POST (§2.1.2 form-encoded `query=`, §2.1.3 a direct
// application/sparql-query body); a problem answered otherwise.
std::optional<std::string> query_of(const Gateway::State& state, const httplib::Request& req,
                                    httplib::Response& res) {
    if (req.body.size() > state.config.max_body_bytes) {
        std::string message = "the body is larger than ";
        message.append(std::to_string(state.config.max_body_bytes)).append(" bytes");
        send_error(res, make_error(ErrorType::kMessageTooLarge, std::move(message)));
        return std::nullopt;
    }
    const std::string type = body_media_type(req);
    std::string query;
    if (type == "application/sparql-query") {
        query = req.body;
    } else if (type == "application/x-www-form-urlencoded" ||
               (type == "application/octet-stream" &&
                req.get_header_value(std::string(kFormBodyField)) == "urlencoded")) {
        // The connection loop hands a form on as octet-stream, marked (request_reader.hpp).
        httplib::Params form;
        httplib::detail::parse_query_text(req.body, form);
        if (form.count("query") != 1) {
            send_error(
                res, make_error(ErrorType::kInvalidRequest, "the form must hold one query= field"));
            return std::nullopt;
        }
        query = form.find("query")->second;
    } else {
        send_problem(res, Problem{415, "UnsupportedMediaType",
                                  "the body must be application/sparql-query or "
                                  "application/x-www-form-urlencoded with query="});
        return std::nullopt;
    }
    if (base::find_invalid_utf8(query)) {
        send_error(res, make_error(ErrorType::kInvalidRequest, "the query is not valid UTF-8"));
        return std::nullopt;
    }
    return query;
}

// Only the read forms: an update is refused here (the engine's anonymous endpoint refuses them
// too, but a gateway token with read scope must never reach a writable one).
std::optional<base::Error> read_only_problem(std::string_view query) {
    switch (http::sparql_form(query)) {
        case http::SparqlForm::kSelect:
        case http::SparqlForm::kAsk:
        case http::SparqlForm::kConstruct:
        case http::SparqlForm::kDescribe:
            return std::nullopt;
        case http::SparqlForm::kUpdate:
            return make_error(ErrorType::kInvalidRequest,
                              "a SPARQL update is not accepted here: only SELECT, ASK, "
                              "CONSTRUCT and DESCRIBE");
        case http::SparqlForm::kUnknown:
            break;
    }
    return make_error(ErrorType::kInvalidRequest,
                      "not a SPARQL query: after the prologue (BASE, PREFIX) it must start with "
                      "SELECT, ASK, CONSTRUCT or DESCRIBE");
}

void sparql_route(Gateway::State& state, http::SparqlClient* client, const httplib::Request& req,
                  httplib::Response& res) {
    const auto chosen = admit(req, res, RouteShape{kNoParameters, kResultTypes});
    if (!chosen) return;
    if (client == nullptr) {
        send_problem(res, Problem{503, "ServiceUnavailable",
                                  "no SPARQL engine is configured (sparql.engine or "
                                  "sparql.endpoint, docs/sparql.md)"});
        return;
    }
    const auto query = query_of(state, req, res);
    if (!query) return;
    if (auto problem = read_only_problem(*query)) {
        send_error(res, *problem);
        return;
    }
    auto result = client->query(*query, kResultTypes[*chosen]);
    if (!result) {
        send_error(res, result.error());
        return;
    }
    res.status = 200;
    const std::string content_type =
        result->content_type.empty() ? std::string(kResultTypes[*chosen]) : result->content_type;
    res.set_content(result->body, content_type);
}

}  // namespace

void add_sparql_routes(Gateway::State& state) {
    // Shared by the route's handler copies (httplib copies the std::function); one client, whose
    // HTTP handles are pooled, for every request.
    std::shared_ptr<http::SparqlClient> client;
    if (state.config.sparql) client = std::make_shared<http::SparqlClient>(*state.config.sparql);
    state.server.Post("/api/v1/sparql",
                      [&state, client](const httplib::Request& req, httplib::Response& res) {
                          sparql_route(state, client.get(), req, res);
                      });
}

}  // namespace glassbox::gateway
