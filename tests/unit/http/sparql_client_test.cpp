// The SPARQL client's pieces that need no engine: the Graph Store URL and its percent-encoded
// graph IRI, the query form, the engine's reason, the mapping of answers to typed errors, and an
// engine that cannot be reached. (Against a real Virtuoso: tests/integration/sparql_test.cpp.)
#include "http/sparql_client.hpp"

#include <gtest/gtest.h>

#include "tests/support/closed_port.hpp"

namespace glassbox::http {
namespace {

using base::ErrorType;
using std::chrono::milliseconds;

TEST(SparqlClientDetail, PercentEncodingKeepsOnlyUnreservedBytes) {
    EXPECT_EQ(detail::percent_encode("AZaz09-._~"), "AZaz09-._~");
    EXPECT_EQ(detail::percent_encode("urn:glassbox:1/2?x=a b&c#d"),
              "urn%3Aglassbox%3A1%2F2%3Fx%3Da%20b%26c%23d");
    EXPECT_EQ(detail::percent_encode("+%"), "%2B%25");
    EXPECT_EQ(detail::percent_encode("\xC3\xA9"), "%C3%A9");  // é, byte by byte
    EXPECT_EQ(detail::percent_encode(std::string_view("\0", 1)), "%00");
    EXPECT_EQ(detail::percent_encode(""), "");
}

TEST(SparqlClientDetail, GraphStoreTargetNamesTheGraphInTheQueryString) {
    EXPECT_EQ(detail::graph_store_target("http://127.0.0.1:8890/sparql-graph-crud-auth",
                                         "urn:glassbox:collection:my%20docs"),
              "http://127.0.0.1:8890/sparql-graph-crud-auth?graph-uri="
              "urn%3Aglassbox%3Acollection%3Amy%2520docs");
    EXPECT_EQ(detail::graph_store_target("http://h/store?default-x=1", "http://ex.org/g#1"),
              "http://h/store?default-x=1&graph-uri=http%3A%2F%2Fex.org%2Fg%231");
}

TEST(SparqlClientDetail, QueryFormCarriesTheTextAndTheEngineTimeout) {
    EXPECT_EQ(detail::query_form("SELECT * { ?s ?p ?o } LIMIT 1", milliseconds{1500}),
              "query=SELECT%20%2A%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D%20LIMIT%201&timeout=1500");
    EXPECT_EQ(detail::query_form("ASK {}", milliseconds{0}), "query=ASK%20%7B%7D");
}

TEST(SparqlClientDetail, EngineReasonIsTheFirstLineBounded) {
    EXPECT_EQ(detail::engine_reason("\n\n  Virtuoso 37000 Error SP030: syntax error\r\n\nSPARQL "
                                    "query:\nselec x"),
              "Virtuoso 37000 Error SP030: syntax error");
    EXPECT_EQ(detail::engine_reason(""), "");
    const std::string reason = detail::engine_reason(std::string(1000, 'x'));
    EXPECT_EQ(reason, std::string(300, 'x') + "...");
    EXPECT_EQ(detail::engine_reason("a\tb\x01"), "a b ");
}

TEST(SparqlClientDetail, QueryAnswersMapToTypedErrors) {
    const std::string url = "http://user:pw@127.0.0.1:1/sparql?key=secret";
    EXPECT_FALSE(detail::query_answer_error(200, "", "{}", url));
    const auto partial = detail::query_answer_error(200, "S1TAT", "{}", url);
    ASSERT_TRUE(partial);
    EXPECT_EQ(partial->type, ErrorType::kTimeout);

    const auto syntax = detail::query_answer_error(
        400, "", "Virtuoso 37000 Error SP030: SPARQL compiler, line 1: syntax error\n\nq", url);
    ASSERT_TRUE(syntax);
    EXPECT_EQ(syntax->type, ErrorType::kInvalidRequest);
    EXPECT_NE(syntax->message.find("SP030: SPARQL compiler, line 1: syntax error"),
              std::string::npos)
        << syntax->message;
    EXPECT_EQ(syntax->message.find("pw"), std::string::npos) << syntax->message;
    EXPECT_EQ(syntax->message.find("secret"), std::string::npos) << syntax->message;

    // Virtuoso answers a refused (not permitted) update with a 500 and a SQL state of class 42.
    const auto refused = detail::query_answer_error(
        500, "", "Virtuoso 42000 Error SR186:SECURITY: No permission to execute procedure", url);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->type, ErrorType::kInvalidRequest);
    const auto timed_out = detail::query_answer_error(
        500, "", "Virtuoso S1T00 Error SR171: Transaction timed out", url);
    ASSERT_TRUE(timed_out);
    EXPECT_EQ(timed_out->type, ErrorType::kTimeout);
    const auto other = detail::query_answer_error(503, "", "<html>busy</html>", url);
    ASSERT_TRUE(other);
    EXPECT_EQ(other->type, ErrorType::kUpstreamError);
    const auto crash = detail::query_answer_error(500, "", "Virtuoso 08C01 Error: lost", url);
    ASSERT_TRUE(crash);
    EXPECT_EQ(crash->type, ErrorType::kUpstreamError);
}

TEST(SparqlClientDetail, GraphStoreAnswersMapToTypedErrors) {
    const std::string url = "http://127.0.0.1:1/sparql-graph-crud-auth";
    EXPECT_FALSE(detail::graph_store_answer_error(201, "", url, false));
    EXPECT_FALSE(detail::graph_store_answer_error(200, "", url, true));
    EXPECT_FALSE(detail::graph_store_answer_error(404, "", url, true)) << "deleted already";
    const auto missing = detail::graph_store_answer_error(404, "Not found", url, false);
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->type, ErrorType::kInvalidRequest);
    const auto unauthorized = detail::graph_store_answer_error(401, "", url, false);
    ASSERT_TRUE(unauthorized);
    EXPECT_EQ(unauthorized->type, ErrorType::kInvalidRequest);
    EXPECT_NE(unauthorized->message.find("sparql.password"), std::string::npos);
    const auto failed = detail::graph_store_answer_error(500, "Virtuoso 42000 Error X", url, false);
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->type, ErrorType::kUpstreamError);
}

