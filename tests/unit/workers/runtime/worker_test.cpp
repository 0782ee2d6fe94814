// Worker runtime against a fake ROUTER: registration, heartbeats, cancel, errors, explain, stop,
// and requests run inline on a slot's I/O thread.
#include "workers/runtime/worker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "schema/explain_terms.hpp"
#include "schema/messages.hpp"
#include "schema/otel_ids.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/fake_broker.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeBroker;
using testing::WorkerMessage;
namespace cmd = schema::protocol::worker_cmd;
using nlohmann::json;

class WorkerTest : public ::testing::Test {
protected:
    WorkerConfig config(std::size_t threads = 1) {
        WorkerConfig c;
        c.endpoint = broker.endpoint();
        c.service = "test";
        c.threads = threads;
        c.heartbeat = 1000ms;
        c.stop_poll = 10ms;
        c.worker_name = "w";
        return c;
    }

    // Starts a worker and returns the identity of its (first) READY.
    std::string start(Handler handler, WorkerConfig c) {
        worker = std::make_unique<Worker>(context, c, std::move(handler));
        worker->start();
        auto ready = broker.expect(cmd::kReady);
        EXPECT_TRUE(ready.has_value());
        return ready ? ready->identity : std::string{};
    }
    std::string start(Handler handler) { return start(std::move(handler), config()); }

    void TearDown() override {
        if (worker) {
            worker->stop();
            worker->wait();
        }
    }

    zmq::context_t context{1};
    FakeBroker broker{context};
    std::unique_ptr<Worker> worker;
};

TEST_F(WorkerTest, ReadyDeclaresServiceAndGbw01) {
    worker = std::make_unique<Worker>(context, config(),
                                      [](RequestContext& c) { (void)c.reply(json::object()); });
    worker->start();
    auto ready = broker.expect(cmd::kReady);
    ASSERT_TRUE(ready);
    ASSERT_EQ(ready->frames.size(), 5u);
    EXPECT_EQ(ready->frames[0], "");
    EXPECT_EQ(ready->frames[1], "MDPW01");
    EXPECT_EQ(ready->frames[3], "test");
    // the extension, compact layout, written to packed (protocol.md §5.4, §1.4)
    EXPECT_EQ(ready->frames[4], "GBW03");
    EXPECT_FALSE(ready->packed);  // READY itself is classic: any broker can read it
}

TEST_F(WorkerTest, EachThreadRegistersItsOwnWorker) {
    worker = std::make_unique<Worker>(context, config(3),
                                      [](RequestContext& c) { (void)c.reply(json::object()); });
    worker->start();
    std::set<std::string> identities;
    for (int i = 0; i < 3; ++i) {
        auto ready = broker.expect(cmd::kReady);
        ASSERT_TRUE(ready);
        identities.insert(ready->identity);
    }
    EXPECT_EQ(identities.size(), 3u);
}

TEST_F(WorkerTest, StreamsPartialsAndRepliesWithTheToken) {
    const auto id = start([](RequestContext& c) {
        EXPECT_EQ(c.meta().request_id, "req-7");
        EXPECT_EQ(c.meta().service, "test");
        EXPECT_EQ(c.meta().attempt, 1u);
        EXPECT_GT(c.remaining().count(), 0);
        (void)c.send_partial({{"chunk", 1}});
        (void)c.send_partial({{"chunk", 2}});
        (void)c.reply({{"got", c.body()}});
    });
    broker.send_request(id, "tok", R"({"x":1})", "req-7");
    auto p1 = broker.expect(cmd::kPartial);
    auto p2 = broker.expect(cmd::kPartial);
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(p1 && p2 && reply);
    ASSERT_EQ(p1->frames.size(), 6u);
    EXPECT_EQ(p1->frames[3], "tok");
    EXPECT_EQ(p1->frames[4], "");
    EXPECT_EQ(json::parse(p1->frames[5])["chunk"], 1);
    EXPECT_EQ(json::parse(p2->frames[5])["chunk"], 2);
    ASSERT_EQ(reply->frames.size(), 6u);
    EXPECT_EQ(reply->frames[3], "tok");
    EXPECT_EQ(json::parse(reply->frames[5])["got"]["x"], 1);
}

