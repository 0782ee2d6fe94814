// The answer's documented schema (gateway/query_answer.hpp), the question's alias rule, and the
// server-path guard (gateway/path_redaction.hpp).
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "gateway/path_redaction.hpp"
#include "gateway/query_answer.hpp"

namespace glassbox::gateway {
namespace {

using nlohmann::json;

// A FINAL as the query router sends it (docs/query.md §1), bus fields and all.
json router_final() {
    return json::parse(R"({
      "answer": "Oskar Brenn", "answer_selections": ["urn:glassbox:g:focus:edge:0"],
      "citations": [{"chunk": "", "document": "file:///data/orrin.ttl", "id": "e1", "kind": "edge", "n": 1,
                     "selection": "urn:glassbox:g:focus:edge:0", "spans": [{"start": 0, "end": 11}],
                     "text": "MV Curlew was built by Brenn and Daughters Shipyard", "tier": 1, "title": "",
                     "subject": "MV Curlew", "predicate": "was built by",
                     "object": "Brenn and Daughters Shipyard"}],
      "end_of_session": true, "end_of_stream": true, "engine": "graph-rag",
      "engine_session": "urn:glassbox:g:question", "escalations": [], "explain_graph": "",
      "explain_id": "urn:glassbox:q:conclusion", "explain_triples": [], "in_token": 713, "message_type": "chunk",
      "model": "glassbox-extractive-v1", "out_token": 620,
      "provenance": {"aggregate_tier": 1, "derivation": ["route:rules", "graph-rag:traversal"], "engine": "graph-rag",
                     "sources": [{"engine": "graph-rag", "source": "file:///data/orrin.ttl", "tier": 1}]},
      "relevance": 0.93, "response": "Oskar Brenn founded Brenn and Daughters Shipyard.",
      "route": {"confidence": 0.8, "engine": "graph-rag", "method": "rules"},
      "runs": [{"duration_ms": 46, "engine": "graph-rag", "reason": "coverage 1.00", "reflection": "model-free",
                "relevance": 0.93, "session": "urn:glassbox:g:question"}],
      "session": "urn:glassbox:q:question", "sources": ["file:///data/orrin.ttl"]})");
}

std::set<std::string> keys_of(const json& object) {
    std::set<std::string> keys;
    for (const auto& [key, value] : object.items()) keys.insert(key);
    return keys;
}

TEST(QueryAnswer, TheRoutersFinalBecomesTheDocumentedSchemaWithoutBusFields) {
    const json answer = query_answer(router_final(), AnswerContext{"Who founded it?", "", "req-9",
                                                                   std::chrono::milliseconds{57}});
    std::set<std::string> documented(std::begin(kAnswerFields), std::end(kAnswerFields));
    documented.insert("request_id");
    EXPECT_EQ(keys_of(answer), documented) << answer.dump(2);
    EXPECT_EQ(answer["trace_id"], "urn:glassbox:q:question");
    EXPECT_EQ(answer["answer"], "Oskar Brenn founded Brenn and Daughters Shipyard.");
    EXPECT_EQ(answer["short_answer"], "Oskar Brenn");
    EXPECT_EQ(answer["answered_by"], "graph-rag");
    EXPECT_EQ(answer["question"], "Who founded it?");
    EXPECT_EQ(answer["request_id"], "req-9");
    EXPECT_EQ(answer["duration_ms"], 57);
    EXPECT_EQ(answer["usage"], (json{{"input_tokens", 713}, {"output_tokens", 620}}));
    EXPECT_EQ(
        answer["sources"],
        json::parse(R"([{"source": "file:///data/orrin.ttl", "tier": 1, "engine": "graph-rag"}])"));
    EXPECT_EQ(
        answer["provenance"],
        json::parse(
            R"({"aggregate_tier": 1, "derivation": ["route:rules", "graph-rag:traversal"]})"));
    EXPECT_EQ(answer["runs"][0]["trace_id"], "urn:glassbox:g:question");
    EXPECT_FALSE(answer["runs"][0].contains("session"));
    EXPECT_EQ(answer["termination_reason"], "answered");
    const json& citation = answer["citations"][0];
    EXPECT_EQ(citation["n"], 1);
    EXPECT_EQ(citation["tier"], 1);
    EXPECT_EQ(citation["spans"][0]["end"], 11);
    EXPECT_FALSE(citation.contains("id")) << "the prompt's evidence label is not the client's";
    EXPECT_TRUE(citation["char_offset"].is_null());
    EXPECT_EQ(citation["subject"], "MV Curlew") << "an edge's fact in parts";
    EXPECT_EQ(citation["predicate"], "was built by");
    EXPECT_EQ(citation["object"], "Brenn and Daughters Shipyard");

    // Without a request id (an MCP call) the member is left out; an agent's extras come along.
    json agent = router_final();
    agent["termination"] = "final-answer";
    agent["iterations"] = 2;
    agent.erase("answer");
    const json other = query_answer(agent, AnswerContext{"q", "c", "", {}});
    EXPECT_FALSE(other.contains("request_id"));
    EXPECT_EQ(other["termination_reason"], "final-answer");
    EXPECT_EQ(other["iterations"], 2);
    EXPECT_TRUE(other["short_answer"].is_null());
    EXPECT_EQ(other["collection"], "c");
}

TEST(QueryAnswer, AnEngineWithoutProvenanceStillListsItsSources) {
    json final = router_final();
    final.erase("provenance");
    const json answer = query_answer(final, AnswerContext{});
    ASSERT_EQ(answer["sources"].size(), 1u);
    EXPECT_EQ(answer["sources"][0]["source"], "file:///data/orrin.ttl");
    EXPECT_TRUE(answer["provenance"].is_null());
}

TEST(QueryAnswer, AFailedRunsErrorNamesNoServerPath) {
    ServerPaths::instance().add("/srv/glassbox-answer-test-home");
    json final = router_final();
    final["runs"][0]["error"] = {
        {"type", "Internal"},
        {"message", "cannot open /srv/glassbox-answer-test-home/store/x.db: busy"}};
    final["escalations"] =
        json::array({{{"from", "graph-rag"},
                      {"to", "document-rag"},
                      {"reason", "engine failed: /srv/glassbox-answer-test-home/store/x.db"}}});
    const json answer = query_answer(final, AnswerContext{});
    const std::string text = answer.dump();
    EXPECT_EQ(text.find("glassbox-answer-test-home"), std::string::npos) << text;
    EXPECT_EQ(answer["runs"][0]["error"]["message"], "cannot open <server path>: busy");
    EXPECT_EQ(answer["citations"][0]["document"], "file:///data/orrin.ttl")
        << "data is not a server path";
}

TEST(QuestionAlias, QueryIsAnotherNameForQuestionAndTwoDifferentOnesAreRefused) {
    json alias{{"query", "Who?"}, {"mode", "auto"}};
    ASSERT_TRUE(take_question_alias(alias));
    EXPECT_EQ(alias, (json{{"question", "Who?"}, {"mode", "auto"}}));
    json both{{"query", "Who?"}, {"question", "Who?"}};
    ASSERT_TRUE(take_question_alias(both));
    EXPECT_EQ(both, (json{{"question", "Who?"}}));
    json neither{{"mode", "auto"}};
    ASSERT_TRUE(take_question_alias(neither));
    EXPECT_EQ(neither, (json{{"mode", "auto"}}));
    json differ{{"query", "Who?"}, {"question", "What?"}};
    const auto refused = take_question_alias(differ);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(refused.error().message.find("'question' and 'query'"), std::string::npos)
        << refused.error().message;
}

TEST(PathRedactor, EveryPathUnderARootIsReplacedWhole) {
    PathRedactor r({"/home/ops/.glassbox", "/srv/run/"});
    EXPECT_EQ(r.redact("NotFound: /home/ops/.glassbox/store/nope.db: no such file"),
              "NotFound: <server path>: no such file");
    EXPECT_EQ(r.redact("see file:///home/ops/.glassbox/up/x.ttl, line 3"),
              "see <server path>, line 3");
    EXPECT_EQ(r.redact("broker ipc:///srv/run/broker.sock"), "broker <server path>");
    EXPECT_EQ(r.redact("(\"/srv/run\")"), "(\"<server path>\")");
    EXPECT_EQ(r.redact("/srv/run/a and /srv/run/b"), "<server path> and <server path>");
    // Other paths, and names that only begin like a root, stay.
    EXPECT_EQ(r.redact("/srv/runner/x /data/srv/run/x /home/ops/.glassboxes"),
              "/srv/runner/x /data/srv/run/x /home/ops/.glassboxes");
    EXPECT_TRUE(r.clean("file:///data/orrin.ttl"));
    EXPECT_FALSE(r.clean("at /srv/run/x"));
    // A file: URI writes a root with a space percent-encoded.
    PathRedactor spaced({"/home/o p"});
    EXPECT_EQ(spaced.redact("file:///home/o%20p/x.md#chunk-0 and /home/o p/y"),
              "<server path> and <server path>");
    // "/" and relative roots would redact all or nothing: ignored.
    PathRedactor none({"/", "relative/dir"});
    EXPECT_EQ(none.redact("/etc/x relative/dir/y"), "/etc/x relative/dir/y");
    // A prefix of names: every folder the uploads are staged in.
    PathRedactor uploads;
    uploads.add_root("/tmp/glassbox-upload-", true);
    EXPECT_EQ(uploads.redact("/tmp/glassbox-upload-123-0/z.ttl:2:11: expected object"),
              "<server path>:2:11: expected object");
}

TEST(PathRedactor, JsonStringsAreRedactedButTheIrisOfTerms) {
    PathRedactor r({"/home/ops"});
    json body = json::parse(
        R"({"detail": "cannot read /home/ops/x.db", "rows": [{"error": "at /home/ops/y"}],
        "triple": {"s": {"t": "i", "i": "file:///home/ops/docs/a.md"}, "o": {"t": "l", "v": "said /home/ops/z"}}})");
    r.redact_json(body);
    EXPECT_EQ(body["detail"], "cannot read <server path>");
    EXPECT_EQ(body["rows"][0]["error"], "at <server path>");
    EXPECT_EQ(body["triple"]["s"]["i"], "file:///home/ops/docs/a.md")
        << "an IRI is a document's identity";
    EXPECT_EQ(body["triple"]["o"]["v"], "said <server path>");
}

TEST(ServerPaths, TheProcesssOwnFoldersAreRootsFromTheStart) {
    const PathRedactor roots = ServerPaths::instance().snapshot();
    std::error_code ec;
    const std::string cwd = std::filesystem::current_path(ec).string();
    if (!ec && cwd != "/") {
        EXPECT_FALSE(roots.clean(cwd + "/x.db")) << cwd;
    }
    EXPECT_FALSE(roots.clean(upload_folder_prefix().string() + "42-0/upload.ttl"));
}

}  // namespace
}  // namespace glassbox::gateway
