// The trace store's ingest: each delivery checked against its frames, then a batch written in
// one transaction (events with their triples packed in one blob each, long texts, session rows;
// duplicates ignored, malformed deliveries quarantined).
#include "workers/trace_collector/trace_store.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "base/fnv.hpp"
#include "base/time_format.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/protocol.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/explain_scan.hpp"
#include "workers/trace_collector/run_uses.hpp"
#include "workers/trace_collector/span_facts.hpp"
#include "workers/trace_collector/trace_costs.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"
#include "workers/trace_collector/triple_blob.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using detail::to_ms;
using storage::sql::Connection;
using storage::sql::Statement;

namespace {

std::string fnv_digest(std::string_view text) {
    const std::uint64_t hash = base::fnv1a64(text);
    std::array<char, 48> buf{};
    std::snprintf(buf.data(), buf.size(), "%016llx:%zu", static_cast<unsigned long long>(hash),
                  text.size());
    return buf.data();
}

// The frames of a delivery (checked before its body); the seq frame's value.
Result<std::uint64_t> check_frames(const Delivery& delivery) {
    const auto bad = [](std::string reason) {
        return make_error(ErrorType::kDecodeError, std::move(reason));
    };
    const auto seq = schema::protocol::parse_ascii_int(delivery.seq);
    if (!seq) return bad("seq frame is not an ascii-int: \"" + delivery.seq.substr(0, 40) + "\"");
    if (delivery.state != schema::protocol::kStateOpen &&
        delivery.state != schema::protocol::kStateComplete &&
        delivery.state != schema::protocol::kStateError) {
        return bad("state frame \"" + delivery.state.substr(0, 40) +
                   "\" is not open, complete or error");
    }
    if (delivery.session.empty()) return bad("session frame is empty");
    return *seq;
}

// The end state a body must carry for the delivery's state frame.
schema::TraceStatus expected_status(const Delivery& delivery) {
    return delivery.state == schema::protocol::kStateComplete ? schema::TraceStatus::kComplete
           : delivery.state == schema::protocol::kStateError  ? schema::TraceStatus::kError
                                                              : schema::TraceStatus::kNone;
}

// The delivery's session frame is the session IRI as the worker wrote it; the decoded body's is
// made writable (decode_explain), so the two agree when the body's is that IRI rewritten.
bool same_session(const std::string& decoded, const std::string& frame) {
    return decoded == frame || decoded == schema::explain::writable_iri(frame);
}

// The DOM decode: the message, or the quarantine reason; `iris_rewritten` counts the IRIs the
// decoder made writable.
Result<schema::ExplainMessage> validate_body(const Delivery& delivery,
                                             std::size_t& iris_rewritten) {
    const auto bad = [](std::string reason) {
        return make_error(ErrorType::kDecodeError, std::move(reason));
    };
    auto seq = check_frames(delivery);
    if (!seq) return seq.error();
    auto parsed = schema::parse_untrusted_json(delivery.body);
    if (!parsed) return bad("not JSON: " + parsed.error().message);
    if (!parsed->is_object()) return bad("wrong types: the body is not a JSON object");
    auto message = schema::decode_explain(*parsed, iris_rewritten);
    if (!message) {
        const auto& why = message.error().message;
        const bool triples =
            why.rfind("explain_triples", 0) == 0 || why.rfind("explain_terms", 0) == 0;
        return bad((triples ? "bad triple: " : "wrong types: ") + why);
    }
    if (!same_session(message->session, delivery.session)) {
        return bad("session in the body (\"" + message->session.substr(0, 200) +
                   "\") disagrees with the frame (\"" + delivery.session.substr(0, 200) + "\")");
    }
    if (message->seq != *seq) {
        return bad("seq in the body (" + std::to_string(message->seq) +
                   ") disagrees with the frame (" + std::to_string(*seq) + ")");
    }
    const bool terminal = delivery.state != schema::protocol::kStateOpen;
    if (message->end_of_trace != terminal || message->trace_status != expected_status(delivery)) {
        return bad("end_of_trace/trace_status in the body disagree with the state frame \"" +
                   delivery.state + "\"");
    }
    return std::move(message).value();
}

// The checks of validate_body after the decode, on a scanned body.
bool agrees_with_frames(const ScannedExplain& m, const Delivery& delivery, std::uint64_t seq) {
    const bool terminal = delivery.state != schema::protocol::kStateOpen;
    return same_session(m.session, delivery.session) && m.seq == seq &&
           m.end_of_trace == terminal && m.trace_status == expected_status(delivery);
}

}  // namespace

Result<schema::ExplainMessage> validate_delivery(const Delivery& delivery) {
    std::size_t iris_rewritten = 0;
    return validate_body(delivery, iris_rewritten);
}

// ---- ingest
// --------------------------------------------------------------------------------------

namespace {

constexpr const char* kInsertEventSql =
    "INSERT INTO events(session, seq, explain_id, state, received, delivery_id, triple_count, "
    "triples, span) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(session, seq) DO "
    "NOTHING";
constexpr const char* kSessionByUriSql =
    "SELECT id, kind, worker, status FROM sessions WHERE uri = ?1";
// The seq of a stored session's last end (complete or error).
constexpr const char* kEndSeqSql =
    "SELECT MAX(seq) FROM events WHERE session = ?1 AND state <> 'open'";

// The broker's own end of a trace (docs/protocol.md §5.3): an error end with no step, no
// triples and no worker. It may follow the worker's end (SpoolFull: messages of the trace
// were not spooled).
bool is_broker_end(const Delivery& d, const ScannedExplain& m) {
    return d.state == schema::protocol::kStateError && m.worker.empty() && m.explain_id.empty() &&
           m.triples.empty();
}

// What became of an accepted event.
enum class Written {
    kStored,
    kDuplicate,  // (session, seq) was stored already: ignored
    kTooLarge,   // its triples would be over kMaxTripleBlobBytes stored: quarantined
};

// Rows per set-based statement (PostgreSQL): its parameters stay well under the protocol's 65,535.
constexpr std::size_t kRowsPerStatement = 1000;

// "?first, ?first+1, …": `count` numbered placeholders.
std::string placeholders(std::size_t count, int first) {
    std::string out;
    for (std::size_t i = 0; i < count; ++i) {
        if (i != 0) out += ", ";
        out += '?';
        out += std::to_string(first + static_cast<int>(i));
    }
    return out;
}

// "(?a, …), (…)": `rows` tuples of casts.size() numbered placeholders from `first`, each cast to
// its type when one is given (PostgreSQL infers no type for a VALUES list outside an INSERT).
std::string value_rows(std::size_t rows, const std::vector<const char*>& casts, int first) {
    std::string out;
    int n = first;
    for (std::size_t r = 0; r < rows; ++r) {
        out += r == 0 ? "(" : ", (";
        for (std::size_t c = 0; c < casts.size(); ++c, ++n) {
            if (c != 0) out += ", ";
            const std::string p = "?" + std::to_string(n);
            out += casts[c] == nullptr ? p : "CAST(" + p + " AS " + casts[c] + ")";
        }
        out += ')';
    }
    return out;
}

// Runs a statement held across a batch and resets it for its next use (its text bindings may
// point at buffers that change before then).
Result<void> run_once(Statement& statement) {
    auto r = statement.run();
    statement.reset();
    return r;
}

// What a session row learns from one event's triples about the run (its Question).
struct Facts {
    std::optional<std::string> question;
    std::optional<std::int64_t> started;
    std::optional<std::int64_t> ended;
    std::optional<std::string> parent;
    std::optional<std::string> conversation;
    std::optional<std::string> collection;
    std::int64_t tokens_in = 0;            // gb:inputTokens of the event's steps
    std::int64_t tokens_out = 0;           // gb:outputTokens
    detail::RunUses uses;                  // what the run used (run_uses.hpp)
    std::vector<detail::ModelCall> calls;  // the event's model calls, to price (trace_costs.hpp)
};

// What a batch's stored events change in one session row, with the result of one UPDATE
// per event in batch order: kind, question, parent and worker keep the first value,
// started the earliest, ended, status (terminal) and error the last one.
struct SessionUpdate {
    std::optional<std::string> uri;  // set for a session new in this batch
    std::string kind;
    std::optional<std::string> question;
    std::optional<std::string> parent;
    std::optional<std::string> worker;
    std::optional<std::string> conversation;
    std::optional<std::string> collection;
    std::int64_t tokens_in = 0;
    std::int64_t tokens_out = 0;
    std::optional<std::string> error;
    std::optional<std::int64_t> started;
    std::optional<std::int64_t> ended;
    std::optional<std::string> status;
    std::int64_t events = 0;
};

// One batch's writes. Sessions first seen in the batch get their row id up front (the next
// free one; the batch holds the write lock) and their row is INSERTed once, complete, at the
// end of the batch; sessions stored before get one UPDATE. Either way the row is what one
// UPDATE per event in batch order would leave.
class Ingest {
public:
    Ingest(Connection& db, const StoreConfig& config, std::int64_t received)
        : db_(db), config_(config), received_(received) {}