// A GBW03 worker gets its REQUESTs packed (protocol.md §1.4) and answers each in the form it
// came in: packed first, then classic, on the same connection.
TEST_F(WorkerTest, AnswersAPackedRequestPacked) {
    const auto id = start([](RequestContext& c) {
        (void)c.send_partial({{"chunk", 1}});
        (void)c.fail(base::make_error(base::ErrorType::kUpstreamError,
                                      c.meta().request_id == "req-p" ? "packed" : "classic"));
    });
    broker.send_request(id, "tok-p", R"({"x":1})", "req-p", 10'000, "test", true);
    auto partial = broker.expect(cmd::kPartial);
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(partial && error);
    EXPECT_TRUE(partial->packed);
    EXPECT_TRUE(error->packed);
    // unpacked: the compact layout, [token] [payload]
    ASSERT_EQ(partial->frames.size(), 5u);
    EXPECT_EQ(partial->frames[3], "tok-p");
    EXPECT_EQ(json::parse(partial->frames[4])["chunk"], 1);
    ASSERT_EQ(error->frames.size(), 6u);
    EXPECT_EQ(error->frames[3], "tok-p");
    EXPECT_EQ(error->frames[4], "UpstreamError");
    EXPECT_EQ(error->frames[5], "packed");
    broker.send_request(id, "tok-c", "{}", "req-c");
    auto classic = broker.expect(cmd::kPartial);
    ASSERT_TRUE(classic);
    EXPECT_FALSE(classic->packed);
    EXPECT_EQ(classic->frames[4], "");  // the classic layout's empty frame
    auto classic_error = broker.expect(cmd::kError);
    ASSERT_TRUE(classic_error);
    EXPECT_FALSE(classic_error->packed);
}

// Bodies of kZeroCopyFrame bytes or more pass from the handler thread to the broker without a
// copy: they must still arrive byte for byte, in order, behind the right token.
TEST_F(WorkerTest, LargeBodiesReachTheBrokerIntact) {
    std::string text;
    for (int i = 0; text.size() < 300'000; ++i) text += "chunk " + std::to_string(i) + " é; ";
    const auto id = start([&text](RequestContext& c) {
        (void)c.send_partial({{"text", text.substr(0, 5000)}});
        const schema::Triple note{schema::Iri{"urn:s:step"}, schema::Iri{"urn:x:note"},
                                  schema::Literal{text.substr(0, 100'000), "", ""}, std::nullopt};
        (void)c.send_explain("urn:s", "urn:s:step", {note}, ExplainState::kOpen);
        (void)c.reply_text(json{{"text", text}}.dump());
    });
    broker.send_request(id, "tok", "{}", "req-9");
    auto partial = broker.expect(cmd::kPartial);
    auto explain = broker.expect(cmd::kExplain);
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(partial && explain && reply);
    EXPECT_EQ(partial->frames[3], "tok");
    EXPECT_EQ(json::parse(partial->frames[5])["text"], text.substr(0, 5000));
    EXPECT_EQ(explain->frames[3], "tok");
    ASSERT_EQ(explain->frames.size(), 9u);
    EXPECT_EQ(explain->frames[5], "urn:s");
    EXPECT_EQ(json::parse(explain->frames[8])["explain_id"], "urn:s:step");
    EXPECT_NE(explain->frames[8].find(text.substr(0, 100'000)), std::string::npos);
    ASSERT_EQ(reply->frames.size(), 6u);
    EXPECT_EQ(reply->frames[3], "tok");
    EXPECT_EQ(json::parse(reply->frames[5])["text"], text);
}

TEST_F(WorkerTest, HeartbeatsKeepFlowingWhileAHandlerRuns) {
    auto c = config();
    c.heartbeat = 50ms;
    c.liveness = 100;  // the fake broker does not heartbeat back
    // The handler runs until the test has seen five heartbeats sent while it ran.
    std::atomic<bool> release{false};
    const auto id = start(
        [&release](RequestContext& ctx) {
            (void)test_support::wait_until([&] { return release.load(); });
            (void)ctx.reply(json::object());
        },
        c);
    broker.send_request(id, "tok", "{}");
    int heartbeats = 0;
    while (heartbeats < 5) {
        auto message = broker.receive(test_support::kHangGuard);
        ASSERT_TRUE(message) << "worker went silent during a slow handler";
        ASSERT_NE(message->command(), cmd::kReply) << "the handler was not released yet";
        if (message->command() == cmd::kHeartbeat) ++heartbeats;
    }
    release = true;
    EXPECT_TRUE(broker.expect(cmd::kReply, test_support::kHangGuard));
}

TEST_F(WorkerTest, CancelReachesTheHandler) {
    std::atomic<bool> started{false};
    std::atomic<bool> saw_cancel{false};
    const auto id = start([&started, &saw_cancel](RequestContext& c) {
        started = true;
        (void)test_support::wait_until([&] { return c.cancelled(); });
        saw_cancel = c.cancelled();
        (void)c.fail(c.cancellation_error());
    });
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    broker.send_command(id, cmd::kCancel, {"other-token"});  // not ours: ignored
    // An absence, not an ordering: a CANCEL wrongly honoured would show within this window.
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(saw_cancel.load());
    broker.send_command(id, cmd::kCancel, {"tok"});
    auto error = broker.expect(cmd::kError, test_support::kHangGuard);
    ASSERT_TRUE(error);
    ASSERT_EQ(error->frames.size(), 7u);
    EXPECT_EQ(error->frames[3], "tok");
    EXPECT_EQ(error->frames[5], "Cancelled");
    EXPECT_TRUE(saw_cancel.load());
}

TEST_F(WorkerTest, DeadlineCountsAsCancelled) {
    std::atomic<bool> cancelled{false};
    const auto id = start([&cancelled](RequestContext& c) {
        (void)test_support::wait_until([&] { return c.cancelled(); });
        cancelled = c.cancelled();
        (void)c.fail(c.cancellation_error());
    });
    broker.send_request(id, "tok", "{}", "r", 100);
    auto error = broker.expect(cmd::kError, test_support::kHangGuard);
    ASSERT_TRUE(error);
    EXPECT_TRUE(cancelled.load());
    // Regression: a deadline was once reported as Cancelled, racing the broker's own answer.
    ASSERT_EQ(error->frames.size(), 7u);
    EXPECT_EQ(error->frames[5], "DeadlineExceeded");
}

// A service that reads its bodies as text parses the ones its readers do not take with
// parse_request_body: the runtime's tree, its InvalidJson message, and its log line.
TEST(ParseRequestBodyTest, GivesTheTreeOrInvalidJsonAndLogsIt) {
    std::ostringstream captured;
    const auto logger = base::component_logger("worker");
    const auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
    const auto level = logger->level();
    logger->set_level(spdlog::level::info);
    logger->sinks().push_back(sink);
    auto tree = parse_request_body(R"({"op":"stats","n":[1,2]})");
    auto broken = parse_request_body("{\"op\": ");
    logger->sinks().pop_back();
    logger->set_level(level);
    ASSERT_TRUE(tree);
    EXPECT_EQ((*tree)["n"], json::array({1, 2}));
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().type, base::ErrorType::kInvalidJson);
    EXPECT_TRUE(broken.error().message.starts_with("the request body: ")) << broken.error().message;
    EXPECT_NE(captured.str().find("event=invalid_json"), std::string::npos) << captured.str();
    EXPECT_EQ(captured.str().find("event=invalid_json"), captured.str().rfind("event=invalid_json"))
        << "logged once, for the broken body only";
}

TEST_F(WorkerTest, InvalidJsonIsAnsweredWithoutCallingTheHandler) {
    std::atomic<int> calls{0};
    const auto id = start([&calls](RequestContext& c) {
        ++calls;
        (void)c.reply(json::object());
    });
    broker.send_request(id, "t1", "{not json");
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "t1");
    EXPECT_EQ(error->frames[5], "InvalidJson");
    broker.send_request(id, "t2",
                        std::string("\"\xff\xfe\""));  // a JSON string holding invalid UTF-8
    error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "t2");
    EXPECT_EQ(error->frames[5], "InvalidJson");
    EXPECT_EQ(calls.load(), 0);
    broker.send_request(id, "t3", "[1,2]");  // valid JSON of any shape reaches the handler
    ASSERT_TRUE(broker.expect(cmd::kReply));
    EXPECT_EQ(calls.load(), 1);
}

TEST_F(WorkerTest, ABodyTheServiceReadsAsTextReachesItUnparsed) {
    auto c = config();
    c.text_body = [](std::string_view body) { return body.rfind("{\"raw\"", 0) == 0; };
    const auto id = start(
        [](RequestContext& ctx) {
            (void)ctx.reply({{"tree", ctx.body()}, {"text", std::string(ctx.body_text())}});
        },
        c);
    // Taken: no tree (not even for text that is not JSON: the service checks it itself).
    broker.send_request(id, "t1", R"({"raw":1,)");
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(json::parse(reply->frames[5]), (json{{"tree", nullptr}, {"text", R"({"raw":1,)"}}));
    // Not taken: parsed as always, the text beside it.
    broker.send_request(id, "t2", R"({"x":1})");
    reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(json::parse(reply->frames[5]), (json{{"tree", {{"x", 1}}}, {"text", R"({"x":1})"}}));
}

TEST_F(WorkerTest, MalformedRequestIsAProtocolError) {
    const auto id = start([](RequestContext& c) { (void)c.reply(json::object()); });
    broker.send_command(id, cmd::kRequest, {"tok", "", "{}"});  // meta without body
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "tok");
    EXPECT_EQ(error->frames[5], "ProtocolError");
    broker.send_command(id, cmd::kRequest, {"tok2", "", R"({"request_id":1})", "{}"});  // bad meta
    error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "tok2");
    EXPECT_EQ(error->frames[5], "ProtocolError");
}

TEST_F(WorkerTest, ThrowingHandlerIsInternalAndTheWorkerKeepsServing) {
    std::atomic<int> calls{0};
    const auto id = start([&calls](RequestContext& c) {
        if (calls++ == 0) throw std::runtime_error("boom");
        (void)c.reply({{"ok", true}});
    });
    broker.send_request(id, "t1", "{}");
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "Internal");
    EXPECT_NE(error->frames[6].find("boom"), std::string::npos);
    broker.send_request(id, "t2", "{}");
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "t2");
}

TEST_F(WorkerTest, HandlerWithoutTerminalGetsInternal) {
    const auto id = start([](RequestContext& c) { (void)c.send_partial({{"a", 1}}); });
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(broker.expect(cmd::kPartial));
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "Internal");
}

TEST_F(WorkerTest, SecondTerminalIsRefused) {
    std::atomic<bool> second_ok{true};
    const auto id = start([&second_ok](RequestContext& c) {
        (void)c.reply(json::object());
        second_ok = c.fail(base::make_error(base::ErrorType::kInternal, "again")).ok();
    });
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(broker.expect(cmd::kReply));
    EXPECT_FALSE(broker.expect(cmd::kError, 200ms));
    EXPECT_FALSE(second_ok.load());
}

