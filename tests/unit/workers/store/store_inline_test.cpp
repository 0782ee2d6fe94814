// Which store requests run inline on a worker slot's I/O thread (store::runs_inline): the quick
// reads, told from the body's top-level "op" without a parse; and a store worker with the hook
// answers them, and everything else, as without it.
#include "workers/store/inline_reads.hpp"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/messages.hpp"
#include "tests/unit/workers/store/store_worker_fixture.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::store {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace cmd = schema::protocol::worker_cmd;

bool takes(const std::string& body) { return runs_inline("{}", body); }

TEST(StoreInlineReadsTest, TakesTheQuickReadsOnly) {
    for (const char* op :
         {"triples-batch", "entities", "entities-batch", "chunks-vector", "chunks-keyword",
          "chunks-hybrid", "chunks-fetch", "fact-sources", "labels"}) {
        EXPECT_TRUE(takes(json{{"op", op}, {"collection", "c"}, {"limit", 30}}.dump())) << op;
    }
    for (const char* op : {"triples", "stats", "collections", "load-triples", "load-documents",
                           "index", "load-commit", "load-abort", "collection-delete", "nope"}) {
        EXPECT_FALSE(takes(json{{"op", op}, {"collection", "c"}}.dump())) << op;
    }
}

TEST(StoreInlineReadsTest, NoReadRunsInlineWhileALongRequestRuns) {
    const std::string read = R"({"collection":"c","op":"triples-batch","patterns":[]})";
    const std::string commit = R"({"collection":"c","load":"x","op":"load-commit"})";
    ASSERT_TRUE(takes(read));
    {
        const LongRequest quick(read);  // a quick read marks nothing
        EXPECT_TRUE(takes(read));
    }
    {
        const LongRequest first(commit);
        EXPECT_FALSE(takes(read)) << "a read could wait for the commit's lock without heartbeats";
        {
            const LongRequest second(R"({"collection":"c","op":"stats"})");
            EXPECT_FALSE(takes(read));
        }
        EXPECT_FALSE(takes(read)) << "the commit still runs";
    }
    EXPECT_TRUE(takes(read));
}

TEST(StoreInlineReadsTest, ReadsOnlyTheTopLevelOpAndDeclinesWhatItCannotTell) {
    // The keys before "op" are skipped whatever they hold, an "op" nested in them included.
    EXPECT_TRUE(takes(R"({"collection":"c","extra":{"op":"load-triples","x":[1,{"y":"z"}]},)"
                      R"("op":"labels","terms":[]})"));
    EXPECT_FALSE(takes(R"({"documents":[{"op":"labels"}],"op":"load-documents"})"));
    // Spaces as any JSON writer may put them; an escaped op value is its value.
    EXPECT_TRUE(takes(" { \"collection\" : \"c\" ,\n \"op\" : \"labels\" } "));
    EXPECT_TRUE(takes(R"({"op":"lab\u0065ls"})"));
    // nlohmann keeps the last of two "op" keys; an escaped key may spell "op".
    EXPECT_FALSE(takes(R"({"op":"labels","op":"load-commit"})"));
    EXPECT_FALSE(takes(R"({"op":"labels","\u006fp":"load-commit"})"));
    EXPECT_FALSE(takes(R"({"\u006fp":"labels"})"));
    // Not a JSON object, no op, an op that is not a string, text cut short before the op.
    for (const char* body : {"", "[]", "\"labels\"", "{}", R"({"op":1})", R"({"collection":"c",)",
                             R"({"collection":"c" "op":"labels"})", "{inline, not json"}) {
        EXPECT_FALSE(takes(body)) << body;
    }
    // Large bodies are work of their own.
    std::string big = R"({"op":"labels","terms":[)";
    while (big.size() <= kInlineBodyMax) big += R"({"t":"i","v":"urn:x:aaaaaaaaaaaaaaaa"},)";
    big += R"({"t":"i","v":"urn:x"}]})";
    EXPECT_FALSE(takes(big));
    EXPECT_TRUE(takes(big.substr(0, 1000)));  // cut short after the op: the handler's to refuse
}