    Result<void> prepare() {
        for (auto [slot, sql] :
             {std::pair{&insert_event_, kInsertEventSql},
              std::pair{&session_by_uri_, kSessionByUriSql}, std::pair{&end_seq_, kEndSeqSql}}) {
            auto prepared = db_.prepare(sql);
            if (!prepared) return prepared.error();
            slot->emplace(std::move(prepared).value());
        }
        return {};
    }

    // Validates one delivery into `*m_`: nullopt, or the quarantine reason. IRIs that
    // N-Triples rejects are rewritten on the way (schema::decode_explain) and counted in `outcome`.
    std::optional<std::string> accept(const Delivery& d, BatchOutcome& outcome) {
        auto seq = check_frames(d);
        if (!seq) return seq.error().message;
        if (scan_explain(d.body, *m_) && agrees_with_frames(*m_, d, *seq)) return std::nullopt;
        // Not the canonical form (or not valid): the DOM decoder has the last word, and a valid
        // message is stored in its canonical encoding, which the scan then reads.
        std::size_t iris_rewritten = 0;
        auto decoded = validate_body(d, iris_rewritten);
        if (!decoded) return decoded.error().message;
        outcome.iris_rewritten += iris_rewritten;
        *reencoded_ = schema::dump(schema::encode(*decoded));
        if (scan_explain(*reencoded_, *m_) && agrees_with_frames(*m_, d, *seq)) return std::nullopt;
        return "internal: the decoded message does not scan after re-encoding (a trace store bug)";
    }

    Result<void> quarantine(const Delivery& d, const std::string& reason) {
        auto insert = db_.prepare(
            "INSERT INTO quarantine(received, delivery_id, service, session, seq, state, reason, "
            "payload) "
            "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(delivery_id) DO NOTHING");
        if (!insert) return insert.error();
        insert->bind(1, received_)
            .bind(2, static_cast<std::int64_t>(d.delivery_id))
            .bind(3, std::string_view{d.service})
            .bind(4, std::string_view{d.session})
            .bind(5, std::string_view{d.seq})
            .bind(6, std::string_view{d.state})
            .bind(7, std::string_view{reason})
            .bind_blob(8, d.body);
        return insert->run();
    }

    // Why the accepted delivery may not enter its session (docs/protocol.md §6.1), or nullopt:
    // a session belongs to the service and the worker that wrote its first message, and
    // nothing follows its end but an earlier seq delivered late and the broker's own end.
    // What the broker cannot tell any more (a session of a request it forgot, after a restart
    // or past its record of ended sessions) is caught here.
    Result<std::optional<std::string>> refusal(const Delivery& d) {
        const ScannedExplain& m = *m_;
        auto owner = owner_of(m.session);
        if (!owner) return owner.error();
        const SessionOwner& o = **owner;
        const std::string_view service =
            d.service.empty() ? std::string_view{m.service} : d.service;
        std::optional<std::string> why;
        if (!o.kind.empty() && !service.empty() && service != o.kind) {
            why = "refused: the session belongs to service \"" + o.kind.substr(0, 100) +
                  "\", not \"" + std::string{service.substr(0, 100)} + "\"";
        } else if (!o.worker.empty() && !m.worker.empty() && m.worker != o.worker) {
            why = "refused: the session belongs to worker \"" + o.worker.substr(0, 100) +
                  "\", not \"" + m.worker.substr(0, 100) + "\"";
        } else if (o.end_seq && m.seq > *o.end_seq && !is_broker_end(d, m)) {
            why = "refused: the session ended at seq " + std::to_string(*o.end_seq) +
                  "; nothing follows its end";
        }
        return why;
    }

    // Writes the accepted event with its triples in one row (set-based: at the end of the
    // batch), or finds (session, seq) stored already; the session's owner and row follow.
    Result<Written> event(const Delivery& d, BatchOutcome& outcome) {
        const ScannedExplain& m = *m_;
        if (packed_bound(m) > kMaxTripleBlobBytes) return Written::kTooLarge;
        auto session = session_of(m.session);
        if (!session) return session.error();
        auto facts = deferred_ ? defer_event(session->id) : insert_event(d, session->id);
        if (!facts) return facts.error();
        if (!*facts) return Written::kDuplicate;
        if (auto owner = owner_of(m.session); owner) {
            SessionOwner& o = **owner;
            if (o.kind.empty()) o.kind = d.service.empty() ? m.service : d.service;
            if (o.worker.empty()) o.worker = m.worker;
            if (d.state != schema::protocol::kStateOpen)
                o.end_seq = std::max(o.end_seq.value_or(0), m.seq);
        } else {
            return owner.error();
        }
        outcome.triples += m.triples.size();
        update_session(d, *session, std::move(**facts));
        return Written::kStored;
    }

    // Writes the event's row now: what its triples say about the run, or nullopt when (session,
    // seq) was stored already. The triples are packed before the INSERT, which is what tells a
    // duplicate: a redelivery costs their packing (its long texts are in `texts` already).
    Result<std::optional<Facts>> insert_event(const Delivery& d, std::int64_t session) {
        const ScannedExplain& m = *m_;
        auto facts = pack_triples();
        if (!facts) return facts.error();
        auto blob = blob_.finish();
        if (!blob) return blob.error();
        insert_event_->bind(1, session)
            .bind(2, static_cast<std::int64_t>(m.seq))
            .bind(3, std::string_view{m.explain_id})
            .bind(4, std::string_view{d.state})
            .bind(5, received_)
            .bind(6, static_cast<std::int64_t>(d.delivery_id))
            .bind(7, static_cast<std::int64_t>(blob_.count()));
        if (blob->empty()) {
            insert_event_->bind_null(8);
        } else {
            insert_event_->bind_blob(8, *blob);
        }
        bind_span(*insert_event_, 9, m);
        if (auto r = run_once(*insert_event_); !r) return r.error();
        if (db_.changes() == 0) return std::optional<Facts>{};
        return std::optional<Facts>{std::move(facts).value()};
    }