TEST_F(WorkerTest, ExplainIsNumberedPerSessionAndEnds) {
    std::atomic<bool> refused{false};
    const auto id = start([&refused](RequestContext& c) {
        ExplainStep a{"urn:a", "urn:a", {}, ExplainState::kOpen, std::nullopt, std::nullopt, {}};
        ExplainStep b{"urn:b", "urn:b", {}, ExplainState::kOpen, std::nullopt, std::nullopt, {}};
        EXPECT_EQ(c.send_explain(a).value(), 0u);
        EXPECT_EQ(c.send_explain(b).value(), 0u);
        a.explain_id = "urn:a:step";
        EXPECT_EQ(c.send_explain(a).value(), 1u);
        a.state = ExplainState::kComplete;
        EXPECT_EQ(c.send_explain(a).value(), 2u);
        refused = !c.send_explain(a).ok();
        b.state = ExplainState::kComplete;
        EXPECT_EQ(c.send_explain(b).value(), 1u);
        (void)c.reply(json::object());
    });
    broker.send_request(id, "tok", "{}");
    std::vector<WorkerMessage> explains;
    for (int i = 0; i < 5; ++i) {
        auto e = broker.expect(cmd::kExplain);
        ASSERT_TRUE(e) << "explain " << i;
        explains.push_back(*e);
    }
    ASSERT_TRUE(broker.expect(cmd::kReply));
    EXPECT_TRUE(refused.load());
    // [""] [MDPW01] [0x07] [token] [""] [session] [seq] [state] [body]
    const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
        {"urn:a", "0", "open"},
        {"urn:b", "0", "open"},
        {"urn:a", "1", "open"},
        {"urn:a", "2", "complete"},
        {"urn:b", "1", "complete"}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& f = explains[i].frames;
        ASSERT_EQ(f.size(), 9u);
        EXPECT_EQ(f[3], "tok");
        EXPECT_EQ(f[5], std::get<0>(expected[i]));
        EXPECT_EQ(f[6], std::get<1>(expected[i]));
        EXPECT_EQ(f[7], std::get<2>(expected[i]));
        const auto body = json::parse(f[8]);
        EXPECT_EQ(body["message_type"], "explain");
        EXPECT_EQ(body["session"], std::get<0>(expected[i]));
        EXPECT_EQ(body["seq"].get<int>(), std::stoi(std::get<1>(expected[i])));
        EXPECT_EQ(body["service"], "test");
        EXPECT_EQ(body["worker"], "w/0");
        EXPECT_EQ(body["explain_graph"], "urn:graph:retrieval");
        EXPECT_TRUE(body["explain_triples"].is_array());
        const bool last = std::get<2>(expected[i]) == "complete";
        EXPECT_EQ(body["end_of_trace"], last);
        EXPECT_EQ(body["trace_status"], last ? "complete" : "");
    }
    EXPECT_EQ(json::parse(explains[2].frames[8])["explain_id"], "urn:a:step");
}

TEST_F(WorkerTest, FailingWithAnOpenTraceClosesItAsError) {
    const auto id = start([](RequestContext& c) {
        EXPECT_EQ(c.send_explain("urn:s", "urn:s", {}, ExplainState::kOpen).value(), 0u);
        (void)c.fail(base::make_error(base::ErrorType::kUpstreamError, "llm down"));
    });
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(broker.expect(cmd::kExplain));
    auto last = broker.expect(cmd::kExplain);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->frames[6], "1");
    EXPECT_EQ(last->frames[7], "error");
    const auto body = json::parse(last->frames[8]);
    EXPECT_EQ(body["trace_status"], "error");
    EXPECT_EQ(body["error"]["type"], "UpstreamError");
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "UpstreamError");
    EXPECT_EQ(error->frames[6], "llm down");
}

TEST_F(WorkerTest, AnErrorTextQuotingBytesThatAreNotUtf8IsSentAsValidUtf8) {
    const auto id = start([](RequestContext& c) {
        EXPECT_EQ(c.send_explain("urn:s", "urn:s", {}, ExplainState::kOpen).value(), 0u);
        (void)c.fail(base::make_error(base::ErrorType::kInvalidRequest, "bad term <urn:\xFF\xC3>"));
    });
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(broker.expect(cmd::kExplain));
    auto last = broker.expect(cmd::kExplain);
    ASSERT_TRUE(last);
    const auto body = json::parse(last->frames[8]);  // throws on invalid UTF-8
    const std::string in_trace = body["error"]["message"];
    EXPECT_FALSE(base::find_invalid_utf8(in_trace).has_value()) << in_trace;
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_FALSE(base::find_invalid_utf8(error->frames[6]).has_value()) << error->frames[6];
    EXPECT_NE(error->frames[6].find("\\xFF"), std::string::npos) << error->frames[6];
}

TEST_F(WorkerTest, StopWhenIdleSendsDisconnect) {
    start([](RequestContext& c) { (void)c.reply(json::object()); });
    worker->stop();
    EXPECT_TRUE(broker.expect(cmd::kDisconnect, 2s));
    worker->wait();
}

TEST_F(WorkerTest, StopFinishesInFlightWorkThenDisconnects) {
    std::atomic<bool> started{false};
    std::atomic<bool> stop_called{false};
    std::atomic<bool> cancelled{false};
    // The handler is in flight when stop() comes, and finishes only after it.
    const auto id = start([&](RequestContext& c) {
        started = true;
        (void)test_support::wait_until([&] { return stop_called.load(); });
        cancelled = c.cancelled();
        (void)c.reply({{"done", true}});
    });
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    worker->stop();  // a flag: it does not wait for the handler
    stop_called = true;
    auto reply = broker.expect(cmd::kReply, test_support::kHangGuard);
    ASSERT_TRUE(reply) << "the in-flight request must finish before the worker leaves";
    EXPECT_EQ(json::parse(reply->frames[5])["done"], true);
    EXPECT_TRUE(broker.expect(cmd::kDisconnect, test_support::kHangGuard));
    worker->wait();
    EXPECT_FALSE(cancelled.load());
}

TEST_F(WorkerTest, DrainTimeoutCancelsALongHandler) {
    auto c = config();
    c.drain_timeout = 100ms;
    std::atomic<bool> started{false};
    std::atomic<bool> cancelled{false};
    // The handler ends only when cancelled: the drain timeout is what ends it.
    const auto id = start(
        [&](RequestContext& ctx) {
            started = true;
            (void)test_support::wait_until([&] { return ctx.cancelled(); });
            cancelled = ctx.cancelled();
            (void)ctx.fail(base::make_error(base::ErrorType::kCancelled, "worker stopping"));
        },
        c);
    broker.send_request(id, "tok", "{}");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    worker->stop();
    auto error = broker.expect(cmd::kError, test_support::kHangGuard);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "Cancelled");
    EXPECT_TRUE(cancelled.load()) << "the drain timeout cancelled the handler";
    EXPECT_TRUE(broker.expect(cmd::kDisconnect, test_support::kHangGuard));
}

TEST_F(WorkerTest, BrokerDisconnectMakesTheWorkerRegisterAgain) {
    const auto first = start([](RequestContext& c) { (void)c.reply(json::object()); });
    broker.send_command(first, cmd::kDisconnect);
    auto again = broker.expect(cmd::kReady, 2s);
    ASSERT_TRUE(again);
    EXPECT_NE(again->identity, first) << "7/MDP: a new socket after DISCONNECT";
    broker.send_request(again->identity, "tok", "{}");
    EXPECT_TRUE(broker.expect(cmd::kReply));
}

TEST_F(WorkerTest, SilentBrokerMakesTheWorkerReconnect) {
    auto c = config();
    c.heartbeat = 40ms;
    c.liveness = 2;
    c.reconnect_initial = 20ms;
    const auto first = start([](RequestContext& ctx) { (void)ctx.reply(json::object()); }, c);
    // The outcome: a new connection (a new identity) after the broker stayed silent.
    auto again = broker.expect(cmd::kReady, test_support::kHangGuard);
    ASSERT_TRUE(again);
    EXPECT_NE(again->identity, first);
}

