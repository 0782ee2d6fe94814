// The trace store: schema, batched idempotent ingest, quarantine, and the read queries of
// docs/traces.md over one SQLite connection whose statements are prepared once and cached.
#include "workers/trace_collector/trace_store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>

#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/protocol.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::trace {

using nlohmann::json;
using schema::Error;
using schema::ErrorType;
using schema::make_error;
using schema::Result;

namespace detail {

struct StatementDeleter {
    void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};
using StatementPtr = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

// The one place a sqlite3 handle lives: closed (after its statements) on destruction.
struct Database {
    sqlite3* handle = nullptr;
    std::unordered_map<std::string, StatementPtr> statements;

    ~Database() {
        statements.clear();
        if (handle != nullptr) sqlite3_close(handle);
    }
    std::string message() const { return handle != nullptr ? sqlite3_errmsg(handle) : "out of memory"; }
};

}  // namespace detail

namespace {

using detail::Database;

constexpr std::string_view kSchemaVersion = "1";
constexpr int kMaxShowDepth = 32;
constexpr std::size_t kMaxAmbiguousListed = 10;

Error store_error(const std::string& what, const Database& db) {
    return make_error(ErrorType::kInternal, "trace store: " + what + ": " + db.message());
}

// A cached statement, reset and unbound when this goes out of scope.
class Query {
public:
    Query(Database& db, sqlite3_stmt* statement) : db_(db), statement_(statement) {}
    ~Query() {
        if (statement_ != nullptr) {
            sqlite3_reset(statement_);
            sqlite3_clear_bindings(statement_);
        }
    }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;

    Query& bind(int index, std::string_view text) {
        sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
        return *this;
    }
    // `text` must outlive the statement's next step.
    Query& bind_static(int index, std::string_view text) {
        sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
        return *this;
    }
    Query& bind_blob(int index, std::string_view bytes) {
        sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
        return *this;
    }
    Query& bind(int index, std::int64_t value) {
        sqlite3_bind_int64(statement_, index, value);
        return *this;
    }
    Query& bind(int index, const std::optional<std::string>& text) {
        if (text) return bind(index, std::string_view{*text});
        sqlite3_bind_null(statement_, index);
        return *this;
    }
    Query& bind(int index, const std::optional<std::int64_t>& value) {
        if (value) return bind(index, *value);
        sqlite3_bind_null(statement_, index);
        return *this;
    }
    // SQLITE_ROW: true; SQLITE_DONE: false; anything else: an Error.
    Result<bool> step() {
        const int rc = sqlite3_step(statement_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        return store_error("statement failed", db_);
    }
    Result<void> run() {
        auto stepped = step();
        if (!stepped) return stepped.error();
        return {};
    }
    bool is_null(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }
    std::int64_t int64(int column) const { return sqlite3_column_int64(statement_, column); }
    std::string_view text(int column) const {
        const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(statement_, column));
        if (data == nullptr) return {};
        return {data, static_cast<std::size_t>(sqlite3_column_bytes(statement_, column))};
    }
    std::optional<std::string> optional_text(int column) const {
        if (is_null(column)) return std::nullopt;
        return std::string(text(column));
    }

private:
    Database& db_;
    sqlite3_stmt* statement_;
};

Result<sqlite3_stmt*> prepare(Database& db, const std::string& sql) {
    if (const auto found = db.statements.find(sql); found != db.statements.end()) return found->second.get();
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db.handle, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &raw,
                           nullptr) != SQLITE_OK) {
        return store_error("cannot prepare \"" + sql.substr(0, 60) + "\"", db);
    }
    detail::StatementPtr owned{raw};
    db.statements.emplace(sql, std::move(owned));
    return raw;
}

