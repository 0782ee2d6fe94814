// The GBE01 collector loop against a fake broker (a ROUTER on inproc): ATTACH, ACK only after the
// commit, quarantined deliveries acked too, re-ATTACH after DETACH, DETACH on stop.
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "base/utf8.hpp"
#include "bus/detail/frame_io.hpp"
#include "schema/protocol.hpp"
#include "tests/support/file_size_limit.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/collector.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

namespace cmd = schema::protocol::collector_cmd;
using bus::Frames;
using nlohmann::json;

constexpr std::int64_t kT0 = 1'790'000'000'000;

class CollectorTest : public StoreTest {
protected:
    void SetUp() override {
        StoreTest::SetUp();
        broker_.set(zmq::sockopt::linger, 0);
        broker_.set(zmq::sockopt::rcvtimeo, 5000);
        broker_.bind(endpoint_);
        CollectorConfig config;
        config.endpoint = endpoint_;
        config.window = 16;
        config.heartbeat = milliseconds{100};
        config.batch_wait = milliseconds{2};
        config.retry_delay = milliseconds{100};
        collector_ = std::make_unique<Collector>(context_, config, *store_);
        // What the test reads, beside the collector's own connection (used by its thread).
        reader_ = reopen(OpenMode::kReadOnly);
        ASSERT_TRUE(reader_);
        thread_ = std::thread([this] { collector_->run(); });
    }
    void TearDown() override {
        if (thread_.joinable()) {
            collector_->stop();
            thread_.join();
        }
        collector_.reset();
        reader_.reset();
        StoreTest::TearDown();
    }
    // The next collector message other than HEARTBEAT: [identity] [empty] ["GBE01"] [command] ...
    // (unpacked if it came packed: last_packed_ says which).
    Frames next() {
        while (true) {
            Frames frames;
            while (true) {
                zmq::message_t part;
                if (!broker_.recv(part)) return {};
                frames.push_back(part.to_string());
                if (!part.more()) break;
            }
            Frames message(frames.begin() + 1, frames.end());
            last_packed_ = !message.empty() && bus::is_packed(message[0]);
            const auto unpacked = bus::unpack_frames(message);
            EXPECT_TRUE(unpacked.ok()) << unpacked.error().message;
            frames.resize(1);
            frames.insert(frames.end(), message.begin(), message.end());
            if (frames.size() >= 4 && frames[3] == std::string(1, cmd::kHeartbeat)) continue;
            identity_ = frames[0];
            return frames;
        }
    }
    // Written classic, or packed (§1.4) when send_packed_.
    void send(const Frames& frames) {
        Frames all{identity_, "", "GBE01"};
        all.insert(all.end(), frames.begin(), frames.end());
        if (send_packed_) bus::pack_frames(all, 1);
        ASSERT_TRUE(bus::send_frames(broker_, all));
    }
    void deliver(const Delivery& d) {
        send({std::string(1, cmd::kDeliver), std::to_string(d.delivery_id), d.service, d.session,
              d.seq, d.state, d.body});
    }

    zmq::context_t context_{1};
    zmq::socket_t broker_{context_, zmq::socket_type::router};
    std::string endpoint_ = "inproc://fake-broker-" + std::to_string(getpid());
    std::string identity_;
    bool last_packed_ = false;
    bool send_packed_ = false;
    std::unique_ptr<Collector> collector_;
    std::unique_ptr<TraceStore> reader_;
    std::thread thread_;
};

GLASSBOX_TRACE_BACKENDS(CollectorTest);

TEST_P(CollectorTest, AcksOnlyWhatIsCommittedAndReattaches) {
    auto attach = next();
    ASSERT_EQ(attach.size(), 5u);
    EXPECT_EQ(attach[3], std::string(1, cmd::kAttach));
    EXPECT_EQ(attach[4], "16");

    const auto run = FakeRun::make("echo", "q", kT0);
    auto bad = delivery_of(run.end(), 12);
    bad.body = "not json";
    deliver(delivery_of(run.open(), 10));
    deliver(delivery_of(run.end(), 11));
    deliver(bad);
    std::set<std::string> acked;
    while (acked.size() < 3) {
        auto ack = next();
        ASSERT_GE(ack.size(), 5u);
        ASSERT_EQ(ack[3], std::string(1, cmd::kAck));
        // By the time the ACK arrives the events are in the store.
        auto listed = reader_->list({});
        ASSERT_TRUE(listed.ok()) << listed.error().describe();
        EXPECT_EQ((*listed)["total"], 1);
        for (std::size_t i = 4; i < ack.size(); ++i) acked.insert(ack[i]);
    }
    EXPECT_EQ(acked, (std::set<std::string>{"10", "11", "12"}));
    EXPECT_EQ(collector_->counters().quarantined.load(), 1u);

    // A redelivery is acked again and stored once.
    deliver(delivery_of(run.end(), 11));
    auto ack = next();
    ASSERT_EQ(ack.size(), 5u);
    EXPECT_EQ(ack[4], "11");
    EXPECT_EQ(collector_->counters().duplicates.load(), 1u);

    // DETACH from the broker: the collector ATTACHes again.
    send({std::string(1, cmd::kDetach)});
    auto again = next();
    ASSERT_EQ(again.size(), 5u);
    EXPECT_EQ(again[3], std::string(1, cmd::kAttach));

    collector_->stop();
    auto detach = next();
    ASSERT_EQ(detach.size(), 4u);
    EXPECT_EQ(detach[3], std::string(1, cmd::kDetach));
    thread_.join();
}

