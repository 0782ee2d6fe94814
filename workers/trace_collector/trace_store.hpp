// The trace store: explain messages kept in SQLite (WAL), one row per session, read back for
// the `trace` service (docs/traces.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "schema/messages_trace.hpp"
#include "schema/prices.hpp"
#include "workers/trace_collector/eval_runs.hpp"
#include "workers/trace_collector/otel_spans.hpp"

namespace glassbox::trace {

using WallClock = std::chrono::system_clock;

// One GBE01 DELIVER (docs/protocol.md §6.1), its frames as received. `seq` stays text so a frame
// that is not an ascii-int can still be quarantined with its reason.
struct Delivery {
    std::uint64_t delivery_id = 0;
    std::string service;
    std::string session;
    std::string seq;
    std::string state;
    std::string body;
};

struct StoreConfig {
    // A session with no terminal event and nothing for this long reads as `incomplete`.
    std::chrono::seconds incomplete_after{300};
    // synchronous=FULL (default): a commit survives power loss, so an ACK after it keeps the
    // §6.1 promise ("durably stored"). false gives NORMAL: in WAL mode a commit survives a crash
    // of the process but the last transactions may roll back on power loss or an OS crash, and
    // the broker, already acknowledged, no longer has them.
    bool synchronous_full = true;
    // Literals longer than this (answers, observations) are stored once in `texts` and
    // referenced from their triples; show and export re-inline them.
    std::size_t text_threshold = 512;
    // How long a statement waits for a lock held by another connection (readers never block
    // the WAL writer; this bounds writer-vs-checkpoint waits).
    std::chrono::milliseconds busy_timeout{5000};
    // `list` counts matching sessions up to this many (or up to offset + limit when that is
    // more) and then reports the count as a lower bound (`total_exact: false`): an exact count
    // reads every matching row, 10-30 ms at 100,000 sessions for every page.
    std::int64_t list_count_limit = 10'000;
    // The usage index (docs/traces.md, "Which answers rest on what"): what each run used, its
    // question and answer text, and the invalidations of knowledge changes. false (benchmarks:
    // the ingest baseline) stores runs without it.
    bool index_uses = true;
    // Conversations (docs/traces.md §4): each keeps at most this many turns and bytes of turn
    // text (question, answer and short answer), its oldest turns dropped first. One turn is cut
    // to turn_max_bytes (the question to half of it, then the answer), so a conversation always
    // holds its last conversation_max_bytes / turn_max_bytes turns at least.
    std::int64_t conversation_max_turns = 64;
    std::int64_t conversation_max_bytes = 256 * 1024;
    std::size_t turn_max_bytes = 64 * 1024;
    // The SPARQL mirror (docs/traces.md, "Mirror to a SPARQL engine"): a read-write store with it
    // queues each top-level run whose graph changed (it ended, a sub-run of it ended, a knowledge
    // change invalidated it) in the ingest transaction, one upsert per run. Off: nothing is
    // queued (no engine to mirror to; `mirror_all` queues the runs stored meanwhile).
    bool mirror_sparql = false;
    // Sampling (docs/traces.md, "Sampling"; trace_sampling.cpp): traces.sample and
    // traces.sample_after_s as the collector has them, for the `sampling` section of stats (its
    // fraction, and the runs waiting for a decision when the fraction is under 1).
    double sample = 1.0;
    std::chrono::seconds sample_after{600};
    // Cost (docs/traces.md, "Cost"): ingest prices each stored model call with these (costs.prices
    // and costs.currency); stats totals in their currency. Empty: every model call is unpriced.
    schema::PriceTable prices;
    // The OpenTelemetry exporter (docs/operations.md, "OpenTelemetry"): a read-write store with
    // it queues each top-level run in otel_pending in the ingest transaction that ends it (or
    // ends a sub-run of it after it ended), one upsert per run. Off: nothing is queued.
    bool export_otel = false;
};

enum class OpenMode { kReadWrite, kReadOnly };

// Where the store lives: a SQLite file, or (postgres_dsn set) a PostgreSQL database, whose
// read-only connections go to postgres_read_dsn when that is set (a hot standby).
struct StoreLocation {
    std::filesystem::path path;
    std::string postgres_dsn;
    std::string postgres_read_dsn;

