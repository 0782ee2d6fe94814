// Conversations in the trace store (docs/traces.md §4): ended top-level runs that carry
// gb:conversation indexed as turns at ingest, bounded per conversation, and the `turns`,
// `conversations` and `forget` reads and delete.
#include <algorithm>
#include <utility>

#include "base/time_format.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages_trace.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::Result;
using nlohmann::json;
using storage::sql::Connection;

namespace {

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence, "…" marking the cut.
std::string cut_utf8(std::string text, std::size_t max) {
    if (text.size() <= max) return text;
    static constexpr std::string_view kEllipsis = "…";
    std::size_t end = max > kEllipsis.size() ? max - kEllipsis.size() : 0;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text.resize(end);
    if (max >= kEllipsis.size()) text += kEllipsis;
    return text;
}

// What a run's stored triples say its answer is: the last gb:answerText and gb:shortAnswer on a
// step of the run (its Synthesis or Conclusion; a sub-run's steps are other sessions).
struct RunAnswer {
    std::string answer;
    std::optional<std::string> short_answer;
};

Result<RunAnswer> run_answer(Connection& db, std::int64_t session, std::string_view uuid) {
    namespace v = schema::vocab;
    TripleBlobReader reader;
    RunAnswer found;
    auto scanned = detail::each_stored_record(
        db, reader, session, [&](std::int64_t, const StoredTriple& record) -> Result<bool> {
            // A pre-filter on the stored JSON (the local names hold no character JSON escapes);
            // each candidate is then decoded and its predicate compared exactly.
            if (record.triple.find("ns#answerText") == std::string_view::npos &&
                record.triple.find("ns#shortAnswer") == std::string_view::npos)
                return true;
            auto read = schema::parse_untrusted_json(record.triple);
            const json t = read ? std::move(read).value() : json();
            const auto iri_of = [&](const char* key) -> std::string {
                if (!t.is_object() || !t.contains(key) || !t[key].is_object()) return {};
                const auto& term = t[key];
                if (!term.contains("i") || !term["i"].is_string()) return {};
                return term["i"].get<std::string>();
            };
            const auto subject = schema::explain::RunUris::from_uri(iri_of("s"));
            if (!subject || subject->uuid() != uuid) return true;
            const std::string predicate = iri_of("p");
            if (!t.contains("o") || !t["o"].is_object() || !t["o"].contains("v") ||
                !t["o"]["v"].is_string())
                return true;
            std::optional<std::string> text;
            if (record.text_id) {
                auto stored = detail::stored_text(db, *record.text_id);
                if (!stored) return stored.error();
                text = std::move(stored).value();
            }
            std::string value = text ? std::move(*text) : t["o"]["v"].get<std::string>();
            if (predicate == v::kAnswerText) {
                found.answer = std::move(value);
            } else if (predicate == v::kShortAnswer) {
                found.short_answer = std::move(value);
            }
            return true;
        });
    if (!scanned) return scanned.error();
    return found;
}

// Drops the oldest turns of `conversation` beyond the bounds and writes its summary row (or
// deletes it when no turn is left).
Result<void> enforce_bounds(Connection& db, const StoreConfig& config,
                            const std::string& conversation) {
    auto q = db.prepare(
        "SELECT session, bytes, started FROM turns WHERE conversation = ?1 "
        "ORDER BY started DESC, session DESC");
    if (!q) return q.error();
    q->bind(1, std::string_view{conversation});
    std::vector<std::int64_t> dropped;
    std::int64_t kept = 0;
    std::int64_t bytes = 0;
    std::int64_t first = 0;
    std::int64_t last = 0;
    auto read = q->each([&](const storage::sql::Row& row) {
        const std::int64_t size = row.int64(1);
        // Newest first: a turn is kept while it fits, and everything older than the first one
        // that does not fit goes too (a conversation keeps its most recent stretch, unbroken).
        if (!dropped.empty() || kept >= config.conversation_max_turns ||
            bytes + size > config.conversation_max_bytes) {
            dropped.push_back(row.int64(0));
            return;
        }
        if (kept == 0) last = row.int64(2);
        first = row.int64(2);
        ++kept;
        bytes += size;
    });
    if (!read) return read.error();
    q->reset();
    if (!dropped.empty()) {
        auto drop = db.prepare("DELETE FROM turns WHERE session = ?1");
        if (!drop) return drop.error();
        for (const auto id : dropped) {
            drop->bind(1, id);
            auto r = drop->run();
            drop->reset();
            if (!r) return r.error();
        }
    }
    if (kept == 0) {
        auto gone = db.prepare("DELETE FROM conversations WHERE id = ?1");
        if (!gone) return gone.error();
        gone->bind(1, std::string_view{conversation});
        return gone->run();
    }
    auto upsert = db.prepare(
        "INSERT INTO conversations(id, turns, bytes, started, last) VALUES(?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT(id) DO UPDATE SET turns = ?2, bytes = ?3, started = ?4, last = ?5");
    if (!upsert) return upsert.error();
    upsert->bind(1, std::string_view{conversation})
        .bind(2, kept)
        .bind(3, bytes)
        .bind(4, first)
        .bind(5, last);
    return upsert->run();
}

}  // namespace

