// The trace store's schema and opening: the tables of docs/traces.md, created on a read-write
// open, and the schema version every open checks.
#include "workers/trace_collector/trace_store.hpp"

#include <utility>

#include "storage/sqlite_database.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using storage::Database;

namespace {

constexpr std::string_view kSchemaVersion = "3";

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
  events INTEGER NOT NULL DEFAULT 0,
  conversation TEXT,
  collection TEXT,
  tokens_in INTEGER NOT NULL DEFAULT 0,
  tokens_out INTEGER NOT NULL DEFAULT 0);
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
CREATE INDEX IF NOT EXISTS sessions_top_collection ON sessions(collection, started) WHERE parent IS NULL;
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
-- Conversations (docs/traces.md §4): one row per turn (an ended top-level run with
-- gb:conversation), the newest kept within the bounds; one summary row per conversation.
CREATE TABLE IF NOT EXISTS turns(
  session INTEGER PRIMARY KEY,
  conversation TEXT NOT NULL,
  trace TEXT NOT NULL,
  started INTEGER NOT NULL,
  status TEXT NOT NULL,
  question TEXT NOT NULL,
  answer TEXT NOT NULL,
  short_answer TEXT,
  bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS turns_conversation ON turns(conversation, started, session);
CREATE TABLE IF NOT EXISTS conversations(
  id TEXT PRIMARY KEY,
  turns INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  started INTEGER NOT NULL,
  last INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS conversations_last ON conversations(last, id);
INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '3');
)sql";

// Version 1 → 2: sessions gain `conversation` (the tables above are new). Runs stored before
// carry no conversation column value: they were never turns.
constexpr const char* kMigrateFrom1 = R"sql(
ALTER TABLE sessions ADD COLUMN conversation TEXT;
UPDATE meta SET value = '2' WHERE key = 'schema';
)sql";

// Version 2 → 3: sessions gain the collection a run asked and the tokens its steps used (issue
// 31). Runs stored before have none recorded: no collection, 0 tokens.
constexpr const char* kMigrateFrom2 = R"sql(
ALTER TABLE sessions ADD COLUMN collection TEXT;
ALTER TABLE sessions ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
UPDATE meta SET value = '3' WHERE key = 'schema';
)sql";

// Creates the schema, or brings a store of an older version to this one, in one transaction.
// A store of a version this code does not know is left alone (open refuses it).
Result<void> migrate(Database& db) {
    auto transaction = storage::Transaction::begin(db, storage::Transaction::Kind::kImmediate);
    if (!transaction) return transaction.error();
    std::string version;
    {
        auto known = db.prepare("SELECT value FROM meta WHERE key = 'schema'");
        // No meta table yet: a new file (or not a trace store, which the version check refuses).
        if (known) {
            auto stored =
                known->first([](const storage::Row& row) { return std::string(row.text(0)); });
            if (!stored) return stored.error();
            version = std::move(*stored).value_or(std::string());
        }
    }
    if (version == "1") {
        if (auto r = db.exec(kMigrateFrom1); !r) return r.error();
        version = "2";
    }
    if (version == "2") {
        if (auto r = db.exec(kMigrateFrom2); !r) return r.error();
    }
    if (auto r = db.exec(kSchema); !r) return r.error();
    return transaction->commit();
}

}  // namespace

// ---- open
// ----------------------------------------------------------------------------------------

TraceStore::TraceStore(std::filesystem::path path, StoreConfig config, std::unique_ptr<Database> db)
    : path_(std::move(path)), config_(config), db_(std::move(db)) {}

TraceStore::~TraceStore() = default;

Result<std::unique_ptr<TraceStore>> TraceStore::open(const std::filesystem::path& path,
                                                     OpenMode mode, StoreConfig config) {
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
        if (auto r = migrate(*db); !r) return fail(r.error().message);
    }
    auto store = std::unique_ptr<TraceStore>(new TraceStore(path, config, std::move(db)));
    // A SQLite file that is not a trace store (or a damaged one) is refused here, not later.
    auto version = store->db_->prepare("SELECT value FROM meta WHERE key = 'schema'");
    if (!version) return fail("not a trace store (" + version.error().message + ")");
    auto stored = version->first([](const storage::Row& row) { return std::string(row.text(0)); });
    if (!stored) return fail(stored.error().message);
    if (!*stored) return fail("not a trace store (no schema version)");
    if (**stored != kSchemaVersion) return fail("unsupported schema version " + **stored);
    return store;
}

}  // namespace glassbox::trace