    bool postgres() const noexcept { return !postgres_dsn.empty(); }
    // The file's path, or "PostgreSQL at host:port" (never a password): for messages.
    std::string describe() const;
};

// What one store_batch did.
struct BatchOutcome {
    std::size_t stored = 0;       // new (session, seq) events written
    std::size_t duplicates = 0;   // (session, seq) already stored: ignored
    std::size_t quarantined = 0;  // malformed: kept in `quarantine`
    // Valid, but not the session's to take (written after its end, by another service or
    // worker: docs/protocol.md §6.1): kept in `quarantine` with the reason, never in the trace.
    std::size_t refused = 0;
    std::size_t triples = 0;  // triples written
    // IRIs of accepted deliveries that N-Triples rejects, stored rewritten (explain::writable_iri)
    std::size_t iris_rewritten = 0;
};

// Filters of the `list` operation; times are epoch milliseconds.
struct ListQuery {
    std::optional<std::string> kind;
    std::optional<std::string> collection;  // runs that asked this knowledge collection
    std::optional<std::string> status;      // running | complete | error | incomplete
    std::optional<std::int64_t> since_ms;
    std::optional<std::int64_t> until_ms;
    std::optional<std::string> search;  // case-insensitive substring of the question
    std::optional<std::string> parent;  // a session URI or a unique UUID prefix
    bool include_subtraces = false;
    std::int64_t limit = 50;
    std::int64_t offset = 0;
    // The `next` cursor of an earlier reply with the same filters: the page starts after the
    // last session that reply listed (keyset pagination: no rows are skipped one by one).
    std::optional<std::string> after;
    // Count every matching session instead of stopping at StoreConfig::list_count_limit.
    bool exact_total = false;
    // Only the sessions with an evaluation (docs/evaluation.md): `id IN (SELECT session FROM
    // evaluations)`, which the planner answers from the evaluations when they are few.
    bool evaluated = false;
    // What the run used (docs/traces.md, "Which answers rest on what"), from the usage index
    // (run_uses.hpp); a sub-run's uses count for its top-level run too. `uses_fact` is "S P O"
    // (N-Triples terms, or bare IRIs and a plain literal), malformed: InvalidRequest.
    std::optional<std::string> uses_source;    // a source document's URI
    std::optional<std::string> uses_document;  // a document's or a chunk's URI
    std::optional<std::string> uses_fact;
    std::optional<std::string> entity;  // an IRI: a used fact's subject or object, or a seed
    std::optional<std::string> model;   // a model name (gb:model)
    std::optional<std::string> text;    // words, all of them in the question or the answer
    // Only the runs a knowledge change affected (docs/traces.md, "Affected answers").
    bool affected = false;
};

struct ExportCounts {
    std::uint64_t sessions = 0;
    std::uint64_t triples = 0;
};

// What prune deletes (docs/traces.md, "Retention"): whole top-level traces (each with all its
// sub-runs), oldest `started` first, never a pinned one nor one still running.
struct PruneRequest {
    // The traces started more than this long before `now`; quarantine rows received before then.
    std::optional<std::chrono::milliseconds> older_than;
    // Then the oldest until the store's live bytes (live_bytes()) are at most this.
    std::optional<std::int64_t> max_bytes;
    // Count what would go, delete nothing (max_bytes: by the per-trace estimate, no re-measure).
    bool dry_run = false;
    // At most this many top-level traces per write transaction: ingest waits for one batch only.
    std::int64_t batch_traces = 200;
    WallClock::time_point now = WallClock::now();
};

// What a prune deleted (or, dry, would delete).
struct PruneCounts {
    std::int64_t traces = 0;    // top-level traces
    std::int64_t sessions = 0;  // runs: the traces and all their sub-runs
    std::int64_t events = 0;
    std::int64_t triples = 0;
    std::int64_t texts = 0;         // long texts no kept event uses any more
    std::int64_t turns = 0;         // conversation turns of the pruned runs
    std::int64_t quarantined = 0;   // quarantine rows older than older_than
    std::int64_t bytes_before = 0;  // live bytes (live_bytes())
    std::int64_t bytes_after = 0;   // dry run: bytes_before less the estimate of what would go
};

// One run the SPARQL mirror is to (re)write: its session row, URI and when it was queued (ms).
struct MirrorItem {
    std::int64_t row = 0;
    std::string session;
    std::int64_t due = 0;
};

// The mirror's queue: how many runs wait and when the oldest of them was queued (ms).
struct MirrorBacklog {
    std::int64_t pending = 0;
    std::optional<std::int64_t> oldest_due;
};

// A run the OpenTelemetry exporter claimed (otel_pending.cpp): its session row and URI, when it
// was queued (ms) and the lease its claim holds (ms: the row's due while claimed).
struct OtelItem {
    std::int64_t row = 0;
    std::string session;
    std::int64_t queued = 0;
    std::int64_t lease = 0;
};

// One sampling pass (docs/traces.md, "Sampling"): the top-level runs ended more than `after`
// before `now` that no pass decided yet, each decided (kept whole: an error, an escalation, an
// evaluation, a pin, or sampled in by `fraction`) or summarised with its sub-runs.
struct SampleRequest {
    double fraction = 1.0;
    std::chrono::milliseconds after{600'000};
    // At most this many top-level runs per write transaction: ingest waits for one batch only.
    std::int64_t batch_traces = 50;
    WallClock::time_point now = WallClock::now();
};

// What one pass decided, per decision (top-level runs), and what summarising took away.
struct SampleCounts {
    std::int64_t error = 0;
    std::int64_t escalation = 0;
    std::int64_t evaluated = 0;
    std::int64_t pinned = 0;
    std::int64_t sampled = 0;     // sampled in: kept whole
    std::int64_t summarised = 0;  // top-level runs summarised
    std::int64_t skipped = 0;     // a run of the trace still running: left for a later pass
    std::int64_t sessions = 0;    // runs summarised, sub-runs included
    std::int64_t triples = 0;     // triples dropped
    std::int64_t texts = 0;       // long texts no event refers to any more, deleted
    std::int64_t bytes_before = 0;
    std::int64_t bytes_after = 0;
};

// Receives export output: whole N-Quads lines. Returning false stops the export (Cancelled).
using NquadsSink = std::function<bool(std::string_view lines)>;

}  // namespace glassbox::trace

namespace glassbox::storage::sql {
class Connection;
}  // namespace glassbox::storage::sql

namespace glassbox::trace {

// One connection to the store: a SQLite file (the embedded default) or a PostgreSQL database.
// On SQLite a read-write store is the collector's (one writer per file) and any number of
// read-only stores may read beside it (WAL); on PostgreSQL any number of collectors on any hosts
// may write one database (each batch takes the store's writer lock) and readers may use a
// standby. Not thread-safe: one thread at a time.
class TraceStore {
public:
    // Creates the file (0600) and schema in kReadWrite mode. A file that is not a SQLite
    // database, or not a trace store, or cannot be opened: Internal, with the path and reason
    // in one line.
    static base::Result<std::unique_ptr<TraceStore>> open(const std::filesystem::path& path,
                                                          OpenMode mode, StoreConfig config = {});
    // The store in the PostgreSQL database `dsn` names (libpq's keyword/value or URI form);
    // kReadWrite creates the schema. The server unreachable: StoreUnavailable naming host and
    // port (never the password); a database holding something else: Internal.
    static base::Result<std::unique_ptr<TraceStore>> open_postgres(const std::string& dsn,
                                                                   OpenMode mode,
                                                                   StoreConfig config = {});
    // open or open_postgres, as `location` says (kReadOnly on postgres_read_dsn when set).
    static base::Result<std::unique_ptr<TraceStore>> open(const StoreLocation& location,
                                                          OpenMode mode, StoreConfig config = {});
    ~TraceStore();
    TraceStore(const TraceStore&) = delete;
    TraceStore& operator=(const TraceStore&) = delete;

