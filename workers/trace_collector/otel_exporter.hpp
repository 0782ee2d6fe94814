// The trace collector's OpenTelemetry exporter (docs/operations.md, "OpenTelemetry"): a thread
// that sends the top-level runs queued in the store's otel_pending (ingest queues a run when it
// or a sub-run of it ends) as OTLP/HTTP spans to the configured receiver, one request per batch
// of runs, and takes them off the queue once the receiver took them. The receiver down or busy:
// the runs wait and the thread retries with exponential backoff (Retry-After honoured); refused:
// the batch is dropped and counted; the queue beyond otel.max_queue: the oldest runs are dropped
// and counted. Its own store connection and thread: ingest never waits for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/periodic_thread.hpp"
#include "base/result.hpp"
#include "http/http_client.hpp"
#include "http/otel_headers.hpp"
#include "schema/messages_trace.hpp"
#include "workers/trace_collector/otlp_encode.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

// "http/protobuf" or "http/json" as an encoding; anything else: InvalidRequest.
base::Result<otel::Encoding> otel_encoding(std::string_view protocol);

struct ExporterConfig {
    std::string url;  // the traces URL (otel_traces_url)
    http::Headers headers;
    otel::Encoding encoding = otel::Encoding::kProtobuf;
    // otel.interval_ms: how often the thread looks for work when the queue is empty.
    std::chrono::milliseconds interval{1000};
    // otel.timeout_ms: one request's bound.
    std::chrono::milliseconds timeout{10'000};
    // otel.max_queue: runs kept queued; beyond it the oldest are dropped (counted).
    std::int64_t max_queue = 10'000;
    // Runs per request.
    std::int64_t batch = 32;
    // Waits after a retryable failure: initial * 2^n up to max, unless Retry-After says.
    std::chrono::milliseconds initial_backoff{1000};
    std::chrono::milliseconds max_backoff{60'000};
    // Longest Retry-After honoured (a receiver asking for an hour is retried sooner).
    std::chrono::milliseconds max_retry_after{300'000};
};

// A claim's lease: longer than a request can take, so that another collector of the
// same store never sends the same run while this one still may.
std::chrono::milliseconds otel_lease(const ExporterConfig& config);

// A batch as the request's body: `body` holds `spans` spans of the runs it was made of.
struct EncodedBatch {
    std::string body;
    std::size_t spans = 0;
};

// Makes one request body of the runs `sessions` (URIs) of `store`; a run pruned meanwhile is
// left out.
using BatchEncoder = std::function<base::Result<EncodedBatch>(
    TraceStore& store, const std::vector<std::string>& sessions)>;

// The OTLP encoder of A1's spans (TraceStore::otel_spans, otel::encode_export_request).
BatchEncoder otlp_batch_encoder(otel::Resource resource, otel::Encoding encoding);

// What the exporter did since the process started; any thread.
class OtelCounters {
public:
    OtelCounters() = default;
    OtelCounters(std::string endpoint, std::string protocol)
        : configured_(true), endpoint_(std::move(endpoint)), protocol_(std::move(protocol)) {}
    void exported(std::size_t runs, std::size_t spans);
    void dropped_queue_full(std::int64_t runs);
    // A request refused: its `runs` dropped.
    void rejected(std::size_t runs, const std::string& error);
    // A partial-success answer: the receiver rejected `spans` of the request's spans.
    void rejected_spans(std::int64_t spans, const std::string& error);
    void failed(const std::string& error);
    // The counters with the store's queue holding `pending` runs.
    schema::TraceOtelStats snapshot(std::int64_t pending) const;
    bool configured() const noexcept { return configured_; }

private:
    const bool configured_ = false;
    const std::string endpoint_;
    const std::string protocol_;
    mutable std::mutex mutex_;
    schema::TraceOtelStats counts_;
};

// How one pass ended.
struct ExportPass {
    std::size_t runs = 0;   // runs taken off the queue (sent, or dropped as refused)
    std::size_t spans = 0;  // spans the receiver took
    bool waiting = false;   // backing off: nothing was sent
};

// Exports its own read-write store's queue on a thread of its own until stopped.
class OtelExporter {
public:
    using Clock = std::chrono::steady_clock;

    OtelExporter(std::unique_ptr<TraceStore> store, BatchEncoder encode, ExporterConfig config,
                 std::shared_ptr<OtelCounters> counters);
    ~OtelExporter();
    OtelExporter(const OtelExporter&) = delete;
    OtelExporter& operator=(const OtelExporter&) = delete;

    void start();
    // Wakes the thread and joins it (a request in flight is finished or abandoned first).
    void stop();
    // One pass as the thread runs it at `now`: drops the runs beyond max_queue, then, unless
    // backing off, claims a batch, sends it and takes it off the queue. A retryable failure
    // gives the batch back and backs off (the error); a refusal drops it (counted, not an
    // error).
    base::Result<ExportPass> export_once(Clock::time_point now = Clock::now());
    // When the next request may go (backing off after a failure); nullopt: at once.
    std::optional<Clock::time_point> retry_at() const { return retry_at_; }

private:
    // One pass of the thread, logged when the receiver starts or stops failing; true when a full
    // batch went. Never throws.
    bool run_once();
    // Sends `items`' spans in one request and settles them.
    base::Result<ExportPass> send(const std::vector<OtelItem>& items, Clock::time_point now);
    // Settles a request that failed with `error`: retried later (backing off from `now`, or as
    // `retry_after` says) or, `refused`, dropped.
    base::Result<ExportPass> failed(const std::vector<OtelItem>& items, const std::string& error,
                                    bool refused, std::optional<std::chrono::milliseconds> wait,
                                    Clock::time_point now);

    std::unique_ptr<TraceStore> store_;
    BatchEncoder encode_;
    ExporterConfig config_;
    std::shared_ptr<OtelCounters> counters_;
    http::HttpClient client_;
    std::optional<Clock::time_point> retry_at_;  // the thread's own
    int attempts_ = 0;                           // retryable failures in a row
    bool failing_ = false;
    base::PeriodicThread thread_;
};

namespace detail {

// The rejected span count and error message of an ExportTraceServiceResponse's partial_success
// in `encoding` (0 and "" when absent or unreadable).
std::pair<std::int64_t, std::string> otlp_partial_success(std::string_view body,
                                                          otel::Encoding encoding);

}  // namespace detail

}  // namespace glassbox::trace