Result<void> exec(Database& db, const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db.handle, sql, nullptr, nullptr, &message) != SQLITE_OK) {
        std::string text = message != nullptr ? message : db.message();
        sqlite3_free(message);
        return make_error(ErrorType::kInternal, "trace store: " + text);
    }
    return {};
}

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
CREATE INDEX IF NOT EXISTS sessions_started ON sessions(started);
CREATE INDEX IF NOT EXISTS sessions_kind ON sessions(kind, started);
CREATE INDEX IF NOT EXISTS sessions_status ON sessions(status, started);
-- Sub-traces by parent only: a full sessions_parent(parent, started) also served parent IS NULL,
-- and the planner took it for every top-level `list` (a table lookup per top-level session).
DROP INDEX IF EXISTS sessions_parent;
CREATE INDEX IF NOT EXISTS sessions_sub_parent ON sessions(parent, started) WHERE parent IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_uuid ON sessions(uuid);
-- `list` hides sub-traces by default, so its COUNT and page are over parent IS NULL: these
-- partial indexes answer kind and status filters (and the question search, covered) without
-- a table lookup per matching row (100,000 sessions: hundreds of ms otherwise).
CREATE INDEX IF NOT EXISTS sessions_top_kind ON sessions(kind, started) WHERE parent IS NULL;
CREATE INDEX IF NOT EXISTS sessions_top_status ON sessions(status, started) WHERE parent IS NULL;
-- (started, question) also serves the unfiltered newest-first page; it replaces
-- sessions_top_started(started), which the planner preferred for a search, reading every row.
DROP INDEX IF EXISTS sessions_top_started;
CREATE INDEX IF NOT EXISTS sessions_top_question ON sessions(started, question) WHERE parent IS NULL;
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

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::string fnv_digest(std::string_view text) {
    std::uint64_t hash = 14695981039346656037ull;
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ull;
    }
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

// What a session row learns from one event's triples about the run (its Question).
struct SessionFacts {
    std::optional<std::string> question;
    std::optional<std::int64_t> started;
    std::optional<std::int64_t> ended;
    std::optional<std::string> parent;
};

SessionFacts session_facts(const schema::ExplainMessage& message) {
    namespace v = schema::vocab;
    SessionFacts facts;
    for (const auto& t : message.explain_triples) {
        if (!t.s.is_iri() || t.s.as_iri().value != message.session || !t.p.is_iri()) continue;
        const std::string& p = t.p.as_iri().value;
        if (p == v::kQuery && t.o.is_literal()) {
            facts.question = t.o.as_literal().value;
        } else if (p == v::kProvStartedAtTime && t.o.is_literal()) {
            facts.started = parse_datetime_ms(t.o.as_literal().value);
        } else if (p == v::kProvEndedAtTime && t.o.is_literal()) {
            facts.ended = parse_datetime_ms(t.o.as_literal().value);
        } else if (p == v::kProvWasInformedBy && t.o.is_iri()) {
            facts.parent = t.o.as_iri().value;
        }
    }
    // The calling step's run, when the Question does not say which run informed it.
    if (!facts.parent && message.parent_uri) {
        if (const auto run = schema::explain::RunUris::from_uri(*message.parent_uri)) facts.parent = run->question();
    }
    return facts;
}

}  // namespace

// ---- validation ------------------------------------------------------------------------------

namespace {

// A valid delivery: its decoded message and the parsed body it came from (ingest stores each
// triple's JSON from the body instead of re-encoding the decoded triple).
struct Validated {
    schema::ExplainMessage message;
    json body;
};

Result<Validated> validate_body(const Delivery& delivery) {
    const auto bad = [](std::string reason) { return make_error(ErrorType::kDecodeError, std::move(reason)); };
    const auto seq = schema::protocol::parse_ascii_int(delivery.seq);
    if (!seq) return bad("seq frame is not an ascii-int: \"" + delivery.seq.substr(0, 40) + "\"");
    if (delivery.state != schema::protocol::kStateOpen && delivery.state != schema::protocol::kStateComplete &&
        delivery.state != schema::protocol::kStateError) {
        return bad("state frame \"" + delivery.state.substr(0, 40) + "\" is not open, complete or error");
    }
    if (delivery.session.empty()) return bad("session frame is empty");
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
    const auto expected = delivery.state == schema::protocol::kStateComplete ? schema::TraceStatus::kComplete
                          : delivery.state == schema::protocol::kStateError  ? schema::TraceStatus::kError
                                                                              : schema::TraceStatus::kNone;
    if (message->end_of_trace != terminal || message->trace_status != expected) {
        return bad("end_of_trace/trace_status in the body disagree with the state frame \"" + delivery.state + "\"");
    }
    return Validated{std::move(message).value(), std::move(parsed).value()};
}

}  // namespace