    // Validates and writes `deliveries` in ONE transaction: new events with their triples and
    // session rows, duplicates ignored, malformed ones into quarantine. All or nothing: an Error
    // means nothing was committed (the caller must not ACK). Bodies in the canonical encoding
    // are checked by a scan without a JSON tree (explain_scan.hpp) and their triples stored as
    // received; any other body is decoded with the JSON DOM and stored re-encoded.
    base::Result<BatchOutcome> store_batch(const std::vector<Delivery>& deliveries,
                                           WallClock::time_point received = WallClock::now());

    // The operations of docs/traces.md §2, answering the JSON replies it shows. `now` decides
    // which sessions read as incomplete.
    base::Result<nlohmann::json> list(const ListQuery& query,
                                      WallClock::time_point now = WallClock::now());
    base::Result<nlohmann::json> show(std::string_view id,
                                      WallClock::time_point now = WallClock::now());
    base::Result<ExportCounts> export_nquads(std::optional<std::int64_t> since_ms,
                                             std::optional<std::int64_t> until_ms,
                                             const NquadsSink& sink,
                                             std::size_t lines_per_chunk = 1000);
    base::Result<nlohmann::json> stats(WallClock::time_point now = WallClock::now());

    // Conversations (docs/traces.md §4), answering schema::ConversationTurns, ConversationList
    // and ConversationForgotten. `turns`: the last `limit`, oldest first; an unknown
    // conversation has none. `forget` deletes the conversation's turns (its runs' traces stay)
    // and needs a read-write store.
    base::Result<nlohmann::json> turns(std::string_view conversation, std::int64_t limit);
    // True while a top-level run of `conversation` other than `except_run` (a run UUID, "" for
    // none) is still running: its turn is yet to come.
    base::Result<bool> conversation_running(std::string_view conversation,
                                            std::string_view except_run);
    // True when `conversation` has turns kept.
    base::Result<bool> conversation_known(std::string_view conversation);
    // A list's kind filter: an engine's service name or a stored run's kind; InvalidRequest with
    // the nearest name otherwise.
    base::Result<void> check_kind(const std::string& kind);
    base::Result<nlohmann::json> conversations(std::int64_t limit);
    base::Result<nlohmann::json> forget(std::string_view conversation);

