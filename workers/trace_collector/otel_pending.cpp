// The OpenTelemetry exporter's queue in the trace store (issue 37, docs/operations.md
// "OpenTelemetry"): otel_pending holds the ended top-level runs to send as spans, queued in the
// ingest transaction that ended them, claimed by an exporter for a lease while it sends them and
// taken off once the receiver took them.
//
// Several collectors may share one PostgreSQL store and so one queue. A claim moves the claimed
// rows' `due` to the end of a lease (pending rows are those due by now), in one statement that
// skips rows another exporter is claiming (FOR UPDATE SKIP LOCKED): two exporters never send the
// same run unless one outlives its lease (it died, or a request took longer than the lease, which
// the exporter makes longer than a request's bound). The claim takes no writer lock: ingest never
// waits for the exporter. On SQLite one collector writes the file, and a claim is a short write
// transaction.
#include <algorithm>
#include <optional>
#include <utility>

#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::Result;
using storage::sql::Connection;
using storage::sql::Row;

namespace {

bool on_postgres(const Connection& db) { return db.dialect() == storage::sql::Dialect::kPostgres; }

// The claim on PostgreSQL: one statement, rows locked by another claim skipped.
constexpr const char* kClaimPostgres =
    "WITH picked AS (SELECT session, due FROM otel_pending WHERE due <= ?1 ORDER BY due, session "
    "LIMIT ?2 FOR UPDATE SKIP LOCKED) UPDATE otel_pending p SET due = ?3 FROM picked, sessions s "
    "WHERE p.session = picked.session AND s.id = picked.session RETURNING p.session, s.uri, "
    "picked.due";

}  // namespace

namespace detail {

Result<void> queue_otel(Connection& db, const std::vector<std::int64_t>& sessions,
                        std::int64_t due_ms) {
    // As queue_mirror: an exporter holding a row (claimed, or as read) keeps it for the next pass
    // rather than taking off a change it has not sent.
    return queue_top_level(db, "otel_pending", sessions, due_ms);
}

}  // namespace detail

Result<std::vector<OtelItem>> TraceStore::otel_claim(std::int64_t limit,
                                                     std::chrono::milliseconds lease,
                                                     WallClock::time_point now) {
    const std::int64_t now_ms = detail::to_ms(now);
    const std::int64_t until = now_ms + std::max<std::int64_t>(lease.count(), 1);
    std::vector<OtelItem> out;
    const auto read = [&](const Row& row) {
        out.push_back(OtelItem{row.int64(0), std::string(row.text(1)), row.int64(2), until});
    };
    if (on_postgres(*db_)) {
        auto q = db_->prepare(kClaimPostgres);
        if (!q) return q.error();
        q->bind(1, now_ms).bind(2, std::max<std::int64_t>(limit, 1)).bind(3, until);
        if (auto r = q->each(read); !r) return r.error();
        std::sort(out.begin(), out.end(), [](const OtelItem& a, const OtelItem& b) {
            return std::pair(a.queued, a.row) < std::pair(b.queued, b.row);
        });
        return out;
    }
    auto transaction =
        storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto q = db_->prepare(
        "SELECT p.session, s.uri, p.due FROM otel_pending p JOIN sessions s ON s.id = p.session "
        "WHERE p.due <= ?1 ORDER BY p.due, p.session LIMIT ?2");
    if (!q) return q.error();
    q->bind(1, now_ms).bind(2, std::max<std::int64_t>(limit, 1));
    if (auto r = q->each(read); !r) return r.error();
    auto hold = db_->prepare("UPDATE otel_pending SET due = ?2 WHERE session = ?1");
    if (!hold) return hold.error();
    for (const OtelItem& item : out) {
        hold->bind(1, item.row).bind(2, until);
        auto r = hold->run();
        hold->reset();
        if (!r) return r.error();
    }
    if (auto r = transaction->commit(); !r) return r.error();
    return out;
}

Result<bool> TraceStore::otel_done(const OtelItem& item, WallClock::time_point now) {
    auto q = db_->prepare("DELETE FROM otel_pending WHERE session = ?1 AND due = ?2");
    if (!q) return q.error();
    q->bind(1, item.row).bind(2, item.lease);
    if (auto r = q->run(); !r) return r.error();
    if (db_->changes() > 0) return true;
    // Queued again while claimed: its due moved past the lease (no other claim can hold it), so
    // it is due now and goes in the next pass.
    auto again = db_->prepare("UPDATE otel_pending SET due = ?2 WHERE session = ?1 AND due > ?3");
    if (!again) return again.error();
    again->bind(1, item.row).bind(2, detail::to_ms(now)).bind(3, item.lease);
    if (auto r = again->run(); !r) return r.error();
    return false;
}

Result<void> TraceStore::otel_release(const OtelItem& item) {
    auto q = db_->prepare("UPDATE otel_pending SET due = ?2 WHERE session = ?1 AND due = ?3");
    if (!q) return q.error();
    q->bind(1, item.row).bind(2, item.queued).bind(3, item.lease);
    return q->run();
}

Result<std::size_t> TraceStore::otel_done_all(const std::vector<OtelItem>& items,
                                              WallClock::time_point now) {
    if (items.empty()) return std::size_t{0};
    // SQLite: one commit for the batch (a commit is a WAL write and sync each). PostgreSQL: each
    // DELETE commits on its own, taking no store-wide writer lock (each row is this claim's).
    std::optional<storage::sql::Transaction> transaction;
    if (!on_postgres(*db_)) {
        auto begun = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
        if (!begun) return begun.error();
        transaction.emplace(std::move(begun).value());
    }
    std::size_t taken = 0;
    for (const OtelItem& item : items) {
        auto done = otel_done(item, now);
        if (!done) return done.error();
        taken += *done ? 1 : 0;
    }
    if (transaction) {
        if (auto r = transaction->commit(); !r) return r.error();
    }
    return taken;
}

Result<void> TraceStore::otel_release_all(const std::vector<OtelItem>& items) {
    std::optional<storage::sql::Transaction> transaction;
    if (!on_postgres(*db_) && !items.empty()) {
        auto begun = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
        if (!begun) return begun.error();
        transaction.emplace(std::move(begun).value());
    }
    for (const OtelItem& item : items) {
        if (auto r = otel_release(item); !r) return r;
    }
    if (transaction) return transaction->commit();
    return {};
}

Result<std::int64_t> TraceStore::otel_trim(std::int64_t max_runs) {
    auto backlog = otel_backlog();
    if (!backlog) return backlog.error();
    const std::int64_t excess = *backlog - std::max<std::int64_t>(max_runs, 0);
    if (excess <= 0) return std::int64_t{0};
    auto q = db_->prepare(
        "DELETE FROM otel_pending WHERE session IN (SELECT session FROM otel_pending ORDER BY "
        "due, session LIMIT ?1)");
    if (!q) return q.error();
    q->bind(1, excess);
    if (auto r = q->run(); !r) return r.error();
    return db_->changes();
}

Result<std::int64_t> TraceStore::otel_backlog() {
    auto q = db_->prepare("SELECT COUNT(*) FROM otel_pending");
    if (!q) return q.error();
    std::int64_t out = 0;
    auto read = q->first([&](const Row& row) {
        out = row.int64(0);
        return true;
    });
    if (!read) return read.error();
    return out;
}

}  // namespace glassbox::trace