TEST(SparqlClientDetail, VirtuososAskAnswerBecomesABoolean) {
    const auto virtuoso = [](nlohmann::json bindings) {
        return nlohmann::json{
            {"head", {{"link", nlohmann::json::array()}, {"vars", {"__ASK_RETVAL"}}}},
            {"results", {{"bindings", std::move(bindings)}}}};
    };
    const auto yes = detail::standard_ask_result(virtuoso(
        nlohmann::json::array({{{"__ASK_RETVAL", {{"type", "typed-literal"}, {"value", "1"}}}}})));
    EXPECT_EQ(yes, (nlohmann::json{{"head", nlohmann::json::object()}, {"boolean", true}}));
    const auto no = detail::standard_ask_result(virtuoso(nlohmann::json::array()));
    EXPECT_EQ(no["boolean"], false);
    const nlohmann::json select = {{"head", {{"vars", {"n"}}}},
                                   {"results", {{"bindings", nlohmann::json::array()}}}};
    EXPECT_EQ(detail::standard_ask_result(select), select);
    const nlohmann::json standard = {{"head", nlohmann::json::object()}, {"boolean", false}};
    EXPECT_EQ(detail::standard_ask_result(standard), standard);
}

TEST(SparqlClient, AnEngineThatCannotBeReachedIsServiceUnavailable) {
    const int port = test_support::closed_loopback_port();
    ASSERT_NE(port, 0);
    SparqlConfig config;
    config.query_url = "http://127.0.0.1:" + std::to_string(port) + "/sparql";
    config.graph_store_url = "http://127.0.0.1:" + std::to_string(port) + "/graphs";
    config.user = "dba";
    config.password = "secret";
    config.timeout = milliseconds{2'000};
    SparqlClient client(config);
    const auto answer = client.select("SELECT * { ?s ?p ?o }");
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kServiceUnavailable) << answer.error().describe();
    const auto put = client.put_graph("urn:g", "<urn:a> <urn:b> <urn:c> .\n");
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().type, ErrorType::kServiceUnavailable) << put.error().describe();
    EXPECT_EQ(put.error().message.find("secret"), std::string::npos);
    const auto gone = client.delete_graph("urn:g");
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().type, ErrorType::kServiceUnavailable);
}

TEST(SparqlClient, NoEndpointConfiguredIsServiceUnavailable) {
    SparqlClient client(SparqlConfig{});
    const auto answer = client.query("ASK {}", kSparqlJson);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kServiceUnavailable);
    const auto put = client.put_graph("urn:g", "");
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().type, ErrorType::kServiceUnavailable);
}

}  // namespace
}  // namespace glassbox::http
