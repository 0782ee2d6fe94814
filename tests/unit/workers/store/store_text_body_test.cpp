// The store's load-triples read from the body's text (the runtime leaves it unparsed for
// reads_body_as_text): the same answers as the tree path, escapes included, and text the cursor
// does not take goes the tree's way: InvalidJson for text that is not JSON, the usual typed
// error or result otherwise.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
        worker = std::make_unique<runtime::Worker>(
            context, c, make_store_handler(std::make_shared<StoreService>(config)));
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

}  // namespace
}  // namespace glassbox::store