Result<schema::ExplainMessage> validate_delivery(const Delivery& delivery) {
    auto validated = validate_body(delivery);
    if (!validated) return validated.error();
    return std::move(validated->message);
}

// ---- dates -------------------------------------------------------------------------------------

std::optional<std::int64_t> parse_datetime_ms(std::string_view s) noexcept {
    const auto digits = [&](std::size_t at, std::size_t n) -> std::optional<unsigned> {
        if (at + n > s.size()) return std::nullopt;
        unsigned v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (s[i] < '0' || s[i] > '9') return std::nullopt;
            v = v * 10 + static_cast<unsigned>(s[i] - '0');
        }
        return v;
    };
    // YYYY-MM-DDTHH:MM:SS
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':') {
        return std::nullopt;
    }
    const auto year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
    const auto hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
    if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
    if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 24 || *minute > 59 || *second > 60) {
        return std::nullopt;
    }
    std::size_t at = 19;
    std::int64_t millis = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        std::size_t n = 0;
        std::int64_t scale = 100;
        while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
            if (n < 3) millis += (s[at] - '0') * scale;
            scale /= 10;
            ++n;
            ++at;
        }
        if (n == 0) return std::nullopt;
    }
    std::int64_t offset_min = 0;
    if (at < s.size()) {
        if ((s[at] == 'Z' || s[at] == 'z') && at + 1 == s.size()) {
            ++at;
        } else if ((s[at] == '+' || s[at] == '-') && at + 6 == s.size() && s[at + 3] == ':') {
            const auto oh = digits(at + 1, 2), om = digits(at + 4, 2);
            if (!oh || !om || *oh > 14 || *om > 59) return std::nullopt;
            offset_min = (s[at] == '-' ? -1 : 1) * static_cast<std::int64_t>(*oh * 60 + *om);
            at += 6;
        } else {
            return std::nullopt;
        }
    }
    const std::int64_t days = days_from_civil(*year, *month, *day);
    const std::int64_t secs = days * 86400 + *hour * 3600 + *minute * 60 + *second - offset_min * 60;
    return secs * 1000 + millis;
}

std::string format_datetime_ms(std::int64_t epoch_ms) {
    const std::int64_t secs = (epoch_ms >= 0 ? epoch_ms : epoch_ms - 999) / 1000;
    const auto millis = static_cast<int>(epoch_ms - secs * 1000);
    const auto t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::array<char, 96> buf{};
    std::snprintf(buf.data(), buf.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return buf.data();
}

// ---- canonical encoding ------------------------------------------------------------------------

namespace {

// True if `j` (which decoded to `term`) is exactly what schema::encode(term) writes: decoding
// read every key it has, so matching key counts mean matching keys and values.
bool canonical_term(const json& j, const schema::Term& term);

// `quoted`: inside a quoted triple, which encode writes without a graph.
bool canonical_triple(const json& j, const schema::Triple& triple, bool quoted) {
    if (!j.is_object()) return false;
    const std::size_t keys = 3 + (triple.graph && !quoted ? 1 : 0);
    if (j.size() != keys) return false;
    const auto s = j.find("s"), p = j.find("p"), o = j.find("o");
    if (s == j.end() || p == j.end() || o == j.end()) return false;
    return canonical_term(*s, triple.s) && canonical_term(*p, triple.p) && canonical_term(*o, triple.o);
}

bool canonical_term(const json& j, const schema::Term& term) {
    if (!j.is_object()) return false;
    const auto t = j.find("t");
    if (t == j.end() || !t->is_string()) return false;
    const auto& kind = t->get_ref<const std::string&>();
    switch (term.kind()) {
        case schema::Term::Kind::kIri:
            return kind == "i" && j.size() == 2;
        case schema::Term::Kind::kBlankNode:
            return kind == "b" && j.size() == 2;
        case schema::Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            return kind == "l" &&
                   j.size() == 2 + (lit.datatype.empty() ? 0u : 1u) + (lit.language.empty() ? 0u : 1u);
        }
        case schema::Term::Kind::kTriple: {
            if (kind != "t" || j.size() != 2) return false;
            const auto tr = j.find("tr");
            return tr != j.end() && canonical_triple(*tr, term.as_triple(), true);
        }
    }
    return false;
}

}  // namespace

