// The OpenTelemetry exporter's queue in the trace store, on both backends, and the exporter
// thread against a real OTLP/HTTP receiver on loopback (cpp-httplib in process): retries with
// backoff and Retry-After, refusals dropped, the queue bound, ingest never waiting for it
// (issue 37, docs/operations.md "OpenTelemetry").
#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/otel_headers.hpp"
#include "schema/otel_ids.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "tests/support/wait_until.hpp"
#include "workers/trace_collector/otel_exporter.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 1'790'000'000'000;

// One answer of the receiver: its status, Retry-After (when not empty) and body.
struct Answer {
    int status = 200;
    std::string retry_after;
    std::string body;
};

Answer answer(int status, std::string retry_after = "", std::string body = "") {
    return Answer{status, std::move(retry_after), std::move(body)};
}

// An OTLP/HTTP receiver on a random loopback port that records each request and answers as
// scripted (200 once the script is used up); `hold` makes it wait before answering until
// released.
class Receiver {
public:
    struct Request {
        std::string body;
        std::string content_type;
        std::string authorization;
    };

    Receiver() {
        server_.Post("/v1/traces", [this](const httplib::Request& req, httplib::Response& res) {
            std::unique_lock lock(mutex_);
            requests_.push_back(Request{req.body, req.get_header_value("Content-Type"),
                                        req.get_header_value("Authorization")});
            ++waiting_;
            changed_.notify_all();
            changed_.wait(lock, [this] { return !held_; });
            --waiting_;
            Answer answer;
            if (!script_.empty()) {
                answer = script_.front();
                script_.pop_front();
            }
            res.status = answer.status;
            if (!answer.retry_after.empty()) res.set_header("Retry-After", answer.retry_after);
            res.set_content(answer.body, req.get_header_value("Content-Type"));
        });
        port_ = server_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
        test_support::wait_until([this] { return server_.is_running(); });
    }
    ~Receiver() {
        release();
        server_.stop();
        thread_.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces"; }
    void script(std::vector<Answer> answers) {
        std::lock_guard lock(mutex_);
        script_.assign(answers.begin(), answers.end());
    }
    void hold() {
        std::lock_guard lock(mutex_);
        held_ = true;
    }
    void release() {
        std::lock_guard lock(mutex_);
        held_ = false;
        changed_.notify_all();
    }
    // True once a request waits in hold.
    bool holding() {
        std::lock_guard lock(mutex_);
        return waiting_ > 0;
    }
    std::vector<Request> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }

private:
    httplib::Server server_;
    int port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Answer> script_;
    std::vector<Request> requests_;
    bool held_ = false;
    int waiting_ = 0;
};

// A stand-in for the OTLP encoder (tests only): one "span" per run, the body the session URIs
// one per line, so a test reads which runs a request carried.
EncodedBatch lines_of_sessions(TraceStore&, const std::vector<std::string>& sessions) {
    EncodedBatch out;
    for (const auto& session : sessions) out.body += session + "\n";
    out.spans = sessions.size();
    return out;
}

std::vector<std::string> sessions_in(const std::string& body) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < body.size()) {
        const auto end = body.find('\n', start);
        out.push_back(body.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

class OtelQueueTest : public StoreTest {
protected:
    void SetUp() override {
        config_.export_otel = true;
        StoreTest::SetUp();
    }
    void store_all(const std::vector<schema::ExplainMessage>& messages, std::int64_t at_ms) {
        EXPECT_EQ(store(messages, at_ms).stored, messages.size());
    }
    std::vector<OtelItem> claim(TraceStore& store, std::int64_t at_ms,
                                std::chrono::milliseconds lease = 1000ms) {
        auto items = store.otel_claim(100, lease, at(at_ms));
        EXPECT_TRUE(items.ok()) << items.error().describe();
        return items.ok() ? *items : std::vector<OtelItem>{};
    }
    static std::vector<std::string> sessions_of(const std::vector<OtelItem>& items) {
        std::vector<std::string> out;
        out.reserve(items.size());
        for (const auto& item : items) out.push_back(item.session);
        return out;
    }
    std::int64_t backlog() {
        auto n = store_->otel_backlog();
        EXPECT_TRUE(n.ok()) << n.error().describe();
        return n.ok() ? *n : -1;
    }
};

TEST_P(OtelQueueTest, AnEndedTopLevelRunIsQueuedWhenItEndsARunningOneIsNot) {
    const auto a = FakeRun::make("graph-rag", "first", kT0);
    const auto b = FakeRun::make("graph-rag", "second", kT0 + 1);
    store_all({a.open(), b.open()}, kT0 + 10);
    EXPECT_EQ(backlog(), 0);
    store_all({a.end()}, kT0 + 20);
    store_all({b.end(schema::TraceStatus::kError)}, kT0 + 30);
    EXPECT_EQ(backlog(), 2);
    const auto items = claim(*store_, kT0 + 100);
    EXPECT_EQ(sessions_of(items), (std::vector<std::string>{a.session(), b.session()}))
        << "oldest first";
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].queued, kT0 + 20);
    EXPECT_EQ(items[0].lease, kT0 + 1100);
}

