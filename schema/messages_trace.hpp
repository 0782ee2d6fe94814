// The `trace` service's replies (docs/traces.md §2, §4): list, show, stats and the
// conversation ops, with their codecs.
//
// The same codec rules as schema/messages.hpp. The collector's trace service encodes these and
// the CLI decodes them, so both sides agree on one shape.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// Sub-traces nested deeper than this are refused (bounds the recursive decoder and renderers).
inline constexpr int kMaxTraceDepth = 64;
// The deepest show reply must be readable: sub-traces at two levels each, then events, an event,
// its triples, a triple, and terms quoting triples at two levels each down to a leaf term.
static_assert(2 * kMaxTraceDepth + 1 + 3 + 1 + 2 * kMaxQuotedTripleDepth + 1 <=
                  static_cast<int>(kMaxJsonDepth),
              "parse_untrusted_json would refuse a show reply the trace service may send");

// An error as the trace store keeps it, Error::describe() text ("WorkerLost: the worker died").
// The decoder also takes {"type": "<ErrorType>", "message": "..."} and keeps it as that text.
struct StoredError {
    std::string text;
    // The typed error: a known "<Type>: " prefix gives its type, anything else is Internal.
    base::Error error() const;
    bool operator==(const StoredError&) const = default;
};

// One evaluation of a run (docs/evaluation.md, "Evaluations on traces"): how its answer scored
// against a question set's accepted answers, as `glassbox eval` (or any caller of the trace
// service's `evaluate` op) recorded it. A run may have several: each re-evaluation adds one.
struct TraceEvaluation {
    std::string run;                         // required: the evaluation run (eval's report folder)
    std::string set;                         // required: the question set's name
    std::optional<std::string> question_id;  // the question's id in the set
    std::vector<std::string> answers;        // the answers the set accepts
    bool correct = false;                    // required: the verdict (eval: a hit, not abstained)
    std::optional<bool> hit;                 // Hits@1
    std::optional<double> exact_match;       // in [0, 1]
    std::optional<double> f1;                // in [0, 1]
    std::optional<double> confidence;        // the answer's own, in [0, 1]
    std::string evaluated;                   // xsd:dateTime the store recorded it
    bool operator==(const TraceEvaluation&) const = default;
};

// The trace store keeps at most this many evaluations of a run, its newest: re-evaluating a run
// forever must not grow its list row without bound.
inline constexpr std::size_t kMaxEvaluationsPerRun = 32;
// Bounds of an `evaluate` request's texts (bytes) and accepted answers.
inline constexpr std::size_t kMaxEvaluationNameBytes = 256;
inline constexpr std::size_t kMaxEvaluationAnswers = 100;
inline constexpr std::size_t kMaxEvaluationAnswerBytes = 4096;

// One model call of a step (docs/traces.md, "Cost"): the node that states gb:model and the tokens
// (the step, or its reflection), and what the tokens cost at the prices the trace collector had
// when it stored them. `cost` absent: the model has no price (no cost, never 0).
struct StepCost {
    std::string step;   // required: the step's (or its reflection's) IRI
    std::string model;  // gb:model; "" when the step named none
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::optional<double> cost;
    std::string currency;
    bool operator==(const StepCost&) const = default;
};

// One row of `list`, and the `session` object of `show`. Fields the store has no value for are
// null on the wire (absent optionals), except `error`, which is left out.
struct TraceSessionSummary {
    std::string session;  // required
    std::optional<std::string> kind;
    std::optional<std::string> question;
    std::optional<std::string> parent;
    std::optional<std::string> started;
    std::optional<std::string> ended;  // none while running
    std::optional<std::int64_t> duration_ms;
    std::string status;
    std::optional<std::string> service;
    std::optional<std::string> worker;
    std::int64_t events = 0;
    std::optional<StoredError> error;       // when an error trace has one
    std::int64_t subtraces = 0;             // its direct sub-runs (sessions whose parent it is)
    std::optional<std::string> collection;  // the knowledge collection it asked (gb:collection)
    // The model tokens its steps and its sub-runs' steps used (gb:inputTokens, gb:outputTokens).
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    bool pinned = false;  // never pruned (docs/traces.md, "Retention")
    // true: a summary, its detail not kept (traces.sample; docs/traces.md, "Sampling"); absent
    // for a run kept whole.
    std::optional<bool> summary;
    // Its evaluations, oldest first (at most kMaxEvaluationsPerRun); empty when never evaluated.
    std::vector<TraceEvaluation> evaluations;
    // How many knowledge changes removed something it used (docs/traces.md, "Affected answers").
    std::int64_t affected = 0;
    // What its steps' and its sub-runs' model calls cost (docs/traces.md, "Cost"), in `currency`;
    // null when none was priced. `unpriced`: the models it used that had no price (absent: none).
    std::optional<double> cost;
    std::optional<std::string> currency;
    std::optional<std::vector<std::string>> unpriced;
    bool operator==(const TraceSessionSummary&) const = default;
};