TEST_F(WorkerTest, BrokerDisconnectDuringARequestDropsItsOutput) {
    std::atomic<bool> started{false};
    std::atomic<bool> cancelled{false};
    const auto first = start([&started, &cancelled](RequestContext& c) {
        started = true;
        (void)test_support::wait_until([&] { return c.cancelled(); });
        cancelled = c.cancelled();
        (void)c.reply({{"late", true}});
    });
    broker.send_request(first, "tok", "{}");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    broker.send_command(first, cmd::kDisconnect);
    auto again = broker.expect(cmd::kReady, test_support::kHangGuard);
    ASSERT_TRUE(again);
    EXPECT_TRUE(cancelled.load());
    EXPECT_FALSE(broker.expect(cmd::kReply, 200ms))
        << "a reply for a request of the old connection";
}

// The handler's own GBC01 client reaches the same ROUTER: answer its REQUEST by hand.
std::optional<WorkerMessage> expect_gbc(FakeBroker& broker, char command,
                                        std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
        auto message = broker.receive(100ms);
        if (!message) continue;
        if (message->frames.size() > 2 && message->frames[1] == "GBC01" &&
            message->frames[2] == std::string(1, command)) {
            return message;
        }
        // The worker socket's messages may overtake the call's: kept for broker.expect().
        if (message->frames.size() > 1 && message->frames[1] != "GBC01" &&
            message->command() != schema::protocol::worker_cmd::kHeartbeat)
            broker.held.push_back(std::move(*message));
    }
    return std::nullopt;
}

void gbc_reply(FakeBroker& broker, const std::string& identity, char command,
               const bus::Frames& rest) {
    bus::Frames frames{"", "GBC01", std::string(1, command)};
    frames.insert(frames.end(), rest.begin(), rest.end());
    broker.send(identity, frames);
}

// A sub-call's CANCEL (client socket) and the request's ERROR (worker socket) may come in
// either order: both, as they arrive within 3 s.
std::pair<std::optional<WorkerMessage>, std::optional<WorkerMessage>> collect_cancel_and_error(
    FakeBroker& broker) {
    std::optional<WorkerMessage> cancel;
    std::optional<WorkerMessage> error;
    const auto until = std::chrono::steady_clock::now() + 3s;
    while ((!cancel || !error) && std::chrono::steady_clock::now() < until) {
        auto m = broker.receive(100ms);
        if (!m || m->frames.size() < 3) continue;
        if (m->frames[1] == "GBC01" &&
            m->frames[2] == std::string(1, schema::protocol::client_cmd::kCancel))
            cancel = m;
        if (m->frames[1] == "MDPW01" && m->command() == cmd::kError) error = m;
    }
    return {cancel, error};
}

// docs/operations.md "Logs": a request made on behalf of a run (meta "trace") logs that run's
// OTel trace id and passes it on to its own calls; its lines name its own session as trace=.
TEST_F(WorkerTest, ARunNestedInATraceLogsAndPassesOnTheTopLevelTraceId) {
    const std::string top = "4bf92f3577b34da6a3ce929d0e0e4736";
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> fields;
    std::string otel;
    std::string session;
    const auto id = start([&](RequestContext& c) {
        {
            std::lock_guard lock(mutex);
            fields = base::log_fields();
            otel = c.otel_trace_id();
            session = c.run().question();
        }
        auto result = c.call("sub", {{"x", 1}}, 0ms);
        (void)(result ? c.reply({{"ok", true}}) : c.fail(result.error()));
    });
    const std::string meta = R"({"request_id":"r-7","service":"test","deadline_ms":5000,)"
                             R"("attempt":1,"client":"GBC01","trace":")" +
                             top + R"("})";
    broker.send_command(id, cmd::kRequest, {"tok", "", meta, "{}"});
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    ASSERT_EQ(call->frames.size(), 8u);
    EXPECT_EQ(call->frames[6], "trace=" + top);
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kFinal,
              {call->frames[4], "{}"});
    ASSERT_TRUE(broker.expect(cmd::kReply));
    std::lock_guard lock(mutex);
    EXPECT_EQ(otel, top);
    const auto field = [&](std::string_view key) {
        for (const auto& [k, v] : fields)
            if (k == key) return v;
        return std::string("(absent)");
    };
    EXPECT_EQ(field("request"), "r-7");
    EXPECT_EQ(field("trace"), session);
    EXPECT_EQ(field("otel_trace_id"), top);
}

TEST_F(WorkerTest, CallGoesThroughTheBrokerWithTheRemainingDeadline) {
    const auto id = start([](RequestContext& c) {
        std::vector<std::string> seen;
        auto result = c.call("sub", {{"x", 1}}, 0ms, [&seen](const bus::Reply& r) {
            seen.emplace_back(bus::to_string(r.kind));
        });
        if (!result) {
            (void)c.fail(result.error());
            return;
        }
        (void)c.reply({{"final", result->final}, {"data", result->data}, {"seen", seen}});
    });
    broker.send_request(id, "tok", "{}", "parent", 2000);
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    // The options frame names the trace the callee's run nests in (§4.1 trace=): this request
    // came without one, so its own run is the top-level one.
    ASSERT_EQ(call->frames.size(), 8u);
    EXPECT_EQ(call->frames[3], "sub");
    const auto deadline = std::stoll(call->frames[5]);
    EXPECT_GT(deadline, 1000);
    EXPECT_LE(deadline, 2000) << "a call never outlives its request";
    ASSERT_TRUE(call->frames[6].starts_with("trace=")) << call->frames[6];
    EXPECT_TRUE(schema::otel::valid_trace_id(call->frames[6].substr(6))) << call->frames[6];
    EXPECT_EQ(json::parse(call->frames[7])["x"], 1);
    const std::string call_id = call->frames[4];
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kPartial,
              {call_id, "data", "\"d\""});
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kFinal,
              {call_id, R"({"ok":1})"});
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    const auto body = json::parse(reply->frames[5]);
    EXPECT_EQ(body["final"]["ok"], 1);
    EXPECT_EQ(body["data"], json::array({"d"}));
    EXPECT_EQ(body["seen"], json::array({"data", "final"}));
}

// A call that takes its callee's explain bodies as text sees each as received (no tree, not
// checked), keeps them in order in explain_text, and can relay one as is with send_partial_text;
// data and FINAL bodies are parsed as before.
TEST_F(WorkerTest, ExplainBodiesTakenAsTextAreKeptAndRelayedAsReceived) {
    const auto id = start([](RequestContext& c) {
        std::vector<std::string> bodies;
        bool any_tree = false;
        auto result = c.call(
            "sub", {{"x", 1}}, 0ms,
            [&](const bus::Reply& r) {
                if (r.kind != bus::ReplyKind::kExplain) return;
                any_tree = any_tree || !r.body.is_null();
                bodies.push_back(r.text);
                (void)c.send_partial_text(r.text);
            },
            FinalBody::kJson, ExplainBody::kTextOnly);
        if (!result) {
            (void)c.fail(result.error());
            return;
        }
        (void)c.reply({{"final", result->final},
                       {"data", result->data},
                       {"explain", result->explain.size()},
                       {"explain_text", result->explain_text},
                       {"seen", bodies},
                       {"any_tree", any_tree}});
    });
    broker.send_request(id, "tok", "{}", "parent", 2000);
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    const std::string call_id = call->frames[4];
    const std::string first = R"({"b":[1, 2],"a":"as sent"})";
    const std::string second = "not json: the caller checks";
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kPartial,
              {call_id, "explain", first});
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kPartial,
              {call_id, "data", "\"d\""});
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kPartial,
              {call_id, "explain", second});
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kFinal,
              {call_id, R"({"ok":1})"});
    for (const auto& relayed : {first, second}) {
        auto partial = broker.expect(cmd::kPartial);
        ASSERT_TRUE(partial);
        EXPECT_EQ(partial->frames.back(), relayed);
    }
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    const auto body = json::parse(reply->frames[5]);
    EXPECT_EQ(body["final"]["ok"], 1);
    EXPECT_EQ(body["data"], json::array({"d"}));
    EXPECT_EQ(body["explain"], 0);
    EXPECT_EQ(body["explain_text"], json::array({first, second}));
    EXPECT_EQ(body["seen"], json::array({first, second}));
    EXPECT_EQ(body["any_tree"], false);
}