namespace detail {

namespace {

// A finished top-level run of a conversation, as index_turn reads it.
struct TurnRun {
    std::string uuid;
    std::string conversation;
    std::int64_t started = 0;
    std::string status;
    std::string question;
};

}  // namespace

Result<void> refresh_conversation(Connection& db, const StoreConfig& config,
                                  const std::string& conversation) {
    return enforce_bounds(db, config, conversation);
}

Result<void> index_turn(Connection& db, const StoreConfig& config, std::int64_t session) {
    auto q = db.prepare(
        "SELECT s.uuid, s.conversation, s.started, s.status, s.question, "
        "EXISTS(SELECT 1 FROM turns WHERE session = s.id) FROM sessions s "
        "WHERE s.id = ?1 AND s.parent IS NULL AND s.conversation IS NOT NULL AND s.status <> "
        "'running'");
    if (!q) return q.error();
    q->bind(1, session);
    auto found = q->first([](const storage::sql::Row& row) {
        // Not a turn (a sub-run, no conversation, still running), or indexed already.
        if (row.is_null(0) || row.int64(5) != 0) return std::optional<TurnRun>{};
        return std::optional<TurnRun>(TurnRun{
            std::string(row.text(0)), std::string(row.text(1)), row.is_null(2) ? 0 : row.int64(2),
            std::string(row.text(3)), row.is_null(4) ? std::string() : std::string(row.text(4))});
    });
    if (!found) return found.error();
    q->reset();
    if (!found->has_value() || !found->value()) return {};
    auto& [uuid, conversation, started, status, question] = *found->value();
    if (conversation.empty() || conversation.size() > schema::kMaxSessionIdBytes) return {};

    auto answer = run_answer(db, session, uuid);
    if (!answer) return answer.error();
    // One turn fits in turn_max_bytes: the question keeps at most half of it, the answer the
    // rest after the question and the short answer (itself a few words, cut like the rest).
    const std::size_t budget = config.turn_max_bytes;
    question = cut_utf8(std::move(question), budget / 2);
    std::optional<std::string> short_answer;
    if (answer->short_answer) short_answer = cut_utf8(std::move(*answer->short_answer), budget / 8);
    const std::size_t used = question.size() + (short_answer ? short_answer->size() : 0);
    std::string text = cut_utf8(std::move(answer->answer), budget - std::min(budget, used));
    const auto bytes = static_cast<std::int64_t>(used + text.size());

    auto insert = db.prepare(
        "INSERT INTO turns(session, conversation, trace, started, status, question, answer, "
        "short_answer, bytes) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(session) DO NOTHING");
    if (!insert) return insert.error();
    insert->bind(1, session)
        .bind(2, std::string_view{conversation})
        .bind(3, std::string_view{uuid})
        .bind(4, started)
        .bind(5, std::string_view{status})
        .bind(6, std::string_view{question})
        .bind(7, std::string_view{text})
        .bind(8, short_answer)
        .bind(9, bytes);
    if (auto r = insert->run(); !r) return r.error();
    return enforce_bounds(db, config, conversation);
}

}  // namespace detail

