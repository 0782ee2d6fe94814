// Sampling in the trace collector's process (docs/traces.md, "Sampling"): the rule that decides
// which runs keep full detail, the whitelist a summary keeps, and the thread that summarises the
// store every interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/periodic_thread.hpp"
#include "base/result.hpp"
#include "schema/term.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

// Whether the trace of top-level run `session_uri` is sampled in (kept whole) at `fraction`: as
// OpenTelemetry's TraceIdRatioBased sampler decides with W3C trace context randomness, from the
// 56 rightmost bits R of its trace id (schema/otel_ids.hpp: the run's UUID, random there) and
// the threshold T = (1 - fraction) * 2^56: kept when R >= T. The same run gives the same answer
// in every process, and a run kept at one fraction is kept at every larger one. A URI that names
// no run is kept.
bool sampled_in(std::string_view session_uri, double fraction);

// What a summary keeps of a trace's triples (docs/traces.md, "Sampling"): note() every triple
// of the trace (its runs and sub-runs) first, then keeps() tells each one. Kept: of a step (a
// node typed as a question or step class) its type, times, duration, tokens, model, question,
// answer, short answer, status and the links to its citations and answer sources; and whole,
// every node those links reach (citations, answer sources, the selections they cite with their
// facts, chunks and documents, the models and workers).
class SummaryRule {
public:
    void note(const schema::Triple& triple);
    // After the last note(): follows the links from the steps.
    void close();
    bool keeps(const schema::Triple& triple) const;

private:
    std::unordered_set<std::string> steps_;
    std::unordered_set<std::string> kept_;
    // subject -> the IRIs a link the closure follows names
    std::unordered_map<std::string, std::vector<std::string>> links_;
    std::vector<std::string> seeds_;
};

struct SamplingConfig {
    // traces.sample: the fraction of ordinary runs kept whole; 1 (the default) turns sampling off.
    double fraction = 1.0;
    // traces.sample_after_s: a run is decided this long after it ended.
    std::chrono::milliseconds after{600'000};
    // How often the thread runs a pass: traces.prune_interval_s.
    std::chrono::seconds interval{60};
    std::int64_t batch_traces = 50;

    bool enabled() const noexcept { return fraction < 1.0; }
    SampleRequest request(WallClock::time_point now) const;
};

// Summarises its own read-write store every interval on a thread of its own until stopped. A
// pass that fails is logged, and the next interval tries again.
class SamplingWorker {
public:
    SamplingWorker(std::unique_ptr<TraceStore> store, SamplingConfig config);
    ~SamplingWorker();
    SamplingWorker(const SamplingWorker&) = delete;
    SamplingWorker& operator=(const SamplingWorker&) = delete;

    // The first pass runs at once, then one every interval.
    void start();
    void stop();
    // One pass as the thread runs it; for tests and the thread.
    base::Result<SampleCounts> sample_once(WallClock::time_point now = WallClock::now());

private:
    bool run_once();

    std::unique_ptr<TraceStore> store_;
    SamplingConfig config_;
    base::PeriodicThread thread_;
};

}  // namespace glassbox::trace
