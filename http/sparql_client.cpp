// SparqlClient: SPARQL 1.1 Protocol queries (form POSTs) and Graph Store Protocol writes through
// the one HTTP client, with the engine's answers read into typed errors.
#include "http/sparql_client.hpp"

#include <algorithm>
#include <utility>

#include "schema/untrusted_json.hpp"

namespace glassbox::http {

using base::Error;
using base::ErrorType;
using base::make_error;
using std::chrono::milliseconds;

namespace {

constexpr std::size_t kMaxReasonBytes = 300;

// A URL fit for messages: no user:password@, no query string.
std::string shown_url(std::string_view url) {
    if (const auto cut = url.find('?'); cut != std::string_view::npos) url = url.substr(0, cut);
    std::string out(url);
    const auto scheme = out.find("://");
    if (scheme == std::string::npos) return out;
    const auto host = scheme + 3;
    const auto at = out.find('@', host);
    const auto path = out.find('/', host);
    if (at != std::string::npos && (path == std::string::npos || at < path))
        out.erase(host, at + 1 - host);
    return out;
}

// "Virtuoso 37000 Error SP030: ..." -> "37000"; "" for any other text.
std::string_view virtuoso_sql_state(std::string_view body) {
    while (!body.empty() && (body.front() == '\n' || body.front() == '\r' || body.front() == ' '))
        body.remove_prefix(1);
    constexpr std::string_view kPrefix = "Virtuoso ";
    if (!body.starts_with(kPrefix)) return {};
    body.remove_prefix(kPrefix.size());
    const auto space = body.find(' ');
    if (space != 5 || !body.substr(space).starts_with(" Error")) return {};
    return body.substr(0, 5);
}

bool refused_state(std::string_view state) {
    return state.starts_with("37") || state.starts_with("42") || state.starts_with("22") ||
           state.starts_with("21");
}

// The wire deadline of one call: the engine's bound plus the grace, or the caller's if sooner.
CallOptions wire_bound(const CallOptions& call, milliseconds timeout) {
    CallOptions bounded = call;
    const auto deadline = Clock::now() + timeout + detail::kSparqlWireGrace;
    if (!bounded.deadline || deadline < *bounded.deadline) bounded.deadline = deadline;
    return bounded;
}

HttpOptions sparql_http_options(milliseconds timeout) {
    HttpOptions options;
    options.timeout = timeout + detail::kSparqlWireGrace;
    options.max_retries = 0;  // an engine's error is deterministic; the mirrors retry themselves
    options.user_agent = "glassbox-sparql/0.1";
    return options;
}

}  // namespace

namespace detail {

std::string percent_encode(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                                (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' ||
                                byte == '_' || byte == '~';
        if (unreserved) {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(kHex[byte >> 4]);
            out.push_back(kHex[byte & 0x0F]);
        }
    }
    return out;
}

std::string graph_store_target(std::string_view graph_store_url, std::string_view graph_iri) {
    std::string url(graph_store_url);
    url.push_back(url.find('?') == std::string::npos ? '?' : '&');
    url.append("graph-uri=");
    url.append(percent_encode(graph_iri));
    return url;
}

std::string query_form(std::string_view text, milliseconds timeout) {
    std::string form = "query=";
    form.append(percent_encode(text));
    if (timeout.count() > 0) {
        form.append("&timeout=");
        form.append(std::to_string(timeout.count()));
    }
    return form;
}

std::string engine_reason(std::string_view body) {
    std::string_view line;
    while (!body.empty()) {
        const auto end = body.find('\n');
        line = body.substr(0, end);
        body = end == std::string_view::npos ? std::string_view{} : body.substr(end + 1);
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) break;
        line = {};
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    std::string out(line.substr(0, kMaxReasonBytes));
    std::replace_if(
        out.begin(), out.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }, ' ');
    if (line.size() > kMaxReasonBytes) out.append("...");
    return out;
}

std::optional<Error> query_answer_error(long status, std::string_view sql_state,
                                        std::string_view body, std::string_view url) {
    if (status >= 200 && status < 300) {
        if (sql_state == "S1TAT") {
            return make_error(ErrorType::kTimeout,
                              "the SPARQL engine at " + shown_url(url) +
                                  " stopped the query at its timeout (partial results dropped)");
        }
        return std::nullopt;
    }
    const std::string reason = engine_reason(body);
    std::string message = "the SPARQL engine at " + shown_url(url);
    message.append(" (HTTP ").append(std::to_string(status)).append(")");
    const std::string_view state = virtuoso_sql_state(body);
    if (state == "S1T00") {
        message.append(" stopped the query at its timeout: ").append(reason);
        return make_error(ErrorType::kTimeout, std::move(message));
    }
    if ((status >= 400 && status < 500) || refused_state(state)) {
        message.append(" refused the query: ").append(reason);
        return make_error(ErrorType::kInvalidRequest, std::move(message));
    }
    message.append(" failed: ").append(reason);
    return make_error(ErrorType::kUpstreamError, std::move(message));
}

std::optional<Error> graph_store_answer_error(long status, std::string_view body,
                                              std::string_view url, bool deleting) {
    if (status >= 200 && status < 300) return std::nullopt;
    if (deleting && status == 404) return std::nullopt;
    std::string message = "the SPARQL graph store at " + shown_url(url);
    message.append(" (HTTP ").append(std::to_string(status)).append(")");
    if (status == 401 || status == 403) {
        message.append(" refused the write (check sparql.user and sparql.password)");
        return make_error(ErrorType::kInvalidRequest, std::move(message));
    }
    message.append(status >= 400 && status < 500 ? " refused the write: " : " failed: ");
    message.append(engine_reason(body));
    return make_error(
        status >= 400 && status < 500 ? ErrorType::kInvalidRequest : ErrorType::kUpstreamError,
        std::move(message));
}

nlohmann::json standard_ask_result(nlohmann::json results) {
    const auto head = results.find("head");
    if (head == results.end() || !head->is_object()) return results;
    const auto vars = head->find("vars");
    if (vars == head->end() || *vars != nlohmann::json::array({"__ASK_RETVAL"})) return results;
    bool answer = false;
    const auto& bindings = results["results"]["bindings"];
    if (bindings.is_array() && !bindings.empty()) {
        const auto& value = bindings[0]["__ASK_RETVAL"]["value"];
        answer = value.is_string() && value.get<std::string>() != "0";
    }
    return nlohmann::json{{"head", nlohmann::json::object()}, {"boolean", answer}};
}

}  // namespace detail