// A deferred explain keeps its place in the session's numbering and in everything the request
// sends, and goes out as soon as the next call's request has: before that call is answered.
TEST_F(WorkerTest, ADeferredExplainGoesOutWithTheNextCallAndBeforeAnythingElse) {
    std::atomic<bool> refused{false};
    const auto id = start([&refused](RequestContext& c) {
        ExplainStep a{"urn:a", "urn:a", {}, ExplainState::kOpen, std::nullopt, std::nullopt, {}};
        EXPECT_EQ(c.defer_explain(a).value(), 0u);
        auto result = c.call("sub", {{"x", 1}}, 0ms);
        if (!result) {
            (void)c.fail(result.error());
            return;
        }
        a.explain_id = "urn:a:2";
        EXPECT_EQ(c.defer_explain(a).value(), 1u);
        a.explain_id = "urn:a:3";
        EXPECT_EQ(c.send_explain(a).value(), 2u);  // after the deferred one
        a.explain_id = "urn:a:4";
        a.state = ExplainState::kComplete;
        EXPECT_EQ(c.defer_explain(a).value(), 3u);
        refused = !c.defer_explain(a).ok();  // the session has ended
        (void)c.reply(json::object());       // the last explain goes out first
    });
    broker.send_request(id, "tok", "{}", "parent", 5000);
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    // The call is still open, yet the explain deferred before it has arrived.
    auto first = broker.expect(cmd::kExplain);
    ASSERT_TRUE(first) << "the deferred explain did not go out with the call";
    EXPECT_EQ(first->frames[6], "0");
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kFinal,
              {call->frames[4], "{}"});
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) {
        auto e = broker.expect(cmd::kExplain);
        ASSERT_TRUE(e) << "explain " << i;
        EXPECT_EQ(e->frames[6], std::to_string(i + 1));
        ids.push_back(json::parse(e->frames[8])["explain_id"].get<std::string>());
    }
    EXPECT_EQ(ids, (std::vector<std::string>{"urn:a:2", "urn:a:3", "urn:a:4"}));
    ASSERT_TRUE(broker.expect(cmd::kReply));
    EXPECT_TRUE(refused.load());
}

// A deferred step's builder runs once, only when the step goes out (after the next call's
// request), and what it builds is what is sent.
TEST_F(WorkerTest, ADeferredStepIsBuiltWhenItGoesOut) {
    std::atomic<int> builds{0};
    std::atomic<bool> built_early{true};
    const auto id = start([&](RequestContext& c) {
        ExplainStep a{"urn:a", "urn:a", {}, ExplainState::kOpen, std::nullopt, std::nullopt, {}};
        a.build = [&builds, text = std::string("built later")](schema::TripleSink& out) {
            ++builds;
            out.literal("urn:a", "urn:p", text);
        };
        EXPECT_EQ(c.defer_explain(std::move(a)).value(), 0u);
        built_early = builds.load() != 0;
        (void)c.call("sub", {{"x", 1}}, 0ms);
        (void)c.reply(json::object());
    });
    broker.send_request(id, "tok", "{}", "parent", 5000);
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    auto explain = broker.expect(cmd::kExplain);
    ASSERT_TRUE(explain);
    // Sent in the term-dictionary form (docs/protocol.md §8.1), read here as plain triples.
    const auto sent = json::parse(explain->frames[8]);
    EXPECT_TRUE(schema::has_term_dictionary(sent));
    const auto body = schema::plain_explain_body(sent);
    ASSERT_EQ(body["explain_triples"].size(), 1u);
    EXPECT_EQ(body["explain_triples"][0]["o"]["v"], "built later");
    EXPECT_EQ(body["explain_triples"][0]["g"], schema::vocab::kRetrievalGraph);
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kFinal,
              {call->frames[4], "{}"});
    ASSERT_TRUE(broker.expect(cmd::kReply));
    EXPECT_FALSE(built_early.load());
    EXPECT_EQ(builds.load(), 1);
}

TEST_F(WorkerTest, CalleeErrorComesBackTyped) {
    const auto id = start([](RequestContext& c) {
        auto result = c.call("sub", json::object(), 1s);
        if (!result)
            (void)c.fail(
                base::make_error(base::ErrorType::kUpstreamError, result.error().describe()));
    });
    broker.send_request(id, "tok", "{}");
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    EXPECT_EQ(call->frames[5], "1000");
    gbc_reply(broker, call->identity, schema::protocol::client_cmd::kError,
              {call->frames[4], "NotFound", "no doc"});
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "UpstreamError");
    EXPECT_EQ(error->frames[6], "NotFound: no doc");
}

TEST_F(WorkerTest, CancelDuringACallCancelsTheCall) {
    const auto id = start([](RequestContext& c) {
        auto result = c.call("sub", json::object(), 5s);
        (void)c.fail(result ? base::make_error(base::ErrorType::kInternal, "call returned")
                            : result.error());
    });
    broker.send_request(id, "tok", "{}");
    auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(call);
    broker.send_command(id, cmd::kCancel, {"tok"});
    const auto [cancel, error] = collect_cancel_and_error(broker);
    ASSERT_TRUE(cancel) << "the sub-request must be cancelled too";
    EXPECT_EQ(cancel->frames[3], call->frames[4]);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "Cancelled");
}

TEST_F(WorkerTest, CallAllSendsEveryCallBeforeWaitingAndMatchesRepliesByOrder) {
    const auto id = start([](RequestContext& c) {
        const std::vector<CallSpec> calls{{"a", {{"n", 0}}, 0ms, FinalBody::kJson},
                                          {"b", {{"n", 1}}, 0ms, FinalBody::kTextOnly},
                                          {"a", {{"n", 2}}, 0ms, FinalBody::kJson}};
        auto results = c.call_all(calls);
        if (!results) {
            (void)c.fail(results.error());
            return;
        }
        json out = json::array();
        for (const auto& r : *results) out.push_back({{"final", r.final}, {"text", r.final_text}});
        (void)c.reply(out);
    });
    broker.send_request(id, "tok", "{}", "parent", 3000);
    // All three requests arrive before any is answered: they are in flight together.
    std::vector<WorkerMessage> requests;
    for (int i = 0; i < 3; ++i) {
        auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
        ASSERT_TRUE(call) << "call " << i << " was not sent before the first reply";
        requests.push_back(*call);
    }
    for (int i = 0; i < 3; ++i) EXPECT_EQ(json::parse(requests[i].frames.back())["n"], i);
    EXPECT_EQ(requests[1].frames[3], "b");
    // Answered last to first.
    for (int i = 2; i >= 0; --i) {
        gbc_reply(broker, requests[i].identity, schema::protocol::client_cmd::kFinal,
                  {requests[i].frames[4], "{\"answer\":" + std::to_string(i * 10) + "}"});
    }
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    const auto body = json::parse(reply->frames[5]);
    ASSERT_EQ(body.size(), 3u);
    EXPECT_EQ(body[0]["final"]["answer"], 0);
    EXPECT_TRUE(body[1]["final"].is_null()) << "a text-only call leaves the tree empty";
    EXPECT_EQ(body[1]["text"], "{\"answer\":10}");
    EXPECT_EQ(body[2]["final"]["answer"], 20);
}

