// The store's load-triples read from the body's text (the runtime leaves it unparsed for
// reads_body_as_text): the same answers as the tree path, escapes included, and text the cursor
// does not take goes the tree's way: InvalidJson for text that is not JSON, the usual typed
// error or result otherwise.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/vector_query_text.hpp"
#include "tests/support/fake_broker.hpp"
#include "workers/runtime/worker.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::store {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::testing::FakeBroker;
namespace cmd = schema::protocol::worker_cmd;

class StoreTextBodyTest : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        home_ = std::filesystem::temp_directory_path() /
                ("gb-store-text-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(home_);
        std::filesystem::create_directories(home_ / "knowledge");
        StoreServiceConfig config;
        config.home = home_;
        runtime::WorkerConfig c;
        c.endpoint = broker.endpoint();
        c.service = "test";
        c.heartbeat = 1000ms;
        c.stop_poll = 10ms;
        c.worker_name = "w";
        c.text_body = reads_body_as_text;
        service = std::make_shared<StoreService>(config);
        worker = std::make_unique<runtime::Worker>(context, c, make_store_handler(service));
        worker->start();
        auto ready = broker.expect(cmd::kReady);
        ASSERT_TRUE(ready);
        identity_ = ready->identity;
    }
    void TearDown() override {
        if (worker) {
            worker->stop();
            worker->wait();
        }
        std::filesystem::remove_all(home_);
    }

    // Sends a request; its FINAL body.
    json call(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto reply = broker.expect(cmd::kReply);
        EXPECT_TRUE(reply) << body;
        if (!reply) return json();
        EXPECT_EQ(reply->frames[3], token);
        return json::parse(reply->frames[5]);
    }
    // Sends a request; its FINAL's text as it came.
    std::string reply_text(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto reply = broker.expect(cmd::kReply);
        EXPECT_TRUE(reply) << body;
        if (!reply) return "";
        EXPECT_EQ(reply->frames[3], token);
        return reply->frames[5];
    }
    // Sends a request that must fail; "<type>: <message>".
    std::string error_text(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto error = broker.expect(cmd::kError);
        EXPECT_TRUE(error) << body;
        if (!error) return "";
        EXPECT_EQ(error->frames[3], token);
        return error->frames[5] + ": " + (error->frames.size() > 6 ? error->frames[6] : "");
    }
    // Sends a request that must fail; its error type.
    std::string error_of(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto error = broker.expect(cmd::kError);
        EXPECT_TRUE(error) << body;
        if (!error) return "";
        EXPECT_EQ(error->frames[3], token);
        return error->frames[5];
    }
    std::string next_token() { return "t" + std::to_string(++requests_); }

    zmq::context_t context{1};
    FakeBroker broker{context};
    std::shared_ptr<StoreService> service;
    std::unique_ptr<runtime::Worker> worker;
    std::filesystem::path home_;
    std::string identity_;
    int requests_ = 0;
};

TEST_F(StoreTextBodyTest, ALoadTriplesBodyIsReadFromItsTextEscapesIncluded) {
    EXPECT_TRUE(reads_body_as_text(R"({"collection":"","op":"load-triples","nquads":""})"));
    EXPECT_FALSE(reads_body_as_text(R"({"op":"load-commit","load":"x"})"));
    // As `glassbox load` writes it: the op first, the N-Quads last, escaped.
    const std::string staged =
        R"({"collection":"","load":"text-1","op":"load-triples","source":{"uri":"urn:f","tier":2},)"
        R"("nquads":"<urn:a> <urn:p> \"caf\u00e9 \\\"q\\\"\"@fr .\n<urn:a> <urn:p> <urn:b> .\n"})";
    EXPECT_EQ(call(staged), (json{{"statements", 2}, {"added", 0}, {"present", 0}}));
    // The N-Quads before the op, and not staged: the same reading.
    const std::string direct =
        R"({"nquads":"<urn:a> <urn:p> <urn:b> .\n<urn:c> <urn:p> <urn:b> .\n",)"
        R"("op":"load-triples","source":{"uri":"urn:g"}})";
    EXPECT_EQ(call(direct), (json{{"statements", 2}, {"added", 2}, {"present", 0}}));
    EXPECT_EQ(call(R"({"op":"load-commit","load":"text-1"})"),
              (json{{"statements", 2}, {"added", 1}, {"present", 1}}));
    // The literal arrived unescaped: a pattern on its exact value finds it.
    const json query{{"op", "triples"},
                     {"o", {{"t", "l"}, {"v", "caf\xC3\xA9 \"q\""}, {"ln", "fr"}}}};
    EXPECT_EQ(call(query.dump())["count"], 1);
}

TEST_F(StoreTextBodyTest, TextTheCursorDoesNotTakeIsReadAsATree) {
    // Not JSON: answered as the runtime answers any body that is not.
    EXPECT_EQ(error_of(R"({"op":"load-triples","nquads":"<urn:a> <urn:p> <urn:b> .\n")"),
              "InvalidJson");
    // An escaped key (the cursor compares keys as they stand): the tree reads it.
    const auto reply = call(R"({"op":"load-triples","source":{"uri":"urn:h"},)"
                            R"("nq\u0075ads":"<urn:x> <urn:p> <urn:y> .\n"})");
    EXPECT_EQ(reply["statements"], 1);
    EXPECT_EQ(reply["added"], 1);
    // No N-Quads: the tree's typed error, nothing loaded.
    EXPECT_EQ(error_of(R"({"op":"load-triples","source":{"uri":"urn:i"}})"), "InvalidRequest");
}