// Issue 33 (docs/protocol.md §1.4): the collector speaks the packed form, so the broker answers
// it packed (a DELIVER in two frames, not nine); it reads a classic DELIVER all the same.
TEST_P(CollectorTest, SpeaksThePackedFormAndReadsBoth) {
    const auto attach = next();
    EXPECT_TRUE(last_packed_);
    ASSERT_EQ(attach.size(), 5u);
    EXPECT_EQ(attach[3], std::string(1, cmd::kAttach));

    const auto run = FakeRun::make("echo", "q", kT0);
    send_packed_ = true;
    deliver(delivery_of(run.open(), 20));
    auto ack = next();
    EXPECT_TRUE(last_packed_);
    ASSERT_EQ(ack.size(), 5u);
    EXPECT_EQ(ack[3], std::string(1, cmd::kAck));
    EXPECT_EQ(ack[4], "20");

    send_packed_ = false;
    deliver(delivery_of(run.end(), 21));
    ack = next();
    ASSERT_EQ(ack.size(), 5u);
    EXPECT_EQ(ack[4], "21");
    EXPECT_EQ(collector_->counters().stored.load(), 2u);
    EXPECT_EQ(collector_->counters().bad_frames.load(), 0u);

    // A packed message whose envelope is damaged is a bad message, not a crash or a delivery.
    // The collector reads its socket in order: once the delivery sent after it is acknowledged,
    // the damaged message has been read.
    ASSERT_TRUE(bus::send_frames(broker_, Frames{identity_, std::string("\x02junk"), "body"}));
    send_packed_ = true;
    deliver(delivery_of(FakeRun::make("echo", "q2", kT0).open(), 22));
    ack = next();
    ASSERT_EQ(ack.size(), 5u);
    EXPECT_EQ(ack[4], "22");
    EXPECT_EQ(collector_->counters().bad_frames.load(), 1u);
    EXPECT_EQ(collector_->counters().deliveries.load(), 3u);
}

// Issue 20 (docs/protocol.md §6.1): the broker applies an ACK only for what it delivered on
// the collector's current attachment. Deliveries received before a DETACH are stored all the
// same, but not acknowledged: the broker hands them out again.
TEST_P(CollectorTest, AcknowledgesOnlyTheDeliveriesOfItsCurrentAttachment) {
    ASSERT_EQ(next()[3], std::string(1, cmd::kAttach));
    const auto run = FakeRun::make("echo", "q", kT0);
    {
        const WritesFail full(*site_);  // the batch waits, unacknowledged
        deliver(delivery_of(run.open(), 40));
        deliver(delivery_of(run.end(), 41));
        while (collector_->counters().store_failures.load() == 0) {
            std::this_thread::sleep_for(milliseconds{5});
        }
        send({std::string(1, cmd::kDetach)});
        broker_.set(zmq::sockopt::rcvtimeo, 2000);
        const auto again = next();
        ASSERT_EQ(again.size(), 5u);
        EXPECT_EQ(again[3], std::string(1, cmd::kAttach));
        deliver(delivery_of(run.end(), 41));  // delivered again on the new attachment
    }
    const auto ack = next();
    ASSERT_EQ(ack.size(), 5u) << "one id: the one delivered on this attachment";
    EXPECT_EQ(ack[3], std::string(1, cmd::kAck));
    EXPECT_EQ(ack[4], "41");
    auto shown = reader_->show(run.session());
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["events"], 2) << "both stored";
}