// A body already written as text goes on the wire as written, through call_text and through a
// CallSpec's text_body (its tree then unread); an unset text_body sends the tree dumped.
TEST_F(WorkerTest, TextBodiesAreSentAsWritten) {
    const auto id = start([](RequestContext& c) {
        auto single = c.call_text("a", R"({"z":1, "a":"kept as written"})", 0ms);
        if (!single) {
            (void)c.fail(single.error());
            return;
        }
        std::vector<CallSpec> calls{{"b", {{"ignored", true}}, 0ms, FinalBody::kTextOnly},
                                    {"c", {{"n", 2}, {"a", "é"}}, 0ms}};
        calls[0].text_body = R"({"text":"body"})";
        auto results = c.call_all(calls);
        if (!results) {
            (void)c.fail(results.error());
            return;
        }
        (void)c.reply(json{{"single", single->final}, {"text", (*results)[0].final_text}});
    });
    broker.send_request(id, "tok", "{}", "parent", 3000);
    auto first = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->frames[3], "a");
    EXPECT_EQ(first->frames.back(), R"({"z":1, "a":"kept as written"})");
    gbc_reply(broker, first->identity, schema::protocol::client_cmd::kFinal,
              {first->frames[4], R"({"ok":1})"});
    std::vector<WorkerMessage> requests;
    for (int i = 0; i < 2; ++i) {
        auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
        ASSERT_TRUE(call);
        requests.push_back(*call);
    }
    EXPECT_EQ(requests[0].frames[3], "b");
    EXPECT_EQ(requests[0].frames.back(), R"({"text":"body"})");
    EXPECT_EQ(requests[1].frames.back(), schema::dump(json{{"n", 2}, {"a", "é"}}));
    for (const auto& r : requests) {
        gbc_reply(broker, r.identity, schema::protocol::client_cmd::kFinal,
                  {r.frames[4], R"({"done":true})"});
    }
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    const auto body = json::parse(reply->frames[5]);
    EXPECT_EQ(body["single"]["ok"], 1);
    EXPECT_EQ(body["text"], R"({"done":true})");
}

TEST_F(WorkerTest, CallAllReturnsTheFirstErrorAndCancelsTheCallsStillOpen) {
    const auto id = start([](RequestContext& c) {
        const std::vector<CallSpec> calls{{"a", json::object(), 5s}, {"b", json::object(), 5s}};
        auto results = c.call_all(calls);
        (void)c.fail(results ? base::make_error(base::ErrorType::kInternal, "call_all returned")
                             : results.error());
    });
    broker.send_request(id, "tok", "{}");
    auto first = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    auto second = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
    ASSERT_TRUE(first && second);
    gbc_reply(broker, first->identity, schema::protocol::client_cmd::kError,
              {first->frames[4], "NotFound", "gone"});
    const auto [cancel, error] = collect_cancel_and_error(broker);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "NotFound");
    ASSERT_TRUE(cancel) << "the call still open must be cancelled";
    EXPECT_EQ(cancel->frames[3], second->frames[4]);
}

// ---- inline requests (WorkerConfig::run_inline) ----------------------------------------------

// Which thread asked the hook and which ran each handler call, by the request's body.
struct Threads {
    std::mutex mutex;
    std::thread::id hook;
    std::map<std::string, std::thread::id> handler;

    void saw_hook() {
        std::lock_guard lock(mutex);
        hook = std::this_thread::get_id();
    }
    void ran(const std::string& body) {
        std::lock_guard lock(mutex);
        handler[body] = std::this_thread::get_id();
    }
    bool inline_ran(const std::string& body) {
        std::lock_guard lock(mutex);
        return handler.count(body) != 0 && handler[body] == hook;
    }
};

// A config whose hook takes bodies that hold "inline".
WorkerConfig inline_config(WorkerConfig c, Threads& threads) {
    c.run_inline = [&threads](std::string_view meta, std::string_view body) {
        threads.saw_hook();
        EXPECT_NE(meta.find("\"request_id\""), std::string_view::npos) << meta;
        return body.find("inline") != std::string_view::npos;
    };
    return c;
}

// Partials, explain messages and the reply of a request run inline are the frames the handler
// thread's would be, byte for byte, in both forms the broker writes (compact packed, classic).
TEST_F(WorkerTest, AnInlineRequestSendsTheFramesTheHandlerThreadWould) {
    Threads threads;
    const auto id = start(
        [&threads](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            (void)c.send_partial({{"chunk", 1}});
            ExplainStep step{"urn:s",      "urn:s",      {}, ExplainState::kOpen,
                             std::nullopt, std::nullopt, {}};
            (void)c.send_explain(step);
            step.explain_id = "urn:s:end";
            step.state = ExplainState::kComplete;
            (void)c.defer_explain(step);
            (void)c.reply({{"answer", 42}});
        },
        inline_config(config(), threads));
    const auto run = [&](const std::string& body, bool packed) {
        broker.send_request(id, "tok", body, "req", 10'000, "test", packed);
        std::vector<WorkerMessage> out;
        for (const char command : {cmd::kPartial, cmd::kExplain, cmd::kExplain, cmd::kReply}) {
            auto message = broker.expect(command);
            EXPECT_TRUE(message) << "command " << static_cast<int>(command);
            if (message) out.push_back(std::move(*message));
        }
        return out;
    };
    for (const bool packed : {true, false}) {
        const auto threaded = run(R"({"on":"thread"})", packed);
        const auto inlined = run(R"({"on":"inline"})", packed);
        ASSERT_EQ(threaded.size(), 4u);
        ASSERT_EQ(inlined.size(), 4u);
        for (std::size_t i = 0; i < threaded.size(); ++i) {
            EXPECT_EQ(inlined[i].packed, packed) << i;
            EXPECT_EQ(inlined[i].frames, threaded[i].frames) << "message " << i;
        }
        EXPECT_EQ(inlined[1].frames[packed ? 6 : 7], "open");
        EXPECT_EQ(inlined[2].frames[packed ? 6 : 7], "complete");
    }
    EXPECT_TRUE(threads.inline_ran(R"({"on":"inline"})"));
    EXPECT_FALSE(threads.inline_ran(R"({"on":"thread"})")) << "a declined request's thread";
}

// Every way a request ends without the handler's own reply is answered inline as on the handler
// thread: invalid JSON, a typed failure closing its open trace, no terminal, a throw; and the
// slot serves the next request after each.
TEST_F(WorkerTest, AnInlineRequestEndsAsOnTheHandlerThreadWhateverTheHandlerDoes) {
    Threads threads;
    std::atomic<int> calls{0};
    const auto id = start(
        [&](RequestContext& c) {
            ++calls;
            const std::string body(c.body_text());
            threads.ran(body);
            if (c.body().value("do", "") == "throw") throw std::runtime_error("boom");
            if (c.body().value("do", "") == "fail") {
                (void)c.send_explain("urn:s", "urn:s", {}, ExplainState::kOpen);
                (void)c.fail(base::make_error(base::ErrorType::kUpstreamError, "llm down"));
                return;
            }
            if (c.body().value("do", "") == "nothing") return;
            (void)c.reply({{"ok", true}});
        },
        inline_config(config(), threads));

    broker.send_request(id, "t1", "{inline, not json");
    auto error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "t1");
    EXPECT_EQ(error->frames[5], "InvalidJson");
    EXPECT_EQ(calls.load(), 0);

    broker.send_request(id, "t2", R"({"do":"throw","inline":1})");
    error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "t2");
    EXPECT_EQ(error->frames[5], "Internal");
    EXPECT_NE(error->frames[6].find("boom"), std::string::npos);

    broker.send_request(id, "t3", R"({"do":"fail","inline":1})");
    auto last = broker.expect(cmd::kExplain);
    ASSERT_TRUE(last);
    last = broker.expect(cmd::kExplain);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->frames[7], "error");
    error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "t3");
    EXPECT_EQ(error->frames[5], "UpstreamError");
    EXPECT_EQ(error->frames[6], "llm down");

    broker.send_request(id, "t4", R"({"do":"nothing","inline":1})");
    error = broker.expect(cmd::kError);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "t4");
    EXPECT_EQ(error->frames[5], "Internal");

    broker.send_request(id, "t5", R"({"inline":1})");
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "t5");
    EXPECT_EQ(calls.load(), 4);
    for (const char* body : {R"({"do":"throw","inline":1})", R"({"do":"fail","inline":1})",
                             R"({"do":"nothing","inline":1})", R"({"inline":1})"}) {
        EXPECT_TRUE(threads.inline_ran(body)) << body;
    }
}

