// BusClient: frames it sends, reply decoding, terminal handling, heartbeats, local deadline,
// cancel.
#include "bus/bus_client.hpp"

#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/unit/bus/fake_router.hpp"

namespace glassbox::bus {
namespace {

using namespace std::chrono_literals;
using base::ErrorType;
using nlohmann::json;
using testing::ClientMessage;
using testing::FakeRouter;
namespace cmd = schema::protocol::client_cmd;

Frames gbc(char command, const Frames& rest) {
    Frames frames{"", "GBC01", std::string(1, command)};
    frames.insert(frames.end(), rest.begin(), rest.end());
    return frames;
}

// The error that ends request `id`, waited for up to `wait` (a hang guard). A test failure, and
// a default error, when no reply comes or the request does not end with an ERROR.
base::Error terminal_error(BusClient& client, const RequestId& id, std::chrono::milliseconds wait) {
    auto reply = client.next(id, wait);
    if (!reply) {
        ADD_FAILURE() << "no reply: " << reply.error().describe();
        return {};
    }
    EXPECT_EQ(reply->kind, ReplyKind::kError);
    if (!reply->error) {
        ADD_FAILURE() << "the reply carries no error";
        return {};
    }
    return *reply->error;
}

TEST(DecodeReplyTest, DecodesEveryBrokerCommand) {
    auto data = decode_reply(gbc(cmd::kPartial, {"r1", "data", R"({"t":"x"})"}));
    ASSERT_TRUE(data);
    EXPECT_EQ(data->request_id, "r1");
    EXPECT_EQ(data->kind, ReplyKind::kData);
    EXPECT_EQ(data->body["t"], "x");
    EXPECT_FALSE(data->terminal());

    auto explain = decode_reply(gbc(cmd::kPartial, {"r1", "explain", R"({"seq":0})"}));
    ASSERT_TRUE(explain);
    EXPECT_EQ(explain->kind, ReplyKind::kExplain);

    auto final = decode_reply(gbc(cmd::kFinal, {"r1", "[1,2]"}));
    ASSERT_TRUE(final);
    EXPECT_EQ(final->kind, ReplyKind::kFinal);
    EXPECT_TRUE(final->terminal());
    EXPECT_EQ(final->to_json(), json({{"kind", "final"}, {"body", {1, 2}}}));

    auto error = decode_reply(gbc(cmd::kError, {"r1", "QueueFull", "full"}));
    ASSERT_TRUE(error);
    EXPECT_EQ(error->kind, ReplyKind::kError);
    ASSERT_TRUE(error->error);
    EXPECT_EQ(error->error->type, ErrorType::kQueueFull);
    EXPECT_EQ(error->error->message, "full");
    EXPECT_EQ(error->to_json()["error"]["type"], "QueueFull");

    // A type word this client does not know still ends the request, as Internal.
    auto unknown = decode_reply(gbc(cmd::kError, {"r1", "Martian", "??"}));
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->error->type, ErrorType::kInternal);
    EXPECT_NE(unknown->error->message.find("Martian"), std::string::npos);