// Issue 16.1: a batch the store cannot write (a full disk) is not acknowledged, so the
// broker keeps it; it is stored and acknowledged once the store can write again. The `trace`
// service's stats say so meanwhile (failures, deliveries not yet stored, the error) and show
// the recovery after.
TEST_P(CollectorTest, WithholdsTheAckWhileTheStoreCannotWrite) {
    ASSERT_EQ(next()[3], std::string(1, cmd::kAttach));
    const auto run = FakeRun::make("echo", "q", kT0);
    // What the `trace` service answers beside this collector (its own read-only connection).
    auto reader = site_->open(OpenMode::kReadOnly, config_);
    ASSERT_TRUE(reader.ok()) << reader.error().describe();
    const auto stats = [&]() -> std::optional<schema::TraceCollectorStats> {
        auto reply = answer_trace_request(
            **reader, json{{"op", "stats"}}, [](const json&) { return true; },
            [this] { return collector_->stats(); });
        EXPECT_TRUE(reply.ok()) << reply.error().describe();
        if (!reply.ok()) return std::nullopt;
        auto decoded = schema::decode<schema::TraceStats>(*reply);
        EXPECT_TRUE(decoded.ok()) << reply->dump();
        if (!decoded.ok() || !decoded->collector) return std::nullopt;
        return decoded->collector;
    };
    const auto before = stats();
    ASSERT_TRUE(before.has_value());
    EXPECT_EQ(before->store_failures, 0u);
    EXPECT_FALSE(before->store_failing);
    EXPECT_EQ(before->pending, 0u);
    EXPECT_EQ(before->last_store_error, "");
    {
        const WritesFail full(*site_);  // as a full disk
        deliver(delivery_of(run.open(), 20));
        deliver(delivery_of(run.end(), 21));
        // The fake broker heartbeats (the collector stays attached) and must see no ACK.
        broker_.set(zmq::sockopt::rcvtimeo, 50);
        const auto until = std::chrono::steady_clock::now() + milliseconds{700};
        while (std::chrono::steady_clock::now() < until) {
            send({std::string(1, cmd::kHeartbeat)});
            const auto got = next();
            if (got.empty()) continue;
            ASSERT_GE(got.size(), 4u);
            EXPECT_NE(got[3], std::string(1, cmd::kAck))
                << "acknowledged what the store could not write";
        }
        EXPECT_GE(collector_->counters().store_failures.load(), 1u);
        EXPECT_EQ(collector_->counters().acked.load(), 0u);
        const auto failing = stats();
        ASSERT_TRUE(failing.has_value());
        EXPECT_GE(failing->store_failures, 1u);
        EXPECT_TRUE(failing->store_failing);
        EXPECT_EQ(failing->pending, 2u);
        EXPECT_EQ(failing->deliveries, 2u);
        EXPECT_EQ(failing->stored, 0u);
        EXPECT_EQ(failing->acked, 0u);
        EXPECT_NE(failing->last_store_error, "");
        EXPECT_FALSE(base::find_invalid_utf8(failing->last_store_error));
    }
    broker_.set(zmq::sockopt::rcvtimeo, 5000);
    std::set<std::string> acked;
    while (acked.size() < 2) {
        auto ack = next();
        ASSERT_GE(ack.size(), 5u);
        ASSERT_EQ(ack[3], std::string(1, cmd::kAck));
        for (std::size_t i = 4; i < ack.size(); ++i) acked.insert(ack[i]);
    }
    EXPECT_EQ(acked, (std::set<std::string>{"20", "21"}));
    auto listed = reader_->list({});
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)["total"], 1);
    const auto recovered = stats();
    ASSERT_TRUE(recovered.has_value());
    EXPECT_FALSE(recovered->store_failing);
    EXPECT_EQ(recovered->pending, 0u);
    EXPECT_EQ(recovered->stored, 2u);
    EXPECT_EQ(recovered->acked, 2u);
    EXPECT_EQ(recovered->store_failures, collector_->counters().store_failures.load());
    EXPECT_GE(recovered->store_failures, 1u);
    EXPECT_NE(recovered->last_store_error, "");  // kept for the record: the last failure's cause
}

TEST_P(CollectorTest, ReconnectsWhenTheBrokerIsSilent) {
    ASSERT_EQ(next()[3], std::string(1, cmd::kAttach));
    // Say nothing for longer than liveness × heartbeat (3 × 100 ms): a fresh ATTACH follows.
    auto again = next();
    ASSERT_EQ(again.size(), 5u);
    EXPECT_EQ(again[3], std::string(1, cmd::kAttach));
    EXPECT_GE(collector_->counters().reconnects.load(), 1u);
}

}  // namespace
}  // namespace glassbox::trace::testing