// An inline request that waits (here on cancelled(), as RequestContext::call does between its
// slices) keeps its slot alive: HEARTBEATs go out while it runs, a CANCEL of another token is
// ignored and one of its own reaches cancelled(); the slot then serves the next request inline.
TEST_F(WorkerTest, AnInlineRequestWaitingHeartbeatsAndSeesItsCancel) {
    Threads threads;
    auto c = inline_config(config(), threads);
    c.heartbeat = 50ms;
    c.liveness = 100;  // the fake broker does not heartbeat back
    c.inline_poll = 5ms;
    std::atomic<bool> started{false};
    std::atomic<bool> saw_cancel{false};
    const auto id = start(
        [&](RequestContext& ctx) {
            threads.ran(std::string(ctx.body_text()));
            if (ctx.body().contains("wait")) {
                started = true;
                (void)test_support::wait_until([&] { return ctx.cancelled(); });
                saw_cancel = ctx.cancelled();
                (void)ctx.fail(ctx.cancellation_error());
                return;
            }
            (void)ctx.reply({{"ok", true}});
        },
        c);
    broker.send_request(id, "tok", R"({"wait":1,"inline":1})", "r", 60'000);
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    int heartbeats = 0;
    while (heartbeats < 5) {
        auto message = broker.receive(test_support::kHangGuard);
        ASSERT_TRUE(message) << "an inline request's slot went silent while it waited";
        ASSERT_NE(message->command(), cmd::kError) << "the request ended before its cancel";
        if (message->command() == cmd::kHeartbeat) ++heartbeats;
    }
    broker.send_command(id, cmd::kCancel, {"other-token"});  // not ours: ignored
    // Each serving moment reads the broker's messages before it heartbeats, so two heartbeats
    // after the CANCEL went out come from moments that had it to read.
    for (int after = 0; after < 2;) {
        auto message = broker.receive(test_support::kHangGuard);
        ASSERT_TRUE(message) << "an inline request's slot went silent while it waited";
        ASSERT_NE(message->command(), cmd::kError) << "another request's CANCEL ended this one";
        if (message->command() == cmd::kHeartbeat) ++after;
    }
    EXPECT_FALSE(saw_cancel.load());
    broker.send_command(id, cmd::kCancel, {"tok"});
    auto error = broker.expect(cmd::kError, test_support::kHangGuard);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[3], "tok");
    EXPECT_EQ(error->frames[5], "Cancelled");
    EXPECT_TRUE(saw_cancel.load());
    EXPECT_TRUE(threads.inline_ran(R"({"wait":1,"inline":1})"));
    broker.send_request(id, "next", R"({"inline":2})");
    auto reply = broker.expect(cmd::kReply, test_support::kHangGuard);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "next");
    EXPECT_TRUE(threads.inline_ran(R"({"inline":2})"));
}

// A DISCONNECT read while an inline request waits drops the connection: the request is
// cancelled and its output dropped, and the slot registers again once it has returned.
TEST_F(WorkerTest, ADisconnectWhileAnInlineRequestWaitsCancelsItAndReconnects) {
    Threads threads;
    auto c = inline_config(config(), threads);
    c.inline_poll = 5ms;
    std::atomic<bool> started{false};
    std::atomic<bool> cancelled{false};
    const auto id = start(
        [&](RequestContext& ctx) {
            started = true;
            (void)test_support::wait_until([&] { return ctx.cancelled(); });
            cancelled = ctx.cancelled();
            (void)ctx.reply({{"late", true}});
        },
        c);
    broker.send_request(id, "tok", R"({"inline":1})", "r", 60'000);
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    broker.send_command(id, cmd::kDisconnect);
    auto ready = broker.expect(cmd::kReady, test_support::kHangGuard);
    ASSERT_TRUE(ready) << "the slot registers again after the inline request returned";
    EXPECT_TRUE(cancelled.load());
    for (const auto& skipped : broker.skipped)
        EXPECT_NE(skipped.command(), cmd::kReply) << "an orphaned request's reply is dropped";
}

// A hook that throws is a no: the request goes to the handler thread.
TEST_F(WorkerTest, AThrowingInlineHookSendsTheRequestToTheHandlerThread) {
    auto c = config();
    c.run_inline = [](std::string_view, std::string_view) -> bool {
        throw std::runtime_error("hook");
    };
    const auto id = start([](RequestContext& ctx) { (void)ctx.reply({{"ok", true}}); }, c);
    broker.send_request(id, "tok", "{}");
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "tok");
}

// While the handler thread serves a request, a request the hook would take is refused as busy
// (§5.1), not run beside it; once the slot is free it runs inline.
TEST_F(WorkerTest, ASlotBusyOnItsHandlerThreadRefusesAnInlineRequest) {
    Threads threads;
    std::atomic<bool> started{false};
    std::atomic<bool> release{false};
    const auto id = start(
        [&](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            if (c.body().contains("slow")) {
                started = true;
                (void)test_support::wait_until([&] { return release.load(); });
            }
            (void)c.reply({{"body", c.body()}});
        },
        inline_config(config(), threads));
    broker.send_request(id, "slow", R"({"slow":1})");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    broker.send_request(id, "quick", R"({"inline":1})");
    auto refused = broker.expect(cmd::kError);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->frames[3], "quick");
    EXPECT_EQ(refused->frames[5], "ProtocolError");
    release = true;
    auto reply = broker.expect(cmd::kReply, test_support::kHangGuard);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "slow");
    broker.send_request(id, "quick2", R"({"inline":1})");
    reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "quick2");
    EXPECT_FALSE(threads.inline_ran(R"({"slow":1})"));
    EXPECT_TRUE(threads.inline_ran(R"({"inline":1})"));
}

// Between the moments an inline handler lets its loop serve the connection (at most every
// inline_poll, here never) nothing is read: a CANCEL that arrives meanwhile is read after it
// (the request has ended: nothing to cancel), and the handler's cancel checks see none.
TEST_F(WorkerTest, ACancelArrivingDuringAnInlineRequestIsReadAfterIt) {
    Threads threads;
    auto slow_poll = inline_config(config(), threads);
    slow_poll.inline_poll = std::chrono::hours{1};
    std::atomic<bool> started{false};
    std::atomic<bool> cancel_sent{false};
    std::atomic<bool> saw_cancel{true};
    const auto id = start(
        [&](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            if (c.body().contains("wait")) {
                started = true;
                // The CANCEL has left the broker before the check: however soon it reaches the
                // slot's socket, only the thread running this handler could read it.
                (void)test_support::wait_until([&] { return cancel_sent.load(); });
                saw_cancel = c.cancelled();
            }
            (void)c.reply({{"ok", true}});
        },
        slow_poll);
    broker.send_request(id, "tok", R"({"wait":"inline"})");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    broker.send_command(id, cmd::kCancel, {"tok"});
    cancel_sent = true;
    auto reply = broker.expect(cmd::kReply, test_support::kHangGuard);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "tok");
    EXPECT_FALSE(saw_cancel.load());
    EXPECT_TRUE(threads.inline_ran(R"({"wait":"inline"})"));
    // The late CANCEL changed nothing: no second terminal, and the slot serves the next one.
    EXPECT_FALSE(broker.expect(cmd::kError, 100ms));
    broker.send_request(id, "tok2", R"({"inline":1})");
    reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "tok2");
}