    // §4.3: an ERROR with an empty request id decodes (the client logs it).
    auto anonymous = decode_reply(gbc(cmd::kError, {"", "ProtocolError", "bad"}));
    ASSERT_TRUE(anonymous);
    EXPECT_TRUE(anonymous->request_id.empty());
}

TEST(DecodeReplyTest, RejectsMalformedMessages) {
    const std::vector<Frames> bad = {
        {"", "GBC01", "\x03"},                              // too short
        {"x", "GBC01", "\x03", "r", "{}"},                  // no empty delimiter
        {"", "MDPC01", "\x03", "r", "{}"},                  // wrong header
        {"", "GBC01", "\x03\x03", "r", "{}"},               // command not one byte
        {"", "GBC01", "\x07", "r", "{}"},                   // unknown command
        {"", "GBC01", "\x02", "r", "chunk", "{}"},          // unknown kind
        {"", "GBC01", "\x02", "r", "data"},                 // PARTIAL without body
        {"", "GBC01", "\x03", "r", "{}", "extra"},          // FINAL with an extra frame
        {"", "GBC01", "\x05", "r", "Internal"},             // ERROR without message
        {"", "GBC01", "\x03", "", "{}"},                    // FINAL without request id
        {"", "GBC01", "\x03", std::string(65, 'r'), "{}"},  // request id too long
    };
    for (const auto& frames : bad) {
        auto decoded = decode_reply(frames);
        ASSERT_FALSE(decoded) << frames.size();
        EXPECT_EQ(decoded.error().type, ErrorType::kProtocolError);
    }
    auto not_json = decode_reply(gbc(cmd::kFinal, {"r", "{oops"}));
    ASSERT_FALSE(not_json);
    EXPECT_EQ(not_json.error().type, ErrorType::kInvalidJson);
}

class BusClientTest : public ::testing::Test {
protected:
    BusClientConfig config() {
        BusClientConfig c;
        c.endpoint = router.endpoint();
        c.request_id_prefix = "t";
        return c;
    }
    // The same, with a short local backstop after a request's deadline or cancel.
    BusClientConfig config(std::chrono::milliseconds deadline_grace) {
        BusClientConfig c = config();
        c.deadline_grace = deadline_grace;
        return c;
    }

    // A request `client` sent to service echo, as the router received it.
    struct Sent {
        RequestId id;
        ClientMessage request;
    };
    // Sends `body` to echo with `deadline` and waits for the router to receive the REQUEST;
    // nullopt, and a test failure, when the send or the receive fails.
    std::optional<Sent> send_echo(BusClient& client, const json& body = json::object(),
                                  std::chrono::milliseconds deadline = 10s) {
        auto id = client.send("echo", body, deadline);
        EXPECT_TRUE(id);
        if (!id) return std::nullopt;
        auto request = router.expect(cmd::kRequest);
        EXPECT_TRUE(request);
        if (!request) return std::nullopt;
        return Sent{*id, std::move(*request)};
    }
    zmq::context_t context{1};
    FakeRouter router{context};
};

TEST_F(BusClientTest, SendsRequestFrames) {
    BusClient client(context, config());
    auto sent = send_echo(client, json{{"question", "hi"}}, 1500ms);
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->id, "t-1");
    const auto& frames = sent->request.frames;
    ASSERT_EQ(frames.size(), 7u);
    EXPECT_EQ(frames[0], "");
    EXPECT_EQ(frames[1], "GBC01");
    EXPECT_EQ(frames[3], "echo");
    EXPECT_EQ(frames[4], "t-1");
    EXPECT_EQ(frames[5], "1500");
    EXPECT_EQ(json::parse(frames[6])["question"], "hi");
    EXPECT_TRUE(sent->request.packed);  // the packed form by default (protocol.md §1.4)
    EXPECT_EQ(client.in_flight(), 1u);

    auto second = client.send_raw("echo", "{}", 0ms);
    ASSERT_TRUE(second);
    EXPECT_NE(*second, sent->id);
    EXPECT_FALSE(client.send("bad name", json::object(), 1s));
    EXPECT_FALSE(client.send("", json::object(), 1s));
}

