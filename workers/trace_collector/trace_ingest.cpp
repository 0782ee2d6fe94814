// The trace store's ingest: each delivery checked against its frames, then a batch written in
// one transaction (events with their triples packed in one blob each, long texts, session rows;
// duplicates ignored, malformed deliveries quarantined).
#include "workers/trace_collector/trace_store.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <unordered_map>
#include <utility>
#include <variant>

#include "base/fnv.hpp"
#include "base/time_format.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/protocol.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/explain_scan.hpp"
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
    "triples) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(session, seq) DO NOTHING";
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

// Runs a statement held across a batch and resets it for its next use (its text bindings may
// point at buffers that change before then).
Result<void> run_once(Statement& statement) {
    auto r = statement.run();
    statement.reset();
    return r;
}

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

    // Validates one delivery into `scanned_`: nullopt, or the quarantine reason. IRIs that
    // N-Triples rejects are rewritten on the way (schema::decode_explain) and counted in `outcome`.
    std::optional<std::string> accept(const Delivery& d, BatchOutcome& outcome) {
        auto seq = check_frames(d);
        if (!seq) return seq.error().message;
        if (scan_explain(d.body, scanned_) && agrees_with_frames(scanned_, d, *seq))
            return std::nullopt;
        // Not the canonical form (or not valid): the DOM decoder has the last word, and a valid
        // message is stored in its canonical encoding, which the scan then reads.
        std::size_t iris_rewritten = 0;
        auto decoded = validate_body(d, iris_rewritten);
        if (!decoded) return decoded.error().message;
        outcome.iris_rewritten += iris_rewritten;
        reencoded_ = schema::dump(schema::encode(*decoded));
        if (scan_explain(reencoded_, scanned_) && agrees_with_frames(scanned_, d, *seq))
            return std::nullopt;
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
        const ScannedExplain& m = scanned_;
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

    // Writes the accepted event with its triples in one row, or finds (session, seq) stored
    // already. The triples are packed before the INSERT, which is what tells a duplicate: a
    // redelivery costs their packing (its long texts are in `texts` already).
    Result<Written> event(const Delivery& d, BatchOutcome& outcome) {
        const ScannedExplain& m = scanned_;
        if (packed_bound(m) > kMaxTripleBlobBytes) return Written::kTooLarge;
        auto session = session_of(m.session);
        if (!session) return session.error();
        auto facts = pack_triples();
        if (!facts) return facts.error();
        auto blob = blob_.finish();
        if (!blob) return blob.error();
        insert_event_->bind(1, session->id)
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
        if (auto r = run_once(*insert_event_); !r) return r.error();
        if (db_.changes() == 0) return Written::kDuplicate;
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
        update_session(d, *session, std::move(facts).value());
        return Written::kStored;
    }

    // One INSERT per session new in the batch, one UPDATE per session stored before.
    Result<void> write_sessions() {
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
        // A run ended in this batch, or one whose conversation this batch told (its end may
        // have come first: a redelivered Question after the end) may now be a turn.
        for (const auto& [sid, u] : updates_) {
            if (u.status || u.conversation) ended_.push_back(sid);
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
        if (session->ended) {
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

    // What a session row learns from one event's triples about the run (its Question).
    struct Facts {
        std::optional<std::string> question;
        std::optional<std::int64_t> started;
        std::optional<std::int64_t> ended;
        std::optional<std::string> parent;
        std::optional<std::string> conversation;
        std::optional<std::string> collection;
        std::int64_t tokens_in = 0;   // gb:inputTokens of the event's steps
        std::int64_t tokens_out = 0;  // gb:outputTokens
    };

    // Packs the scanned event's triples into blob_ (long literal values into texts); what they
    // say about the run.
    Result<Facts> pack_triples() {
        const ScannedExplain& m = scanned_;
        // A triple without a graph belongs to the message's explain graph ("" : none).
        const bool graph_known = m.explain_graph_token.size() > 2;
        Facts facts;
        blob_.clear();
        for (const auto& t : m.triples) {
            std::optional<std::int64_t> text;
            if (t.o.kind == ScannedKind::kLiteral &&
                t.o.value.raw.size() > config_.text_threshold) {
                const std::string_view value = t.o.value.value(scratch_);
                if (value.size() > config_.text_threshold) {
                    auto id = text_id(value);
                    if (!id) return id.error();
                    text = *id;
                }
            }
            if ((t.has_graph || !graph_known) && !text) {
                blob_.add(text, t.text);
            } else {
                blob_.add(text, edited(t, graph_known && !t.has_graph, text.has_value(), m));
            }
            learn(m, t, facts);
        }
        return facts;
    }

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

    // What the batch's session row update learns from one stored event.
    void update_session(const Delivery& d, const SessionRef& session, Facts facts) {
        const ScannedExplain& m = scanned_;
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
    }

    // A bound on the bytes of the scanned event's packed records, never below them (each triple
    // as received, the explain graph added, two varints), known before anything is written.
    static std::size_t packed_bound(const ScannedExplain& m) {
        std::size_t bytes = 0;
        for (const auto& t : m.triples) bytes += t.text.size() + m.explain_graph_token.size() + 32;
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
        if (!*stored) {
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
            "INSERT INTO texts(digest, body, last_used) VALUES(?1, ?2, ?3) ON CONFLICT(digest) DO "
            "UPDATE SET last_used = excluded.last_used WHERE texts.last_used < "
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
        if (t.s.kind != ScannedKind::kIri || t.p.kind != ScannedKind::kIri) return;
        const std::string_view p = t.p.value.value(scratch_);
        // The model use of any step of the run (a step's subject is the step, not the run).
        if ((p == v::kInputTokens || p == v::kOutputTokens) && t.o.kind == ScannedKind::kLiteral) {
            const std::string_view digits = t.o.value.value(scratch_);
            std::int64_t n = 0;
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
            if (ec == std::errc() && end == digits.data() + digits.size() && n > 0)
                (p == v::kInputTokens ? facts.tokens_in : facts.tokens_out) += n;
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
    ScannedExplain scanned_;
    std::string reencoded_;
    std::string edited_;
    std::string scratch_;
    TripleBlobWriter blob_;  // the event's triples, its buffers reused across the batch
};

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
    for (const auto& delivery : deliveries) {
        if (const auto reason = ingest.accept(delivery, outcome)) {
            if (auto r = ingest.quarantine(delivery, *reason); !r) return r.error();
            ++outcome.quarantined;
            continue;
        }
        auto refused = ingest.refusal(delivery);
        if (!refused) return refused.error();
        if (*refused) {
            if (auto r = ingest.quarantine(delivery, **refused); !r) return r.error();
            ++outcome.refused;
            continue;
        }
        auto written = ingest.event(delivery, outcome);
        if (!written) return written.error();
        if (*written == Written::kTooLarge) {
            const std::string reason = "too large: its triples would take over " +
                                       std::to_string(kMaxTripleBlobBytes >> 20) +
                                       " MiB stored (one event's bound)";
            if (auto r = ingest.quarantine(delivery, reason); !r) return r.error();
            ++outcome.quarantined;
            continue;
        }
        ++(*written == Written::kStored ? outcome.stored : outcome.duplicates);
    }
    if (auto r = ingest.write_sessions(); !r) return r.error();
    // Ended runs of a conversation become its turns in the same commit as their end.
    for (const auto session : ingest.ended()) {
        if (auto r = detail::index_turn(*db_, config_, session); !r) return r.error();
    }
    if (auto r = transaction->commit(); !r) return r.error();
    return outcome;
}

}  // namespace glassbox::trace