    // Set-based: the event joins the rows written at the end of the batch (write_events) and its
    // long texts the batch's one upsert; (session, seq) stored before or earlier in the batch is
    // a duplicate (nullopt). Its texts are wanted either way, as insert_event upserts them.
    Result<std::optional<Facts>> defer_event(std::int64_t session) {
        Facts facts;
        collect_texts(*m_, facts);
        const std::pair key{session, static_cast<std::int64_t>(m_->seq)};
        if (stored_seqs_.count(key) != 0 || !batch_seqs_.insert(key).second)
            return std::optional<Facts>{};
        pending_.push_back(Pending{current_, session});
        return std::optional<Facts>{std::move(facts)};
    }

    // One INSERT per session new in the batch, one UPDATE per session stored before; on SQLite
    // the question index's row of each session that gets its question (trace_store.cpp,
    // kSearchTable: no trigger writes it).
    Result<void> write_sessions() {
        const bool indexed = db_.dialect() != storage::sql::Dialect::kPostgres;
        std::vector<std::pair<std::int64_t, const std::string*>> questions;
        auto insert = db_.prepare(
            "INSERT INTO sessions(id, uri, uuid, kind, service, question, parent, started, ended, "
            "status, worker, "
            "error, last_event_at, events, conversation, collection, tokens_in, tokens_out) "
            "VALUES(?10, ?16, ?17, ?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?11, ?12, ?13, ?14, "
            "?15)");
        if (!insert) return insert.error();
        for (const auto& [sid, u] : updates_) {
            if (!u.uri) continue;
            std::optional<std::string> uuid;
            if (const auto run = schema::explain::RunUris::from_uri(*u.uri)) uuid = run->uuid();
            bind_session_update(*insert, sid, u);
            insert->bind(16, std::string_view{*u.uri}).bind(17, uuid);
            if (auto r = run_once(*insert); !r) return r.error();
            if (u.question) questions.emplace_back(sid, &*u.question);
        }
        // A stored session gets a question only when it had none (COALESCE below).
        if (indexed) {
            for (const auto& [sid, u] : updates_) {
                if (u.uri || !u.question) continue;
                auto had = db_.prepare("SELECT question IS NULL FROM sessions WHERE id = ?1");
                if (!had) return had.error();
                had->bind(1, sid);
                auto none =
                    had->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
                had->reset();
                if (!none) return none.error();
                if (*none && **none) questions.emplace_back(sid, &*u.question);
            }
        }
        // The larger of two values: SQLite's two-argument MAX, PostgreSQL's GREATEST. The casts
        // give PostgreSQL the types of parameters it cannot infer where they first appear.
        const std::string greatest =
            db_.dialect() == storage::sql::Dialect::kPostgres ? "GREATEST" : "MAX";
        auto update = db_.prepare(
            "UPDATE sessions SET "
            "kind = COALESCE(kind, ?1), service = COALESCE(service, ?1), "
            "question = COALESCE(question, ?2), parent = COALESCE(parent, ?3), "
            "started = CASE WHEN CAST(?4 AS BIGINT) IS NULL THEN started "
            "  WHEN started IS NULL OR ?4 < started THEN ?4 ELSE started END, "
            "ended = COALESCE(?5, ended), "
            "status = CASE WHEN CAST(?6 AS TEXT) <> 'running' THEN ?6 ELSE status END, "
            "worker = COALESCE(worker, ?7), error = COALESCE(?8, error), "
            "last_event_at = " +
            greatest +
            "(last_event_at, ?9), events = events + ?11, "
            "conversation = COALESCE(conversation, ?12), collection = COALESCE(collection, ?13), "
            "tokens_in = tokens_in + ?14, tokens_out = tokens_out + ?15 "
            "WHERE id = ?10");
        if (!update) return update.error();
        for (const auto& [sid, u] : updates_) {
            if (u.uri) continue;
            bind_session_update(*update, sid, u);
            if (auto r = run_once(*update); !r) return r.error();
        }
        if (indexed && !questions.empty()) {
            auto index = db_.prepare("INSERT INTO sessions_search(rowid, q) VALUES(?1, ?2)");
            if (!index) return index.error();
            for (const auto& [sid, question] : questions) {
                index->bind(1, sid).bind(2, std::string_view{*question});
                if (auto r = run_once(*index); !r) return r.error();
            }
        }
        // A run ended in this batch, or one whose conversation this batch told (its end may
        // have come first: a redelivered Question after the end) may now be a turn.
        for (const auto& [sid, u] : updates_) {
            if (u.status || u.conversation) ended_.push_back(sid);
            if (u.status) runs_ended_.push_back(sid);
        }
        updates_.clear();
        return {};
    }

    // The event's uses join its run's for write_uses; a complete `store` run may be a knowledge
    // change (issue 36).
    void note_uses(std::int64_t session, const std::string& kind, const Delivery& d,
                   detail::RunUses uses) {
        if (!uses.uses.empty() || !uses.text.empty()) {
            detail::RunUses& run = uses_[session];
            run.uses.merge(uses.uses);
            if (!uses.text.empty()) run.text += (run.text.empty() ? "" : "\n") + uses.text;
        }
        if (d.state == schema::protocol::kStateComplete && kind == schema::services::kStore)
            changes_.push_back(session);
    }

    // The batch's usage index rows and run texts, then the invalidations of the knowledge changes
    // it ended (after the session rows: the parent chains and the change runs are read back).
    Result<void> write_uses() {
        if (!config_.index_uses) return {};
        if (auto r = detail::write_run_uses(db_, uses_); !r) return r;
        uses_.clear();
        for (const auto change : changes_) {
            if (auto r = detail::record_invalidations(db_, change); !r) return r;
            if (config_.mirror_sparql) {
                if (auto r = detail::queue_mirror_invalidated(db_, change, received_); !r) return r;
            }
        }
        changes_.clear();
        return {};
    }

    // The cost rows of the batch's stored model calls (docs/traces.md, "Cost").
    Result<void> write_costs() {
        if (costs_.empty()) return {};
        auto r = detail::write_step_costs(db_, config_.prices, costs_, received_);
        costs_.clear();
        return r;
    }

    // The SPARQL mirror's queue: the top-level runs of the runs the batch ended (one upsert each,
    // nothing per event), when the store mirrors.
    Result<void> queue_mirror() {
        if (!config_.mirror_sparql) return {};
        return detail::queue_mirror(db_, runs_ended_, received_);
    }

    // The OpenTelemetry exporter's queue, as the mirror's.
    Result<void> queue_otel() {
        if (!config_.export_otel) return {};
        return detail::queue_otel(db_, runs_ended_, received_);
    }

    // ---- set-based (PostgreSQL) -----------------------------------------------------------
    // There a round trip per statement costs what a row costs on SQLite: the batch is read whole
    // (each delivery scanned into its own slot), its stored sessions and their events read in a
    // few statements, and its texts, events and session rows written in one statement per
    // kRowsPerStatement rows. Decisions (duplicates, refusals, ownership) are the same, in the
    // same order, as the row-at-a-time path makes them.

    void hold(std::size_t deliveries) {
        deferred_ = true;
        scans_.resize(deliveries);
        reencodes_.resize(deliveries);
    }

    // Makes delivery `index` of the held batch the one handled.
    void select(std::size_t index) {
        current_ = index;
        m_ = &scans_[index];
        reencoded_ = &reencodes_[index];
    }