// An inline handler's cancel checks see its deadline.
TEST_F(WorkerTest, AnInlineRequestSeesItsDeadline) {
    Threads threads;
    const auto id = start(
        [&threads](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            (void)test_support::wait_until([&] { return c.cancelled(); });
            (void)c.fail(c.cancellation_error());
        },
        inline_config(config(), threads));
    broker.send_request(id, "tok", R"({"inline":1})", "r", 100);
    auto error = broker.expect(cmd::kError, test_support::kHangGuard);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->frames[5], "DeadlineExceeded");
    EXPECT_TRUE(threads.inline_ran(R"({"inline":1})"));
}

// stop() during an inline request: it finishes, then the slot disconnects.
TEST_F(WorkerTest, StopDuringAnInlineRequestFinishesItThenDisconnects) {
    Threads threads;
    std::atomic<bool> started{false};
    std::atomic<bool> stop_called{false};
    const auto id = start(
        [&](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            started = true;
            (void)test_support::wait_until([&] { return stop_called.load(); });
            (void)c.reply({{"done", true}});
        },
        inline_config(config(), threads));
    broker.send_request(id, "tok", R"({"inline":1})");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    worker->stop();
    stop_called = true;
    auto reply = broker.expect(cmd::kReply, test_support::kHangGuard);
    ASSERT_TRUE(reply);
    EXPECT_EQ(json::parse(reply->frames[5])["done"], true);
    EXPECT_TRUE(broker.expect(cmd::kDisconnect, test_support::kHangGuard));
    worker->wait();
    EXPECT_TRUE(threads.inline_ran(R"({"inline":1})"));
}

// A DISCONNECT that arrives during an inline request is read after it: the slot then registers
// again on a new socket and serves there.
TEST_F(WorkerTest, ABrokerDisconnectDuringAnInlineRequestIsReadAfterIt) {
    Threads threads;
    std::atomic<bool> started{false};
    std::atomic<bool> disconnected{false};
    const auto first = start(
        [&](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            if (c.body().contains("wait")) {
                started = true;
                (void)test_support::wait_until([&] { return disconnected.load(); });
            }
            (void)c.reply(json::object());
        },
        inline_config(config(), threads));
    broker.send_request(first, "tok", R"({"wait":"inline"})");
    ASSERT_TRUE(test_support::wait_until([&] { return started.load(); }));
    broker.send_command(first, cmd::kDisconnect);
    disconnected = true;
    auto again = broker.expect(cmd::kReady, test_support::kHangGuard);
    ASSERT_TRUE(again);
    EXPECT_NE(again->identity, first);
    broker.send_request(again->identity, "tok2", R"({"inline":1})");
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->frames[3], "tok2");
    EXPECT_EQ(reply->identity, again->identity);
}

// An inline request's calls go out on a BusClient of the I/O thread's own: not the handler
// thread's (two clients, two identities at the broker), each used on one thread only.
TEST_F(WorkerTest, AnInlineRequestCallsThroughItsOwnClient) {
    Threads threads;
    const auto id = start(
        [&threads](RequestContext& c) {
            threads.ran(std::string(c.body_text()));
            auto result = c.call("sub", {{"x", 1}}, 0ms);
            if (!result) return (void)c.fail(result.error());
            (void)c.reply({{"final", result->final}});
        },
        inline_config(config(), threads));
    std::vector<std::string> callers;
    for (const std::string body :
         {R"({"on":"inline"})", R"({"on":"thread"})", R"({"on":"inline","again":1})"}) {
        broker.send_request(id, "tok", body, "parent", 5000);
        auto call = expect_gbc(broker, schema::protocol::client_cmd::kRequest, 3s);
        ASSERT_TRUE(call) << body;
        callers.push_back(call->identity);
        gbc_reply(broker, call->identity, schema::protocol::client_cmd::kFinal,
                  {call->frames[4], R"({"ok":1})"});
        auto reply = broker.expect(cmd::kReply);
        ASSERT_TRUE(reply) << body;
        EXPECT_EQ(json::parse(reply->frames[5])["final"]["ok"], 1);
    }
    EXPECT_TRUE(threads.inline_ran(R"({"on":"inline"})"));
    EXPECT_FALSE(threads.inline_ran(R"({"on":"thread"})"));
    EXPECT_NE(callers[0], callers[1]) << "the handler thread's client made the inline call";
    EXPECT_EQ(callers[0], callers[2]) << "one client per thread, made once";
}

TEST(RequestMetaTest, DecodesAndChecksEveryField) {
    const auto now = Clock::now();
    auto meta = decode_request_meta(
        R"({"request_id":"a","service":"s","deadline_ms":1500,"attempt":2,"client":"MDPC01"})",
        now);
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->request_id, "a");
    EXPECT_EQ(meta->service, "s");
    EXPECT_EQ(meta->deadline_ms, 1500ms);
    EXPECT_EQ(meta->deadline, now + 1500ms);
    EXPECT_EQ(meta->attempt, 2u);
    EXPECT_EQ(meta->client, "MDPC01");
    EXPECT_TRUE(meta->client_takes_explain);
    // A client that asked explain=none (docs/protocol.md §4.1, §5.1).
    auto quiet = decode_request_meta(
        R"({"request_id":"a","service":"s","deadline_ms":1,"attempt":1,"client":"GBC01",)"
        R"("explain":"none"})",
        now);
    ASSERT_TRUE(quiet);
    EXPECT_FALSE(quiet->client_takes_explain);
    EXPECT_TRUE(quiet->trace.empty());
    // A call made on behalf of a run names its top-level trace (option trace=, §4.1); anything
    // that is not a trace id is ignored.
    auto nested = decode_request_meta(
        R"({"request_id":"a","service":"s","deadline_ms":1,"attempt":1,"client":"GBC01",)"
        R"("trace":"4bf92f3577b34da6a3ce929d0e0e4736"})",
        now);
    ASSERT_TRUE(nested);
    EXPECT_EQ(nested->trace, "4bf92f3577b34da6a3ce929d0e0e4736");
    auto odd = decode_request_meta(
        R"({"request_id":"a","service":"s","deadline_ms":1,"attempt":1,"trace":"nope"})", now);
    ASSERT_TRUE(odd);
    EXPECT_TRUE(odd->trace.empty());
    for (const char* bad :
         {"[]", "nope", R"({"service":"s","deadline_ms":1,"attempt":1})",
          R"({"request_id":"a","service":"s","deadline_ms":-1,"attempt":1})",
          R"({"request_id":"a","service":"s","deadline_ms":"1","attempt":1})",
          R"({"request_id":"a","service":"s","deadline_ms":1,"attempt":1.5})",
          R"({"request_id":"a","service":"s","deadline_ms":1,"attempt":1,"client":3})"}) {
        auto decoded = decode_request_meta(bad, now);
        ASSERT_FALSE(decoded) << bad;
        EXPECT_EQ(decoded.error().type, base::ErrorType::kProtocolError);
    }
}

TEST(WorkerConfigTest, RejectsConfigsItCannotRun) {
    const Handler handler = [](RequestContext&) {};
    WorkerConfig c;
    c.service = "mmi.status";
    EXPECT_THROW(Worker(c, handler), std::invalid_argument);
    c.service = "has space";
    EXPECT_THROW(Worker(c, handler), std::invalid_argument);
    c.service = "ok";
    c.threads = 0;
    EXPECT_THROW(Worker(c, handler), std::invalid_argument);
    c.threads = 1;
    c.heartbeat = 0ms;
    EXPECT_THROW(Worker(c, handler), std::invalid_argument);
}

}  // namespace
}  // namespace glassbox::runtime
