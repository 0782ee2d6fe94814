// A client of a SPARQL 1.1 engine (docs/sparql.md): queries over the SPARQL 1.1 Protocol and named
// graphs written over the SPARQL 1.1 Graph Store HTTP Protocol, through the one HTTP client.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "http/http_client.hpp"

namespace glassbox::http {

// Where the engine is and how to write to it (the settings sparql.*).
struct SparqlConfig {
    std::string query_url;  // the SPARQL 1.1 Protocol endpoint, e.g. http://127.0.0.1:8890/sparql
    std::string graph_store_url;  // the Graph Store Protocol endpoint; empty: read only
    std::string user;             // for Graph Store writes (HTTP digest or basic); may be empty
    std::string password;
    std::chrono::milliseconds timeout{30'000};  // one query's bound, on the engine and on the wire
};

// Result media types a query may ask for.
inline constexpr std::string_view kSparqlJson = "application/sparql-results+json";
inline constexpr std::string_view kSparqlCsv = "text/csv";
inline constexpr std::string_view kSparqlTsv = "text/tab-separated-values";
inline constexpr std::string_view kNTriples = "application/n-triples";

struct SparqlResult {
    long status = 0;
    std::string content_type;
    std::string body;
};

// Thread-safe (the HTTP client pools its handles). Errors, as values:
//   kServiceUnavailable  the engine could not be reached
//   kTimeout             the query or write took longer than config.timeout (or call.deadline)
//   kInvalidRequest      the engine refused the query (a 4xx): the message is its reason, one line
//   kUpstreamError       any other failure of the engine (a 5xx that is not a refusal or a
//                        timeout; not retried: the mirrors retry on their own schedule)
// A Virtuoso "Error" answer (HTTP 500 with a SQL state) is read like a 4xx when its state says
// the query was refused (classes 37, 42, 22: syntax, access, data) and as kTimeout when it says
// the time ran out (S1T00); partial results cut at the timeout (X-SQL-State S1TAT) are kTimeout.
class SparqlClient {
public:
    explicit SparqlClient(SparqlConfig config);
    ~SparqlClient();
    SparqlClient(const SparqlClient&) = delete;
    SparqlClient& operator=(const SparqlClient&) = delete;

    // A SELECT, ASK, CONSTRUCT or DESCRIBE sent as a form POST, its results in `accept`.
    base::Result<SparqlResult> query(std::string_view text, std::string_view accept,
                                     const CallOptions& call = {});
    // A SELECT (or ASK) as SPARQL 1.1 JSON results, parsed: {"head": {"vars"}, "results":
    // {"bindings": [{var: {"type", "value", "datatype"?, "xml:lang"?}}]}} (or {"boolean"}).
    base::Result<nlohmann::json> select(std::string_view text, const CallOptions& call = {});

    // Graph Store Protocol on the named graph `graph_iri`, with N-Triples text: replace it, add to
    // it, delete it (a graph that does not exist is deleted already: success).
    base::Result<void> put_graph(std::string_view graph_iri, std::string_view ntriples,
                                 const CallOptions& call = {});
    base::Result<void> post_graph(std::string_view graph_iri, std::string_view ntriples,
                                  const CallOptions& call = {});
    base::Result<void> delete_graph(std::string_view graph_iri, const CallOptions& call = {});

    const SparqlConfig& config() const noexcept { return config_; }

private:
    SparqlConfig config_;
    HttpClient http_;
};

namespace detail {

// The time a call may take on the wire: the engine's own bound plus a grace in which it can
// still report that bound's end itself (so the answer names the engine's reason).
inline constexpr std::chrono::milliseconds kSparqlWireGrace{2'000};

// RFC 3986 percent-encoding of every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~).
std::string percent_encode(std::string_view text);
// `graph_store_url` with the graph-uri parameter naming `graph_iri` (? or & as the URL needs).
std::string graph_store_target(std::string_view graph_store_url, std::string_view graph_iri);
// The form body of a query: query=<text>&timeout=<ms> (application/x-www-form-urlencoded).
std::string query_form(std::string_view text, std::chrono::milliseconds timeout);
// The engine's reason in an error body: its first non-blank line, bounded to 300 bytes, control
// characters replaced by spaces.
std::string engine_reason(std::string_view body);
// The typed error of a query's answer (`status`, X-SQL-State `sql_state` or "", `body`), or
// nullopt when it is a usable result.
std::optional<base::Error> query_answer_error(long status, std::string_view sql_state,
                                              std::string_view body, std::string_view url);
// The same for a Graph Store write (`deleting`: a 404 is success).
// Virtuoso 7.2 answers an ASK in JSON as a SELECT of one variable __ASK_RETVAL (1 or no row);
// that answer as SPARQL 1.1's {"head": {}, "boolean": b}. Any other results are returned as they
// are.
nlohmann::json standard_ask_result(nlohmann::json results);
std::optional<base::Error> graph_store_answer_error(long status, std::string_view body,
                                                    std::string_view url, bool deleting);

}  // namespace detail

}  // namespace glassbox::http