    // Reads the stored rows of the sessions the `accepted` deliveries name, then the (session,
    // seq, end) of their stored events.
    Result<void> prefetch(const std::vector<char>& accepted) {
        std::vector<std::string_view> uris;
        std::set<std::string_view> seen;
        for (std::size_t i = 0; i < accepted.size(); ++i) {
            if (accepted[i] != 0 && seen.insert(scans_[i].session).second)
                uris.push_back(scans_[i].session);
        }
        std::set<std::int64_t> parts;
        for (std::size_t at = 0; at < uris.size(); at += kRowsPerStatement) {
            const std::size_t n = std::min(kRowsPerStatement, uris.size() - at);
            auto q = db_.prepare_once(
                "SELECT id, uri, kind, worker, status, part, conversation IS NOT NULL FROM "
                "sessions "
                "WHERE uri IN (" +
                placeholders(n, 1) + ")");
            if (!q) return q.error();
            for (std::size_t k = 0; k < n; ++k) q->bind(static_cast<int>(k + 1), uris[at + k]);
            auto read = q->each([&](const storage::sql::Row& row) {
                SessionRef ref;
                ref.id = row.int64(0);
                ref.kind = row.optional_text(2).value_or("");
                ref.worker = row.optional_text(3).value_or("");
                ref.ended = row.text(4) != "running";
                stored_parts_[ref.id] = row.int64(5);
                parts.insert(row.int64(5));
                if (row.int64(6) != 0) stored_conversations_.insert(ref.id);
                sessions_.emplace(std::string(row.text(1)), std::move(ref));
            });
            if (!read) return read.error();
        }
        return prefetch_events(parts);
    }

    // The batch's events, texts first (their ids go into the packed triples), in the day
    // partitions of their sessions (created when missing).
    Result<void> write_events(const std::vector<Delivery>& deliveries) {
        if (auto r = write_texts(); !r) return r;
        if (pending_.empty()) return {};
        std::set<std::int64_t> parts;
        for (const auto& p : pending_) parts.insert(part_of(p.session));
        std::string days;
        for (const auto day : parts) {
            if (day < detail::kKeptPart) days += (days.empty() ? "" : ",") + std::to_string(day);
        }
        if (!days.empty()) {
            auto ensure = db_.prepare("SELECT trace_event_partitions(CAST(?1 AS BIGINT[]))");
            if (!ensure) return ensure.error();
            ensure->bind(1, "{" + days + "}");
            if (auto r = run_once(*ensure); !r) return r;
        }
        for (std::size_t at = 0; at < pending_.size(); at += kRowsPerStatement) {
            const std::size_t n = std::min(kRowsPerStatement, pending_.size() - at);
            if (auto r = insert_events(deliveries, at, n); !r) return r;
        }
        return {};
    }

    // Set-based: the batch's session rows, new ones in multi-row INSERTs, stored ones in
    // multi-row UPDATEs; then the runs that may have become a turn, those with a conversation.
    Result<void> write_sessions_set() {
        std::vector<std::pair<std::int64_t, const SessionUpdate*>> fresh, stored;
        for (const auto& [sid, u] : updates_) (u.uri ? fresh : stored).emplace_back(sid, &u);
        for (std::size_t at = 0; at < fresh.size(); at += kRowsPerStatement) {
            const std::size_t n = std::min(kRowsPerStatement, fresh.size() - at);
            if (auto r = insert_sessions(fresh, at, n); !r) return r;
        }
        for (std::size_t at = 0; at < stored.size(); at += kRowsPerStatement) {
            const std::size_t n = std::min(kRowsPerStatement, stored.size() - at);
            if (auto r = update_sessions(stored, at, n); !r) return r;
        }
        for (const auto& [sid, u] : updates_) {
            const bool conversation = u.conversation || stored_conversations_.count(sid) != 0;
            if ((u.status || u.conversation) && conversation) ended_.push_back(sid);
            if (u.status) runs_ended_.push_back(sid);
        }
        updates_.clear();
        return {};
    }

    // The sessions whose terminal event this batch stored (after write_sessions).
    const std::vector<std::int64_t>& ended() const noexcept { return ended_; }

private:
    struct SessionRef {
        std::int64_t id = 0;
        bool fresh = false;  // no row yet: INSERTed at the end of the batch
        // A stored row's service, first worker and whether it has ended.
        std::string kind;
        std::string worker;
        bool ended = false;
        // Set-based: read with the row (prefetch), the seq of its last end when it has ended.
        std::optional<std::uint64_t> end_seq;
    };

    // Who a session belongs to and where it ended, as stored and as this batch goes on.
    struct SessionOwner {
        std::string kind;
        std::string worker;
        std::optional<std::uint64_t> end_seq;
    };

    Result<SessionOwner*> owner_of(const std::string& uri) {
        auto session = session_of(uri);
        if (!session) return session.error();
        const auto [at, inserted] = owners_.try_emplace(session->id);
        SessionOwner& o = at->second;
        if (!inserted) return &o;
        o.kind = session->kind;
        o.worker = session->worker;
        if (session->ended && deferred_) {
            o.end_seq = session->end_seq;
        } else if (session->ended) {
            end_seq_->bind(1, session->id);
            auto end = end_seq_->first([](const storage::sql::Row& row) {
                return row.is_null(0) ? std::optional<std::uint64_t>{}
                                      : static_cast<std::uint64_t>(row.int64(0));
            });
            end_seq_->reset();
            if (!end) return end.error();
            if (*end) o.end_seq = **end;
        }
        return &o;
    }

    // ---- set-based helpers ----

    // The (session, seq) of the stored sessions' events and, for ended ones, the seq of their
    // last end; `parts` are the sessions' days (the partitions their events are in).
    Result<void> prefetch_events(const std::set<std::int64_t>& parts) {
        if (stored_parts_.empty()) return {};
        std::string part_list;  // numbers read from the store: literal, so the planner prunes
        for (const auto p : parts) part_list += (part_list.empty() ? "" : ", ") + std::to_string(p);
        std::vector<std::int64_t> ids;
        for (const auto& [id, part] : stored_parts_) ids.push_back(id);
        std::unordered_map<std::int64_t, std::uint64_t> ends;
        for (std::size_t at = 0; at < ids.size(); at += kRowsPerStatement) {
            const std::size_t n = std::min(kRowsPerStatement, ids.size() - at);
            auto q = db_.prepare_once(
                "SELECT session, seq, state <> 'open' FROM events WHERE part IN (" + part_list +
                ") AND session IN (" + placeholders(n, 1) + ")");
            if (!q) return q.error();
            for (std::size_t k = 0; k < n; ++k) q->bind(static_cast<int>(k + 1), ids[at + k]);
            auto read = q->each([&](const storage::sql::Row& row) {
                stored_seqs_.emplace(row.int64(0), row.int64(1));
                if (row.int64(2) == 0) return;
                auto& end = ends[row.int64(0)];
                end = std::max(end, static_cast<std::uint64_t>(row.int64(1)));
            });
            if (!read) return read.error();
        }
        for (auto& [uri, ref] : sessions_) {
            if (const auto end = ends.find(ref.id); ref.ended && end != ends.end())
                ref.end_seq = end->second;
        }
        return {};
    }

    // The day partition of session `sid`'s events: its stored row's, or for a new session the
    // day it started as the batch saw it.
    std::int64_t part_of(std::int64_t sid) const {
        if (const auto stored = stored_parts_.find(sid); stored != stored_parts_.end())
            return stored->second;
        const auto u = updates_.find(sid);
        const std::int64_t started =
            u == updates_.end() ? received_ : u->second.started.value_or(received_);
        return detail::day_of(started);
    }