SparqlClient::SparqlClient(SparqlConfig config)
    : config_(std::move(config)), http_(sparql_http_options(config_.timeout)) {}

SparqlClient::~SparqlClient() = default;

base::Result<SparqlResult> SparqlClient::query(std::string_view text, std::string_view accept,
                                               const CallOptions& call) {
    if (config_.query_url.empty())
        return make_error(ErrorType::kServiceUnavailable, "no SPARQL endpoint is configured");
    HttpRequest request;
    request.method = "POST";
    request.url = config_.query_url;
    request.content_type = "application/x-www-form-urlencoded";
    request.body = detail::query_form(text, config_.timeout);
    request.accept = std::string(accept);
    request.http_errors_as_responses = true;
    auto answer = http_.request(request, wire_bound(call, config_.timeout));
    if (!answer) return std::move(answer).error();
    HttpResponse& response = answer.value();
    const std::string sql_state = response.header("x-sql-state").value_or("");
    if (auto error = detail::query_answer_error(response.status, sql_state, response.body,
                                                config_.query_url)) {
        return std::move(*error);
    }
    return SparqlResult{response.status, response.header("content-type").value_or(""),
                        std::move(response.body)};
}

base::Result<nlohmann::json> SparqlClient::select(std::string_view text, const CallOptions& call) {
    auto answer = query(text, kSparqlJson, call);
    if (!answer) return std::move(answer).error();
    auto parsed = schema::parse_untrusted_json(answer.value().body);
    if (!parsed || !parsed.value().is_object()) {
        return make_error(ErrorType::kUpstreamError,
                          "the SPARQL engine at " + shown_url(config_.query_url) +
                              " answered with something other than SPARQL JSON results");
    }
    return detail::standard_ask_result(std::move(parsed).value());
}

namespace {

HttpRequest graph_request(const SparqlConfig& config, const char* method,
                          std::string_view graph_iri) {
    HttpRequest request;
    request.method = method;
    request.url = detail::graph_store_target(config.graph_store_url, graph_iri);
    request.accept = "*/*";
    request.user = config.user;
    request.password = config.password;
    request.http_errors_as_responses = true;
    return request;
}

base::Result<void> graph_write(HttpClient& http, const SparqlConfig& config,
                               const HttpRequest& request, const CallOptions& call, bool deleting) {
    if (config.graph_store_url.empty()) {
        return make_error(ErrorType::kServiceUnavailable,
                          "no SPARQL graph store is configured (sparql.graph_store)");
    }
    auto answer = http.request(request, wire_bound(call, config.timeout));
    if (!answer) return std::move(answer).error();
    if (auto error = detail::graph_store_answer_error(answer.value().status, answer.value().body,
                                                      config.graph_store_url, deleting)) {
        return std::move(*error);
    }
    return {};
}

}  // namespace

base::Result<void> SparqlClient::put_graph(std::string_view graph_iri, std::string_view ntriples,
                                           const CallOptions& call) {
    HttpRequest request = graph_request(config_, "PUT", graph_iri);
    request.content_type = std::string(kNTriples);
    request.body = std::string(ntriples);
    return graph_write(http_, config_, request, call, false);
}

base::Result<void> SparqlClient::post_graph(std::string_view graph_iri, std::string_view ntriples,
                                            const CallOptions& call) {
    HttpRequest request = graph_request(config_, "POST", graph_iri);
    request.content_type = std::string(kNTriples);
    request.body = std::string(ntriples);
    return graph_write(http_, config_, request, call, false);
}

base::Result<void> SparqlClient::delete_graph(std::string_view graph_iri, const CallOptions& call) {
    return graph_write(http_, config_, graph_request(config_, "DELETE", graph_iri), call, true);
}

}  // namespace glassbox::http