// ---- open ----------------------------------------------------------------------------------------

TraceStore::TraceStore(std::filesystem::path path, StoreConfig config, std::unique_ptr<detail::Database> db)
    : path_(std::move(path)), config_(config), db_(std::move(db)) {}

TraceStore::~TraceStore() = default;

Result<std::unique_ptr<TraceStore>> TraceStore::open(const std::filesystem::path& path, OpenMode mode,
                                                     StoreConfig config) {
    const auto fail = [&](const std::string& why) {
        return make_error(ErrorType::kInternal, "trace store " + path.string() + ": " + why);
    };
    if (mode == OpenMode::kReadWrite) {
        // Created owner-only before SQLite sees it; SQLite gives its -wal and -shm files the
        // same permissions.
        const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) return fail(std::string("cannot create: ") + std::strerror(errno));
        ::close(fd);
    }
    auto db = std::make_unique<Database>();
    const int flags = (mode == OpenMode::kReadWrite ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) |
                      SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path.c_str(), &db->handle, flags, nullptr) != SQLITE_OK) {
        return fail("cannot open: " + db->message());
    }
    sqlite3_extended_result_codes(db->handle, 1);
    sqlite3_busy_timeout(db->handle, static_cast<int>(config.busy_timeout.count()));
    if (mode == OpenMode::kReadWrite) {
        // The first statement reads the header: a file that is not SQLite fails here.
        if (auto r = exec(*db, "PRAGMA journal_mode=WAL"); !r) return fail(db->message());
        if (auto r = exec(*db, config.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
            !r) {
            return fail(db->message());
        }
        if (auto r = exec(*db, kSchema); !r) return fail(db->message());
    }
    auto store = std::unique_ptr<TraceStore>(new TraceStore(path, config, std::move(db)));
    // A SQLite file that is not a trace store (or a damaged one) is refused here, not later.
    auto version = prepare(*store->db_, "SELECT value FROM meta WHERE key = 'schema'");
    if (!version) return fail("not a trace store (" + version.error().message + ")");
    Query q(*store->db_, *version);
    auto row = q.step();
    if (!row) return fail(row.error().message);
    if (!*row) return fail("not a trace store (no schema version)");
    if (q.text(0) != kSchemaVersion) return fail("unsupported schema version " + std::string(q.text(0)));
    return store;
}

// ---- ingest --------------------------------------------------------------------------------------

namespace {

struct Ingest {
    Database& db;
    const StoreConfig& config;
    std::int64_t received;
    std::map<std::string, std::int64_t, std::less<>> session_ids;

    Result<std::int64_t> session_id(const std::string& uri) {
        if (const auto found = session_ids.find(uri); found != session_ids.end()) return found->second;
        auto insert = prepare(db,
                              "INSERT INTO sessions(uri, uuid, last_event_at) VALUES(?1, ?2, ?3) "
                              "ON CONFLICT(uri) DO NOTHING");
        if (!insert) return insert.error();
        {
            Query q(db, *insert);
            std::optional<std::string> uuid;
            if (const auto run = schema::explain::RunUris::from_uri(uri)) uuid = run->uuid();
            q.bind(1, std::string_view{uri}).bind(2, uuid).bind(3, received);
            if (auto r = q.run(); !r) return r.error();
        }
        auto select = prepare(db, "SELECT id FROM sessions WHERE uri = ?1");
        if (!select) return select.error();
        Query q(db, *select);
        q.bind(1, std::string_view{uri});
        auto row = q.step();
        if (!row) return row.error();
        if (!*row) return make_error(ErrorType::kInternal, "trace store: session row vanished");
        const auto id = q.int64(0);
        session_ids.emplace(uri, id);
        return id;
    }