// §4.1: the request options come from the config, or from the one send that names its own;
// the defaults send no options frame at all.
TEST_F(BusClientTest, RequestOptionsGoInTheirFrameOnlyWhenAskedFor) {
    BusClientConfig quiet = config();
    quiet.request_options.explain = ExplainDelivery::kNone;
    BusClient client(context, quiet);
    auto sent = send_echo(client, json{{"question", "hi"}}, 1500ms);
    ASSERT_TRUE(sent);
    const auto& frames = sent->request.frames;
    ASSERT_EQ(frames.size(), 8u);
    EXPECT_EQ(frames[5], "1500");
    EXPECT_EQ(frames[6], "explain=none");
    EXPECT_EQ(json::parse(frames[7])["question"], "hi");
    EXPECT_TRUE(sent->request.packed);

    // One send may ask for the stream all the same: no options frame.
    ASSERT_TRUE(client.send_raw("echo", "{}", 1s, RequestOptions{}));
    auto streamed = router.expect(cmd::kRequest);
    ASSERT_TRUE(streamed);
    EXPECT_EQ(streamed->frames.size(), 7u);

    // The default config: no frame either, and a send may ask for none.
    BusClient plain(context, config());
    ASSERT_TRUE(plain.send_raw("echo", "{}", 1s));
    auto defaults = router.expect(cmd::kRequest);
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->frames.size(), 7u);
    ASSERT_TRUE(plain.send_raw("echo", "{}", 1s, RequestOptions{ExplainDelivery::kNone}));
    auto none = router.expect(cmd::kRequest);
    ASSERT_TRUE(none);
    ASSERT_EQ(none->frames.size(), 8u);
    EXPECT_EQ(none->frames[6], "explain=none");
    EXPECT_EQ(none->frames[7], "{}");
}

TEST_F(BusClientTest, ABodyAboveTheConfiguredLimitIsRefusedLocallyAndNotSent) {
    BusClientConfig limited = config();
    limited.max_message_bytes = 1000;
    BusClient client(context, limited);
    const std::string big = "\"" + std::string(1200, 'x') + "\"";
    auto refused = client.send_raw("store", big, 1s);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, ErrorType::kMessageTooLarge);
    EXPECT_NE(refused.error().message.find("1000"), std::string::npos) << refused.error().message;
    EXPECT_EQ(client.in_flight(), 0u);
    // The next request within the limit is the first the router sees.
    auto fits = client.send_raw("store", "{}", 1s);
    ASSERT_TRUE(fits);
    auto request = router.expect(cmd::kRequest);
    ASSERT_TRUE(request);
    EXPECT_EQ(request->frames[6], "{}");

    // No limit configured: the broker judges, so the same body is sent.
    BusClient unlimited(context, config());
    EXPECT_TRUE(unlimited.send_raw("store", big, 1s));
}

TEST_F(BusClientTest, StreamsToExactlyOneTerminal) {
    BusClient client(context, config());
    auto stream = open_stream(client, "echo", "{}", 5s);
    ASSERT_TRUE(stream);
    auto request = router.expect(cmd::kRequest);
    ASSERT_TRUE(request);
    const auto& id = request->frames[4];
    router.reply(request->identity, cmd::kPartial, {id, "data", R"({"n":1})"});
    router.reply(request->identity, cmd::kPartial, {id, "explain", R"({"seq":0})"});
    router.reply(request->identity, cmd::kFinal, {id, R"({"done":true})"});
    router.reply(request->identity, cmd::kFinal, {id, R"({"again":true})"});  // must be ignored
    router.reply(request->identity, cmd::kError, {id, "Internal", "late"});   // must be ignored

    auto r1 = stream->next(2s);
    auto r2 = stream->next(2s);
    auto r3 = stream->next(2s);
    ASSERT_TRUE(r1 && r2 && r3);
    EXPECT_EQ(r1->kind, ReplyKind::kData);
    EXPECT_EQ(r2->kind, ReplyKind::kExplain);
    EXPECT_EQ(r3->kind, ReplyKind::kFinal);
    EXPECT_TRUE(stream->done());
    EXPECT_FALSE(stream->next(100ms));
    EXPECT_EQ(client.in_flight(), 0u);
    auto nothing = client.next(200ms);
    ASSERT_FALSE(nothing) << "a reply after the terminal reached the caller";
    EXPECT_EQ(nothing.error().type, ErrorType::kTimeout);
}