// The reply of `list`.
struct TraceSessionList {
    std::vector<TraceSessionSummary> sessions;  // required
    std::int64_t total = 0;                     // absent: the number of sessions
    bool total_exact = true;                    // false: at least `total` (the count is capped)
    std::int64_t limit = 0;
    std::int64_t offset = 0;
    std::optional<std::string> next;  // the cursor of the next page (`after`), null when none
    bool operator==(const TraceSessionList&) const = default;
};

// One stored explain message of a session.
struct TraceEvent {
    std::uint64_t seq = 0;
    std::string explain_id;  // the step URI
    std::string state;       // open, complete, error
    std::string received;
    std::vector<Triple> triples;
    std::optional<StoredError> error;
    // The model calls of the step with their cost (docs/traces.md, "Cost"); absent: none.
    std::optional<std::vector<StepCost>> costs;
    bool operator==(const TraceEvent&) const = default;
};

// A knowledge change that removed something a run used (docs/traces.md, "Affected answers"):
// the change run's IRI, when it ended, its gb:changeKind, and the used facts ("S P O" in
// N-Triples terms) and sources it removed.
struct TraceInvalidation {
    std::string change;  // required
    std::string at;      // xsd:dateTime
    std::string kind;    // replace | forget-source | forget-fact | forget-document
    std::vector<std::string> facts;
    std::vector<std::string> sources;
    bool operator==(const TraceInvalidation&) const = default;
};

// The reply of `show`: a session, its events in seq order, its sub-traces nested the same way
// (at most kMaxTraceDepth deep). The decoder sorts events by seq whatever order they came in.
struct TraceDetail {
    TraceSessionSummary session;  // required
    std::vector<TraceEvent> events;
    std::vector<TraceDetail> subtraces;
    // The changes that affected the run, oldest first (the top-level detail only; absent when
    // none).
    std::vector<TraceInvalidation> affected;
    bool operator==(const TraceDetail&) const = default;
};

// What the collector writing the store says of its work since it started: a store that
// cannot write (a full disk) shows here, not only in the collector's log.
struct TraceCollectorStats {
    std::uint64_t deliveries = 0;  // DELIVERs received from the broker
    std::uint64_t stored = 0;      // events written
    std::uint64_t acked = 0;       // deliveries acknowledged (stored, duplicates, quarantined)
    std::uint64_t store_failures =
        0;  // batch commits that failed (each batch is retried, unacknowledged)
    bool store_failing = false;    // the last commit failed: `pending` waits for a retry
    std::uint64_t pending = 0;     // deliveries received and not yet stored (nor acknowledged)
    std::string last_store_error;  // the last failed commit's error; "" when none failed
    std::uint64_t iris_rewritten =
        0;                      // IRIs N-Triples rejects, stored rewritten (docs/traces.md §1)
    std::uint64_t refused = 0;  // deliveries refused by their session (docs/traces.md §1)
    bool operator==(const TraceCollectorStats&) const = default;
};

// What retention pruned since the trace collector started (docs/traces.md, "Retention"): its
// background pruning and the `prune` ops it served, and how it is set.
struct TraceRetentionStats {
    std::int64_t retention_ms = 0;  // traces.retention; 0: kept forever
    std::int64_t max_bytes = 0;     // traces.max_bytes; 0: no bound
    std::uint64_t prunes = 0;       // prunes that deleted (dry runs not counted)
    std::uint64_t traces = 0;       // top-level traces deleted
    std::uint64_t sessions = 0;     // runs deleted (sub-runs included)
    std::uint64_t events = 0;
    std::uint64_t bytes = 0;     // live bytes freed (before - after of each prune)
    std::uint64_t failures = 0;  // background prunes that failed
    std::string last_error;      // the last failure's error; "" when none failed
    bool operator==(const TraceRetentionStats&) const = default;
};