TEST_P(OtelQueueTest, AStoreWithoutTheExporterQueuesNothing) {
    StoreConfig off = config_;
    off.export_otel = false;
    auto plain = site_->open(OpenMode::kReadWrite, off);
    ASSERT_TRUE(plain.ok()) << plain.error().describe();
    const auto a = FakeRun::make("echo", "not exported", kT0);
    ASSERT_TRUE(
        (*plain)
            ->store_batch({delivery_of(a.open(), 1001), delivery_of(a.end(), 1002)}, at(kT0 + 10))
            .ok());
    EXPECT_EQ(backlog(), 0);
}

TEST_P(OtelQueueTest, ASubRunEndingLaterQueuesItsTopLevelRunAgain) {
    const auto agent = FakeRun::make("agent", "Tell me about Greyhollow", kT0);
    const auto sub = FakeRun::make("graph-rag", "designer", kT0 + 1, agent.session());
    const auto late = FakeRun::make("graph-rag", "a late sub-run", kT0 + 2, agent.session());
    store_all({agent.open(), sub.open(), late.open()}, kT0 + 10);
    store_all({sub.end()}, kT0 + 20);
    EXPECT_EQ(backlog(), 0) << "the top-level run is still running";
    store_all({agent.end()}, kT0 + 30);
    auto items = claim(*store_, kT0 + 40);
    EXPECT_EQ(sessions_of(items), std::vector<std::string>{agent.session()});
    ASSERT_EQ(items.size(), 1u);
    auto done = store_->otel_done(items[0], at(kT0 + 50));
    ASSERT_TRUE(done.ok()) << done.error().describe();
    EXPECT_TRUE(*done);
    EXPECT_EQ(backlog(), 0);
    store_all({late.end()}, kT0 + 60);
    EXPECT_EQ(sessions_of(claim(*store_, kT0 + 70)), std::vector<std::string>{agent.session()});
}

TEST_P(OtelQueueTest, AClaimHidesItsRunsFromAnotherExporterUntilItsLeaseEnds) {
    const auto a = FakeRun::make("echo", "first", kT0);
    const auto b = FakeRun::make("echo", "second", kT0 + 1);
    store_all({a.open(), a.end()}, kT0 + 10);
    auto other = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(other);
    const auto mine = claim(*store_, kT0 + 100, 1000ms);
    EXPECT_EQ(sessions_of(mine), std::vector<std::string>{a.session()});
    store_all({b.open(), b.end()}, kT0 + 200);
    EXPECT_EQ(sessions_of(claim(*other, kT0 + 300)), std::vector<std::string>{b.session()})
        << "the other exporter takes only what is not claimed";
    EXPECT_TRUE(claim(*other, kT0 + 400).empty());
    // The first exporter died holding `a`: its lease ends and another exporter takes it.
    EXPECT_EQ(sessions_of(claim(*other, kT0 + 1100)), std::vector<std::string>{a.session()});
    EXPECT_EQ(backlog(), 2);
}

