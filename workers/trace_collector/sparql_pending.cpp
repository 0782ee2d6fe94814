// The SPARQL mirror's queue in the trace store (issue 36, docs/traces.md "Mirror to a SPARQL
// engine"): sparql_pending holds the top-level runs whose graph is to be (re)written in the
// engine, queued in the ingest transaction that changed them, taken off after the engine took
// their graph.
#include <algorithm>
#include <utility>

#include "schema/messages_trace.hpp"
#include "schema/trace_rdf.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using storage::sql::Connection;
using storage::sql::Row;

namespace {

// Parent chains longer than this are not followed (a cycle, or a damaged store).
constexpr std::int64_t kMaxMirrorDepth = 64;

// The upsert's conflict clause for the queue `table`: a row queued already gets a later due
// (never the same one, so a mirror or exporter holding the row as read does not take off the
// newer change).
std::string on_conflict(const Connection& db, std::string_view table = "sparql_pending") {
    const bool postgres = db.dialect() == storage::sql::Dialect::kPostgres;
    std::string out = " ON CONFLICT(session) DO UPDATE SET due = ";
    out.append(postgres ? "GREATEST" : "MAX");
    out.append("(excluded.due, ").append(table).append(".due + 1)");
    return out;
}

}  // namespace

namespace detail {

Result<void> queue_mirror(Connection& db, const std::vector<std::int64_t>& sessions,
                          std::int64_t due_ms) {
    return queue_top_level(db, "sparql_pending", sessions, due_ms);
}

Result<void> queue_top_level(Connection& db, std::string_view table,
                             const std::vector<std::int64_t>& sessions, std::int64_t due_ms) {
    if (sessions.empty()) return {};
    std::vector<std::int64_t> ids = sessions;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    // The top of the stored parent chain (as run_uses and show follow it: a sub-run's parent is
    // its caller's session URI), queued when it is a top-level run that has ended.
    std::string sql =
        "WITH RECURSIVE up(id, parent, depth) AS (SELECT id, parent, 0 FROM sessions WHERE id = "
        "?1 UNION ALL SELECT s.id, s.parent, up.depth + 1 FROM sessions s JOIN up ON s.uri = "
        "up.parent WHERE up.depth < ?3) "
        "INSERT INTO ";
    sql.append(table).append(
        "(session, due) SELECT s.id, CAST(?2 AS BIGINT) FROM sessions s "
        "WHERE s.id = (SELECT id FROM up ORDER BY depth DESC LIMIT 1) AND s.parent IS NULL AND "
        "s.status <> 'running'");
    sql.append(on_conflict(db, table));
    auto upsert = db.prepare(sql);
    if (!upsert) return upsert.error();
    for (const std::int64_t id : ids) {
        upsert->bind(1, id).bind(2, due_ms).bind(3, kMaxMirrorDepth);
        auto r = upsert->run();
        upsert->reset();
        if (!r) return r;
    }
    return {};
}

Result<void> queue_mirror_invalidated(Connection& db, std::int64_t change, std::int64_t due_ms) {
    std::string sql =
        "INSERT INTO sparql_pending(session, due) SELECT s.id, CAST(?2 AS BIGINT) FROM "
        "invalidations i JOIN sessions c ON c.uri = i.change JOIN sessions s ON s.id = i.session "
        "WHERE c.id = ?1 AND s.parent IS NULL AND s.status <> 'running'";
    sql.append(on_conflict(db));
    auto upsert = db.prepare(sql);
    if (!upsert) return upsert.error();
    upsert->bind(1, change).bind(2, due_ms);
    return upsert->run();
}

}  // namespace detail

Result<std::vector<MirrorItem>> TraceStore::mirror_pending(std::int64_t limit) {
    auto q = db_->prepare(
        "SELECT p.session, s.uri, p.due FROM sparql_pending p JOIN sessions s ON s.id = p.session "
        "ORDER BY p.due, p.session LIMIT ?1");
    if (!q) return q.error();
    q->bind(1, std::max<std::int64_t>(limit, 1));
    std::vector<MirrorItem> out;
    auto read = q->each([&](const Row& row) {
        out.push_back(MirrorItem{row.int64(0), std::string(row.text(1)), row.int64(2)});
    });
    if (!read) return read.error();
    return out;
}

Result<std::string> TraceStore::mirror_ntriples(std::string_view session) {
    auto shown = show(session);
    if (!shown) return shown.error();
    auto trace = schema::decode<schema::TraceDetail>(*shown);
    if (!trace) {
        return make_error(ErrorType::kInternal, "trace store: the trace " + std::string(session) +
                                                    " does not decode: " + trace.error().message);
    }
    return schema::rdf::render_ntriples(schema::rdf::shown_triples(*trace));
}

Result<bool> TraceStore::mirror_done(const MirrorItem& item) {
    auto transaction =
        storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto q = db_->prepare("DELETE FROM sparql_pending WHERE session = ?1 AND due = ?2");
    if (!q) return q.error();
    q->bind(1, item.row).bind(2, item.due);
    if (auto r = q->run(); !r) return r.error();
    const bool taken = db_->changes() > 0;
    if (auto r = transaction->commit(); !r) return r.error();
    return taken;
}

Result<void> TraceStore::mirror_later(const MirrorItem& item, WallClock::time_point now) {
    const bool postgres = db_->dialect() == storage::sql::Dialect::kPostgres;
    std::string sql = "UPDATE sparql_pending SET due = ";
    sql.append(postgres ? "GREATEST" : "MAX");
    sql.append("(CAST(?2 AS BIGINT), due + 1) WHERE session = ?1");
    auto q = db_->prepare(sql);
    if (!q) return q.error();
    q->bind(1, item.row).bind(2, detail::to_ms(now));
    return q->run();
}

Result<MirrorBacklog> TraceStore::mirror_backlog() {
    auto q = db_->prepare("SELECT COUNT(*), MIN(due) FROM sparql_pending");
    if (!q) return q.error();
    MirrorBacklog out;
    auto read = q->first([&](const Row& row) {
        out.pending = row.int64(0);
        if (!row.is_null(1)) out.oldest_due = row.int64(1);
        return true;
    });
    if (!read) return read.error();
    return out;
}

Result<std::int64_t> TraceStore::mirror_all(WallClock::time_point now) {
    auto transaction =
        storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    std::string sql =
        "INSERT INTO sparql_pending(session, due) SELECT id, CAST(?1 AS BIGINT) FROM sessions "
        "WHERE parent IS NULL AND status <> 'running'";
    sql.append(on_conflict(*db_));
    auto q = db_->prepare(sql);
    if (!q) return q.error();
    q->bind(1, detail::to_ms(now));
    if (auto r = q->run(); !r) return r.error();
    const std::int64_t queued = db_->changes();
    if (auto r = transaction->commit(); !r) return r.error();
    return queued;
}

}  // namespace glassbox::trace