// The trace collector's SPARQL mirror (docs/traces.md, "Mirror to a SPARQL engine"): the store's
// queue and what the mirror did since the collector started.
struct TraceMirrorStats {
    bool configured = false;             // an engine is configured (sparql.endpoint)
    std::int64_t pending = 0;            // top-level runs queued, their graph not yet written
    std::uint64_t mirrored = 0;          // graphs written
    std::uint64_t failures = 0;          // graph writes that failed
    std::string last_error;              // the last failure's error; "" when none failed
    std::int64_t oldest_pending_ms = 0;  // how long the oldest queued run has waited; 0: none
    // Every change queued before this time (ms since the epoch) is mirrored: the oldest queued
    // run's queue time, or the time of the reply when none is queued.
    std::int64_t watermark = 0;
    bool operator==(const TraceMirrorStats&) const = default;
};

// What the OpenTelemetry exporter dropped (docs/operations.md, "OpenTelemetry").
struct TraceOtelDrops {
    std::uint64_t queue_full = 0;      // runs dropped, oldest first, beyond otel.max_queue
    std::uint64_t rejected = 0;        // runs of requests the receiver refused (4xx but 429)
    std::uint64_t rejected_spans = 0;  // spans a partial-success answer said it rejected
    bool operator==(const TraceOtelDrops&) const = default;
};

// The trace collector's OpenTelemetry exporter (docs/operations.md, "OpenTelemetry"): the
// store's queue and what the exporter did since the collector started.
struct TraceOtelStats {
    bool configured = false;  // an endpoint is configured (otel.endpoint, otel.traces_endpoint)
    std::string endpoint;     // the traces URL without credentials or query
    std::string protocol;     // http/protobuf or http/json
    std::uint64_t exported_runs = 0;
    std::uint64_t exported_spans = 0;
    std::int64_t pending = 0;  // ended top-level runs queued, not yet sent
    TraceOtelDrops dropped;
    std::uint64_t failures = 0;  // requests that failed (retried, or dropped when refused)
    std::string last_error;      // the last failure's error; "" when none failed
    bool operator==(const TraceOtelStats&) const = default;
};

// The cost section of `stats` (docs/traces.md, "Cost"): the stored runs' model calls in the
// currency of the collector's prices. A model without a price has a null cost and its tokens.
struct TraceModelCost {
    std::string model;
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::optional<double> cost;
    bool operator==(const TraceModelCost&) const = default;
};

struct TraceDayCost {
    std::string day;  // YYYY-MM-DD (UTC), the day the calls were stored
    double cost = 0;
    bool operator==(const TraceDayCost&) const = default;
};

inline constexpr std::size_t kMaxCostDays = 366;

struct TraceCosts {
    std::string currency;
    double total = 0;
    std::vector<TraceModelCost> by_model;  // by cost, highest first; unpriced models last
    std::vector<TraceDayCost> by_day;      // newest first, at most kMaxCostDays
    std::vector<std::string> unpriced;     // the models used that have no price
    bool operator==(const TraceCosts&) const = default;
};

// Sampling (docs/traces.md, "Sampling"): the top-level runs kept whole, by why (in this order
// of precedence), since the store was created.
struct TraceSamplingWhole {
    std::int64_t error = 0;
    std::int64_t escalation = 0;
    std::int64_t evaluated = 0;
    std::int64_t pinned = 0;
    std::int64_t sampled = 0;  // sampled in by traces.sample
    bool operator==(const TraceSamplingWhole&) const = default;
};

struct TraceSamplingStats {
    double fraction = 1.0;  // traces.sample; 1: off
    TraceSamplingWhole whole;
    std::int64_t summarised = 0;  // top-level runs summarised
    std::int64_t waiting = 0;     // ended top-level runs not decided yet (0 when off)
    bool operator==(const TraceSamplingStats&) const = default;
};

// The reply of `stats`: the store's counters and, from a trace collector, its own.
struct TraceStats {
    std::int64_t sessions = 0;
    std::int64_t events = 0;
    std::int64_t triples = 0;
    std::int64_t texts = 0;
    std::int64_t quarantined = 0;
    std::map<std::string, std::int64_t> by_status;  // running, complete, error, incomplete
    std::uint64_t db_bytes = 0;
    std::optional<TraceCollectorStats>
        collector;  // absent when no collector writes beside the service
    std::optional<TraceRetentionStats> retention;   // from a trace collector
    std::optional<TraceMirrorStats> sparql_mirror;  // from a trace collector
    std::optional<TraceCosts> costs;                // docs/traces.md, "Cost"
    std::optional<TraceOtelStats> otel;             // from a trace collector
    std::optional<TraceSamplingStats> sampling;     // docs/traces.md, "Sampling"
    bool operator==(const TraceStats&) const = default;
};

