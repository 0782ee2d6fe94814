// The trace store: schema, batched idempotent ingest, quarantine, and the read queries of
// docs/traces.md over one storage::Database connection (statements prepared once, cached).
#include "workers/trace_collector/trace_store.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>

#include "schema/explain_uris.hpp"
#include "base/fnv.hpp"
#include "base/time_format.hpp"
#include "schema/messages.hpp"
#include "schema/protocol.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/trace_collector/explain_scan.hpp"

namespace glassbox::trace {

using nlohmann::json;
using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;
using storage::Database;
using storage::Statement;

namespace {

constexpr std::string_view kSchemaVersion = "1";
constexpr int kMaxShowDepth = 32;
constexpr std::size_t kMaxAmbiguousListed = 10;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions(
  id INTEGER PRIMARY KEY,
  uri TEXT NOT NULL UNIQUE,
  uuid TEXT,
  kind TEXT,
  question TEXT,
  parent TEXT,
  started INTEGER,
  ended INTEGER,
  status TEXT NOT NULL DEFAULT 'running',
  service TEXT,
  worker TEXT,
  error TEXT,
  last_event_at INTEGER NOT NULL,
  events INTEGER NOT NULL DEFAULT 0);
-- export's range and lists that include sub-traces.
CREATE INDEX IF NOT EXISTS sessions_started ON sessions(started);
-- kind and status filters over all sessions (include_subtraces) are rare: sessions_started
-- serves them, and every session row written no longer pays for two more indexes.
DROP INDEX IF EXISTS sessions_kind;
DROP INDEX IF EXISTS sessions_status;
-- Sub-traces by parent only: a full sessions_parent(parent, started) also served parent IS NULL,
-- and the planner took it for every top-level `list` (a table lookup per top-level session).
DROP INDEX IF EXISTS sessions_parent;
CREATE INDEX IF NOT EXISTS sessions_sub_parent ON sessions(parent, started) WHERE parent IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_uuid ON sessions(uuid);
-- `list` hides sub-traces by default, so its count and page are over parent IS NULL: these
-- partial indexes answer kind and status filters in the page order (kind|status, started, id)
-- without a table lookup per skipped or counted row.
CREATE INDEX IF NOT EXISTS sessions_top_kind ON sessions(kind, started) WHERE parent IS NULL;
CREATE INDEX IF NOT EXISTS sessions_top_status ON sessions(status, started) WHERE parent IS NULL;
-- The newest-first page, in exactly its ORDER BY (started DESC, id DESC, so no sorter and an
-- OFFSET skips index entries only), covering the question search.
DROP INDEX IF EXISTS sessions_top_started;
DROP INDEX IF EXISTS sessions_top_question;
CREATE INDEX IF NOT EXISTS sessions_top_page ON sessions(started, id, question) WHERE parent IS NULL;
CREATE TABLE IF NOT EXISTS events(
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  explain_id TEXT,
  state TEXT NOT NULL,
  received INTEGER NOT NULL,
  delivery_id INTEGER,
  PRIMARY KEY(session, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS triples(
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  ord INTEGER NOT NULL,
  triple TEXT NOT NULL,
  text_id INTEGER,
  PRIMARY KEY(session, seq, ord)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS texts(
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS quarantine(
  id INTEGER PRIMARY KEY,
  received INTEGER NOT NULL,
  delivery_id INTEGER UNIQUE,
  service TEXT,
  session TEXT,
  seq TEXT,
  state TEXT,
  reason TEXT NOT NULL,
  payload BLOB NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '1');
)sql";

std::int64_t to_ms(WallClock::time_point time) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

std::string fnv_digest(std::string_view text) {
    const std::uint64_t hash = base::fnv1a64(text);
    std::array<char, 48> buf{};
    std::snprintf(buf.data(), buf.size(), "%016llx:%zu", static_cast<unsigned long long>(hash), text.size());
    return buf.data();
}

// LIKE pattern for a substring, with the pattern characters escaped by '\'.
std::string like_pattern(std::string_view text) {
    std::string out = "%";
    for (const char c : text) {
        if (c == '%' || c == '_' || c == '\\') out += '\\';
        out += c;
    }
    out += '%';
    return out;
}

bool is_uuid_prefix(std::string_view id) {
    if (id.empty() || id.size() > 36) return false;
    return std::all_of(id.begin(), id.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '-'; });
}

// The frames of a delivery (checked before its body); the seq frame's value.
Result<std::uint64_t> check_frames(const Delivery& delivery) {
    const auto bad = [](std::string reason) { return make_error(ErrorType::kDecodeError, std::move(reason)); };
    const auto seq = schema::protocol::parse_ascii_int(delivery.seq);
    if (!seq) return bad("seq frame is not an ascii-int: \"" + delivery.seq.substr(0, 40) + "\"");
    if (delivery.state != schema::protocol::kStateOpen && delivery.state != schema::protocol::kStateComplete &&
        delivery.state != schema::protocol::kStateError) {
        return bad("state frame \"" + delivery.state.substr(0, 40) + "\" is not open, complete or error");
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

// The DOM decode: the message, or the quarantine reason.
Result<schema::ExplainMessage> validate_body(const Delivery& delivery) {
    const auto bad = [](std::string reason) { return make_error(ErrorType::kDecodeError, std::move(reason)); };
    auto seq = check_frames(delivery);
    if (!seq) return seq.error();
    auto parsed = schema::parse_json(delivery.body);
    if (!parsed) return bad("not JSON: " + parsed.error().message);
    if (!parsed->is_object()) return bad("wrong types: the body is not a JSON object");
    auto message = schema::decode<schema::ExplainMessage>(*parsed);
    if (!message) {
        const auto& why = message.error().message;
        return bad((why.rfind("explain_triples", 0) == 0 ? "bad triple: " : "wrong types: ") + why);
    }
    if (message->session != delivery.session) {
        return bad("session in the body (\"" + message->session.substr(0, 200) + "\") disagrees with the frame (\"" +
                   delivery.session.substr(0, 200) + "\")");
    }
    if (message->seq != *seq) {
        return bad("seq in the body (" + std::to_string(message->seq) + ") disagrees with the frame (" +
                   std::to_string(*seq) + ")");
    }
    const bool terminal = delivery.state != schema::protocol::kStateOpen;
    if (message->end_of_trace != terminal || message->trace_status != expected_status(delivery)) {
        return bad("end_of_trace/trace_status in the body disagree with the state frame \"" + delivery.state + "\"");
    }
    return std::move(message).value();
}

// The checks of validate_body after the decode, on a scanned body.
bool agrees_with_frames(const ScannedExplain& m, const Delivery& delivery, std::uint64_t seq) {
    const bool terminal = delivery.state != schema::protocol::kStateOpen;
    return m.session == delivery.session && m.seq == seq && m.end_of_trace == terminal &&
           m.trace_status == expected_status(delivery);
}

}  // namespace

Result<schema::ExplainMessage> validate_delivery(const Delivery& delivery) { return validate_body(delivery); }

// ---- open ----------------------------------------------------------------------------------------

TraceStore::TraceStore(std::filesystem::path path, StoreConfig config, std::unique_ptr<Database> db)
    : path_(std::move(path)), config_(config), db_(std::move(db)) {}

TraceStore::~TraceStore() = default;

Result<std::unique_ptr<TraceStore>> TraceStore::open(const std::filesystem::path& path, OpenMode mode,
                                                     StoreConfig config) {
    const auto fail = [&](const std::string& why) {
        return make_error(ErrorType::kInternal, "trace store " + path.string() + ": " + why);
    };
    storage::OpenOptions options;
    options.label = "trace store";
    options.read_only = mode == OpenMode::kReadOnly;
    // Read-write: created owner-only (0600), WAL; the ACK after a commit promises durability.
    options.create = true;
    options.wal = true;
    options.synchronous_full = config.synchronous_full;
    options.busy_timeout = config.busy_timeout;
    // A new store gets 16 KiB pages: a step's triples (tens of KiB) append to a quarter of the
    // pages, so each commit writes a quarter of the WAL frames (one write call each).
    options.page_size = 16384;
    // The wrapper's message already names the path: "trace store <path>: <why>".
    auto opened = Database::open(path, options);
    if (!opened) return opened.error();
    auto db = std::move(opened).value();
    if (mode == OpenMode::kReadWrite) {
        if (auto r = db->exec(kSchema); !r) return fail(r.error().message);
    }
    auto store = std::unique_ptr<TraceStore>(new TraceStore(path, config, std::move(db)));
    // A SQLite file that is not a trace store (or a damaged one) is refused here, not later.
    auto version = store->db_->prepare("SELECT value FROM meta WHERE key = 'schema'");
    if (!version) return fail("not a trace store (" + version.error().message + ")");
    auto row = version->step();
    if (!row) return fail(row.error().message);
    if (!*row) return fail("not a trace store (no schema version)");
    if (version->text(0) != kSchemaVersion) return fail("unsupported schema version " + std::string(version->text(0)));
    return store;
}

// ---- ingest --------------------------------------------------------------------------------------

namespace {

constexpr const char* kInsertEventSql =
    "INSERT INTO events(session, seq, explain_id, state, received, delivery_id) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(session, seq) DO NOTHING";
constexpr const char* kInsertTripleSql =
    "INSERT INTO triples(session, seq, ord, triple, text_id) VALUES(?1, ?2, ?3, ?4, ?5)";
constexpr const char* kSessionByUriSql = "SELECT id FROM sessions WHERE uri = ?1";

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
    Ingest(Database& db, const StoreConfig& config, std::int64_t received)
        : db_(db), config_(config), received_(received) {}

    Result<void> prepare() {
        for (auto [slot, sql] : {std::pair{&insert_event_, kInsertEventSql}, std::pair{&insert_triple_, kInsertTripleSql},
                                 std::pair{&session_by_uri_, kSessionByUriSql}}) {
            auto prepared = db_.prepare(sql);
            if (!prepared) return prepared.error();
            slot->emplace(std::move(prepared).value());
        }
        return {};
    }

    // Validates one delivery into `scanned_`: nullopt, or the quarantine reason.
    std::optional<std::string> accept(const Delivery& d) {
        auto seq = check_frames(d);
        if (!seq) return seq.error().message;
        if (scan_explain(d.body, scanned_) && agrees_with_frames(scanned_, d, *seq)) return std::nullopt;
        // Not the canonical form (or not valid): the DOM decoder has the last word, and a valid
        // message is stored in its canonical encoding, which the scan then reads.
        auto decoded = validate_body(d);
        if (!decoded) return decoded.error().message;
        reencoded_ = schema::dump(schema::encode(*decoded));
        if (scan_explain(reencoded_, scanned_) && agrees_with_frames(scanned_, d, *seq)) return std::nullopt;
        return "internal: the decoded message does not scan after re-encoding (a trace store bug)";
    }

    Result<void> quarantine(const Delivery& d, const std::string& reason) {
        auto insert = db_.prepare(
            "INSERT INTO quarantine(received, delivery_id, service, session, seq, state, reason, payload) "
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

    // Writes the accepted event; false if (session, seq) was already stored.
    Result<bool> event(const Delivery& d, BatchOutcome& outcome) {
        const ScannedExplain& m = scanned_;
        auto session = session_of(m.session);
        if (!session) return session.error();
        const std::int64_t sid = session->id;
        const auto seq = static_cast<std::int64_t>(m.seq);
        insert_event_->bind(1, sid)
            .bind(2, seq)
            .bind(3, std::string_view{m.explain_id})
            .bind(4, std::string_view{d.state})
            .bind(5, received_)
            .bind(6, static_cast<std::int64_t>(d.delivery_id));
        if (auto r = run_once(*insert_event_); !r) return r.error();
        if (db_.changes() == 0) return false;

        // A triple without a graph belongs to the message's explain graph ("" : none).
        const bool graph_known = m.explain_graph_token.size() > 2;
        Facts facts;
        std::int64_t ord = 0;
        for (const auto& t : m.triples) {
            std::optional<std::int64_t> text;
            if (t.o.kind == ScannedKind::kLiteral && t.o.value.raw.size() > config_.text_threshold) {
                const std::string_view value = t.o.value.value(scratch_);
                if (value.size() > config_.text_threshold) {
                    auto id = text_id(value);
                    if (!id) return id.error();
                    text = *id;
                }
            }
            insert_triple_->bind(1, sid).bind(2, seq).bind(3, ord++).bind(5, text);
            if ((t.has_graph || !graph_known) && !text) {
                insert_triple_->bind_static(4, t.text);
            } else {
                insert_triple_->bind_static(4, edited(t, graph_known && !t.has_graph, text.has_value(), m));
            }
            if (auto r = run_once(*insert_triple_); !r) return r.error();
            learn(m, t, facts);
        }
        outcome.triples += m.triples.size();
        // The calling step's run, when the Question does not say which run informed it.
        if (!facts.parent && m.parent_uri) {
            if (const auto run = schema::explain::RunUris::from_uri(*m.parent_uri)) facts.parent = run->question();
        }

        const bool terminal = d.state != schema::protocol::kStateOpen;
        std::optional<std::int64_t> ended = facts.ended;
        if (!ended && terminal) ended = received_;
        const std::int64_t started = facts.started ? *facts.started : received_;
        auto [update, first] = updates_.try_emplace(sid);
        SessionUpdate& u = update->second;
        if (first) {
            u.uri = session->fresh ? std::optional<std::string>{m.session} : std::nullopt;
            u.kind = d.service.empty() ? m.service : d.service;
            u.started = started;
        } else {
            u.started = std::min(*u.started, started);
        }
        if (!u.question && facts.question) u.question = std::move(facts.question);
        if (!u.parent && facts.parent) u.parent = std::move(facts.parent);
        if (!u.worker && !m.worker.empty()) u.worker = m.worker;
        if (m.error) u.error = m.error->describe();
        if (ended) u.ended = ended;
        if (terminal) u.status = d.state;
        ++u.events;
        return true;
    }

    // One INSERT per session new in the batch, one UPDATE per session stored before.
    Result<void> write_sessions() {
        auto insert = db_.prepare(
            "INSERT INTO sessions(id, uri, uuid, kind, service, question, parent, started, ended, status, worker, "
            "error, last_event_at, events) VALUES(?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
        if (!insert) return insert.error();
        for (const auto& [sid, u] : updates_) {
            if (!u.uri) continue;
            std::optional<std::string> uuid;
            if (const auto run = schema::explain::RunUris::from_uri(*u.uri)) uuid = run->uuid();
            insert->bind(1, sid)
                .bind(2, std::string_view{*u.uri})
                .bind(3, uuid)
                .bind(4, std::string_view{u.kind})
                .bind(5, u.question)
                .bind(6, u.parent)
                .bind(7, u.started)
                .bind(8, u.ended)
                .bind(9, u.status ? std::string_view{*u.status} : std::string_view{"running"})
                .bind(10, u.worker)
                .bind(11, u.error)
                .bind(12, received_)
                .bind(13, u.events);
            if (auto r = run_once(*insert); !r) return r.error();
        }
        auto update = db_.prepare(
            "UPDATE sessions SET "
            "kind = COALESCE(kind, ?1), service = COALESCE(service, ?1), "
            "question = COALESCE(question, ?2), parent = COALESCE(parent, ?3), "
            "started = CASE WHEN ?4 IS NULL THEN started "
            "  WHEN started IS NULL OR ?4 < started THEN ?4 ELSE started END, "
            "ended = COALESCE(?5, ended), "
            "status = CASE WHEN ?6 <> 'running' THEN ?6 ELSE status END, "
            "worker = COALESCE(worker, ?7), error = COALESCE(?8, error), "
            "last_event_at = MAX(last_event_at, ?9), events = events + ?11 "
            "WHERE id = ?10");
        if (!update) return update.error();
        for (const auto& [sid, u] : updates_) {
            if (u.uri) continue;
            update->bind(1, std::string_view{u.kind})
                .bind(2, u.question)
                .bind(3, u.parent)
                .bind(4, u.started)
                .bind(5, u.ended)
                .bind(6, u.status ? std::string_view{*u.status} : std::string_view{"running"})
                .bind(7, u.worker)
                .bind(8, u.error)
                .bind(9, received_)
                .bind(10, sid)
                .bind(11, u.events);
            if (auto r = run_once(*update); !r) return r.error();
        }
        updates_.clear();
        return {};
    }

private:
    struct SessionRef {
        std::int64_t id = 0;
        bool fresh = false;  // no row yet: INSERTed at the end of the batch
    };

    // What a session row learns from one event's triples about the run (its Question).
    struct Facts {
        std::optional<std::string> question;
        std::optional<std::int64_t> started;
        std::optional<std::int64_t> ended;
        std::optional<std::string> parent;
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
        std::optional<std::string> error;
        std::optional<std::int64_t> started;
        std::optional<std::int64_t> ended;
        std::optional<std::string> status;
        std::int64_t events = 0;
    };

    Result<SessionRef> session_of(const std::string& uri) {
        if (const auto found = sessions_.find(uri); found != sessions_.end()) return found->second;
        SessionRef ref;
        session_by_uri_->bind(1, std::string_view{uri});
        auto row = session_by_uri_->step();
        if (!row) {
            session_by_uri_->reset();
            return row.error();
        }
        if (*row) {
            ref.id = session_by_uri_->int64(0);
        } else {
            if (!next_session_id_) {
                auto max = db_.prepare("SELECT COALESCE(MAX(id), 0) + 1 FROM sessions");
                if (!max) return max.error();
                auto stepped = max->step();
                if (!stepped) return stepped.error();
                next_session_id_ = max->int64(0);
            }
            ref.id = (*next_session_id_)++;
            ref.fresh = true;
        }
        session_by_uri_->reset();
        sessions_.emplace(uri, ref);
        return ref;
    }

    // The id of `body` in texts (stored once); nullopt on a digest collision (then inline it).
    Result<std::optional<std::int64_t>> text_id(std::string_view body) {
        const std::string digest = fnv_digest(body);
        auto insert = db_.prepare("INSERT INTO texts(digest, body) VALUES(?1, ?2) ON CONFLICT(digest) DO NOTHING");
        if (!insert) return insert.error();
        insert->bind_static(1, digest).bind_static(2, body);
        if (auto r = run_once(*insert); !r) return r.error();
        auto select = db_.prepare("SELECT id, body FROM texts WHERE digest = ?1");
        if (!select) return select.error();
        select->bind_static(1, digest);
        auto row = select->step();
        if (!row) return row.error();
        if (!*row || select->text(1) != body) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{select->int64(0)};
    }

    // The triple's text as received with the explain graph added and/or its long literal
    // object's value cut out (stored in texts instead).
    const std::string& edited(const ScannedTriple& t, bool add_graph, bool cut_value, const ScannedExplain& m) {
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
        if (t.s.value.value(scratch_) != m.session) return;
        const std::string_view p = t.p.value.value(scratch_);
        if (p == v::kQuery && t.o.kind == ScannedKind::kLiteral) {
            facts.question = t.o.value.str();
        } else if (p == v::kProvStartedAtTime && t.o.kind == ScannedKind::kLiteral) {
            facts.started = base::parse_xsd_datetime_ms(t.o.value.value(scratch_));
        } else if (p == v::kProvEndedAtTime && t.o.kind == ScannedKind::kLiteral) {
            facts.ended = base::parse_xsd_datetime_ms(t.o.value.value(scratch_));
        } else if (p == v::kProvWasInformedBy && t.o.kind == ScannedKind::kIri) {
            facts.parent = t.o.value.str();
        }
    }

    Database& db_;
    const StoreConfig& config_;
    std::int64_t received_;
    std::optional<Statement> insert_event_;
    std::optional<Statement> insert_triple_;
    std::optional<Statement> session_by_uri_;
    std::unordered_map<std::string, SessionRef> sessions_;
    std::optional<std::int64_t> next_session_id_;
    std::map<std::int64_t, SessionUpdate> updates_;
    ScannedExplain scanned_;
    std::string reencoded_;
    std::string edited_;
    std::string scratch_;
};

}  // namespace

Result<BatchOutcome> TraceStore::store_batch(const std::vector<Delivery>& deliveries,
                                             WallClock::time_point received) {
    BatchOutcome outcome;
    if (deliveries.empty()) return outcome;
    // Rolled back by its destructor on any early return.
    auto transaction = storage::Transaction::begin(*db_, storage::Transaction::Kind::kImmediate);
    if (!transaction) return transaction.error();
    Ingest ingest(*db_, config_, to_ms(received));
    if (auto r = ingest.prepare(); !r) return r.error();
    for (const auto& delivery : deliveries) {
        if (const auto reason = ingest.accept(delivery)) {
            if (auto r = ingest.quarantine(delivery, *reason); !r) return r.error();
            ++outcome.quarantined;
            continue;
        }
        auto stored = ingest.event(delivery, outcome);
        if (!stored) return stored.error();
        ++(*stored ? outcome.stored : outcome.duplicates);
    }
    if (auto r = ingest.write_sessions(); !r) return r.error();
    if (auto r = transaction->commit(); !r) return r.error();
    return outcome;
}

// ---- reads ---------------------------------------------------------------------------------------

namespace {

constexpr const char* kSummaryColumns =
    "id, uri, kind, question, parent, started, ended, status, service, worker, events, last_event_at, error";

std::string effective_status(std::string_view stored, std::int64_t last_event_at, std::int64_t cutoff) {
    if (stored == "running" && last_event_at < cutoff) return "incomplete";
    return std::string(stored);
}

json optional_time(const Statement& q, int column) {
    if (q.is_null(column)) return nullptr;
    return base::format_xsd_datetime_ms(q.int64(column));
}

json summary_of(const Statement& q, std::int64_t cutoff) {
    json s = json::object();
    s["session"] = std::string(q.text(1));
    s["kind"] = q.is_null(2) ? json(nullptr) : json(std::string(q.text(2)));
    s["question"] = q.is_null(3) ? json(nullptr) : json(std::string(q.text(3)));
    s["parent"] = q.is_null(4) ? json(nullptr) : json(std::string(q.text(4)));
    s["started"] = optional_time(q, 5);
    s["ended"] = optional_time(q, 6);
    s["duration_ms"] = (q.is_null(5) || q.is_null(6)) ? json(nullptr) : json(std::max<std::int64_t>(0, q.int64(6) - q.int64(5)));
    s["status"] = effective_status(q.text(7), q.int64(11), cutoff);
    s["service"] = q.is_null(8) ? json(nullptr) : json(std::string(q.text(8)));
    s["worker"] = q.is_null(9) ? json(nullptr) : json(std::string(q.text(9)));
    s["events"] = q.int64(10);
    if (!q.is_null(12)) s["error"] = std::string(q.text(12));
    return s;
}

using Binding = std::variant<std::int64_t, std::string>;

void bind_all(Statement& q, const std::vector<Binding>& bindings) {
    int index = 1;
    for (const auto& b : bindings) {
        if (const auto* i = std::get_if<std::int64_t>(&b)) {
            q.bind(index++, *i);
        } else {
            q.bind(index++, std::string_view{std::get<std::string>(b)});
        }
    }
}

// Re-inlines a stored text into a triple's object.
json triple_json(const Statement& q, int triple_column, int text_column) {
    json t = json::parse(q.text(triple_column), nullptr, false);
    if (!q.is_null(text_column) && t.is_object() && t.contains("o") && t["o"].is_object()) {
        t["o"]["v"] = std::string(q.text(text_column));
    }
    return t;
}

// A list cursor: "<started>.<id>" of the last session a page listed.
std::string make_cursor(std::int64_t started, std::int64_t id) {
    return std::to_string(started) + "." + std::to_string(id);
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_cursor(std::string_view text) {
    const auto dot = text.find('.', 1);
    if (dot == std::string_view::npos) return std::nullopt;
    std::int64_t started = 0;
    std::int64_t id = 0;
    const auto parse = [](std::string_view part, std::int64_t& out) {
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
        return ec == std::errc{} && end == part.data() + part.size() && !part.empty();
    };
    if (!parse(text.substr(0, dot), started) || !parse(text.substr(dot + 1), id)) return std::nullopt;
    return std::pair{started, id};
}

// Runs `body` inside one read transaction, so a multi-statement read sees one snapshot.
template <typename F>
auto in_read_transaction(Database& db, F&& body) -> decltype(body()) {
    auto transaction = storage::Transaction::begin(db, storage::Transaction::Kind::kDeferred);
    if (!transaction) return transaction.error();
    auto result = body();
    (void)transaction->commit();
    return result;
}

}  // namespace

Result<std::string> TraceStore::resolve_session(std::string_view id) {
    if (id.empty()) return make_error(ErrorType::kInvalidRequest, "an empty session id");
    {
        auto exact = db_->prepare("SELECT uri FROM sessions WHERE uri = ?1");
        if (!exact) return exact.error();
        exact->bind(1, id);
        auto row = exact->step();
        if (!row) return row.error();
        if (*row) return std::string(exact->text(0));
    }
    std::string prefix(id);
    std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // A session URI of a run also names its UUID: accept urn:glassbox:<uuid>:question forms.
    if (const auto run = schema::explain::RunUris::from_uri(prefix)) prefix = run->uuid();
    if (!is_uuid_prefix(prefix)) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
    auto q = db_->prepare("SELECT uri FROM sessions WHERE uuid >= ?1 AND uuid < ?2 ORDER BY uuid LIMIT ?3");
    if (!q) return q.error();
    // '~' sorts after every hex digit and '-': [prefix, prefix~) is exactly the prefix's range.
    q->bind(1, std::string_view{prefix})
        .bind(2, std::string_view{prefix + "~"})
        .bind(3, static_cast<std::int64_t>(kMaxAmbiguousListed + 1));
    std::vector<std::string> matches;
    while (true) {
        auto row = q->step();
        if (!row) return row.error();
        if (!*row) break;
        matches.emplace_back(q->text(0));
    }
    if (matches.empty()) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
    if (matches.size() == 1) return matches.front();
    std::string message = "ambiguous id " + std::string(id) + " matches";
    for (std::size_t i = 0; i < std::min(matches.size(), kMaxAmbiguousListed); ++i) message += " " + matches[i];
    if (matches.size() > kMaxAmbiguousListed) message += " …";
    return make_error(ErrorType::kInvalidRequest, message);
}

Result<json> TraceStore::list(const ListQuery& query, WallClock::time_point now) {
    const std::int64_t cutoff = to_ms(now) - std::chrono::duration_cast<std::chrono::milliseconds>(config_.incomplete_after).count();
    std::vector<std::string> where;
    std::vector<Binding> bindings;
    const auto param = [&](Binding b) {
        bindings.push_back(std::move(b));
        return "?" + std::to_string(bindings.size());
    };
    if (query.kind) where.push_back("kind = " + param(*query.kind));
    if (query.status) {
        const std::string& s = *query.status;
        if (s == "complete" || s == "error") {
            where.push_back("status = " + param(s));
        } else if (s == "running") {
            where.push_back("status = 'running' AND last_event_at >= " + param(cutoff));
        } else if (s == "incomplete") {
            where.push_back("status = 'running' AND last_event_at < " + param(cutoff));
        } else {
            return make_error(ErrorType::kInvalidRequest,
                              "\"status\" must be running, complete, error or incomplete, not \"" + s + "\"");
        }
    }
    if (query.since_ms) where.push_back("started >= " + param(*query.since_ms));
    if (query.until_ms) where.push_back("started < " + param(*query.until_ms));
    if (query.search) where.push_back("question LIKE " + param(like_pattern(*query.search)) + " ESCAPE '\\'");
    if (query.parent) {
        auto parent = resolve_session(*query.parent);
        if (!parent) return parent.error();
        where.push_back("parent = " + param(*parent));
    } else if (!query.include_subtraces) {
        where.push_back("parent IS NULL");
    }
    std::string clause;
    for (std::size_t i = 0; i < where.size(); ++i) clause += (i == 0 ? " WHERE " : " AND ") + where[i];
    const std::vector<Binding> filter_bindings = bindings;

    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    const std::int64_t limit = std::max<std::int64_t>(query.limit, 0);
    const std::int64_t offset = std::max<std::int64_t>(query.offset, 0);

    std::int64_t total = 0;
    bool total_exact = true;
    if (query.exact_total) {
        auto count = db_->prepare("SELECT COUNT(*) FROM sessions" + clause);
        if (!count) return count.error();
        bind_all(*count, filter_bindings);
        auto row = count->step();
        if (!row) return row.error();
        total = count->int64(0);
    } else {
        // Counting stops one past the cap: reaching it means "at least cap".
        const std::int64_t page_end = offset > kMax - limit ? kMax : offset + limit;
        const std::int64_t cap = std::max(config_.list_count_limit, page_end);
        std::vector<Binding> count_bindings = filter_bindings;
        count_bindings.emplace_back(cap == kMax ? std::int64_t{-1} : cap + 1);
        auto count = db_->prepare("SELECT COUNT(*) FROM (SELECT 1 FROM sessions" + clause + " LIMIT ?" +
                                  std::to_string(count_bindings.size()) + ")");
        if (!count) return count.error();
        bind_all(*count, count_bindings);
        auto row = count->step();
        if (!row) return row.error();
        total = count->int64(0);
        if (total > cap) {
            total = cap;
            total_exact = false;
        }
    }

    if (query.after) {
        const auto cursor = parse_cursor(*query.after);
        if (!cursor) {
            return make_error(ErrorType::kInvalidRequest,
                              "\"after\" must be the \"next\" cursor of an earlier list reply, not \"" +
                                  query.after->substr(0, 60) + "\"");
        }
        // A row value: the planner seeks the page index to the cursor instead of skipping rows.
        const std::string started = param(cursor->first);
        const std::string id = param(cursor->second);
        clause += (where.empty() ? " WHERE " : " AND ") + ("(started, id) < (" + started + ", " + id + ")");
    }
    // One row more than the page says whether a next page exists.
    const std::string limit_param = param(limit == kMax ? kMax : limit + 1);
    const std::string offset_param = param(offset);
    auto select = db_->prepare(std::string("SELECT ") + kSummaryColumns + " FROM sessions" + clause +
                               " ORDER BY started DESC, id DESC LIMIT " + limit_param + " OFFSET " + offset_param);
    if (!select) return select.error();
    bind_all(*select, bindings);
    json sessions = json::array();
    json next = nullptr;
    // The cursor of the last session listed; empty if it has no start time (never the case once
    // a batch committed), which ends the paging.
    std::string last;
    while (true) {
        auto row = select->step();
        if (!row) return row.error();
        if (!*row) break;
        if (static_cast<std::int64_t>(sessions.size()) == limit) {
            if (!last.empty()) next = last;
            break;
        }
        sessions.push_back(summary_of(*select, cutoff));
        last = select->is_null(5) ? std::string{} : make_cursor(select->int64(5), select->int64(0));
    }
    return json{{"sessions", std::move(sessions)}, {"total", total}, {"total_exact", total_exact},
                {"limit", query.limit}, {"offset", query.offset}, {"next", std::move(next)}};
}

namespace {

Result<json> show_session(Database& db, std::int64_t id, std::int64_t cutoff, int depth, std::set<std::int64_t>& seen) {
    seen.insert(id);
    json out = json::object();
    std::string uri;
    {
        auto q = db.prepare(std::string("SELECT ") + kSummaryColumns + " FROM sessions WHERE id = ?1");
        if (!q) return q.error();
        q->bind(1, id);
        auto row = q->step();
        if (!row) return row.error();
        if (!*row) return make_error(ErrorType::kNotFound, "no trace with row id " + std::to_string(id));
        out["session"] = summary_of(*q, cutoff);
        uri = q->text(1);
    }
    json events = json::array();
    std::map<std::int64_t, std::size_t> by_seq;
    {
        auto q = db.prepare("SELECT seq, explain_id, state, received FROM events WHERE session = ?1 ORDER BY seq");
        if (!q) return q.error();
        q->bind(1, id);
        while (true) {
            auto row = q->step();
            if (!row) return row.error();
            if (!*row) break;
            by_seq[q->int64(0)] = events.size();
            events.push_back({{"seq", q->int64(0)},
                              {"explain_id", std::string(q->text(1))},
                              {"state", std::string(q->text(2))},
                              {"received", base::format_xsd_datetime_ms(q->int64(3))},
                              {"triples", json::array()}});
        }
    }
    {
        auto q = db.prepare(
            "SELECT t.seq, t.triple, x.body FROM triples t LEFT JOIN texts x ON x.id = t.text_id "
            "WHERE t.session = ?1 ORDER BY t.seq, t.ord");
        if (!q) return q.error();
        q->bind(1, id);
        while (true) {
            auto row = q->step();
            if (!row) return row.error();
            if (!*row) break;
            const auto found = by_seq.find(q->int64(0));
            if (found == by_seq.end()) continue;
            events[found->second]["triples"].push_back(triple_json(*q, 1, 2));
        }
    }
    out["events"] = std::move(events);
    json subtraces = json::array();
    if (depth < kMaxShowDepth) {
        std::vector<std::int64_t> children;
        {
            auto q = db.prepare("SELECT id FROM sessions WHERE parent = ?1 ORDER BY started, id");
            if (!q) return q.error();
            q->bind(1, std::string_view{uri});
            while (true) {
                auto row = q->step();
                if (!row) return row.error();
                if (!*row) break;
                if (seen.count(q->int64(0)) == 0) children.push_back(q->int64(0));
            }
        }
        for (const auto child : children) {
            auto nested = show_session(db, child, cutoff, depth + 1, seen);
            if (!nested) return nested.error();
            subtraces.push_back(std::move(nested).value());
        }
    }
    out["subtraces"] = std::move(subtraces);
    return out;
}

}  // namespace

Result<json> TraceStore::show(std::string_view id, WallClock::time_point now) {
    const std::int64_t cutoff = to_ms(now) - std::chrono::duration_cast<std::chrono::milliseconds>(config_.incomplete_after).count();
    return in_read_transaction(*db_, [&]() -> Result<json> {
        auto uri = resolve_session(id);
        if (!uri) return uri.error();
        std::int64_t row_id = 0;
        {
            auto q = db_->prepare("SELECT id FROM sessions WHERE uri = ?1");
            if (!q) return q.error();
            q->bind(1, std::string_view{*uri});
            auto row = q->step();
            if (!row) return row.error();
            if (!*row) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
            row_id = q->int64(0);
        }
        std::set<std::int64_t> seen;
        return show_session(*db_, row_id, cutoff, 0, seen);
    });
}

Result<ExportCounts> TraceStore::export_nquads(std::optional<std::int64_t> since_ms, std::optional<std::int64_t> until_ms,
                                               const NquadsSink& sink, std::size_t lines_per_chunk) {
    return in_read_transaction(*db_, [&]() -> Result<ExportCounts> {
        ExportCounts counts;
        std::vector<std::int64_t> sessions;
        {
            auto q = db_->prepare("SELECT id FROM sessions WHERE started >= ?1 AND started < ?2 ORDER BY started, id");
            if (!q) return q.error();
            q->bind(1, since_ms.value_or(std::numeric_limits<std::int64_t>::min()))
                .bind(2, until_ms.value_or(std::numeric_limits<std::int64_t>::max()));
            while (true) {
                auto row = q->step();
                if (!row) return row.error();
                if (!*row) break;
                sessions.push_back(q->int64(0));
            }
        }
        const std::string triples_sql =
            "SELECT t.triple, x.body FROM triples t LEFT JOIN texts x ON x.id = t.text_id "
            "WHERE t.session = ?1 ORDER BY t.seq, t.ord";
        std::string chunk;
        std::size_t lines = 0;
        const auto flush = [&]() -> bool {
            if (lines == 0) return true;
            const bool go_on = sink(chunk);
            chunk.clear();
            lines = 0;
            return go_on;
        };
        for (const auto id : sessions) {
            auto q = db_->prepare(triples_sql);
            if (!q) return q.error();
            q->bind(1, id);
            while (true) {
                auto row = q->step();
                if (!row) return row.error();
                if (!*row) break;
                auto triple = schema::decode_triple(triple_json(*q, 0, 1));
                if (!triple) return make_error(ErrorType::kInternal, "trace store: a stored triple does not decode: " +
                                                                         triple.error().message);
                chunk += schema::to_nquads(*triple);
                chunk += '\n';
                ++counts.triples;
                if (++lines >= lines_per_chunk && !flush()) {
                    return make_error(ErrorType::kCancelled, "export stopped");
                }
            }
            ++counts.sessions;
        }
        if (!flush()) return make_error(ErrorType::kCancelled, "export stopped");
        return counts;
    });
}

Result<json> TraceStore::stats(WallClock::time_point now) {
    const std::int64_t cutoff = to_ms(now) - std::chrono::duration_cast<std::chrono::milliseconds>(config_.incomplete_after).count();
    return in_read_transaction(*db_, [&]() -> Result<json> {
        json out = json::object();
        const auto count = [&](const char* sql) -> Result<std::int64_t> {
            auto q = db_->prepare(sql);
            if (!q) return q.error();
            auto row = q->step();
            if (!row) return row.error();
            return q->int64(0);
        };
        const std::pair<const char*, const char*> counters[] = {
            {"sessions", "SELECT COUNT(*) FROM sessions"}, {"events", "SELECT COUNT(*) FROM events"},
            {"triples", "SELECT COUNT(*) FROM triples"},   {"texts", "SELECT COUNT(*) FROM texts"},
            {"quarantined", "SELECT COUNT(*) FROM quarantine"}};
        for (const auto& [name, sql] : counters) {
            auto n = count(sql);
            if (!n) return n.error();
            out[name] = *n;
        }
        json by_status = {{"running", 0}, {"complete", 0}, {"error", 0}, {"incomplete", 0}};
        auto q = db_->prepare(
            "SELECT CASE WHEN status = 'running' AND last_event_at < ?1 THEN 'incomplete' "
            "ELSE status END AS s, COUNT(*) FROM sessions GROUP BY s");
        if (!q) return q.error();
        q->bind(1, cutoff);
        while (true) {
            auto row = q->step();
            if (!row) return row.error();
            if (!*row) break;
            by_status[std::string(q->text(0))] = q->int64(1);
        }
        out["by_status"] = std::move(by_status);
        std::error_code ec;
        std::uintmax_t bytes = 0;
        for (const char* suffix : {"", "-wal"}) {
            const auto size = std::filesystem::file_size(path_.string() + suffix, ec);
            if (!ec) bytes += size;
        }
        out["db_bytes"] = bytes;
        return out;
    });
}

}  // namespace glassbox::trace