// The same body in a form reads_body_as_text does not take (a space after each key's colon):
// the runtime parses it and the handler reads the tree.
std::string as_tree_body(std::string body) {
    for (auto at = body.find("\":"); at != std::string::npos; at = body.find("\":", at + 3))
        body.insert(at + 2, " ");
    return body;
}

// The error's type, the text before its first colon.
std::string type_of(const std::string& error) { return error.substr(0, error.find(':')); }

// entities and entities-batch read from the body's text (issue 33): the reply of the tree path
// byte for byte, and every error of the tree path, for well-formed, unusual and broken bodies.
TEST_F(StoreTextBodyTest, AVectorQueryReadFromItsTextAnswersAsTheTreeDoes) {
    EXPECT_EQ(
        call(
            R"({"op":"load-triples","source":{"uri":"urn:f"},"nquads":)"
            R"("<urn:a> <urn:p> <urn:b> .\n<urn:c> <urn:p> <urn:d> .\n<urn:e> <urn:q> <urn:a> .\n"})")
            ["added"],
        3);
    auto kb = service->bases().get("", false);
    ASSERT_TRUE(kb) << kb.error().message;
    {
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        auto entities = (*kb)->graph().entities_after(0, 100);
        ASSERT_TRUE(entities);
        ASSERT_GE(entities->size(), 4u);
        std::vector<std::int64_t> keys;
        std::vector<std::vector<double>> vectors;
        for (std::size_t i = 0; i < entities->size(); ++i) {
            const auto x = static_cast<double>(i);
            keys.push_back((*entities)[i].id);
            vectors.push_back({1.0 + x, 0.5 * x, -0.25, 0.1 * x * x});
        }
        ASSERT_TRUE((*kb)->entity_vectors().add(keys, vectors, "test-model"));
    }
    const std::vector<std::string> bodies{
        R"({"collection":"","limit":2,"op":"entities-batch","vectors":[[1,0,0,0],)"
        R"([0.5,1,-0.25,0.0123456789],[3,3.5e-1,-0.25,1E1]]})",
        R"({"op":"entities","vectors":[[1,0,0,0],[0.5,1,-0.25,0.01]],"limit":3})",
        R"({"op":"entities-batch","vectors":[],"limit":2})",
        R"({"limit":0,"op":"entities-batch","vectors":[[2,1,0,1]],"x":{"k":[1,-0,"op"]}})",
    };
    for (const auto& body : bodies) {
        ASSERT_TRUE(reads_body_as_text(body)) << body;
        schema::VectorQueryText read;
        EXPECT_TRUE(schema::read_vector_query(body, read)) << body;
        const std::string tree = as_tree_body(body);
        ASSERT_FALSE(reads_body_as_text(tree)) << tree;
        EXPECT_EQ(reply_text(body), reply_text(tree)) << body;
    }
    EXPECT_EQ(reply_text(bodies[2]), R"({"results":[]})");
    const auto batch = json::parse(reply_text(bodies[0]))["results"];
    ASSERT_EQ(batch.size(), 3u);
    EXPECT_EQ(batch[0].size(), 2u);
    EXPECT_EQ(json::parse(reply_text(bodies[1]))["entities"].size(), 3u);
    // The op named inside another value: the reader reads the body's own op, the tree answers.
    const std::string labels = R"({"op":"labels","terms":[],"x":{"op":"entities-batch"}})";
    ASSERT_TRUE(reads_body_as_text(labels));
    EXPECT_EQ(reply_text(labels), R"({"labels":[]})");

    std::vector<std::pair<std::string, std::string>> bad{
        {R"({"op":"entities-batch","vectors":[[1,0]],"limit":2})", "InvalidRequest"},  // dim
        {R"({"op":"entities-batch","vectors":[[0,0,0,0]]})", "InvalidRequest"},        // zero
        {R"({"op":"entities-batch","vectors":[["x",1,2,3]]})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[[[1],2,3,4]]})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[1,2,3,4]})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]],"limit":-1})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[[1e400,1,2,3]]})", "InvalidJson"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]],"collection":"nowhere"})", "NotFound"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]])", "InvalidJson"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]]} x)", "InvalidJson"},
    };
    std::string many = R"({"op":"entities-batch","vectors":[[1,2,3,4])";
    for (int i = 0; i < 1'024; ++i) many += ",[1,2,3,4]";
    bad.emplace_back(many + "]}", "InvalidRequest");  // over max_vectors
    for (const auto& [body, type] : bad) {
        ASSERT_TRUE(reads_body_as_text(body)) << body;
        const auto error = error_text(body);
        EXPECT_EQ(type_of(error), type) << error;
        // InvalidJson names the byte where parsing stopped, which the added spaces move.
        const auto tree = error_text(as_tree_body(body));
        EXPECT_EQ(type == "InvalidJson" ? type_of(tree) : tree,
                  type == "InvalidJson" ? type : error)
            << body;
    }
}

}  // namespace
}  // namespace glassbox::store