    // Retention (docs/traces.md, "Retention"); read-write stores. Deletes in batches of
    // request.batch_traces traces, each its own write transaction; on SQLite gives the freed
    // pages back to the file system (incremental vacuum; a store created before auto_vacuum is
    // converted by one VACUUM on its first prune that deletes).
    base::Result<PruneCounts> prune(const PruneRequest& request);
    // Pins (or unpins) the session `id` names (as show takes it): a trace holding a pinned run is
    // never pruned. Answers schema::TracePinned.
    base::Result<nlohmann::json> pin(std::string_view id, bool pinned);
    // Sampling (docs/traces.md, "Sampling"; trace_sampling.cpp); read-write stores. One pass,
    // request.batch_traces top-level runs per write transaction; never a run still running.
    // With the SPARQL mirror on, each summarised run is queued again (its graph changed).
    base::Result<SampleCounts> sample(const SampleRequest& request);
    // Attaches `evaluation` (its `evaluated` ignored: the store records `now`) to the session `id`
    // names (as show takes it), keeping its newest schema::kMaxEvaluationsPerRun; the evaluations
    // go with their session when it is pruned. Unknown id: NotFound. Answers
    // schema::TraceEvaluated.
    base::Result<nlohmann::json> evaluate(std::string_view id,
                                          const schema::TraceEvaluation& evaluation,
                                          WallClock::time_point now = WallClock::now());
    // Evaluation runs (docs/evaluation.md, "Evaluation runs"; eval_runs.cpp). record_eval_run
    // stores `run` (checked by the caller) at `now`, replacing a run of the same name, and drops
    // the oldest beyond kMaxEvalRuns; answers {"run": <its summary row>, "replaced": bool}.
    base::Result<nlohmann::json> record_eval_run(const EvalRunRecord& run,
                                                 WallClock::time_point now = WallClock::now());
    // The runs newest recorded first: {"runs": [summary rows], "total": N}.
    base::Result<nlohmann::json> eval_runs(std::int64_t limit, std::int64_t offset);
    // One run with its rows: {"run": {..., "rows": [...]}}. Unknown name: NotFound.
    base::Result<nlohmann::json> eval_run(std::string_view name);
    // One of a run's charts (SVG). Unknown name: NotFound.
    base::Result<std::string> eval_chart(std::string_view name, EvalChart chart);
    // The bytes the store's rows take: SQLite's pages in use ((page_count - freelist_count) *
    // page_size: the file only shrinks after a vacuum); PostgreSQL's rows as stored (blobs,
    // texts, turns and payloads with a per-row allowance: its files do not shrink after DELETE).
    base::Result<std::int64_t> live_bytes();