// Unpacked on request: the classic GBC01 frames for every command, for brokers before the
// packed form; replies are read in either form.
TEST_F(BusClientTest, SendsTheClassicFramesWhenNotPackedAndReadsBothForms) {
    auto c = config();
    c.packed = false;
    BusClient client(context, c);
    auto stream = open_stream(client, "echo", "{}", 5s);
    ASSERT_TRUE(stream);
    auto request = router.expect(cmd::kRequest);
    ASSERT_TRUE(request);
    EXPECT_FALSE(request->packed);
    ASSERT_EQ(request->frames.size(), 7u);
    const auto& id = request->frames[4];
    router.reply(request->identity, cmd::kPartial, {id, "data", R"({"n":1})"}, true);
    router.reply(request->identity, cmd::kPartial, {id, "data", R"({"n":2})"}, false);
    auto r1 = stream->next(2s);
    auto r2 = stream->next(2s);
    ASSERT_TRUE(r1 && r2);
    EXPECT_EQ(r1->body["n"], 1);
    EXPECT_EQ(r2->body["n"], 2);
    ASSERT_TRUE(client.cancel(id));
    auto cancel = router.expect(cmd::kCancel);
    ASSERT_TRUE(cancel);
    EXPECT_FALSE(cancel->packed);
    EXPECT_EQ(cancel->frames, (Frames{"", "GBC01", std::string(1, cmd::kCancel), id}));
}

TEST_F(BusClientTest, ManyRequestsInFlightAreKeptApart) {
    BusClient client(context, config());
    auto a = client.send("echo", json::object(), 5s);
    auto b = client.send("echo", json::object(), 5s);
    ASSERT_TRUE(a && b);
    auto ra = router.expect(cmd::kRequest);
    auto rb = router.expect(cmd::kRequest);
    ASSERT_TRUE(ra && rb);
    // Answer b first; asking for a must not lose b's replies.
    router.reply(rb->identity, cmd::kFinal, {*b, R"("b")"});
    router.reply(ra->identity, cmd::kPartial, {*a, "data", R"("a1")"});
    router.reply(ra->identity, cmd::kFinal, {*a, R"("a")"});
    auto a1 = client.next(*a, 2s);
    ASSERT_TRUE(a1);
    EXPECT_EQ(a1->body, "a1");
    auto a2 = client.next(*a, 2s);
    ASSERT_TRUE(a2);
    EXPECT_EQ(a2->body, "a");
    auto b1 = client.next(*b, 2s);
    ASSERT_TRUE(b1);
    EXPECT_EQ(b1->body, "b");
    EXPECT_EQ(b1->kind, ReplyKind::kFinal);
}

TEST_F(BusClientTest, HeartbeatListsTheRequestsInFlight) {
    auto c = config();
    c.heartbeat = 50ms;
    BusClient client(context, c);
    auto a = client.send("echo", json::object(), 10s);
    auto b = client.send("echo", json::object(), 10s);
    ASSERT_TRUE(a && b);
    auto pending = client.next(150ms);  // drives the heartbeat timer
    EXPECT_FALSE(pending);
    auto heartbeat = router.expect(cmd::kHeartbeat, 1s);
    ASSERT_TRUE(heartbeat);
    const Frames ids(heartbeat->frames.begin() + 3, heartbeat->frames.end());
    EXPECT_EQ(ids.size(), 2u);
    EXPECT_NE(std::find(ids.begin(), ids.end(), *a), ids.end());
    EXPECT_NE(std::find(ids.begin(), ids.end(), *b), ids.end());

    // The broker answers BrokerRestarted for ids it does not know: the request ends with it.
    router.reply(heartbeat->identity, cmd::kError, {*a, "BrokerRestarted", "unknown request"});
    auto ended = client.next(*a, 1s);
    ASSERT_TRUE(ended);
    ASSERT_TRUE(ended->error);
    EXPECT_EQ(ended->error->type, ErrorType::kBrokerRestarted);
    EXPECT_EQ(client.in_flight(), 1u);
}