    // The id of `body` in texts (stored once); nullopt on a digest collision (then inline it).
    Result<std::optional<std::int64_t>> text_id(const std::string& body) {
        const std::string digest = fnv_digest(body);
        auto insert = prepare(db, "INSERT INTO texts(digest, body) VALUES(?1, ?2) ON CONFLICT(digest) DO NOTHING");
        if (!insert) return insert.error();
        {
            Query q(db, *insert);
            q.bind(1, std::string_view{digest}).bind(2, std::string_view{body});
            if (auto r = q.run(); !r) return r.error();
        }
        auto select = prepare(db, "SELECT id, body FROM texts WHERE digest = ?1");
        if (!select) return select.error();
        Query q(db, *select);
        q.bind(1, std::string_view{digest});
        auto row = q.step();
        if (!row) return row.error();
        if (!*row || q.text(1) != body) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{q.int64(0)};
    }

    Result<void> quarantine(const Delivery& d, const std::string& reason) {
        auto insert = prepare(db,
                              "INSERT INTO quarantine(received, delivery_id, service, session, seq, state, reason, "
                              "payload) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(delivery_id) DO NOTHING");
        if (!insert) return insert.error();
        Query q(db, *insert);
        q.bind(1, received)
            .bind(2, static_cast<std::int64_t>(d.delivery_id))
            .bind(3, std::string_view{d.service})
            .bind(4, std::string_view{d.session})
            .bind(5, std::string_view{d.seq})
            .bind(6, std::string_view{d.state})
            .bind(7, std::string_view{reason})
            .bind_blob(8, d.body);
        return q.run();
    }

    // What a batch's stored events change in one session row, applied by one UPDATE at the end
    // of the batch with the same result as one UPDATE per event in batch order: kind, question,
    // parent and worker keep the first value, started the earliest, ended, status (terminal) and
    // error the last one.
    struct SessionUpdate {
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
    std::map<std::int64_t, SessionUpdate> updates;