    // The SPARQL mirror's queue (docs/traces.md, "Mirror to a SPARQL engine"; sparql_pending.cpp).
    // Up to `limit` queued runs, the longest queued first.
    base::Result<std::vector<MirrorItem>> mirror_pending(std::int64_t limit);
    // The graph of top-level run `session` (a URI) as N-Triples: every triple of the run and of
    // its sub-runs and its invalidation triples, what `traces show --format nquads` exports with
    // the graphs dropped (schema::rdf::shown_triples). Unknown: NotFound.
    base::Result<std::string> mirror_ntriples(std::string_view session);
    // The OpenTelemetry spans of run `session` (a URI or a unique UUID prefix, as show takes it)
    // and of all its sub-runs, nested (docs/traces.md, "OpenTelemetry export"; otel_spans.cpp):
    // one trace, the top-level run's. Read from its events' span facts (span_facts.hpp) when
    // the store exported as they were stored, else from the stored triples without a JSON tree.
    // Unknown: NotFound.
    base::Result<std::vector<otel::Span>> otel_spans(std::string_view session);
    // The spans of each run of `sessions` (URIs), one after the other, read in one transaction
    // (the exporter's batch); a run not stored (pruned since it was queued) is left out.
    base::Result<std::vector<otel::Span>> otel_spans(const std::vector<std::string>& sessions);
    // Takes `item` off the queue unless it was queued again since it was read (its `due`
    // changed); true when it was taken off. Read-write stores.
    base::Result<bool> mirror_done(const MirrorItem& item);
    // Queues `item` again behind the runs queued by `now` (a graph the engine refused).
    base::Result<void> mirror_later(const MirrorItem& item,
                                    WallClock::time_point now = WallClock::now());
    base::Result<MirrorBacklog> mirror_backlog();
    // Queues every ended top-level run (`glassbox traces mirror --all`); answers how many.
    base::Result<std::int64_t> mirror_all(WallClock::time_point now = WallClock::now());

    // The OpenTelemetry exporter's queue (otel_pending.cpp; docs/operations.md "OpenTelemetry").
    // Claims up to `limit` queued runs due by `now`, the longest queued first, for `lease`: their
    // rows become due at the lease's end, so no other exporter of the store (PostgreSQL: other
    // collectors) takes them meanwhile, and an exporter that died holding them lets them go
    // when it ends. Read-write stores.
    base::Result<std::vector<OtelItem>> otel_claim(std::int64_t limit,
                                                   std::chrono::milliseconds lease,
                                                   WallClock::time_point now = WallClock::now());
    // Takes a claimed run off the queue; a run queued again while claimed (a sub-run ended) stays,
    // due at `now`. True when it was taken off.
    base::Result<bool> otel_done(const OtelItem& item,
                                 WallClock::time_point now = WallClock::now());
    // otel_done of each of `items` in one write transaction (one commit per request sent);
    // answers how many were taken off.
    base::Result<std::size_t> otel_done_all(const std::vector<OtelItem>& items,
                                            WallClock::time_point now = WallClock::now());
    // Gives a claim back: the run is due again at the time it was queued (a request to retry).
    base::Result<void> otel_release(const OtelItem& item);
    // otel_release of each of `items` in one write transaction.
    base::Result<void> otel_release_all(const std::vector<OtelItem>& items);
    // Drops the oldest queued runs beyond `max_runs`; answers how many went.
    base::Result<std::int64_t> otel_trim(std::int64_t max_runs);
    // How many runs are queued (claimed ones included).
    base::Result<std::int64_t> otel_backlog();

    // A session URI, or a unique prefix of its UUID, to the session URI. Unknown: NotFound;
    // ambiguous prefix: InvalidRequest listing the matches.
    base::Result<std::string> resolve_session(std::string_view id);

    // The SQLite file; empty on PostgreSQL.
    const std::filesystem::path& path() const noexcept { return path_; }
    const StoreConfig& config() const noexcept { return config_; }
    // "sqlite" or "postgres".
    std::string_view backend() const noexcept;

private:
    TraceStore(std::filesystem::path path, StoreConfig config,
               std::unique_ptr<storage::sql::Connection> db);
    // What the store takes on disk (SQLite: the file and its WAL; PostgreSQL: its tables).
    base::Result<std::int64_t> stored_bytes();
    // The schema version check every open ends with; `where` names the store in errors.
    static base::Result<std::unique_ptr<TraceStore>> checked(std::unique_ptr<TraceStore> store,
                                                             const std::string& where);

    std::filesystem::path path_;
    StoreConfig config_;
    std::unique_ptr<storage::sql::Connection> db_;
};

// Checks one delivery: frames well formed, the body an explain message (§8) whose session, seq
// and end state agree with the frames. The error's message is the quarantine reason, starting
// "not JSON", "wrong types", "bad triple" or naming the frame that disagrees.
base::Result<schema::ExplainMessage> validate_delivery(const Delivery& delivery);

}  // namespace glassbox::trace