    // The scanned event's long literal values go into wanted_ (by digest); its facts are learnt.
    void collect_texts(const ScannedExplain& m, Facts& facts) {
        for (const auto& t : m.triples) {
            if (t.o.kind == ScannedKind::kLiteral &&
                t.o.value.raw.size() > config_.text_threshold) {
                const std::string_view value = t.o.value.value(scratch_);
                if (value.size() > config_.text_threshold)
                    wanted_.try_emplace(fnv_digest(value), std::string(value));
            }
            learn(m, t, facts);
        }
        use_scan_.finish(facts.uses);
    }

    // The id of a long text the batch upserted; nullopt (kept inline) when its digest is another
    // text's, in the store or earlier in the batch, as text_id answers.
    Result<std::optional<std::int64_t>> held_text_id(std::string_view body) const {
        const auto wanted = wanted_.find(fnv_digest(body));
        if (wanted == wanted_.end() || wanted->second != body) return std::optional<std::int64_t>{};
        const auto id = text_ids_.find(wanted->first);
        return id == text_ids_.end() ? std::nullopt : id->second;
    }

    // The batch's long texts upserted (last_used moved forward, as text_id does), then their ids.
    Result<void> write_texts() {
        std::vector<const std::pair<const std::string, std::string>*> rows;
        for (const auto& w : wanted_) rows.push_back(&w);
        for (std::size_t at = 0; at < rows.size(); at += kRowsPerStatement) {
            const std::size_t n = std::min(kRowsPerStatement, rows.size() - at);
            auto upsert = db_.prepare_once(
                "INSERT INTO texts(digest, body, last_used, created) VALUES " +
                value_rows(n, {nullptr, nullptr, nullptr, nullptr}, 1) +
                " ON CONFLICT(digest) DO UPDATE SET last_used = excluded.last_used WHERE "
                "texts.last_used < excluded.last_used");
            if (!upsert) return upsert.error();
            for (std::size_t k = 0; k < n; ++k) {
                const int at_k = static_cast<int>(4 * k);
                upsert->bind(at_k + 1, std::string_view{rows[at + k]->first})
                    .bind(at_k + 2, std::string_view{rows[at + k]->second})
                    .bind(at_k + 3, received_)
                    .bind(at_k + 4, received_);
            }
            if (auto r = upsert->run(); !r) return r;
            auto ids = db_.prepare_once("SELECT digest, id, body FROM texts WHERE digest IN (" +
                                        placeholders(n, 1) + ")");
            if (!ids) return ids.error();
            for (std::size_t k = 0; k < n; ++k)
                ids->bind(static_cast<int>(k + 1), std::string_view{rows[at + k]->first});
            auto read = ids->each([&](const storage::sql::Row& row) {
                const std::string digest(row.text(0));
                const bool same = row.text(2) == wanted_.at(digest);
                text_ids_[digest] = same ? std::optional<std::int64_t>{row.int64(1)} : std::nullopt;
            });
            if (!read) return read.error();
        }
        return {};
    }

    // Rows [at, at + n) of pending_, packed, in one INSERT; all must be new (the batch holds the
    // writer lock and prefetch read what was stored).
    Result<void> insert_events(const std::vector<Delivery>& deliveries, std::size_t at,
                               std::size_t n) {
        auto insert = db_.prepare_once(
            "INSERT INTO events(session, seq, explain_id, state, received, delivery_id, "
            "triple_count, triples, part, span) VALUES " +
            value_rows(n, std::vector<const char*>(10, nullptr), 1) + " ON CONFLICT DO NOTHING");
        if (!insert) return insert.error();
        const auto resolve = [this](std::string_view body) { return held_text_id(body); };
        for (std::size_t k = 0; k < n; ++k) {
            const Pending& p = pending_[at + k];
            const Delivery& d = deliveries[p.delivery];
            const ScannedExplain& m = scans_[p.delivery];
            if (auto packed = pack(m, resolve, nullptr); !packed) return packed;
            auto blob = blob_.finish();
            if (!blob) return blob.error();
            const int c = static_cast<int>(10 * k);
            insert->bind(c + 1, p.session)
                .bind(c + 2, static_cast<std::int64_t>(m.seq))
                .bind(c + 3, std::string_view{m.explain_id})
                .bind(c + 4, std::string_view{d.state})
                .bind(c + 5, received_)
                .bind(c + 6, static_cast<std::int64_t>(d.delivery_id))
                .bind(c + 7, static_cast<std::int64_t>(blob_.count()))
                .bind(c + 9, part_of(p.session));
            if (blob->empty()) {
                insert->bind_null(c + 8);
            } else {
                insert->bind_blob(c + 8, *blob);
            }
            bind_span(*insert, c + 10, m);
        }
        if (auto r = insert->run(); !r) return r;
        if (db_.changes() != static_cast<std::int64_t>(n)) {
            return make_error(
                ErrorType::kInternal,
                "trace store: " +
                    std::to_string(
                        n - static_cast<std::size_t>(std::max<std::int64_t>(db_.changes(), 0))) +
                    " events of the batch were stored already though not read "
                    "before (another writer without the writer lock?)");
        }
        return {};
    }

    // Rows [at, at + n) of the new sessions in one INSERT.
    Result<void> insert_sessions(
        const std::vector<std::pair<std::int64_t, const SessionUpdate*>>& rows, std::size_t at,
        std::size_t n) {
        constexpr std::size_t kWidth = 19;
        auto insert = db_.prepare_once(
            "INSERT INTO sessions(id, uri, uuid, kind, service, question, parent, started, ended, "
            "status, worker, error, last_event_at, events, conversation, collection, tokens_in, "
            "tokens_out, part) VALUES " +
            value_rows(n, std::vector<const char*>(kWidth, nullptr), 1));
        if (!insert) return insert.error();
        for (std::size_t k = 0; k < n; ++k) {
            const auto& [sid, u] = rows[at + k];
            const int c = static_cast<int>(kWidth * k);
            std::optional<std::string> uuid;
            if (const auto run = schema::explain::RunUris::from_uri(*u->uri)) uuid = run->uuid();
            insert->bind(c + 1, sid)
                .bind(c + 2, std::string_view{*u->uri})
                .bind(c + 3, uuid)
                .bind(c + 4, std::string_view{u->kind})
                .bind(c + 5, std::string_view{u->kind})
                .bind(c + 6, u->question)
                .bind(c + 7, u->parent)
                .bind(c + 8, u->started)
                .bind(c + 9, u->ended)
                .bind(c + 10,
                      u->status ? std::string_view{*u->status} : std::string_view{"running"})
                .bind(c + 11, u->worker)
                .bind(c + 12, u->error)
                .bind(c + 13, received_)
                .bind(c + 14, u->events)
                .bind(c + 15, u->conversation)
                .bind(c + 16, u->collection)
                .bind(c + 17, u->tokens_in)
                .bind(c + 18, u->tokens_out)
                .bind(c + 19, part_of(sid));
        }
        return insert->run();
    }

