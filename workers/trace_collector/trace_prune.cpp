// The trace store's retention (docs/traces.md, "Retention"): pinning, the live size, and prune,
// which deletes whole top-level traces (their evaluations with them) oldest first in batches of
// their own write transactions.
#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/sql.hpp"
#include "storage/sqlite_connection.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::Result;
using detail::to_ms;
using nlohmann::json;
using storage::sql::Connection;
using storage::sql::Row;
using storage::sql::TransactionKind;

namespace {

constexpr std::int64_t kMinInt64 = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
// What a row takes beside its blob or text (keys, header, index entries): the estimate that
// decides how many traces one budget round deletes, and PostgreSQL's live size.
constexpr std::int64_t kEventOverhead = 64;
constexpr std::int64_t kSessionOverhead = 256;
// Quarantine rows deleted per write transaction.
constexpr std::int64_t kQuarantineBatch = 1000;

// The top-level traces in `started` order after a cursor: runs with no parent, and runs whose
// parent is not stored (it was never stored, or went before them), so no run is left behind.
constexpr const char* kRootsSql =
    "SELECT id, started FROM sessions s WHERE (started, id) > (?1, ?2) AND started < ?3 "
    "AND (parent IS NULL OR NOT EXISTS(SELECT 1 FROM sessions p WHERE p.uri = s.parent)) "
    "ORDER BY started, id LIMIT ?4";

// A run and its sub-runs, recursively (UNION: a cycle of parents ends), with what they hold.
constexpr const char* kTreeSql =
    "WITH RECURSIVE tree(id, uri) AS (SELECT id, uri FROM sessions WHERE id = ?1 "
    "UNION SELECT s.id, s.uri FROM sessions s JOIN tree ON s.parent = tree.uri) "
    "SELECT s.id, s.pinned, s.status, s.last_event_at, "
    "(SELECT COUNT(*) FROM events e WHERE e.session = s.id), "
    "(SELECT CAST(COALESCE(SUM(e.triple_count), 0) AS BIGINT) FROM events e WHERE e.session = "
    "s.id), "
    "(SELECT CAST(COALESCE(SUM(length(e.triples)), 0) AS BIGINT) FROM events e WHERE e.session = "
    "s.id) "
    "FROM sessions s JOIN tree ON s.id = tree.id";

// One top-level trace as prune sees it.
struct TraceTree {
    std::vector<std::int64_t> sessions;
    bool keep = false;  // pinned, or a run of it still running
    std::int64_t events = 0;
    std::int64_t triples = 0;
    std::int64_t bytes = 0;  // the estimate: blobs and per-row allowances
};

Result<TraceTree> read_tree(Connection& db, std::int64_t root, std::int64_t running_since) {
    auto q = db.prepare(kTreeSql);
    if (!q) return q.error();
    q->bind(1, root);
    TraceTree tree;
    auto read = q->each([&](const Row& row) {
        tree.sessions.push_back(row.int64(0));
        const bool running = row.text(2) == "running" && row.int64(3) >= running_since;
        tree.keep = tree.keep || row.int64(1) != 0 || running;
        tree.events += row.int64(4);
        tree.triples += row.int64(5);
        tree.bytes += row.int64(6) + row.int64(4) * kEventOverhead + kSessionOverhead;
    });
    if (!read) return read.error();
    return tree;
}

// Where a prune pass is: its cursor over the top-level traces and the cutoff it stops at.
struct PassCursor {
    std::int64_t started = kMinInt64;
    std::int64_t id = kMinInt64;
    std::int64_t before = kMaxInt64;  // traces started before this
    bool done = false;
};

// The next traces of the pass that may go, at most `limit`, and about `bytes_wanted` of them
// at most (0: no bound). Moves the cursor past every trace it looked at.
Result<std::vector<TraceTree>> next_batch(Connection& db, PassCursor& cursor, std::int64_t limit,
                                          std::int64_t bytes_wanted, std::int64_t running_since) {
    std::vector<TraceTree> batch;
    std::int64_t bytes = 0;
    const auto full = [&] {
        return static_cast<std::int64_t>(batch.size()) >= limit ||
               (bytes_wanted != 0 && bytes >= bytes_wanted);
    };
    while (!cursor.done && !full()) {
        auto q = db.prepare(kRootsSql);
        if (!q) return q.error();
        q->bind(1, cursor.started).bind(2, cursor.id).bind(3, cursor.before).bind(4, limit);
        auto roots = q->collect([](const Row& row) {
            return std::pair{row.int64(0), row.int64(1)};
        });
        if (!roots) return roots.error();
        std::size_t looked = 0;
        for (const auto& [id, started] : *roots) {
            if (full()) break;
            ++looked;
            cursor.started = started;
            cursor.id = id;
            auto tree = read_tree(db, id, running_since);
            if (!tree) return tree.error();
            if (tree->keep) continue;
            bytes += tree->bytes;
            batch.push_back(std::move(tree).value());
        }
        if (looked == roots->size() && static_cast<std::int64_t>(roots->size()) < limit)
            cursor.done = true;
    }
    return batch;
}

Result<void> run_bound(Connection& db, const char* sql, std::int64_t value) {
    auto q = db.prepare(sql);
    if (!q) return q.error();
    q->bind(1, value);
    return q->run();
}

// Deletes the texts no kept event uses; answers their bytes. In the caller's write transaction.
Result<std::int64_t> delete_unused_texts(Connection& db, PruneCounts& counts) {
    // A kept event's texts were last used at or after its `received` (ingest moves last_used
    // forward): what was last used before the oldest kept event is used by none.
    constexpr const char* kUnused =
        " FROM texts WHERE last_used < COALESCE((SELECT MIN(received) FROM events), CAST(?1 AS "
        "BIGINT))";
    auto size = db.prepare(std::string("SELECT CAST(COALESCE(SUM(length(body)), 0) + COUNT(*) * ") +
                           std::to_string(kEventOverhead) + " AS BIGINT)" + kUnused);
    if (!size) return size.error();
    size->bind(1, kMaxInt64);
    auto bytes = size->first([](const Row& row) { return row.int64(0); });
    size->reset();
    if (!bytes) return bytes.error();
    if (auto r = run_bound(db, (std::string("DELETE") + kUnused).c_str(), kMaxInt64); !r)
        return r.error();
    counts.texts += db.changes();
    return bytes->value_or(0);
}

// Deletes the batch's runs with their events and turns (their conversations' summaries follow),
// then the texts no kept event uses; answers the bytes of those texts. In the caller's write
// transaction.
Result<std::int64_t> delete_batch(Connection& db, const StoreConfig& config,
                                  const std::vector<TraceTree>& batch, PruneCounts& counts) {
    std::set<std::string> conversations;
    auto turn_of = db.prepare("SELECT conversation FROM turns WHERE session = ?1");
    if (!turn_of) return turn_of.error();
    for (const auto& tree : batch) {
        for (const auto session : tree.sessions) {
            turn_of->bind(1, session);
            auto conversation =
                turn_of->first([](const Row& row) { return std::string(row.text(0)); });
            turn_of->reset();
            if (!conversation) return conversation.error();
            if (*conversation) {
                conversations.insert(std::move(**conversation));
                if (auto r = run_bound(db, "DELETE FROM turns WHERE session = ?1", session); !r)
                    return r.error();
                ++counts.turns;
            }
            if (auto r = run_bound(db, "DELETE FROM events WHERE session = ?1", session); !r)
                return r.error();
            if (auto r = run_bound(db, "DELETE FROM evaluations WHERE session = ?1", session); !r)
                return r.error();
            // The run's usage index, invalidations and text, its place in the SPARQL mirror's
            // queue (docs/traces.md, issue 36; its graph stays in the engine).
            for (const char* sql : {"DELETE FROM run_uses WHERE session = ?1",
                                    "DELETE FROM invalidations WHERE session = ?1",
                                    "DELETE FROM run_text WHERE session = ?1",
                                    // its model calls' costs (docs/traces.md, "Cost")
                                    "DELETE FROM step_costs WHERE session = ?1",
                                    "DELETE FROM sparql_pending WHERE session = ?1",
                                    "DELETE FROM otel_pending WHERE session = ?1"}) {
                if (auto r = run_bound(db, sql, session); !r) return r.error();
            }
            if (auto r = run_bound(db, "DELETE FROM sessions WHERE id = ?1", session); !r)
                return r.error();
        }
        ++counts.traces;
        counts.sessions += static_cast<std::int64_t>(tree.sessions.size());
        counts.events += tree.events;
        counts.triples += tree.triples;
    }
    for (const auto& conversation : conversations) {
        if (auto r = detail::refresh_conversation(db, config, conversation); !r) return r.error();
    }
    return delete_unused_texts(db, counts);
}

// The texts a dry run would see go: those last used before the oldest event of a trace it keeps.
Result<std::int64_t> texts_unused_without(Connection& db, const std::set<std::int64_t>& pruned) {
    auto events = db.prepare("SELECT session, received FROM events ORDER BY received");
    if (!events) return events.error();
    std::int64_t oldest_kept = kMaxInt64;
    auto read = events->each([&](const Row& row) {
        if (pruned.count(row.int64(0)) != 0) return true;
        oldest_kept = row.int64(1);
        return false;
    });
    if (!read) return read.error();
    auto count = db.prepare("SELECT COUNT(*) FROM texts WHERE last_used < ?1");
    if (!count) return count.error();
    count->bind(1, oldest_kept);
    auto n = count->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    return n->value_or(0);
}

Result<std::int64_t> single_int(Connection& db, const std::string& sql) {
    auto q = db.prepare(sql);
    if (!q) return q.error();
    auto n = q->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    return n->value_or(0);
}

}  // namespace

