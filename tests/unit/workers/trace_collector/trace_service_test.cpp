// The `trace` service's request handling: ops, field checks, typed errors, streamed export.
#include <gtest/gtest.h>

#include "schema/messages_trace.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;

constexpr std::int64_t kT0 = 1'790'000'000'000;

class TraceServiceTest : public StoreTest {
protected:
    base::Result<json> ask(const json& body, std::vector<json>* partials = nullptr) {
        return answer_trace_request(*store_, body, [&](const json& chunk) {
            if (partials != nullptr) partials->push_back(chunk);
            return true;
        });
    }
};

GLASSBOX_TRACE_BACKENDS(TraceServiceTest);

TEST_P(TraceServiceTest, ListShowExportStats) {
    const auto run = FakeRun::make("echo", "what is glass?", kT0);
    store({run.open(), run.end()}, kT0 + 20);
    auto listed = ask({{"op", "list"}, {"kind", "echo"}, {"since", "2026-09-21T00:00:00Z"}});
    ASSERT_TRUE(listed.ok()) << listed.error().describe();
    ASSERT_EQ((*listed)["sessions"].size(), 1u);
    EXPECT_EQ((*listed)["sessions"][0]["question"], "what is glass?");

    auto shown = ask({{"op", "show"}, {"session", run.uris.uuid().substr(0, 6)}});
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["session"]["session"], run.session());

    std::vector<json> partials;
    auto exported = ask({{"op", "export"}, {"since", "2026-09-21T00:00:00Z"}}, &partials);
    ASSERT_TRUE(exported.ok()) << exported.error().describe();
    EXPECT_EQ((*exported)["sessions"], 1);
    ASSERT_FALSE(partials.empty());
    EXPECT_TRUE(partials[0]["nquads"].is_string());

    auto stats = ask({{"op", "stats"}});
    ASSERT_TRUE(stats.ok());
    for (const char* key :
         {"sessions", "by_status", "events", "triples", "texts", "quarantined", "db_bytes"}) {
        EXPECT_TRUE(stats->contains(key)) << key;
    }
}

// The service sends the store's JSON as it is once it decodes as the contract's type: that is
// only right while the store writes exactly what the type's encoder would.
TEST_P(TraceServiceTest, RepliesAreTheContractsEncodingByteForByte) {
    const auto done = FakeRun::make("graph-rag", "who built it?", kT0);
    const auto failed = FakeRun::make("echo", "and then?", kT0 + 100);
    const auto child = FakeRun::make("document-rag", "sub-question", kT0 + 5, done.uris.question());
    const auto open = FakeRun::make("echo", "still going", kT0 + 200);
    store({done.open(), child.open(), child.end(), done.end(), failed.open(),
           failed.end(schema::TraceStatus::kError), open.open()},
          kT0 + 300);
    const auto same_as_encoded = [](const auto& typed_tag, const json& reply) {
        using T = std::decay_t<decltype(typed_tag)>;
        auto typed = schema::decode<T>(reply);
        ASSERT_TRUE(typed.ok()) << typed.error().describe();
        EXPECT_EQ(schema::encode(*typed).dump(), reply.dump());
    };
    for (const json& query :
         {json{{"op", "list"}}, json{{"op", "list"}, {"include_subtraces", true}},
          json{{"op", "list"}, {"status", "error"}, {"exact_total", true}}}) {
        auto listed = ask(query);
        ASSERT_TRUE(listed.ok()) << listed.error().describe();
        same_as_encoded(schema::TraceSessionList{}, *listed);
    }
    for (const auto* run : {&done, &failed, &child, &open}) {
        auto shown = ask({{"op", "show"}, {"session", run->session()}});
        ASSERT_TRUE(shown.ok()) << shown.error().describe();
        same_as_encoded(schema::TraceDetail{}, *shown);
    }
    auto stats = ask({{"op", "stats"}});
    ASSERT_TRUE(stats.ok()) << stats.error().describe();
    same_as_encoded(schema::TraceStats{}, *stats);
}

TEST_P(TraceServiceTest, BadInputIsATypedError) {
    EXPECT_EQ(ask(json::array()).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "drop"}}).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", 1}}).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "list"}, {"limit", 0}}).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "list"}, {"limit", "10"}}).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "list"}, {"offset", -1}}).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "list"}, {"since", "last week"}}).error().type,
              ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "list"}, {"include_subtraces", "yes"}}).error().type,
              ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "list"}, {"parent", "0000"}}).error().type, ErrorType::kNotFound);
    EXPECT_EQ(ask({{"op", "show"}}).error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(ask({{"op", "show"}, {"session", "deadbeef"}}).error().type, ErrorType::kNotFound);
    EXPECT_EQ(ask({{"op", "export"}, {"until", 5}}).error().type, ErrorType::kInvalidRequest);
}

TEST_P(TraceServiceTest, ExportStopsWhenTheSinkRefuses) {
    const auto run = FakeRun::make("echo", "q", kT0);
    store({run.open(), run.end()}, kT0 + 20);
    auto stopped =
        answer_trace_request(*store_, {{"op", "export"}}, [](const json&) { return false; });
    ASSERT_FALSE(stopped.ok());
    EXPECT_EQ(stopped.error().type, ErrorType::kCancelled);
}

TEST(ReadStorePool, ReportsAnUnopenableStore) {
    ReadStorePool pool(StoreLocation{fresh_dir() / "missing.db", "", ""}, StoreConfig{});
    auto answer = pool.with_store([](TraceStore& store) { return store.stats(); });
    ASSERT_FALSE(answer.ok());
    EXPECT_EQ(answer.error().type, ErrorType::kInternal);
}

}  // namespace
}  // namespace glassbox::trace::testing