// The reply of `prune`: what was deleted, or with dry_run what would be.
struct TracePruneResult {
    bool dry_run = false;
    std::int64_t traces = 0;    // top-level traces
    std::int64_t sessions = 0;  // runs, sub-runs included
    std::int64_t events = 0;
    std::int64_t triples = 0;
    std::int64_t texts = 0;  // stored long texts no kept event uses
    std::int64_t turns = 0;  // conversation turns of the pruned runs
    std::int64_t quarantined = 0;
    std::int64_t bytes_before = 0;  // the store's live bytes
    std::int64_t bytes_after = 0;   // dry run: estimated
    bool operator==(const TracePruneResult&) const = default;
};

// The reply of `pin` and `unpin`.
struct TracePinned {
    std::string session;  // the session URI the id named
    bool pinned = false;
    // true: a summary already (docs/traces.md, "Sampling"), which it stays; absent otherwise.
    std::optional<bool> summary;
    bool operator==(const TracePinned&) const = default;
};

// The reply of `evaluate`: the evaluation as stored, and how many the run now has.
struct TraceEvaluated {
    std::string session;  // the session URI the id named
    TraceEvaluation evaluation;
    std::int64_t evaluations = 0;
    bool operator==(const TraceEvaluated&) const = default;
};

// The FINAL of `export`, after its {"nquads": ...} PARTIALs.
struct TraceExportCounts {
    std::uint64_t sessions = 0;
    std::uint64_t triples = 0;
    bool operator==(const TraceExportCounts&) const = default;
};

// ---- conversations (docs/traces.md §4): ops turns, conversations, forget ------------------------

// A conversation id (a request's session_id) is at most this many bytes; the trace store does
// not index a longer one and the workers refuse it.
inline constexpr std::size_t kMaxSessionIdBytes = 256;

// `settle_ms` of a `turns` request (docs/traces.md §4): how long the trace service may wait for
// the conversation's runs still running, other than the asker's own (`current`), to end and
// become turns; at most kMaxTurnsSettleMs. A caller that waits `timeout` for the reply asks
// for three quarters of it, leaving the rest for the reply itself.
inline constexpr std::int64_t kMaxTurnsSettleMs = 10'000;
inline std::int64_t turns_settle_ms(std::chrono::milliseconds timeout) noexcept {
    return std::clamp<std::int64_t>(timeout.count() * 3 / 4, 0, kMaxTurnsSettleMs);
}

// One turn: an ended top-level run that carried gb:conversation.
struct ConversationTurn {
    std::string question;
    std::string answer;  // gb:answerText of its Synthesis or Conclusion; "" when none
    std::optional<std::string> short_answer;  // gb:shortAnswer, null when the run stated none
    std::string trace;                        // the run's UUID (`glassbox traces show <trace>`)
    std::string started;                      // xsd:dateTime
    std::string status;                       // complete | error
    bool operator==(const ConversationTurn&) const = default;
};

// The reply of `turns`: the last `limit` turns, oldest first (empty for an unknown session).
struct ConversationTurns {
    std::string session_id;
    std::vector<ConversationTurn> turns;
    bool operator==(const ConversationTurns&) const = default;
};

struct ConversationSummary {
    std::string session_id;
    std::int64_t turns = 0;
    std::string started;  // the first kept turn's start
    std::string last;     // the last turn's start
    bool operator==(const ConversationSummary&) const = default;
};

// The reply of `conversations`: most recent first.
struct ConversationList {
    std::vector<ConversationSummary> sessions;
    bool operator==(const ConversationList&) const = default;
};

// The reply of `forget`.
struct ConversationForgotten {
    std::string session_id;
    std::int64_t deleted = 0;  // turns deleted
    bool operator==(const ConversationForgotten&) const = default;
};

// ---- compare (docs/traces.md, "Replay and compare") ------------------------------------------

// One run as `compare` reads it from its stored triples (its sub-runs' included).
struct ComparedRun {
    std::string session;  // required: the run's Question IRI
    std::optional<std::string> kind;
    std::string question;  // gb:query of its Question
    std::optional<std::string> collection;
    std::string status;
    std::optional<std::string> started;
    std::optional<std::int64_t> duration_ms;
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::string answer;  // gb:answerText of its last Synthesis or Conclusion; "" when none
    std::optional<std::string> short_answer;  // gb:shortAnswer, when stated
    std::optional<double> confidence;         // gb:answerConfidence of that step, when stated
    bool abstained = false;                   // gb:abstained: the answer was withheld
    std::vector<std::string> models;          // gb:model of its steps and sub-runs', sorted
    // The documents (or, with none known, the chunks or files) its selected edges and chunks,
    // and a routed answer's gb:answerSource, derive from; sorted, at most kMaxComparedItems.
    std::vector<std::string> sources;
    // The facts (S P O) of the edges its Focus steps kept; at most kMaxComparedItems.
    std::vector<Triple> facts;
    std::optional<std::string> revision_of;  // prov:wasRevisionOf of its Question
    bool operator==(const ComparedRun&) const = default;
};