TEST_F(BusClientTest, NoHeartbeatWhenNothingIsInFlight) {
    auto c = config();
    c.heartbeat = 20ms;
    BusClient client(context, c);
    EXPECT_FALSE(client.next(100ms));
    EXPECT_FALSE(router.receive(100ms));
}

TEST_F(BusClientTest, LocalDeadlineIsABackstop) {
    BusClient client(context, config(50ms));
    auto id = client.send("echo", json::object(), 100ms);
    ASSERT_TRUE(id);
    ASSERT_TRUE(router.expect(cmd::kRequest));
    // The broker never answers: the outcome is the client's own DeadlineExceeded (a next() that
    // ran out of its hang guard would be no reply at all).
    EXPECT_EQ(terminal_error(client, *id, 60s).type, ErrorType::kDeadlineExceeded);
    EXPECT_EQ(client.in_flight(), 0u);
    EXPECT_TRUE(router.expect(cmd::kCancel, 1s)) << "the broker is told to stop the work too";
}

TEST_F(BusClientTest, CancelSendsCancelAndTheBrokersErrorEndsTheRequest) {
    BusClient client(context, config());
    auto sent = send_echo(client);
    ASSERT_TRUE(sent);
    const auto& [id, request] = *sent;
    ASSERT_TRUE(client.cancel(id));
    auto cancel = router.expect(cmd::kCancel);
    ASSERT_TRUE(cancel);
    ASSERT_EQ(cancel->frames.size(), 4u);
    EXPECT_EQ(cancel->frames[3], id);
    router.reply(request.identity, cmd::kError, {id, "Cancelled", "cancelled by client"});
    EXPECT_EQ(terminal_error(client, id, 2s).type, ErrorType::kCancelled);
    EXPECT_TRUE(client.cancel(id)) << "cancelling a finished request is a no-op";
}

TEST_F(BusClientTest, UnconfirmedCancelEndsLocally) {
    BusClient client(context, config(50ms));
    auto id = client.send("echo", json::object(), 10s);
    ASSERT_TRUE(id);
    ASSERT_TRUE(client.cancel(*id));
    EXPECT_EQ(terminal_error(client, *id, 2s).type, ErrorType::kCancelled);
}

TEST_F(BusClientTest, CallReturnsRepliesOrTheTypedError) {
    BusClient client(context, config());
    std::thread broker([this] {
        for (int i = 0; i < 2; ++i) {
            auto request = router.expect(cmd::kRequest, 3s);
            if (!request) return;
            const auto& id = request->frames[4];
            if (i == 0) {
                router.reply(request->identity, cmd::kPartial, {id, "data", "1"});
                router.reply(request->identity, cmd::kFinal, {id, "2"});
            } else {
                router.reply(request->identity, cmd::kError,
                             {id, "UnknownService", "no such service"});
            }
        }
    });
    auto ok = client.call("echo", json::object(), 2s);
    auto failed = client.call("nope", json::object(), 2s);
    broker.join();
    ASSERT_TRUE(ok);
    ASSERT_EQ(ok->size(), 2u);
    EXPECT_EQ(ok->back().kind, ReplyKind::kFinal);
    EXPECT_EQ(ok->back().body, 2);
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().type, ErrorType::kUnknownService);
}

TEST_F(BusClientTest, AbandonForgetsTheRequest) {
    BusClient client(context, config());
    auto sent = send_echo(client);
    ASSERT_TRUE(sent);
    const auto& [id, request] = *sent;
    client.abandon(id);
    EXPECT_TRUE(router.expect(cmd::kCancel));
    router.reply(request.identity, cmd::kFinal, {id, "1"});
    EXPECT_FALSE(client.next(200ms));
    EXPECT_EQ(client.in_flight(), 0u);
}