Result<json> TraceStore::turns(std::string_view conversation, std::int64_t limit) {
    auto q = db_->prepare(
        "SELECT question, answer, short_answer, trace, started, status FROM turns "
        "WHERE conversation = ?1 ORDER BY started DESC, session DESC LIMIT ?2");
    if (!q) return q.error();
    q->bind(1, conversation).bind(2, limit);
    json turns = json::array();
    auto read = q->each([&](const storage::sql::Row& row) {
        turns.push_back(
            {{"question", std::string(row.text(0))},
             {"answer", std::string(row.text(1))},
             {"short_answer", row.is_null(2) ? json(nullptr) : json(std::string(row.text(2)))},
             {"trace", std::string(row.text(3))},
             {"started", base::format_xsd_datetime_ms(row.int64(4))},
             {"status", std::string(row.text(5))}});
    });
    if (!read) return read.error();
    // Read newest first (the last `limit`), answered oldest first, as a conversation reads.
    std::reverse(turns.begin(), turns.end());
    return json{{"session_id", std::string(conversation)}, {"turns", std::move(turns)}};
}

namespace {

// The answer of a SELECT EXISTS(...): whether its first column is non-zero.
Result<bool> exists(storage::sql::Statement& q) {
    auto found = q.first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
    if (!found) return found.error();
    return found->value_or(false);
}

}  // namespace

Result<bool> TraceStore::conversation_running(std::string_view conversation,
                                              std::string_view except_run) {
    // sessions_top_status narrows it to the running top-level runs, few at any time.
    auto q = db_->prepare(
        "SELECT EXISTS(SELECT 1 FROM sessions WHERE status = 'running' AND parent IS NULL "
        "AND conversation = ?1 AND uuid <> ?2)");
    if (!q) return q.error();
    q->bind(1, conversation).bind(2, except_run);
    return exists(*q);
}

Result<bool> TraceStore::conversation_known(std::string_view conversation) {
    auto q = db_->prepare("SELECT EXISTS(SELECT 1 FROM conversations WHERE id = ?1)");
    if (!q) return q.error();
    q->bind(1, conversation);
    return exists(*q);
}

Result<json> TraceStore::conversations(std::int64_t limit) {
    auto q = db_->prepare(
        "SELECT id, turns, started, last FROM conversations ORDER BY last DESC, id DESC LIMIT ?1");
    if (!q) return q.error();
    q->bind(1, limit);
    json sessions = json::array();
    auto read = q->each([&](const storage::sql::Row& row) {
        sessions.push_back({{"session_id", std::string(row.text(0))},
                            {"turns", row.int64(1)},
                            {"started", base::format_xsd_datetime_ms(row.int64(2))},
                            {"last", base::format_xsd_datetime_ms(row.int64(3))}});
    });
    if (!read) return read.error();
    return json{{"sessions", std::move(sessions)}};
}

Result<json> TraceStore::forget(std::string_view conversation) {
    auto transaction =
        storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto turns = db_->prepare("DELETE FROM turns WHERE conversation = ?1");
    if (!turns) return turns.error();
    turns->bind(1, conversation);
    if (auto r = turns->run(); !r) return r.error();
    const std::int64_t deleted = db_->changes();
    auto summary = db_->prepare("DELETE FROM conversations WHERE id = ?1");
    if (!summary) return summary.error();
    summary->bind(1, conversation);
    if (auto r = summary->run(); !r) return r.error();
    if (auto r = transaction->commit(); !r) return r.error();
    return json{{"session_id", std::string(conversation)}, {"deleted", deleted}};
}

}  // namespace glassbox::trace