    // Rows [at, at + n) of the stored sessions in one UPDATE, each as the row-at-a-time UPDATE
    // of write_sessions leaves it.
    Result<void> update_sessions(
        const std::vector<std::pair<std::int64_t, const SessionUpdate*>>& rows, std::size_t at,
        std::size_t n) {
        static const std::vector<const char*> kTypes = {
            "BIGINT", "TEXT", "TEXT",   "TEXT", "BIGINT", "BIGINT", "TEXT",
            "TEXT",   "TEXT", "BIGINT", "TEXT", "TEXT",   "BIGINT", "BIGINT"};
        auto update = db_.prepare_once(
            "UPDATE sessions AS s SET kind = COALESCE(s.kind, u.kind), "
            "service = COALESCE(s.service, u.kind), question = COALESCE(s.question, u.question), "
            "parent = COALESCE(s.parent, u.parent), "
            "started = CASE WHEN u.started IS NULL THEN s.started "
            "  WHEN s.started IS NULL OR u.started < s.started THEN u.started ELSE s.started END, "
            "ended = COALESCE(u.ended, s.ended), "
            "status = CASE WHEN u.status <> 'running' THEN u.status ELSE s.status END, "
            "worker = COALESCE(s.worker, u.worker), error = COALESCE(u.error, s.error), "
            "last_event_at = GREATEST(s.last_event_at, CAST(?1 AS BIGINT)), "
            "events = s.events + u.events, conversation = COALESCE(s.conversation, "
            "u.conversation), "
            "collection = COALESCE(s.collection, u.collection), "
            "tokens_in = s.tokens_in + u.tokens_in, tokens_out = s.tokens_out + u.tokens_out "
            "FROM (VALUES " +
            value_rows(n, kTypes, 2) +
            ") AS u(id, kind, question, parent, started, ended, status, worker, error, events, "
            "conversation, collection, tokens_in, tokens_out) WHERE s.id = u.id");
        if (!update) return update.error();
        update->bind(1, received_);
        for (std::size_t k = 0; k < n; ++k) {
            const auto& [sid, u] = rows[at + k];
            const int c = static_cast<int>(kTypes.size() * k) + 1;
            update->bind(c + 1, sid)
                .bind(c + 2, std::string_view{u->kind})
                .bind(c + 3, u->question)
                .bind(c + 4, u->parent)
                .bind(c + 5, u->started)
                .bind(c + 6, u->ended)
                .bind(c + 7, u->status ? std::string_view{*u->status} : std::string_view{"running"})
                .bind(c + 8, u->worker)
                .bind(c + 9, u->error)
                .bind(c + 10, u->events)
                .bind(c + 11, u->conversation)
                .bind(c + 12, u->collection)
                .bind(c + 13, u->tokens_in)
                .bind(c + 14, u->tokens_out);
        }
        return update->run();
    }

    // Packs the scanned event's triples into blob_ (long literal values into texts); what they
    // say about the run.
    Result<Facts> pack_triples() {
        Facts facts;
        auto packed = pack(
            *m_, [this](std::string_view body) { return text_id(body); }, &facts);
        if (!packed) return packed.error();
        return facts;
    }

    // Packs `m`'s triples into blob_, each long literal value cut out and referenced by the id
    // resolve(value) gives (nullopt: kept inline); adds what they say about the run to *facts
    // when given.
    template <typename Resolve>
    Result<void> pack(const ScannedExplain& m, Resolve&& resolve, Facts* facts) {
        blob_.clear();
        auto packed = m.dictionary ? pack_pieces(m, resolve) : pack_records(m, resolve);
        if (!packed) return packed;
        if (facts == nullptr) return {};
        for (const auto& t : m.triples) learn(m, t, *facts);
        use_scan_.finish(facts->uses);
        return {};
    }

    // The id resolve(value) gives a literal term's value when it is long enough for `texts`.
    template <typename Resolve>
    static Result<std::optional<std::int64_t>> long_text(const ScannedTerm& term,
                                                         std::size_t threshold,
                                                         std::string& scratch, Resolve& resolve) {
        if (term.kind != ScannedKind::kLiteral || term.value.raw.size() <= threshold)
            return std::optional<std::int64_t>{};
        const std::string_view value = term.value.value(scratch);
        if (value.size() <= threshold) return std::optional<std::int64_t>{};
        return resolve(value);
    }

    // A plain body's triples, each a record: as received, the explain graph added to those
    // without a graph, a long literal's value cut out.
    template <typename Resolve>
    Result<void> pack_records(const ScannedExplain& m, Resolve& resolve) {
        // A triple without a graph belongs to the message's explain graph ("" : none).
        const bool graph_known = m.explain_graph_token.size() > 2;
        for (const auto& t : m.triples) {
            auto text = long_text(t.o, config_.text_threshold, scratch_, resolve);
            if (!text) return text.error();
            if ((t.has_graph || !graph_known) && !*text) {
                blob_.add(*text, t.text);
            } else {
                blob_.add(*text, edited(t, graph_known && !t.has_graph, text->has_value(), m));
            }
        }
        return {};
    }

    // A dictionary body's triples as pieces: each term the triples use once (a long literal
    // object's cut, with its text id), each graph's string token once.
    template <typename Resolve>
    Result<void> pack_pieces(const ScannedExplain& m, Resolve& resolve) {
        // Per term: its piece as it stands, as a cut object, as a graph; then the explain graph.
        pieces_.assign(m.terms.size() * 3 + 1, kNoPiece);
        const auto piece = [&](std::size_t slot, std::optional<std::int64_t> text,
                               std::string_view bytes) {
            if (pieces_[slot] == kNoPiece) pieces_[slot] = blob_.add_piece(text, bytes);
            return pieces_[slot];
        };
        const auto term = [&](std::uint32_t at) { return piece(3 * at, {}, m.terms[at].text); };
        for (const auto& t : m.triples) {
            std::uint32_t o = 0;
            if (pieces_[3 * t.o_at + 1] != kNoPiece) {
                o = pieces_[3 * t.o_at + 1];
            } else {
                auto text = long_text(t.o, config_.text_threshold, scratch_, resolve);
                if (!text) return text.error();
                o = *text ? piece(3 * t.o_at + 1, *text, cut(m.terms[t.o_at])) : term(t.o_at);
            }
            std::optional<std::uint32_t> g;
            if (t.g_at) {
                graph_token_.assign(1, '"').append(m.terms[*t.g_at].term.value.raw).append(1, '"');
                g = piece(3 * *t.g_at + 2, {}, graph_token_);
            } else if (t.has_graph) {
                g = piece(pieces_.size() - 1, {}, m.explain_graph_token);
            }
            blob_.add_triple(term(t.s_at), term(t.p_at), o, g);
        }
        return {};
    }

    // A literal term's object with its value cut to "" (kept in texts instead).
    const std::string& cut(const DictionaryTerm& term) {
        const auto at = static_cast<std::size_t>(term.value_token.data() - term.text.data());
        edited_.assign(term.text.substr(0, at));
        edited_ += "\"\"";
        edited_ += term.text.substr(at + term.value_token.size());
        return edited_;
    }

    // What the batch's session row update learns from one stored event.
    void update_session(const Delivery& d, const SessionRef& session, Facts facts) {
        const ScannedExplain& m = *m_;
        // The calling step's run, when the Question does not say which run informed it.
        if (!facts.parent && m.parent_uri) {
            if (const auto run = schema::explain::RunUris::from_uri(*m.parent_uri))
                facts.parent = run->question();
        }
        const bool terminal = d.state != schema::protocol::kStateOpen;
        std::optional<std::int64_t> ended = facts.ended;
        if (!ended && terminal) ended = received_;
        const std::int64_t started = facts.started ? *facts.started : received_;
        auto [update, first] = updates_.try_emplace(session.id);
        SessionUpdate& u = update->second;
        if (first) {
            u.uri = session.fresh ? std::optional<std::string>{m.session} : std::nullopt;
            u.kind = d.service.empty() ? m.service : d.service;
            u.started = started;
        } else {
            u.started = std::min(*u.started, started);
        }
        if (!u.question && facts.question) u.question = std::move(facts.question);
        if (!u.parent && facts.parent) u.parent = std::move(facts.parent);
        if (!u.worker && !m.worker.empty()) u.worker = m.worker;
        if (!u.conversation && facts.conversation) u.conversation = std::move(facts.conversation);
        if (!u.collection && facts.collection) u.collection = std::move(facts.collection);
        u.tokens_in += facts.tokens_in;
        u.tokens_out += facts.tokens_out;
        if (m.error) u.error = m.error->describe();
        if (ended) u.ended = ended;
        if (terminal) u.status = d.state;
        ++u.events;
        note_uses(session.id, u.kind, d, std::move(facts.uses));
        if (!facts.calls.empty()) {
            costs_.push_back(detail::EventCalls{session.id, static_cast<std::int64_t>(m.seq),
                                                std::move(facts.calls)});
        }
    }

