// The echo service through the real runtime and a fake broker: stream, explain chain, errors.
#include "workers/echo/echo_service.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "tests/support/fake_broker.hpp"

namespace glassbox::echo {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::testing::FakeBroker;
namespace cmd = schema::protocol::worker_cmd;

class EchoTest : public ::testing::Test {
protected:
    void SetUp() override {
        runtime::WorkerConfig c;
        c.endpoint = broker.endpoint();
        c.service = std::string(schema::services::kEcho);
        c.stop_poll = 10ms;
        worker = std::make_unique<runtime::Worker>(context, c, make_echo_handler());
        worker->start();
        auto ready = broker.expect(cmd::kReady);
        ASSERT_TRUE(ready);
        identity = ready->identity;
    }
    void TearDown() override {
        worker->stop();
        worker->wait();
    }
    void request(const std::string& body, const std::string& token = "tok") {
        broker.send_request(identity, token, body, "r", 10'000, "echo");
    }

    zmq::context_t context{1};
    FakeBroker broker{context};
    std::unique_ptr<runtime::Worker> worker;
    std::string identity;
};

TEST_F(EchoTest, AnswersWithStreamTraceAndFinal) {
    request(R"({"question":"hi","partials":2})");
    auto question = broker.expect(cmd::kExplain);
    auto p0 = broker.expect(cmd::kPartial);
    auto p1 = broker.expect(cmd::kPartial);
    auto synthesis = broker.expect(cmd::kExplain);
    auto final = broker.expect(cmd::kReply);
    ASSERT_TRUE(question && p0 && p1 && synthesis && final);

    const std::string session = question->frames[5];
    EXPECT_EQ(session.rfind("urn:glassbox:", 0), 0u);
    EXPECT_NE(session.find(":question"), std::string::npos);
    EXPECT_EQ(question->frames[6], "0");
    EXPECT_EQ(question->frames[7], "open");
    EXPECT_EQ(synthesis->frames[5], session);
    EXPECT_EQ(synthesis->frames[6], "1");
    EXPECT_EQ(synthesis->frames[7], "complete");

    auto q = schema::decode<schema::ExplainMessage>(json::parse(question->frames[8]));
    ASSERT_TRUE(q) << q.error().describe();
    EXPECT_EQ(q->session, session);
    EXPECT_EQ(q->explain_id, session);
    EXPECT_EQ(q->service, "echo");
    EXPECT_FALSE(q->explain_triples.empty());
    auto s = schema::decode<schema::ExplainMessage>(json::parse(synthesis->frames[8]));
    ASSERT_TRUE(s) << s.error().describe();
    EXPECT_TRUE(s->end_of_trace);
    EXPECT_EQ(s->trace_status, schema::TraceStatus::kComplete);
    EXPECT_NE(s->explain_id, session);
    EXPECT_FALSE(s->explain_triples.empty());

    EXPECT_EQ(json::parse(p0->frames[5])["text"], "hi");
    EXPECT_EQ(json::parse(p1->frames[5])["index"], 1);
    const auto body = json::parse(final->frames[5]);
    EXPECT_EQ(body["echo"]["question"], "hi");
    EXPECT_EQ(body["echo"]["partials"], 2);
    EXPECT_EQ(body["session"], session);
}

TEST_F(EchoTest, RejectsBodiesItDoesNotAccept) {
    int n = 0;
    for (const char* bad :
         {"[1]", "\"hi\"", "{}", R"({"question":3})", R"({"question":"q","partials":-1})",
          R"({"question":"q","partials":100000})", R"({"question":"q","delay_ms":"5"})",
          R"({"question":"q","fail":"NoSuchType"})"}) {
        const std::string token = "t" + std::to_string(n++);
        request(bad, token);
        auto error = broker.expect(cmd::kError);
        ASSERT_TRUE(error) << bad;
        EXPECT_EQ(error->frames[3], token);
        EXPECT_EQ(error->frames[5], "InvalidRequest") << bad;
    }
    EXPECT_TRUE(broker.skipped.empty()) << "no explain or partial for a rejected request";
}

TEST_F(EchoTest, FailEndsTheTraceWithErrorThenTheTypedError) {
    request(R"({"question":"q","fail":"UpstreamError"})");
    ASSERT_TRUE(broker.expect(cmd::kExplain));
    ASSERT_TRUE(broker.expect(cmd::kPartial));
    auto last = broker.expect(cmd::kExplain);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->frames[6], "1");
    EXPECT_EQ(last->frames[7], "error");
    auto decoded = schema::decode<schema::ExplainMessage>(json::parse(last->frames[8]));
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->trace_status, schema::TraceStatus::kError);
    ASSERT_TRUE(decoded->error);
    EXPECT_EQ(decoded->error->type, base::ErrorType::kUpstreamError);
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "UpstreamError");
}

TEST_F(EchoTest, DelayHonoursCancel) {
    request(R"({"question":"slow","delay_ms":5000,"partials":3})");
    ASSERT_TRUE(broker.expect(cmd::kExplain));
    broker.send_command(identity, cmd::kCancel, {"tok"});
    auto error = broker.expect(cmd::kError, 60s);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "Cancelled");
    // The outcome, not how soon: an ignored cancel would have ended the 5 s echo with a REPLY.
    for (const auto& m : broker.skipped) EXPECT_NE(m.command(), cmd::kReply);
    // After a cancel the broker closes the trace (§5.3): the worker adds no explain of its own.
    for (const auto& m : broker.skipped) EXPECT_NE(m.command(), cmd::kExplain);
}

}  // namespace
}  // namespace glassbox::echo