    // Writes one valid event; false if (session, seq) was already stored.
    Result<bool> event(const Delivery& d, Validated& v, BatchOutcome& outcome) {
        const schema::ExplainMessage& m = v.message;
        auto sid = session_id(m.session);
        if (!sid) return sid.error();
        auto insert_event = prepare(db,
                                    "INSERT INTO events(session, seq, explain_id, state, received, delivery_id) "
                                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(session, seq) DO NOTHING");
        if (!insert_event) return insert_event.error();
        {
            Query q(db, *insert_event);
            q.bind(1, *sid)
                .bind(2, static_cast<std::int64_t>(m.seq))
                .bind(3, std::string_view{m.explain_id})
                .bind(4, std::string_view{d.state})
                .bind(5, received)
                .bind(6, static_cast<std::int64_t>(d.delivery_id));
            if (auto r = q.run(); !r) return r.error();
        }
        if (sqlite3_changes(db.handle) == 0) return false;

        auto insert_triple = prepare(db,
                                     "INSERT INTO triples(session, seq, ord, triple, text_id) "
                                     "VALUES(?1, ?2, ?3, ?4, ?5)");
        if (!insert_triple) return insert_triple.error();
        // The body's triples, index for index with the decoded ones.
        json* received_triples = nullptr;
        if (const auto found = v.body.find("explain_triples");
            found != v.body.end() && found->is_array() && found->size() == m.explain_triples.size()) {
            received_triples = &*found;
        }
        std::int64_t ord = 0;
        std::string text_json;
        for (std::size_t i = 0; i < m.explain_triples.size(); ++i) {
            const auto& triple = m.explain_triples[i];
            std::optional<std::int64_t> text;
            if (triple.o.is_literal() && triple.o.as_literal().value.size() > config.text_threshold) {
                auto id = text_id(triple.o.as_literal().value);
                if (!id) return id.error();
                text = *id;
            }
            // The triple as received when it is already in the canonical encoding (what
            // schema::encode writes, so show and export read exactly what they read before);
            // otherwise re-encoded.
            json* encoded = nullptr;
            json reencoded;
            if (received_triples != nullptr && canonical_triple((*received_triples)[i], triple, false)) {
                encoded = &(*received_triples)[i];
            } else {
                reencoded = schema::encode(triple);
                encoded = &reencoded;
            }
            // A triple without a graph belongs to the message's explain graph.
            if (!triple.graph && !m.explain_graph.empty()) (*encoded)["g"] = m.explain_graph;
            if (text) (*encoded)["o"]["v"] = "";
            text_json = schema::dump(*encoded);
            Query q(db, *insert_triple);
            q.bind(1, *sid)
                .bind(2, static_cast<std::int64_t>(m.seq))
                .bind(3, ord++)
                .bind_static(4, text_json)
                .bind(5, text);
            if (auto r = q.run(); !r) return r.error();
        }
        outcome.triples += m.explain_triples.size();

        const SessionFacts facts = session_facts(m);
        const bool terminal = d.state != schema::protocol::kStateOpen;
        std::optional<std::int64_t> ended = facts.ended;
        if (!ended && terminal) ended = received;
        const std::int64_t started = facts.started ? *facts.started : received;
        auto [update, first] = updates.try_emplace(*sid);
        SessionUpdate& u = update->second;
        if (first) {
            u.kind = d.service.empty() ? m.service : d.service;
            u.started = started;
        } else {
            u.started = std::min(*u.started, started);
        }
        if (!u.question && facts.question) u.question = facts.question;
        if (!u.parent && facts.parent) u.parent = facts.parent;
        if (!u.worker && !m.worker.empty()) u.worker = m.worker;
        if (m.error) u.error = m.error->describe();
        if (ended) u.ended = ended;
        if (terminal) u.status = d.state;
        ++u.events;
        return true;
    }

    // One UPDATE per session touched by the batch.
    Result<void> update_sessions() {
        auto update = prepare(db,
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
        for (const auto& [sid, u] : updates) {
            Query q(db, *update);
            q.bind(1, std::string_view{u.kind})
                .bind(2, u.question)
                .bind(3, u.parent)
                .bind(4, u.started)
                .bind(5, u.ended)
                .bind(6, u.status ? std::string_view{*u.status} : std::string_view{"running"})
                .bind(7, u.worker)
                .bind(8, u.error)
                .bind(9, received)
                .bind(10, sid)
                .bind(11, u.events);
            if (auto r = q.run(); !r) return r.error();
        }
        updates.clear();
        return {};
    }
};

}  // namespace

Result<BatchOutcome> TraceStore::store_batch(const std::vector<Delivery>& deliveries,
                                             WallClock::time_point received) {
    BatchOutcome outcome;
    if (deliveries.empty()) return outcome;
    auto begin = prepare(*db_, "BEGIN IMMEDIATE");
    auto commit = prepare(*db_, "COMMIT");
    if (!begin) return begin.error();
    if (!commit) return commit.error();
    {
        Query q(*db_, *begin);
        if (auto r = q.run(); !r) return r.error();
    }
    Ingest ingest{*db_, config_, to_ms(received), {}, {}};
    const auto rollback = [&](Error error) -> Result<BatchOutcome> {
        (void)exec(*db_, "ROLLBACK");
        return error;
    };
    for (const auto& delivery : deliveries) {
        auto validated = validate_body(delivery);
        if (!validated) {
            if (auto r = ingest.quarantine(delivery, validated.error().message); !r) return rollback(r.error());
            ++outcome.quarantined;
            continue;
        }
        auto stored = ingest.event(delivery, *validated, outcome);
        if (!stored) return rollback(stored.error());
        ++(*stored ? outcome.stored : outcome.duplicates);
    }
    if (auto r = ingest.update_sessions(); !r) return rollback(r.error());
    Query q(*db_, *commit);
    if (auto r = q.run(); !r) return rollback(r.error());
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

json optional_time(const Query& q, int column) {
    if (q.is_null(column)) return nullptr;
    return format_datetime_ms(q.int64(column));
}

json summary_of(const Query& q, std::int64_t cutoff) {
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

void bind_all(Query& q, const std::vector<Binding>& bindings) {
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
json triple_json(const Query& q, int triple_column, int text_column) {
    json t = json::parse(q.text(triple_column), nullptr, false);
    if (!q.is_null(text_column) && t.is_object() && t.contains("o") && t["o"].is_object()) {
        t["o"]["v"] = std::string(q.text(text_column));
    }
    return t;
}

}  // namespace

Result<std::string> TraceStore::resolve_session(std::string_view id) {
    if (id.empty()) return make_error(ErrorType::kInvalidRequest, "an empty session id");
    {
        auto exact = prepare(*db_, "SELECT uri FROM sessions WHERE uri = ?1");
        if (!exact) return exact.error();
        Query q(*db_, *exact);
        q.bind(1, id);
        auto row = q.step();
        if (!row) return row.error();
        if (*row) return std::string(q.text(0));
    }
    std::string prefix(id);
    std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // A session URI of a run also names its UUID: accept urn:glassbox:<uuid>:question forms.
    if (const auto run = schema::explain::RunUris::from_uri(prefix)) prefix = run->uuid();
    if (!is_uuid_prefix(prefix)) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
    auto range = prepare(*db_, "SELECT uri FROM sessions WHERE uuid >= ?1 AND uuid < ?2 ORDER BY uuid LIMIT ?3");
    if (!range) return range.error();
    Query q(*db_, *range);
    // '~' sorts after every hex digit and '-': [prefix, prefix~) is exactly the prefix's range.
    q.bind(1, std::string_view{prefix})
        .bind(2, std::string_view{prefix + "~"})
        .bind(3, static_cast<std::int64_t>(kMaxAmbiguousListed + 1));
    std::vector<std::string> matches;
    while (true) {
        auto row = q.step();
        if (!row) return row.error();
        if (!*row) break;
        matches.emplace_back(q.text(0));
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

    std::int64_t total = 0;
    {
        auto count = prepare(*db_, "SELECT COUNT(*) FROM sessions" + clause);
        if (!count) return count.error();
        Query q(*db_, *count);
        bind_all(q, bindings);
        auto row = q.step();
        if (!row) return row.error();
        total = q.int64(0);
    }
    const std::string limit = param(query.limit);
    const std::string offset = param(query.offset);
    auto select = prepare(*db_, std::string("SELECT ") + kSummaryColumns + " FROM sessions" + clause +
                                    " ORDER BY started DESC, id DESC LIMIT " + limit + " OFFSET " + offset);
    if (!select) return select.error();
    Query q(*db_, *select);
    bind_all(q, bindings);
    json sessions = json::array();
    while (true) {
        auto row = q.step();
        if (!row) return row.error();
        if (!*row) break;
        sessions.push_back(summary_of(q, cutoff));
    }
    return json{{"sessions", std::move(sessions)}, {"total", total}, {"limit", query.limit}, {"offset", query.offset}};
}

namespace {

Result<json> show_session(Database& db, std::int64_t id, std::int64_t cutoff, int depth, std::set<std::int64_t>& seen) {
    seen.insert(id);
    json out = json::object();
    std::string uri;
    {
        auto select = prepare(db, std::string("SELECT ") + kSummaryColumns + " FROM sessions WHERE id = ?1");
        if (!select) return select.error();
        Query q(db, *select);
        q.bind(1, id);
        auto row = q.step();
        if (!row) return row.error();
        if (!*row) return make_error(ErrorType::kNotFound, "no trace with row id " + std::to_string(id));
        out["session"] = summary_of(q, cutoff);
        uri = q.text(1);
    }
    json events = json::array();
    std::map<std::int64_t, std::size_t> by_seq;
    {
        auto select = prepare(db, "SELECT seq, explain_id, state, received FROM events WHERE session = ?1 ORDER BY seq");
        if (!select) return select.error();
        Query q(db, *select);
        q.bind(1, id);
        while (true) {
            auto row = q.step();
            if (!row) return row.error();
            if (!*row) break;
            by_seq[q.int64(0)] = events.size();
            events.push_back({{"seq", q.int64(0)},
                              {"explain_id", std::string(q.text(1))},
                              {"state", std::string(q.text(2))},
                              {"received", format_datetime_ms(q.int64(3))},
                              {"triples", json::array()}});
        }
    }
    {
        auto select = prepare(db,
                              "SELECT t.seq, t.triple, x.body FROM triples t LEFT JOIN texts x ON x.id = t.text_id "
                              "WHERE t.session = ?1 ORDER BY t.seq, t.ord");
        if (!select) return select.error();
        Query q(db, *select);
        q.bind(1, id);
        while (true) {
            auto row = q.step();
            if (!row) return row.error();
            if (!*row) break;
            const auto found = by_seq.find(q.int64(0));
            if (found == by_seq.end()) continue;
            events[found->second]["triples"].push_back(triple_json(q, 1, 2));
        }
    }
    out["events"] = std::move(events);
    json subtraces = json::array();
    if (depth < kMaxShowDepth) {
        std::vector<std::int64_t> children;
        {
            auto select = prepare(db, "SELECT id FROM sessions WHERE parent = ?1 ORDER BY started, id");
            if (!select) return select.error();
            Query q(db, *select);
            q.bind(1, std::string_view{uri});
            while (true) {
                auto row = q.step();
                if (!row) return row.error();
                if (!*row) break;
                if (seen.count(q.int64(0)) == 0) children.push_back(q.int64(0));
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

// Runs `body` inside one read transaction, so a multi-statement read sees one snapshot.
template <typename F>
auto in_read_transaction(Database& db, F&& body) -> decltype(body()) {
    if (auto r = exec(db, "BEGIN"); !r) return r.error();
    auto result = body();
    (void)exec(db, "COMMIT");
    return result;
}

}  // namespace

Result<json> TraceStore::show(std::string_view id, WallClock::time_point now) {
    const std::int64_t cutoff = to_ms(now) - std::chrono::duration_cast<std::chrono::milliseconds>(config_.incomplete_after).count();
    return in_read_transaction(*db_, [&]() -> Result<json> {
        auto uri = resolve_session(id);
        if (!uri) return uri.error();
        auto select = prepare(*db_, "SELECT id FROM sessions WHERE uri = ?1");
        if (!select) return select.error();
        std::int64_t row_id = 0;
        {
            Query q(*db_, *select);
            q.bind(1, std::string_view{*uri});
            auto row = q.step();
            if (!row) return row.error();
            if (!*row) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
            row_id = q.int64(0);
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
            auto select = prepare(*db_,
                                  "SELECT id FROM sessions WHERE started >= ?1 AND started < ?2 ORDER BY started, id");
            if (!select) return select.error();
            Query q(*db_, *select);
            q.bind(1, since_ms.value_or(std::numeric_limits<std::int64_t>::min()))
                .bind(2, until_ms.value_or(std::numeric_limits<std::int64_t>::max()));
            while (true) {
                auto row = q.step();
                if (!row) return row.error();
                if (!*row) break;
                sessions.push_back(q.int64(0));
            }
        }
        auto select = prepare(*db_,
                              "SELECT t.triple, x.body FROM triples t LEFT JOIN texts x ON x.id = t.text_id "
                              "WHERE t.session = ?1 ORDER BY t.seq, t.ord");
        if (!select) return select.error();
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
            Query q(*db_, *select);
            q.bind(1, id);
            while (true) {
                auto row = q.step();
                if (!row) return row.error();
                if (!*row) break;
                auto triple = schema::decode_triple(triple_json(q, 0, 1));
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
            auto select = prepare(*db_, sql);
            if (!select) return select.error();
            Query q(*db_, *select);
            auto row = q.step();
            if (!row) return row.error();
            return q.int64(0);
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
        auto select = prepare(*db_,
                              "SELECT CASE WHEN status = 'running' AND last_event_at < ?1 THEN 'incomplete' "
                              "ELSE status END AS s, COUNT(*) FROM sessions GROUP BY s");
        if (!select) return select.error();
        Query q(*db_, *select);
        q.bind(1, cutoff);
        while (true) {
            auto row = q.step();
            if (!row) return row.error();
            if (!*row) break;
            by_status[std::string(q.text(0))] = q.int64(1);
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