    // Binds parameter `index` to the event's span facts (span_facts.hpp) when the store exports,
    // else NULL.
    void bind_span(Statement& st, int index, const ScannedExplain& m) {
        if (!config_.export_otel) {
            st.bind_null(index);
            return;
        }
        span_.begin(m.session, m.explain_id);
        for (const auto& t : m.triples) {
            if (t.s.kind != ScannedKind::kIri || t.p.kind != ScannedKind::kIri) continue;
            if (t.o.kind != ScannedKind::kIri && t.o.kind != ScannedKind::kLiteral) continue;
            span_.see(t.s.value.value(span_scratch_[0]), t.p.value.value(span_scratch_[1]),
                      t.o.value.value(span_scratch_[2]), t.o.kind == ScannedKind::kIri);
        }
        st.bind(index, std::string_view{span_.finish()});
    }

    // A bound on the bytes of the scanned event's packed records, never below them (each triple
    // as received, the explain graph added, two varints), known before anything is written.
    static std::size_t packed_bound(const ScannedExplain& m) {
        std::size_t bytes = 0;
        for (const auto& t : m.triples) {
            const std::size_t text =
                m.dictionary ? m.terms[t.s_at].text.size() + m.terms[t.p_at].text.size() +
                                   m.terms[t.o_at].text.size() +
                                   (t.g_at ? m.terms[*t.g_at].term.value.raw.size() : 0) + 16
                             : t.text.size();
            bytes += text + m.explain_graph_token.size() + 32;
        }
        return bytes;
    }

    // Binds ?1 … ?15 of the session INSERT and UPDATE: the batch's update of session `sid`.
    void bind_session_update(Statement& st, std::int64_t sid, const SessionUpdate& u) const {
        st.bind(1, std::string_view{u.kind})
            .bind(2, u.question)
            .bind(3, u.parent)
            .bind(4, u.started)
            .bind(5, u.ended)
            .bind(6, u.status ? std::string_view{*u.status} : std::string_view{"running"})
            .bind(7, u.worker)
            .bind(8, u.error)
            .bind(9, received_)
            .bind(10, sid)
            .bind(11, u.events)
            .bind(12, u.conversation)
            .bind(13, u.collection)
            .bind(14, u.tokens_in)
            .bind(15, u.tokens_out);
    }

    Result<SessionRef> session_of(const std::string& uri) {
        if (const auto found = sessions_.find(uri); found != sessions_.end()) return found->second;
        SessionRef ref;
        // Set-based, every stored session of the batch was read by prefetch: this one is new.
        bool stored_row = false;
        if (!deferred_) {
            session_by_uri_->bind(1, std::string_view{uri});
            auto stored = session_by_uri_->first([&](const storage::sql::Row& row) {
                ref.id = row.int64(0);
                ref.kind = row.optional_text(1).value_or("");
                ref.worker = row.optional_text(2).value_or("");
                ref.ended = row.text(3) != "running";
                return true;
            });
            session_by_uri_->reset();
            if (!stored) return stored.error();
            stored_row = stored->has_value();
        }
        if (!stored_row) {
            if (!next_session_id_) {
                auto max = db_.prepare("SELECT COALESCE(MAX(id), 0) + 1 FROM sessions");
                if (!max) return max.error();
                auto next = max->first([](const storage::sql::Row& row) { return row.int64(0); });
                if (!next) return next.error();
                next_session_id_ = next->value_or(0);
            }
            ref.id = (*next_session_id_)++;
            ref.fresh = true;
        }
        sessions_.emplace(uri, ref);
        return ref;
    }

    // The id of `body` in texts (stored once); nullopt on a digest collision (then inline it).
    // Its last_used becomes this batch's received time (never earlier): prune keeps a text while
    // an event received at or before its last_used is kept.
    Result<std::optional<std::int64_t>> text_id(std::string_view body) {
        const std::string digest = fnv_digest(body);
        auto insert = db_.prepare(
            "INSERT INTO texts(digest, body, last_used, created) VALUES(?1, ?2, ?3, ?3) ON "
            "CONFLICT(digest) DO UPDATE SET last_used = excluded.last_used WHERE texts.last_used < "
            "excluded.last_used");
        if (!insert) return insert.error();
        insert->bind_static(1, digest).bind_static(2, body).bind(3, received_);
        if (auto r = run_once(*insert); !r) return r.error();
        auto select = db_.prepare("SELECT id, body FROM texts WHERE digest = ?1");
        if (!select) return select.error();
        select->bind_static(1, digest);
        auto id = select->first([&](const storage::sql::Row& row) {
            return row.text(1) == body ? std::optional<std::int64_t>{row.int64(0)} : std::nullopt;
        });
        if (!id) return id.error();
        return id->value_or(std::nullopt);
    }

    // The triple's text as received with the explain graph added and/or its long literal
    // object's value cut out (stored in texts instead).
    const std::string& edited(const ScannedTriple& t, bool add_graph, bool cut_value,
                              const ScannedExplain& m) {
        edited_.clear();
        edited_ += '{';
        if (add_graph) {
            edited_ += "\"g\":";
            edited_ += m.explain_graph_token;
            edited_ += ',';
        }
        const std::string_view rest = t.text.substr(1);
        if (cut_value) {
            const std::size_t at = t.object_value_at - 1;
            edited_ += rest.substr(0, at);
            edited_ += "\"\"";
            edited_ += rest.substr(at + t.object_value_size);
        } else {
            edited_ += rest;
        }
        return edited_;
    }

    // The run facts a triple about the session itself states (the last statement of each in a
    // message wins, as it did when read from the decoded message).
    void learn(const ScannedExplain& m, const ScannedTriple& t, Facts& facts) {
        namespace v = schema::vocab;
        if (config_.index_uses) use_scan_.see(t, scratch_);
        if (t.s.kind != ScannedKind::kIri || t.p.kind != ScannedKind::kIri) return;
        const std::string_view p = t.p.value.value(scratch_);
        // The model use of any step of the run (a step's subject is the step, not the run).
        if ((p == v::kInputTokens || p == v::kOutputTokens) && t.o.kind == ScannedKind::kLiteral) {
            const std::string_view digits = t.o.value.value(scratch_);
            std::int64_t n = 0;
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
            if (ec == std::errc() && end == digits.data() + digits.size() && n > 0) {
                (p == v::kInputTokens ? facts.tokens_in : facts.tokens_out) += n;
                auto& call = detail::call_of(facts.calls, t.s.value.str());
                (p == v::kInputTokens ? call.input_tokens : call.output_tokens) += n;
            }
            return;
        }
        // The model of a step's call (priced with its tokens, docs/traces.md "Cost").
        if (p == v::kModelName && t.o.kind == ScannedKind::kLiteral) {
            detail::call_of(facts.calls, t.s.value.str()).model = t.o.value.str();
            return;
        }
        if (t.s.value.value(scratch_) != m.session) return;
        if (p == v::kQuery && t.o.kind == ScannedKind::kLiteral) {
            facts.question = t.o.value.str();
        } else if (p == v::kProvStartedAtTime && t.o.kind == ScannedKind::kLiteral) {
            facts.started = base::parse_xsd_datetime_ms(t.o.value.value(scratch_));
        } else if (p == v::kProvEndedAtTime && t.o.kind == ScannedKind::kLiteral) {
            facts.ended = base::parse_xsd_datetime_ms(t.o.value.value(scratch_));
        } else if (p == v::kProvWasInformedBy && t.o.kind == ScannedKind::kIri) {
            facts.parent = t.o.value.str();
        } else if (p == v::kConversation && t.o.kind == ScannedKind::kLiteral) {
            facts.conversation = t.o.value.str();
        } else if (p == v::kCollection && t.o.kind == ScannedKind::kLiteral) {
            facts.collection = t.o.value.str();
        }
    }