Result<json> TraceStore::pin(std::string_view id, bool pinned) {
    auto transaction = storage::sql::Transaction::begin(*db_, TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto uri = resolve_session(id);
    if (!uri) return uri.error();
    auto q = db_->prepare("UPDATE sessions SET pinned = ?1 WHERE uri = ?2");
    if (!q) return q.error();
    q->bind(1, std::int64_t{pinned ? 1 : 0}).bind(2, std::string_view{*uri});
    if (auto r = q->run(); !r) return r.error();
    // A run sampling summarised stays a summary (docs/traces.md, "Sampling"): the reply says so.
    auto sampled = db_->prepare(
        "SELECT CASE WHEN sampling = 'summarised' THEN 1 ELSE 0 END FROM sessions WHERE uri = ?1");
    if (!sampled) return sampled.error();
    sampled->bind(1, std::string_view{*uri});
    auto summary = sampled->first([](const Row& row) { return row.int64(0) != 0; });
    sampled->reset();
    if (!summary) return summary.error();
    if (auto r = transaction->commit(); !r) return r.error();
    json reply{{"session", *uri}, {"pinned", pinned}};
    if (summary->value_or(false)) reply["summary"] = true;
    return reply;
}

Result<std::int64_t> TraceStore::live_bytes() {
    if (db_->dialect() == storage::sql::Dialect::kSqlite) {
        auto pages = single_int(*db_, "PRAGMA page_count");
        auto free = single_int(*db_, "PRAGMA freelist_count");
        auto size = single_int(*db_, "PRAGMA page_size");
        if (!pages || !free || !size)
            return !pages ? pages.error() : !free ? free.error() : size.error();
        return (*pages - *free) * *size;
    }
    return single_int(
        *db_, "SELECT CAST((SELECT COALESCE(SUM(length(triples)), 0) + COUNT(*) * " +
                  std::to_string(kEventOverhead) + " FROM events) + (SELECT COUNT(*) * " +
                  std::to_string(kSessionOverhead) +
                  " FROM sessions) + (SELECT COALESCE(SUM(octet_length(body)), 0) + COUNT(*) * " +
                  std::to_string(kEventOverhead) +
                  " FROM texts) + (SELECT COALESCE(SUM(bytes), 0) + COUNT(*) * " +
                  std::to_string(kEventOverhead) +
                  " FROM turns) + (SELECT COALESCE(SUM(length(payload)), 0) FROM quarantine) + "
                  "(SELECT COALESCE(SUM(octet_length(answers)), 0) + COUNT(*) * " +
                  std::to_string(kSessionOverhead) + " FROM evaluations) AS BIGINT)");
}

namespace {

// SQLite: a store created before auto_vacuum=INCREMENTAL gets it, by one VACUUM (the whole file
// rewritten, ingest waiting meanwhile): from then on a prune's freed pages leave the file.
Result<void> ensure_incremental_vacuum(Connection& db) {
    if (db.dialect() != storage::sql::Dialect::kSqlite) return {};
    auto mode = single_int(db, "PRAGMA auto_vacuum");
    if (!mode) return mode.error();
    if (*mode == 2) return {};
    return db.exec("PRAGMA auto_vacuum = INCREMENTAL; VACUUM");
}

}  // namespace

namespace {

// Quarantine rows received before `before`, in batches of their own write transactions.
Result<void> prune_quarantine(Connection& db, std::int64_t before, bool dry_run,
                              PruneCounts& counts) {
    if (dry_run) {
        auto q = db.prepare("SELECT COUNT(*) FROM quarantine WHERE received < ?1");
        if (!q) return q.error();
        q->bind(1, before);
        auto n = q->first([](const Row& row) { return row.int64(0); });
        if (!n) return n.error();
        counts.quarantined = n->value_or(0);
        return {};
    }
    while (true) {
        auto transaction = storage::sql::Transaction::begin(db, TransactionKind::kWrite);
        if (!transaction) return transaction.error();
        auto q = db.prepare(
            "DELETE FROM quarantine WHERE id IN (SELECT id FROM quarantine WHERE received < ?1 "
            "ORDER BY id LIMIT ?2)");
        if (!q) return q.error();
        q->bind(1, before).bind(2, kQuarantineBatch);
        if (auto r = q->run(); !r) return r.error();
        const std::int64_t deleted = db.changes();
        if (auto r = transaction->commit(); !r) return r.error();
        counts.quarantined += deleted;
        if (deleted < kQuarantineBatch) return {};
    }
}

// ---- PostgreSQL: whole day partitions ------------------------------------------------------

// The runs of the top-level traces whose root has its events in day `day`'s partition, with
// their root, unless a run of the trace is pinned or still running (read_tree's rule): what
// dropping the partition deletes, recursively through sub-runs wherever their events are.
constexpr const char* kDoomedSql =
    "INSERT INTO prune_doomed(id, root) "
    "WITH RECURSIVE tree(root, id, uri) AS ("
    "SELECT id, id, uri FROM sessions s WHERE part = ?1 "
    "AND (parent IS NULL OR NOT EXISTS(SELECT 1 FROM sessions p WHERE p.uri = s.parent)) "
    "UNION SELECT tree.root, s.id, s.uri FROM sessions s JOIN tree ON s.parent = tree.uri), "
    "kept AS (SELECT DISTINCT tree.root FROM tree JOIN sessions s ON s.id = tree.id "
    "WHERE s.pinned <> 0 OR (s.status = 'running' AND s.last_event_at >= ?2)) "
    "SELECT id, root FROM tree WHERE root NOT IN (SELECT root FROM kept) "
    "ON CONFLICT(id) DO NOTHING";

// The days of the events partitions there are, oldest first (events_kept is none).
Result<std::vector<std::int64_t>> partition_days(Connection& db) {
    auto q = db.prepare(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass('events')");
    if (!q) return q.error();
    std::vector<std::int64_t> days;
    auto read = q->each([&](const Row& row) {
        std::string_view name = row.text(0);
        if (name.substr(0, 8) != "events_d") return;
        name.remove_prefix(8);
        const bool negative = !name.empty() && name.front() == 'm';
        if (negative) name.remove_prefix(1);
        std::int64_t day = 0;
        const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), day);
        if (ec == std::errc() && end == name.data() + name.size())
            days.push_back(negative ? -day : day);
    });
    if (!read) return read.error();
    std::sort(days.begin(), days.end());
    return days;
}

// Deletes the events of doomed runs whose events are in another partition than `day`'s (a
// sub-run started the next day): row deletes, counted.
Result<void> delete_doomed_elsewhere(Connection& db, std::int64_t day, PruneCounts& counts) {
    auto elsewhere = db.prepare(
        "SELECT id, part FROM sessions WHERE id IN (SELECT id FROM prune_doomed) AND part <> ?1");
    if (!elsewhere) return elsewhere.error();
    elsewhere->bind(1, day);
    auto runs = elsewhere->collect([](const Row& row) {
        return std::pair{row.int64(0), row.int64(1)};
    });
    if (!runs) return runs.error();
    auto remove = db.prepare(
        "WITH d AS (DELETE FROM events WHERE session = ?1 AND part = ?2 RETURNING triple_count) "
        "SELECT COUNT(*), CAST(COALESCE(SUM(triple_count), 0) AS BIGINT) FROM d");
    if (!remove) return remove.error();
    for (const auto& [id, part] : *runs) {
        remove->bind(1, id).bind(2, part);
        auto n = remove->first([&](const Row& row) {
            counts.events += row.int64(0);
            counts.triples += row.int64(1);
            return true;
        });
        remove->reset();
        if (!n) return n.error();
    }
    return {};
}

// The turns of the doomed runs deleted; their conversations, whose summaries must follow.
Result<std::set<std::string>> delete_doomed_turns(Connection& db, PruneCounts& counts) {
    auto q = db.prepare(
        "SELECT DISTINCT conversation FROM turns WHERE session IN (SELECT id FROM prune_doomed)");
    if (!q) return q.error();
    std::set<std::string> conversations;
    auto read = q->each([&](const Row& row) { conversations.emplace(row.text(0)); });
    if (!read) return read.error();
    if (auto r = db.exec("DELETE FROM turns WHERE session IN (SELECT id FROM prune_doomed)"); !r)
        return r.error();
    counts.turns += db.changes();
    return conversations;
}

// Drops day `day`'s partition in one write transaction: the traces rooted in it go whole (their
// sub-runs' events elsewhere by row), its rows of kept traces (pinned, running, or a run whose
// trace is rooted in a later day) move to events_kept first.
Result<void> drop_partition(Connection& db, const StoreConfig& config, std::int64_t day,
                            std::int64_t running_since, PruneCounts& counts) {
    auto transaction = storage::sql::Transaction::begin(db, TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    if (auto r = db.exec(
            "CREATE TEMP TABLE IF NOT EXISTS prune_doomed(id BIGINT PRIMARY KEY, root BIGINT NOT "
            "NULL) ON COMMIT DELETE ROWS");
        !r)
        return r.error();
    auto doomed = db.prepare(kDoomedSql);
    if (!doomed) return doomed.error();
    doomed->bind(1, day).bind(2, running_since);
    if (auto r = doomed->run(); !r) return r.error();
    const std::string kept = std::to_string(detail::kKeptPart);
    for (const char* move :
         {"UPDATE events SET part = ?2 WHERE part = ?1 AND session NOT IN (SELECT id FROM "
          "prune_doomed)",
          "UPDATE sessions SET part = ?2 WHERE part = ?1 AND id NOT IN (SELECT id FROM "
          "prune_doomed)"}) {
        auto q = db.prepare(move);
        if (!q) return q.error();
        q->bind(1, day).bind(2, detail::kKeptPart);
        if (auto r = q->run(); !r) return r.error();
    }
    if (auto r = delete_doomed_elsewhere(db, day, counts); !r) return r.error();
    auto in_day = db.prepare(
        "SELECT COUNT(*), CAST(COALESCE(SUM(triple_count), 0) AS BIGINT) FROM events WHERE part "
        "= ?1");
    auto runs = db.prepare("SELECT COUNT(*), COUNT(DISTINCT root) FROM prune_doomed");
    if (!in_day || !runs) return !in_day ? in_day.error() : runs.error();
    in_day->bind(1, day);
    auto e = in_day->first([&](const Row& row) {
        counts.events += row.int64(0);
        counts.triples += row.int64(1);
        return true;
    });
    auto r = runs->first([&](const Row& row) {
        counts.sessions += row.int64(0);
        counts.traces += row.int64(1);
        return true;
    });
    if (!e || !r) return !e ? e.error() : r.error();
    auto conversations = delete_doomed_turns(db, counts);
    if (!conversations) return conversations.error();
    if (auto x = db.exec("DELETE FROM evaluations WHERE session IN (SELECT id FROM prune_doomed); "
                         "DELETE FROM run_uses WHERE session IN (SELECT id FROM prune_doomed); "
                         "DELETE FROM invalidations WHERE session IN (SELECT id FROM "
                         "prune_doomed); "
                         "DELETE FROM run_text WHERE session IN (SELECT id FROM prune_doomed); "
                         "DELETE FROM step_costs WHERE session IN (SELECT id FROM "
                         "prune_doomed); "
                         "DELETE FROM sparql_pending WHERE session IN (SELECT id FROM "
                         "prune_doomed); "
                         "DELETE FROM otel_pending WHERE session IN (SELECT id FROM "
                         "prune_doomed); "
                         "DELETE FROM sessions WHERE id IN (SELECT id FROM prune_doomed); DROP "
                         "TABLE " +
                         detail::partition_name(day));
        !x)
        return x.error();
    for (const auto& conversation : *conversations) {
        if (auto x = detail::refresh_conversation(db, config, conversation); !x) return x.error();
    }
    if (auto x = delete_unused_texts(db, counts); !x) return x.error();
    return transaction->commit();
}

// Every day partition wholly before `before` dropped, oldest first, each in its own transaction.
// Answers whether any was.
Result<bool> drop_partitions(Connection& db, const StoreConfig& config, std::int64_t before,
                             std::int64_t running_since, PruneCounts& counts) {
    auto days = partition_days(db);
    if (!days) return days.error();
    bool dropped = false;
    for (const auto day : *days) {
        if (day >= detail::kKeptPart - 1 || (day + 1) * detail::kDayMs > before) break;
        if (auto r = drop_partition(db, config, day, running_since, counts); !r) return r.error();
        dropped = true;
    }
    return dropped;
}

// One prune: its passes over the traces (by age, then by size) and its counts.
class PruneRun {
public:
    PruneRun(Connection& db, const StoreConfig& config, const PruneRequest& request,
             std::function<Result<std::int64_t>()> measure)
        : db_(db), config_(config), request_(request), measure_(std::move(measure)) {
        now_ = to_ms(request.now);
        running_since_ =
            now_ -
            std::chrono::duration_cast<std::chrono::milliseconds>(config.incomplete_after).count();
        limit_ = std::max<std::int64_t>(request.batch_traces, 1);
    }

    Result<PruneCounts> run() {
        auto before = measure_();
        if (!before) return before.error();
        counts_.bytes_before = live_ = *before;
        if (request_.older_than) {
            PassCursor cursor;
            cursor.before = now_ - request_.older_than->count();
            // PostgreSQL: the days wholly before the cut-off go by partition, the rest by row.
            if (!request_.dry_run && db_.dialect() == storage::sql::Dialect::kPostgres) {
                auto dropped =
                    drop_partitions(db_, config_, cursor.before, running_since_, counts_);
                if (!dropped) return dropped.error();
                if (*dropped) {
                    auto measured = measure_();
                    if (!measured) return measured.error();
                    live_ = *measured;
                }
            }
            if (auto r = pass(cursor, false); !r) return r.error();
            if (auto r = prune_quarantine(db_, cursor.before, request_.dry_run, counts_); !r)
                return r.error();
        }
        if (request_.max_bytes) {
            if (auto r = pass(PassCursor{}, true); !r) return r.error();
        }
        if (request_.dry_run) {
            if (auto r = count_dry_rest(); !r) return r.error();
            counts_.bytes_after = counts_.bytes_before - estimated_;
            return counts_;
        }
        // SQLite: the file shrinks when the WAL holding the vacuumed pages is checkpointed; a
        // passive checkpoint waits for no reader or writer (one in the way leaves it for later).
        if (counts_.traces > 0 && db_.dialect() == storage::sql::Dialect::kSqlite) {
            if (auto r = db_.exec("PRAGMA wal_checkpoint(PASSIVE)"); !r) return r.error();
        }
        auto after = measure_();
        if (!after) return after.error();
        counts_.bytes_after = *after;
        return counts_;
    }

private:
    // By age (a cutoff, no byte goal) or by size (no cutoff: the bytes over the budget), one
    // transaction per batch.
    Result<void> pass(PassCursor cursor, bool by_size) {
        while (!cursor.done) {
            std::int64_t over = by_size ? live_ - *request_.max_bytes : 0;
            if (by_size && over <= 0 && estimated_live_) {
                // Under budget by the estimates: measure before believing it.
                auto measured = measure_();
                if (!measured) return measured.error();
                live_ = *measured;
                estimated_live_ = false;
                over = live_ - *request_.max_bytes;
            }
            if (by_size && over <= 0) return {};
            auto transaction = storage::sql::Transaction::begin(
                db_, request_.dry_run ? TransactionKind::kRead : TransactionKind::kWrite);
            if (!transaction) return transaction.error();
            auto batch = next_batch(db_, cursor, limit_, over, running_since_);
            if (!batch) return batch.error();
            if (batch->empty()) return {};
            std::int64_t batch_bytes = 0;
            for (const auto& tree : *batch) batch_bytes += tree.bytes;
            if (request_.dry_run) {
                count_dry(*batch);
                estimated_ += batch_bytes;
                live_ -= batch_bytes;
                continue;
            }
            auto text_bytes = delete_batch(db_, config_, *batch, counts_);
            if (!text_bytes) return text_bytes.error();
            if (auto r = transaction->commit(); !r) return r.error();
            if (auto r = after_batch(batch_bytes + *text_bytes); !r) return r.error();
        }
        return {};
    }

    // SQLite: the batch's freed pages leave the file, and the store is measured again;
    // PostgreSQL: what the batch deleted comes off, as live_bytes() counts it (measuring reads
    // every row), and the store is measured when that says it is under budget.
    Result<void> after_batch(std::int64_t batch_bytes) {
        if (db_.dialect() != storage::sql::Dialect::kSqlite) {
            live_ -= batch_bytes;
            estimated_live_ = true;
            return {};
        }
        if (auto r = db_.exec("PRAGMA incremental_vacuum"); !r) return r.error();
        auto measured = measure_();
        if (!measured) return measured.error();
        live_ = *measured;
        return {};
    }

    void count_dry(const std::vector<TraceTree>& batch) {
        for (const auto& tree : batch) {
            pruned_.insert(tree.sessions.begin(), tree.sessions.end());
            ++counts_.traces;
            counts_.sessions += static_cast<std::int64_t>(tree.sessions.size());
            counts_.events += tree.events;
            counts_.triples += tree.triples;
        }
    }

    // A dry run's turns and texts: those of the runs it would delete.
    Result<void> count_dry_rest() {
        auto transaction = storage::sql::Transaction::begin(db_, TransactionKind::kRead);
        if (!transaction) return transaction.error();
        auto q = db_.prepare("SELECT COUNT(*) FROM turns WHERE session = ?1");
        if (!q) return q.error();
        for (const auto session : pruned_) {
            q->bind(1, session);
            auto n = q->first([](const Row& row) { return row.int64(0); });
            q->reset();
            if (!n) return n.error();
            counts_.turns += n->value_or(0);
        }
        if (pruned_.empty()) return {};  // nothing deleted: no text is looked at either
        auto texts = texts_unused_without(db_, pruned_);
        if (!texts) return texts.error();
        counts_.texts = *texts;
        return {};
    }

    Connection& db_;
    const StoreConfig& config_;
    const PruneRequest& request_;
    std::function<Result<std::int64_t>()> measure_;
    std::int64_t now_ = 0;
    std::int64_t running_since_ = 0;
    std::int64_t limit_ = 1;
    PruneCounts counts_;
    std::int64_t live_ = 0;
    bool estimated_live_ = false;    // live_ less estimates since it was measured
    std::set<std::int64_t> pruned_;  // dry run: the runs that would go
    std::int64_t estimated_ = 0;     // dry run: their estimated bytes
};

}  // namespace

Result<PruneCounts> TraceStore::prune(const PruneRequest& request) {
    if (!request.dry_run && (request.older_than || request.max_bytes)) {
        if (auto r = ensure_incremental_vacuum(*db_); !r) return r.error();
    }
    return PruneRun(*db_, config_, request, [this] { return live_bytes(); }).run();
}

}  // namespace glassbox::trace