// A TCP endpoint on loopback where nothing listens. The port is below Linux's ephemeral range
// (32768 and up), so a connect to it can never be answered by the client's own socket (a TCP
// self-connect, which a port the kernel just handed out invites); we bind it once to know it free.
// The probe has a context of its own: ending it waits until the listener is really closed, so
// the client cannot reach a half-closed probe.
std::string closed_endpoint() {
    zmq::context_t context(1);
    std::mt19937 random(std::random_device{}());
    for (int attempt = 0; attempt < 100; ++attempt) {
        const int port = 20000 + static_cast<int>(random() % 12000);
        const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
        zmq::socket_t probe(context, zmq::socket_type::router);
        probe.set(zmq::sockopt::linger, 0);
        try {
            probe.bind(endpoint);
        } catch (const zmq::error_t&) {
            continue;  // in use
        }
        return endpoint;
    }
    ADD_FAILURE() << "no free port found";
    return "tcp://127.0.0.1:1";
}

TEST(BusClientConnectTest, NoBrokerEndsWithBrokerUnavailableNotTheDeadline) {
    zmq::context_t context(1);
    BusClientConfig config;
    config.endpoint = closed_endpoint();
    config.connect_timeout = 300ms;
    BusClient client(context, config);
    // A deadline far beyond the check, and a next() hang guard below that deadline: a
    // BrokerUnavailable can only come from the connect check.
    auto id = client.send("graph-rag", json::object(), 120s);
    ASSERT_TRUE(id);
    const base::Error error = terminal_error(client, *id, 60s);
    EXPECT_EQ(error.type, ErrorType::kBrokerUnavailable);
    EXPECT_NE(error.message.find(config.endpoint), std::string::npos) << error.message;
    EXPECT_NE(error.message.find("glassbox up"), std::string::npos) << error.message;
    EXPECT_EQ(client.in_flight(), 0u);
}

TEST(BusClientConnectTest, ABrokerThatAcceptsButIsSlowIsWaitedFor) {
    zmq::context_t context(1);
    zmq::socket_t router(context, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:*");
    BusClientConfig config;
    config.endpoint = router.get(zmq::sockopt::last_endpoint);
    config.connect_timeout = 200ms;
    config.deadline_grace = 200ms;
    BusClient client(context, config);
    auto id = client.send("graph-rag", json::object(), 1200ms);
    ASSERT_TRUE(id);
    // The broker never answers: the request runs to its deadline, well past the connect check.
    const base::Error error = terminal_error(client, *id, 10s);
    EXPECT_EQ(error.type, ErrorType::kDeadlineExceeded) << error.describe();
}

TEST(BusClientConnectTest, ABrokerThatStartsWithinTheTimeoutServesTheRequest) {
    zmq::context_t context(1);
    BusClientConfig config;
    config.endpoint = closed_endpoint();
    config.connect_timeout = 30s;  // far more than the broker's late start below, even under load
    BusClient client(context, config);
    auto id = client.send("echo", json::object(), 60s);
    ASSERT_TRUE(id);
    // The subject: no broker for a while after the send (the client retries its connect).
    std::this_thread::sleep_for(300ms);
    zmq::socket_t router(context, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.bind(config.endpoint);
    ASSERT_TRUE(wait_readable(router, 60s));
    auto request = try_receive_frames(router);
    ASSERT_TRUE(request);
    // [identity] then the request, packed (protocol.md §1.4): [""] ["GBC01"] [REQUEST] [service]
    // [request id] ...
    Frames message(request->begin() + 1, request->end());
    EXPECT_EQ(message.size(), 2u);
    ASSERT_TRUE(unpack_frames(message).ok());
    ASSERT_GE(message.size(), 5u);
    const Frames final{request->front(), "",  "GBC01", std::string(1, cmd::kFinal),
                       message[4],       "{}"};
    ASSERT_TRUE(send_frames(router, final));
    auto reply = client.next(*id, 5s);
    ASSERT_TRUE(reply) << reply.error().describe();
    EXPECT_EQ(reply->kind, ReplyKind::kFinal);
}

}  // namespace
}  // namespace glassbox::bus