// A compared run lists at most this many sources and facts (a Focus keeps tens; the bound only
// caps a reply's size for a run configured to keep thousands).
inline constexpr std::size_t kMaxComparedItems = 2000;

// The reply of `compare`: runs a and b, and what changed from a to b.
struct TraceComparison {
    ComparedRun a;                      // required
    ComparedRun b;                      // required
    bool answer_changed = false;        // the answer texts differ
    bool short_answer_changed = false;  // the short answers differ
    // b's confidence less a's, when both state one.
    std::optional<double> confidence_change;
    std::vector<std::string> sources_added;  // in b, not in a
    std::vector<std::string> sources_removed;
    std::int64_t sources_kept = 0;
    std::vector<Triple> facts_added;
    std::vector<Triple> facts_removed;
    std::int64_t facts_kept = 0;
    bool b_revises_a = false;  // b's Question prov:wasRevisionOf a's
    bool operator==(const TraceComparison&) const = default;
};

nlohmann::json encode(const ComparedRun& m);
nlohmann::json encode(const TraceComparison& m);

nlohmann::json encode(const TraceSessionSummary& m);
nlohmann::json encode(const TraceSessionList& m);
nlohmann::json encode(const TraceEvent& m);
nlohmann::json encode(const TraceDetail& m);
nlohmann::json encode(const TraceCollectorStats& m);
nlohmann::json encode(const TraceStats& m);
nlohmann::json encode(const TraceExportCounts& m);
nlohmann::json encode(const TraceRetentionStats& m);
nlohmann::json encode(const TraceMirrorStats& m);
nlohmann::json encode(const TraceOtelDrops& m);
nlohmann::json encode(const TraceOtelStats& m);
nlohmann::json encode(const TraceSamplingWhole& m);
nlohmann::json encode(const TraceSamplingStats& m);
nlohmann::json encode(const TracePruneResult& m);
nlohmann::json encode(const TracePinned& m);
nlohmann::json encode(const TraceEvaluation& m);
nlohmann::json encode(const TraceEvaluated& m);
nlohmann::json encode(const ConversationTurn& m);
nlohmann::json encode(const ConversationTurns& m);
nlohmann::json encode(const ConversationSummary& m);
nlohmann::json encode(const ConversationList& m);
nlohmann::json encode(const ConversationForgotten& m);

#define GLASSBOX_DECLARE_DECODE(T) \
    template <>                    \
    base::Result<T> decode<T>(const nlohmann::json& value);
GLASSBOX_DECLARE_DECODE(TraceSessionSummary)
GLASSBOX_DECLARE_DECODE(TraceSessionList)
GLASSBOX_DECLARE_DECODE(TraceEvent)
GLASSBOX_DECLARE_DECODE(TraceDetail)
GLASSBOX_DECLARE_DECODE(TraceStats)
GLASSBOX_DECLARE_DECODE(TraceExportCounts)
GLASSBOX_DECLARE_DECODE(TraceRetentionStats)
GLASSBOX_DECLARE_DECODE(TraceMirrorStats)
GLASSBOX_DECLARE_DECODE(TraceOtelDrops)
GLASSBOX_DECLARE_DECODE(TraceOtelStats)
GLASSBOX_DECLARE_DECODE(TraceSamplingWhole)
GLASSBOX_DECLARE_DECODE(TraceSamplingStats)
GLASSBOX_DECLARE_DECODE(TracePruneResult)
GLASSBOX_DECLARE_DECODE(TracePinned)
GLASSBOX_DECLARE_DECODE(TraceEvaluation)
GLASSBOX_DECLARE_DECODE(TraceEvaluated)
GLASSBOX_DECLARE_DECODE(ConversationTurn)
GLASSBOX_DECLARE_DECODE(ConversationTurns)
GLASSBOX_DECLARE_DECODE(ConversationSummary)
GLASSBOX_DECLARE_DECODE(ConversationList)
GLASSBOX_DECLARE_DECODE(ConversationForgotten)
GLASSBOX_DECLARE_DECODE(ComparedRun)
GLASSBOX_DECLARE_DECODE(TraceComparison)
#undef GLASSBOX_DECLARE_DECODE

}  // namespace glassbox::schema