// A store worker with the hook: loads and counts on the handler thread, reads inline, the same
// answers either way.
class StoreInlineTest : public testing::StoreWorkerFixture {
protected:
    void SetUp() override {
        start_store("gb-store-inline", [this](std::string_view meta, std::string_view body) {
            const bool taken = runs_inline(meta, body);
            std::lock_guard lock(mutex_);
            if (taken) taken_.insert(std::string(body));
            return taken;
        });
    }

    json call(const std::string& body) {
        const std::string token = "t" + std::to_string(++requests_);
        broker.send_request(identity_, token, body, token, 10'000, "test", true);
        auto reply = broker.expect(cmd::kReply);
        EXPECT_TRUE(reply) << body;
        if (!reply) return json();
        EXPECT_EQ(reply->frames[3], token);
        return json::parse(reply->frames[4]);  // packed: the compact layout
    }
    // A long request's handler sends its reply before it returns and its LongRequest ends:
    // the next read is asked about once that has happened.
    static void wait_for_long_requests_to_end() {
        const std::string read = R"({"collection":"kb","op":"labels","terms":[]})";
        for (int i = 0; i < 2'000 && !runs_inline("{}", read); ++i) ::usleep(1'000);
        ASSERT_TRUE(runs_inline("{}", read));
    }
    bool ran_inline(const std::string& body) {
        std::lock_guard lock(mutex_);
        return taken_.count(body) != 0;
    }

    int requests_ = 0;
    std::mutex mutex_;
    std::set<std::string> taken_;
};

TEST_F(StoreInlineTest, ReadsRunInlineAndLoadsAndCountsDoNot) {
    const std::string load =
        R"({"collection":"kb","op":"load-triples","source":{"uri":"urn:f"},"nquads":)"
        R"("<urn:a> <urn:p> <urn:b> .\n<urn:b> <http://www.w3.org/2000/01/rdf-schema#label> \"Bee\" .\n"})";
    EXPECT_EQ(call(load)["added"], 2);
    EXPECT_FALSE(ran_inline(load));
    wait_for_long_requests_to_end();

    schema::TriplesQueryBatch batch;
    batch.collection = "kb";
    batch.patterns.push_back({schema::iri("urn:a"), std::nullopt, std::nullopt, std::nullopt});
    batch.patterns.push_back({std::nullopt, std::nullopt, schema::iri("urn:a"), std::nullopt});
    batch.labels = true;
    json batch_body = schema::encode(batch);
    batch_body["op"] = "triples-batch";
    const auto found = call(batch_body.dump());
    EXPECT_TRUE(ran_inline(batch_body.dump()));
    ASSERT_EQ(found["results"].size(), 2u) << found.dump();
    ASSERT_EQ(found["results"][0].size(), 1u);
    EXPECT_EQ(found["results"][0][0]["o"]["i"], "urn:b") << found.dump();
    EXPECT_TRUE(found["results"][1].empty());
    EXPECT_EQ(found["labels"][0], (json{"a", "p", "Bee"}));

    json labels = schema::encode(schema::LabelsRequest{"kb", {schema::iri("urn:b")}});
    labels["op"] = "labels";
    EXPECT_EQ(call(labels.dump())["labels"], json::array({"Bee"}));
    EXPECT_TRUE(ran_inline(labels.dump()));

    const std::string stats = R"({"collection":"kb","op":"stats"})";
    EXPECT_EQ(call(stats)["quads"], 2);
    EXPECT_FALSE(ran_inline(stats));
    wait_for_long_requests_to_end();

    // A read's typed error inline, as on the handler thread.
    const std::string missing = R"({"collection":"none","op":"labels","terms":[]})";
    broker.send_request(identity_, "missing", missing);
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "missing");
    EXPECT_EQ(error->frames[5], "NotFound");
    EXPECT_TRUE(ran_inline(missing));
}

}  // namespace
}  // namespace glassbox::store