TEST_P(OtelQueueTest, ReleasedRunsAreDueAgainAtTheirQueueTime) {
    const auto a = FakeRun::make("echo", "first", kT0);
    const auto b = FakeRun::make("echo", "second", kT0 + 1);
    store_all({a.open(), a.end()}, kT0 + 10);
    const auto items = claim(*store_, kT0 + 100, 60'000ms);
    ASSERT_EQ(items.size(), 1u);
    store_all({b.open(), b.end()}, kT0 + 200);
    ASSERT_TRUE(store_->otel_release(items[0]).ok());
    EXPECT_EQ(sessions_of(claim(*store_, kT0 + 300)),
              (std::vector<std::string>{a.session(), b.session()}))
        << "still the oldest";
}

TEST_P(OtelQueueTest, ARunQueuedAgainWhileClaimedStaysAndIsDueAtOnce) {
    const auto agent = FakeRun::make("agent", "q", kT0);
    const auto late = FakeRun::make("echo", "late", kT0 + 1, agent.session());
    store_all({agent.open(), late.open(), agent.end()}, kT0 + 10);
    const auto items = claim(*store_, kT0 + 100, 60'000ms);
    ASSERT_EQ(items.size(), 1u);
    store_all({late.end()}, kT0 + 200);
    auto done = store_->otel_done(items[0], at(kT0 + 300));
    ASSERT_TRUE(done.ok()) << done.error().describe();
    EXPECT_FALSE(*done);
    EXPECT_EQ(sessions_of(claim(*store_, kT0 + 300)), std::vector<std::string>{agent.session()});
}

TEST_P(OtelQueueTest, TrimDropsTheOldestBeyondTheBound) {
    std::vector<FakeRun> runs;
    for (int i = 0; i < 5; ++i) {
        runs.push_back(FakeRun::make("echo", "q" + std::to_string(i), kT0 + i));
        store_all({runs.back().open(), runs.back().end()}, kT0 + 10 + i);
    }
    auto dropped = store_->otel_trim(3);
    ASSERT_TRUE(dropped.ok()) << dropped.error().describe();
    EXPECT_EQ(*dropped, 2);
    EXPECT_EQ(sessions_of(claim(*store_, kT0 + 100)),
              (std::vector<std::string>{runs[2].session(), runs[3].session(), runs[4].session()}));
    dropped = store_->otel_trim(3);
    ASSERT_TRUE(dropped.ok());
    EXPECT_EQ(*dropped, 0);
}

TEST_P(OtelQueueTest, PruneTakesItsTracesOffTheQueue) {
    const auto a = FakeRun::make("echo", "old", kT0);
    const auto b = FakeRun::make("echo", "new", kT0 + 10'000);
    store_all({a.open(), a.end()}, kT0 + 10);
    store_all({b.open(), b.end()}, kT0 + 10'010);
    PruneRequest prune;
    prune.older_than = 5'000ms;
    prune.now = at(kT0 + 10'020);
    ASSERT_TRUE(store_->prune(prune).ok());
    EXPECT_EQ(backlog(), 1);
    EXPECT_EQ(sessions_of(claim(*store_, kT0 + 20'000)), std::vector<std::string>{b.session()});
}

GLASSBOX_TRACE_BACKENDS(OtelQueueTest);

class OtelExporterTest : public OtelQueueTest {
protected:
    std::unique_ptr<OtelExporter> exporter(const std::string& url,
                                           const std::shared_ptr<OtelCounters>& counters,
                                           std::int64_t max_queue = 100,
                                           BatchEncoder encode = lines_of_sessions) {
        ExporterConfig config;
        config.url = url;
        config.headers = {{"Authorization", "Basic dGVzdA=="}};
        config.interval = 10ms;
        config.timeout = 5'000ms;
        config.max_queue = max_queue;
        config.batch = 2;
        config.initial_backoff = 1000ms;
        config.max_backoff = 8000ms;
        return std::make_unique<OtelExporter>(reopen(OpenMode::kReadWrite), std::move(encode),
                                              config, counters);
    }
    std::vector<FakeRun> ended_runs(int n) {
        std::vector<FakeRun> runs;
        for (int i = 0; i < n; ++i) {
            runs.push_back(FakeRun::make("graph-rag", "question " + std::to_string(i), kT0 + i));
            store_all({runs.back().open(), runs.back().end()}, kT0 + 10 + i);
        }
        return runs;
    }
    std::shared_ptr<OtelCounters> counters_ =
        std::make_shared<OtelCounters>("http://127.0.0.1/v1/traces", "http/protobuf");
};

TEST_P(OtelExporterTest, A503IsRetriedWithBackoffThenTheBatchGoesOnce) {
    Receiver receiver;
    receiver.script({answer(503, "", "busy")});
    auto worker = exporter(receiver.url(), counters_);
    const auto runs = ended_runs(2);
    const auto t0 = OtelExporter::Clock::now();
    auto first = worker->export_once(t0);
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(first.error().type, ErrorType::kServiceUnavailable);
    EXPECT_EQ(backlog(), 2) << "the runs wait";
    ASSERT_TRUE(worker->retry_at());
    EXPECT_EQ(*worker->retry_at(), t0 + 1000ms);
    // Backing off: nothing is sent before the wait ends.
    auto waiting = worker->export_once(t0 + 999ms);
    ASSERT_TRUE(waiting.ok()) << waiting.error().describe();
    EXPECT_TRUE(waiting->waiting);
    EXPECT_EQ(receiver.requests().size(), 1u);
    auto second = worker->export_once(t0 + 1000ms);
    ASSERT_TRUE(second.ok()) << second.error().describe();
    EXPECT_EQ(second->runs, 2u);
    EXPECT_EQ(second->spans, 2u);
    const auto requests = receiver.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[1].body, requests[0].body) << "the same batch, again";
    EXPECT_EQ(sessions_in(requests[1].body),
              (std::vector<std::string>{runs[0].session(), runs[1].session()}));
    EXPECT_EQ(requests[1].content_type, "application/x-protobuf");
    EXPECT_EQ(requests[1].authorization, "Basic dGVzdA==") << "otel.headers are sent";
    EXPECT_EQ(backlog(), 0);
    EXPECT_FALSE(worker->retry_at());
    const auto stats = counters_->snapshot(0);
    EXPECT_EQ(stats.exported_runs, 2u);
    EXPECT_EQ(stats.exported_spans, 2u);
    EXPECT_EQ(stats.failures, 1u);
    EXPECT_NE(stats.last_error.find("503"), std::string::npos) << stats.last_error;
}

TEST_P(OtelExporterTest, BackoffDoublesUpToItsBoundAndRetryAfterOverridesIt) {
    Receiver receiver;
    receiver.script({answer(502), answer(504), answer(429, "7"), answer(503)});
    auto worker = exporter(receiver.url(), counters_);
    ended_runs(1);
    auto now = OtelExporter::Clock::now();
    const auto step = [&](std::chrono::milliseconds expected) {
        ASSERT_FALSE(worker->export_once(now).ok());
        ASSERT_TRUE(worker->retry_at());
        EXPECT_EQ(*worker->retry_at() - now, expected);
        now = *worker->retry_at();
    };
    step(1000ms);
    step(2000ms);
    step(7000ms);  // Retry-After: 7
    step(8000ms);  // 1 s * 2^3, the bound
    auto sent = worker->export_once(now);
    ASSERT_TRUE(sent.ok()) << sent.error().describe();
    EXPECT_EQ(sent->runs, 1u);
    EXPECT_EQ(receiver.requests().size(), 5u);
    EXPECT_EQ(counters_->snapshot(0).failures, 4u);
}

TEST_P(OtelExporterTest, ARefusedBatchIsDroppedAndCountedNotRetried) {
    Receiver receiver;
    receiver.script({answer(400, "", "{\"message\":\"bad spans\"}")});
    auto worker = exporter(receiver.url(), counters_);
    ended_runs(3);
    auto refused = worker->export_once();
    ASSERT_TRUE(refused.ok()) << refused.error().describe();
    EXPECT_EQ(refused->runs, 2u);
    EXPECT_FALSE(worker->retry_at()) << "no backoff: the receiver works";
    auto next = worker->export_once();
    ASSERT_TRUE(next.ok()) << next.error().describe();
    EXPECT_EQ(next->runs, 1u);
    EXPECT_EQ(backlog(), 0);
    EXPECT_EQ(receiver.requests().size(), 2u) << "the refused batch is not sent again";
    const auto stats = counters_->snapshot(0);
    EXPECT_EQ(stats.dropped.rejected, 2u);
    EXPECT_EQ(stats.exported_runs, 1u);
    EXPECT_EQ(stats.failures, 1u);
    EXPECT_NE(stats.last_error.find("400"), std::string::npos) << stats.last_error;
}

TEST_P(OtelExporterTest, APartialSuccessIsCounted) {
    Receiver receiver;
    // ExportTraceServiceResponse{partial_success{rejected_spans: 1, error_message: "late"}}.
    receiver.script({answer(200, "", std::string("\x0a\x08\x08\x01\x12\x04late", 10))});
    auto worker = exporter(receiver.url(), counters_);
    ended_runs(2);
    auto sent = worker->export_once();
    ASSERT_TRUE(sent.ok()) << sent.error().describe();
    EXPECT_EQ(sent->spans, 1u);
    const auto stats = counters_->snapshot(0);
    EXPECT_EQ(stats.dropped.rejected_spans, 1u);
    EXPECT_EQ(stats.exported_spans, 1u);
    EXPECT_EQ(stats.exported_runs, 2u);
    EXPECT_EQ(stats.last_error, "late");
}

TEST_P(OtelExporterTest, TheQueueBoundDropsTheOldestRunsAndCountsThem) {
    Receiver receiver;
    auto worker = exporter(receiver.url(), counters_, 3);
    const auto runs = ended_runs(5);
    auto sent = worker->export_once();
    ASSERT_TRUE(sent.ok()) << sent.error().describe();
    EXPECT_EQ(counters_->snapshot(0).dropped.queue_full, 2u);
    ASSERT_EQ(receiver.requests().size(), 1u);
    EXPECT_EQ(sessions_in(receiver.requests()[0].body),
              (std::vector<std::string>{runs[2].session(), runs[3].session()}));
}

TEST_P(OtelExporterTest, AReceiverNotListeningKeepsTheRunsQueued) {
    auto worker = exporter(
        "http://127.0.0.1:" + std::to_string(test_support::closed_loopback_port()) + "/v1/traces",
        counters_);
    ended_runs(1);
    auto failed = worker->export_once();
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(backlog(), 1);
    EXPECT_TRUE(worker->retry_at());
    EXPECT_EQ(counters_->snapshot(1).failures, 1u);
}

TEST_P(OtelExporterTest, IngestNeverWaitsForARequestInFlight) {
    Receiver receiver;
    receiver.hold();
    auto worker = exporter(receiver.url(), counters_);
    worker->start();
    ended_runs(1);
    ASSERT_TRUE(test_support::wait_until([&] { return receiver.holding(); }));
    // The receiver sits on the request: runs are still stored and queued meanwhile.
    const auto more = FakeRun::make("echo", "while sending", kT0 + 100);
    store_all({more.open(), more.end()}, kT0 + 110);
    EXPECT_EQ(backlog(), 2);
    receiver.release();
    ASSERT_TRUE(test_support::wait_until([&] { return backlog() == 0; }));
    worker->stop();
    EXPECT_EQ(counters_->snapshot(0).exported_runs, 2u);
}

TEST_P(OtelExporterTest, TheThreadCatchesUpWhenTheReceiverComesBack) {
    Receiver receiver;
    receiver.script({answer(503, "0"), answer(503, "0")});
    auto worker = exporter(receiver.url(), counters_);
    ended_runs(5);
    worker->start();
    ASSERT_TRUE(test_support::wait_until([&] { return backlog() == 0; }));
    worker->stop();
    const auto stats = counters_->snapshot(0);
    EXPECT_EQ(stats.exported_runs, 5u);
    EXPECT_EQ(stats.failures, 2u);
    std::set<std::string> seen;
    std::size_t lines = 0;
    for (const auto& request : receiver.requests()) {
        for (const auto& s : sessions_in(request.body)) {
            seen.insert(s);
            ++lines;
        }
    }
    EXPECT_EQ(seen.size(), 5u);
    EXPECT_EQ(lines, 5u + 2u * 2u) << "each run once, but the two refused attempts' batch";
}

TEST_P(OtelExporterTest, TheOtlpEncoderSendsTheRunsSpansAsJson) {
    Receiver receiver;
    otel::Resource resource;
    resource.service_name = "glassbox-test";
    auto worker = exporter(receiver.url(), counters_, 100,
                           otlp_batch_encoder(resource, otel::Encoding::kJson));
    const auto runs = ended_runs(1);
    auto sent = worker->export_once();
    ASSERT_TRUE(sent.ok()) << sent.error().describe();
    EXPECT_GE(sent->spans, 1u);
    ASSERT_EQ(receiver.requests().size(), 1u);
    const auto body = json::parse(receiver.requests()[0].body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << receiver.requests()[0].body;
    const auto& spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"];
    ASSERT_TRUE(spans.is_array());
    EXPECT_EQ(spans[0]["traceId"], schema::otel::trace_id_of(runs[0].session()));
}

TEST_P(OtelExporterTest, StatsReportTheExporter) {
    ended_runs(2);
    const json body{{"op", "stats"}};
    auto answered =
        answer_trace_request(*store_, body, nullptr, {}, nullptr, nullptr, counters_.get());
    ASSERT_TRUE(answered.ok()) << answered.error().describe();
    auto stats = schema::decode<schema::TraceStats>(*answered);
    ASSERT_TRUE(stats.ok()) << stats.error().describe();
    ASSERT_TRUE(stats->otel);
    EXPECT_TRUE(stats->otel->configured);
    EXPECT_EQ(stats->otel->pending, 2);
    EXPECT_EQ(stats->otel->protocol, "http/protobuf");
    EXPECT_EQ(stats->otel->endpoint, "http://127.0.0.1/v1/traces");
}

GLASSBOX_TRACE_BACKENDS(OtelExporterTest);

TEST(OtelSettings, HeadersAreCommaSeparatedPairsWithUrlEncodedValues) {
    auto headers = http::parse_otel_headers(
        " Authorization = Basic%20cGs6c2s= , x-tenant=a%2Cb,, api-key=k=v ");
    ASSERT_TRUE(headers.ok()) << headers.error().describe();
    EXPECT_EQ(*headers,
              (http::Headers{
                  {"Authorization", "Basic cGs6c2s="}, {"x-tenant", "a,b"}, {"api-key", "k=v"}}));
    EXPECT_TRUE(http::parse_otel_headers("")->empty());
    for (const char* bad : {"novalue", "=v", "k=%zz", "k=%2"}) {
        auto parsed = http::parse_otel_headers(bad);
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_EQ(parsed.error().type, ErrorType::kInvalidRequest);
        EXPECT_TRUE(http::otel_headers_problem(bad).has_value());
    }
    const auto secret = http::parse_otel_headers("Authorization=Bearer%zzsecret");
    ASSERT_FALSE(secret.ok());
    EXPECT_EQ(secret.error().message.find("secret"), std::string::npos) << "never the value";
}

TEST(OtelSettings, TheTracesUrlIsTheEndpointWithTheSignalPathOrTheTracesEndpointAsItIs) {
    EXPECT_EQ(http::otel_traces_url("http://localhost:4318", ""),
              "http://localhost:4318/v1/traces");
    EXPECT_EQ(http::otel_traces_url("http://localhost:4318/", ""),
              "http://localhost:4318/v1/traces");
    EXPECT_EQ(http::otel_traces_url("https://cloud.langfuse.com/api/public/otel", ""),
              "https://cloud.langfuse.com/api/public/otel/v1/traces");
    EXPECT_EQ(http::otel_traces_url("http://ignored:4318", "http://tempo:4318/custom"),
              "http://tempo:4318/custom");
    EXPECT_EQ(http::otel_traces_url("", ""), "");
    EXPECT_EQ(http::otel_public_url("https://user:pw@host:4318/v1/traces?key=s#x"),
              "https://host:4318/v1/traces");
}

TEST(OtelSettings, PartialSuccessInBothEncodings) {
    using detail::otlp_partial_success;
    EXPECT_EQ(otlp_partial_success(R"({"partialSuccess":{"rejectedSpans":"3","errorMessage":"x"}})",
                                   otel::Encoding::kJson),
              (std::pair<std::int64_t, std::string>{3, "x"}));
    EXPECT_EQ(otlp_partial_success("{}", otel::Encoding::kJson).first, 0);
    EXPECT_EQ(otlp_partial_success("", otel::Encoding::kProtobuf).first, 0);
    EXPECT_EQ(otlp_partial_success(std::string("\x0a\x02\x08\x05", 4), otel::Encoding::kProtobuf),
              (std::pair<std::int64_t, std::string>{5, ""}));
    EXPECT_EQ(otlp_partial_success("\xff\xff", otel::Encoding::kProtobuf).first, 0)
        << "unreadable: nothing counted";
}

}  // namespace
}  // namespace glassbox::trace::testing