    Connection& db_;
    const StoreConfig& config_;
    std::int64_t received_;
    std::optional<Statement> insert_event_;
    std::optional<Statement> session_by_uri_;
    std::optional<Statement> end_seq_;
    std::unordered_map<std::string, SessionRef> sessions_;
    std::unordered_map<std::int64_t, SessionOwner> owners_;
    std::optional<std::int64_t> next_session_id_;
    std::map<std::int64_t, SessionUpdate> updates_;
    std::vector<std::int64_t> ended_;
    std::vector<std::int64_t> runs_ended_;  // sessions whose terminal event the batch stored
    ScannedExplain scanned_;
    std::string reencoded_own_;
    // The delivery being handled: scanned_ and reencoded_own_, or (set-based) its own slot.
    ScannedExplain* m_ = &scanned_;
    std::string* reencoded_ = &reencoded_own_;
    std::string edited_;
    std::string scratch_;
    static constexpr std::uint32_t kNoPiece = ~std::uint32_t{0};
    std::vector<std::uint32_t> pieces_;  // pack_pieces: the event's pieces by term and role
    std::string graph_token_;
    detail::UseScan use_scan_;                      // the event being scanned's uses
    std::map<std::int64_t, detail::RunUses> uses_;  // session row → the batch's uses of it
    std::vector<std::int64_t> changes_;             // complete `store` runs of the batch
    std::vector<detail::EventCalls> costs_;         // the batch's stored events' model calls
    TripleBlobWriter blob_;        // the event's triples, its buffers reused across the batch
    detail::SpanFactWriter span_;  // the event's span facts (when the store exports)
    std::string span_scratch_[3];

    // Set-based (PostgreSQL): a delivery of the batch whose event is to be written.
    struct Pending {
        std::size_t delivery = 0;
        std::int64_t session = 0;
    };
    bool deferred_ = false;
    std::vector<ScannedExplain> scans_;  // one per delivery, never reallocated (views into them)
    std::vector<std::string> reencodes_;
    std::size_t current_ = 0;
    std::set<std::pair<std::int64_t, std::int64_t>> stored_seqs_;  // (session, seq) stored
    std::set<std::pair<std::int64_t, std::int64_t>> batch_seqs_;   // … and written by the batch
    std::vector<Pending> pending_;
    std::unordered_map<std::int64_t, std::int64_t> stored_parts_;  // stored session → its day
    std::set<std::int64_t> stored_conversations_;          // stored sessions with a conversation
    std::unordered_map<std::string, std::string> wanted_;  // digest → long text of the batch
    std::unordered_map<std::string, std::optional<std::int64_t>> text_ids_;  // digest → id
};

}  // namespace

namespace {

// One accepted-or-not delivery of the batch (`reason`: why it is malformed), as the batch goes.
Result<void> handle(Ingest& ingest, const Delivery& delivery,
                    const std::optional<std::string>& reason, BatchOutcome& outcome) {
    if (reason) {
        if (auto r = ingest.quarantine(delivery, *reason); !r) return r.error();
        ++outcome.quarantined;
        return {};
    }
    auto refused = ingest.refusal(delivery);
    if (!refused) return refused.error();
    if (*refused) {
        if (auto r = ingest.quarantine(delivery, **refused); !r) return r.error();
        ++outcome.refused;
        return {};
    }
    auto written = ingest.event(delivery, outcome);
    if (!written) return written.error();
    if (*written == Written::kTooLarge) {
        const std::string why = "too large: its triples would take over " +
                                std::to_string(kMaxTripleBlobBytes >> 20) +
                                " MiB stored (one event's bound)";
        if (auto r = ingest.quarantine(delivery, why); !r) return r.error();
        ++outcome.quarantined;
        return {};
    }
    ++(*written == Written::kStored ? outcome.stored : outcome.duplicates);
    return {};
}

// SQLite: each delivery written as it comes (an in-process engine: a statement costs a row).
Result<void> store_rows(Ingest& ingest, const std::vector<Delivery>& deliveries,
                        BatchOutcome& outcome) {
    for (const auto& delivery : deliveries) {
        if (auto r = handle(ingest, delivery, ingest.accept(delivery, outcome), outcome); !r)
            return r;
    }
    return ingest.write_sessions();
}

// PostgreSQL: the batch read whole, then written in a few set-based statements.
Result<void> store_set_based(Ingest& ingest, const std::vector<Delivery>& deliveries,
                             BatchOutcome& outcome) {
    ingest.hold(deliveries.size());
    std::vector<std::optional<std::string>> reasons(deliveries.size());
    std::vector<char> accepted(deliveries.size());
    for (std::size_t i = 0; i < deliveries.size(); ++i) {
        ingest.select(i);
        reasons[i] = ingest.accept(deliveries[i], outcome);
        accepted[i] = reasons[i] ? 0 : 1;
    }
    if (auto r = ingest.prefetch(accepted); !r) return r;
    for (std::size_t i = 0; i < deliveries.size(); ++i) {
        ingest.select(i);
        if (auto r = handle(ingest, deliveries[i], reasons[i], outcome); !r) return r;
    }
    if (auto r = ingest.write_events(deliveries); !r) return r;
    return ingest.write_sessions_set();
}

}  // namespace

Result<BatchOutcome> TraceStore::store_batch(const std::vector<Delivery>& deliveries,
                                             WallClock::time_point received) {
    BatchOutcome outcome;
    if (deliveries.empty()) return outcome;
    // Rolled back by its destructor on any early return.
    auto transaction =
        storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    Ingest ingest(*db_, config_, to_ms(received));
    if (auto r = ingest.prepare(); !r) return r.error();
    auto stored = db_->dialect() == storage::sql::Dialect::kPostgres
                      ? store_set_based(ingest, deliveries, outcome)
                      : store_rows(ingest, deliveries, outcome);
    if (!stored) return stored.error();
    if (auto r = ingest.write_uses(); !r) return r.error();
    if (auto r = ingest.write_costs(); !r) return r.error();
    if (auto r = ingest.queue_mirror(); !r) return r.error();
    if (auto r = ingest.queue_otel(); !r) return r.error();
    // Ended runs of a conversation become its turns in the same commit as their end.
    for (const auto session : ingest.ended()) {
        if (auto r = detail::index_turn(*db_, config_, session); !r) return r.error();
    }
    if (auto r = transaction->commit(); !r) return r.error();
    return outcome;
}

}  // namespace glassbox::trace
