// The trace store's schema and opening: the tables of docs/traces.md, created on a read-write
// open, and the schema version every open checks.
#include "workers/trace_collector/trace_store.hpp"

#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "storage/pg_connection.hpp"
#include "storage/pg_dsn.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/trace_collector/triple_blob.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using storage::Database;

namespace {

constexpr std::string_view kSchemaVersion = "11";

constexpr const char* kEventsTable = R"sql(
-- One row per stored event with its triples: `triples` is ONE zstd frame (content size in its
-- header, content checksum) of the event's `triple_count` records in order, each a LEB128 varint
-- text id (0: none), a LEB128 varint byte length and the triple's JSON as stored: the received
-- canonical JSON, "g" added when it had no graph, a long literal's value cut to "" and kept in
-- `texts` under the text id (workers/trace_collector/triple_blob.hpp). NULL: no triples.
-- `span`: what the event's triples say that its run's OpenTelemetry spans use
-- (workers/trace_collector/span_facts.hpp), written while the store exports; NULL otherwise.
-- A rowid table, not WITHOUT ROWID as before: a row holds up to a page (16 KiB) in its b-tree
-- leaf there, where a WITHOUT ROWID row over ~4 KiB took an overflow page of its own (a
-- graph-RAG trace's largest event is ~7 KiB: half of each overflow page stayed empty).
CREATE TABLE IF NOT EXISTS events(
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  explain_id TEXT,
  state TEXT NOT NULL,
  received INTEGER NOT NULL,
  delivery_id INTEGER,
  triple_count INTEGER NOT NULL DEFAULT 0,
  triples BLOB,
  span TEXT,
  PRIMARY KEY(session, seq));
-- The oldest event kept: texts last used before it are referenced by no event (prune).
CREATE INDEX IF NOT EXISTS events_received ON events(received);
)sql";

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
  tokens_out INTEGER NOT NULL DEFAULT 0,
  pinned INTEGER NOT NULL DEFAULT 0,
  sampling TEXT);
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
-- Long literal values (answers, observations), stored once whatever the events that hold them.
-- `last_used`: the latest `received` of an event stored with it, so a text with last_used before
-- every kept event's `received` is referenced by none (prune deletes it).
CREATE TABLE IF NOT EXISTS texts(
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  body TEXT NOT NULL,
  last_used INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS texts_last_used ON texts(last_used);
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
-- Evaluations of runs (docs/evaluation.md): how a run's answer scored against a question set,
-- several per run (re-evaluations), deleted with their run. `answers`: the accepted answers as a
-- JSON array of strings.
CREATE TABLE IF NOT EXISTS evaluations(
  id INTEGER PRIMARY KEY,
  session INTEGER NOT NULL,
  run TEXT NOT NULL,
  question_set TEXT NOT NULL,
  question_id TEXT,
  answers TEXT NOT NULL,
  correct INTEGER NOT NULL,
  hit INTEGER,
  exact_match REAL,
  f1 REAL,
  confidence REAL,
  evaluated INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS evaluations_session ON evaluations(session, id);
INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '11');
)sql";

// Evaluation runs (issue 35, docs/evaluation.md "Evaluation runs"; eval_runs.cpp): what one
// `glassbox eval` reported, so that a gateway on any host can show it. Not traces: prune and
// sampling leave them; the store keeps the newest kMaxEvalRuns. `name`: the run's name (its report
// folder's), recording it again replaces it. `summary`: its figures as a JSON object;
// `question_rows`: one JSON object per question, each naming its trace; the two charts as SVG.
constexpr const char* kEvalRunsSchema = R"sql(
CREATE TABLE IF NOT EXISTS eval_runs(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  question_set TEXT NOT NULL,
  set_path TEXT NOT NULL,
  engine TEXT NOT NULL,
  collection TEXT NOT NULL,
  started INTEGER,
  finished INTEGER,
  recorded INTEGER NOT NULL,
  summary TEXT NOT NULL,
  question_rows TEXT NOT NULL,
  reliability TEXT NOT NULL,
  risk_coverage TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS eval_runs_recorded ON eval_runs(recorded, id);
)sql";

// The usage index, the invalidations and the answer text of runs (issue 36, docs/traces.md
// "Which answers rest on what"; workers/trace_collector/run_uses.hpp). run_uses: what a run
// used, one row per run (a later batch's uses merged in), written for the run and for its
// top-level run: its
// `terms`, each the FNV-1a 64 hash of one use's kind and value in hex, indexed by FTS5
// (run_uses_search): an inverted index that appends a segment per commit and merges them in the
// background, where a B-tree keyed by use took a random leaf page per use and row (40 MB of WAL
// per 100 runs at 25 million uses). invalidations: one row per (run, knowledge change that
// removed something it used). run_text: a run's question and answer, indexed for `list --text`
// (FTS5 here, a tsvector GIN index on PostgreSQL).
constexpr const char* kUsesSchema = R"sql(
CREATE TABLE IF NOT EXISTS run_uses(
  doc INTEGER PRIMARY KEY,
  session INTEGER NOT NULL,
  terms TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS run_uses_session ON run_uses(session);
CREATE VIRTUAL TABLE IF NOT EXISTS run_uses_search USING fts5(terms, content='run_uses',
  content_rowid='doc', detail='none', tokenize='ascii');
CREATE TRIGGER IF NOT EXISTS run_uses_delete AFTER DELETE ON run_uses BEGIN
  INSERT INTO run_uses_search(run_uses_search, rowid, terms) VALUES('delete', old.doc, old.terms);
END;
CREATE TABLE IF NOT EXISTS invalidations(
  session INTEGER NOT NULL,
  change TEXT NOT NULL,
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  facts TEXT NOT NULL,
  sources TEXT NOT NULL,
  PRIMARY KEY(session, change)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_text(session INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS run_text_search USING fts5(body, content='run_text',
  content_rowid='session');
CREATE TRIGGER IF NOT EXISTS run_text_delete AFTER DELETE ON run_text BEGIN
  INSERT INTO run_text_search(run_text_search, rowid, body) VALUES('delete', old.session, old.body);
END;
)sql";

// The SPARQL mirror's queue (issue 36, docs/traces.md "Mirror to a SPARQL engine"): the
// top-level runs whose graph is to be (re)written in the engine, each with the time (ms) it was
// last queued. Filled in the ingest transaction that ends a run or records an invalidation of it,
// only by a store opened with StoreConfig::mirror_sparql; the mirror deletes a row after the
// engine took the graph, unless it was queued again meanwhile (`due` changed).
constexpr const char* kMirrorSchema = R"sql(
CREATE TABLE IF NOT EXISTS sparql_pending(session INTEGER PRIMARY KEY, due INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sparql_pending_due ON sparql_pending(due);
)sql";

// The OpenTelemetry exporter's queue (issue 37, docs/traces.md "OpenTelemetry export"): the
// top-level runs to send as spans, each with the time (ms) it was queued. Filled in the ingest
// transaction that ends a run, only by a store opened with StoreConfig::export_otel; the exporter
// deletes a row once the receiver took the run's spans, or drops the oldest beyond its bound.
constexpr const char* kOtelSchema = R"sql(
CREATE TABLE IF NOT EXISTS otel_pending(session INTEGER PRIMARY KEY, due INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS otel_pending_due ON otel_pending(due);
)sql";

// Sampling (issue 37, docs/traces.md "Sampling"; trace_sampling.cpp). sessions.sampling: the
// decision the sampling pass made for a top-level run (and its sub-runs): error, escalation,
// evaluated, pinned, sampled (kept whole), summarised, change (a knowledge change: not sampled);
// NULL: not decided yet, which sessions_sampling_todo lists by end. texts.created: the `received`
// of the batch that stored the text first (0: stored before version 10, never deleted by the
// pass), so the events that may refer to it are those received between created and last_used.
// sampling_counts: the decisions made since the store was created, per decision.
constexpr const char* kSamplingSchema = R"sql(
CREATE TABLE IF NOT EXISTS sampling_counts(decision TEXT PRIMARY KEY, runs INTEGER NOT NULL)
  WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_sampling_todo ON sessions(ended)
  WHERE sampling IS NULL AND parent IS NULL;
)sql";

// What each model call of a run cost (issue 37, docs/traces.md "Cost"): one row per node stating
// gb:model or tokens in a stored event (a step, or its reflection), priced by costs.prices as the
// collector had it when it stored the event (`cost` NULL: the model had no price). `day`: the
// day (UTC, days since the epoch) it was stored. Deleted with its session (prune).
constexpr const char* kCostsSchema = R"sql(
CREATE TABLE IF NOT EXISTS step_costs(
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  step TEXT NOT NULL,
  model TEXT NOT NULL,
  day INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cost REAL,
  currency TEXT NOT NULL,
  PRIMARY KEY(session, seq, step));
CREATE INDEX IF NOT EXISTS step_costs_day ON step_costs(day);
)sql";

// The substring search of `list` (issue 34): a contentless FTS5 table of trigrams of each
// session's question, row id = the session's. Ingest writes its rows beside the sessions it
// inserts or gives a question (trace_ingest.cpp), a trigger deletes them with their session
// (prune). Contentless: the questions are not stored twice; a search takes the candidates it
// finds and checks them with the LIKE it always ran (trace_queries.cpp).
//
// The full-text rows of ingest (here, run_uses_search and run_text_search) are written by the
// ingest code, not by AFTER INSERT / UPDATE triggers as before: a trigger on the table made
// each of the batch's row statements ~3x dearer (kDropIngestTriggers).
constexpr const char* kSearchTable = R"sql(
CREATE VIRTUAL TABLE IF NOT EXISTS sessions_search USING fts5(q, content='', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS sessions_search_delete AFTER DELETE ON sessions
WHEN old.question IS NOT NULL BEGIN
  INSERT INTO sessions_search(sessions_search, rowid, q) VALUES('delete', old.id, old.question);
END;
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

// Version 3 → 4 (issue 33): each event's triples, one `triples` row each before (~440 KB and ~290
// INSERTs per graph-RAG trace), become the event's one compressed blob, records in `ord` order
// and text ids as they were; `events` is rebuilt as the rowid table of kEventsTable, and the
// `triples` table goes (rows of no event with it: there are none, an event and its triples were
// written together).
Result<void> copy_events_from_3(Database& db) {
    auto events = db.prepare_once(
        "SELECT session, seq, explain_id, state, received, delivery_id FROM events_v3 "
        "ORDER BY session, seq");
    auto triples = db.prepare_once(
        "SELECT triple, text_id FROM triples WHERE session = ?1 AND seq = ?2 ORDER BY ord");
    auto insert = db.prepare_once(
        "INSERT INTO events(session, seq, explain_id, state, received, delivery_id, "
        "triple_count, triples) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!events || !triples || !insert)
        return !events ? events.error() : !triples ? triples.error() : insert.error();
    TripleBlobWriter writer;
    return events->each([&](const storage::Row& event) -> Result<void> {
        writer.clear();
        triples->bind(1, event.int64(0)).bind(2, event.int64(1));
        auto read = triples->each([&](const storage::Row& row) -> Result<void> {
            std::optional<std::int64_t> text;
            if (!row.is_null(1)) text = row.int64(1);
            // SQLite numbers texts from 1; 0 means "no text" in a record.
            if (text && *text < 1)
                return make_error(ErrorType::kInternal,
                                  "a triple refers to text id " + std::to_string(*text));
            writer.add(text, row.text(0));
            return {};
        });
        triples->reset();
        if (!read) return read;
        auto blob = writer.finish();
        if (!blob) return blob.error();
        insert->bind(1, event.int64(0))
            .bind(2, event.int64(1))
            .bind(3, event.optional_text(2))
            .bind(4, event.text(3))
            .bind(5, event.int64(4))
            .bind(6, event.is_null(5) ? std::nullopt : std::optional(event.int64(5)))
            .bind(7, static_cast<std::int64_t>(writer.count()));
        if (blob->empty()) {
            insert->bind_null(8);
        } else {
            insert->bind_blob(8, *blob);
        }
        auto r = insert->run();
        insert->reset();
        return r;
    });
}

// Version 4 → 5 (issue 34, retention): sessions can be pinned (never pruned), texts record when
// an event last used them. A text stored before is marked used by the newest event then stored:
// it goes once every event of before the upgrade has gone, and a newer event that uses it again
// moves its mark.
constexpr const char* kMigrateFrom4 = R"sql(
ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE texts ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0;
UPDATE texts SET last_used = (SELECT COALESCE(MAX(received), 0) FROM events);
UPDATE meta SET value = '5' WHERE key = 'schema';
)sql";

// The triggers that kept the ingest's full-text rows before the ingest wrote them itself (the
// delete triggers stay): dropped before any migration, which then writes its index rows itself.
constexpr const char* kDropIngestTriggers = R"sql(
DROP TRIGGER IF EXISTS sessions_search_insert;
DROP TRIGGER IF EXISTS sessions_search_update;
DROP TRIGGER IF EXISTS run_uses_insert;
DROP TRIGGER IF EXISTS run_text_insert;
DROP TRIGGER IF EXISTS run_text_update;
)sql";

// Version 5 → 6 (issue 34): the question search index (kSearchTable), built from the sessions
// stored before; ingest keeps it from then on.
constexpr const char* kMigrateFrom5 = R"sql(
INSERT INTO sessions_search(sessions_search) VALUES('delete-all');
INSERT INTO sessions_search(rowid, q) SELECT id, question FROM sessions WHERE question IS NOT NULL;
UPDATE meta SET value = '6' WHERE key = 'schema';
)sql";

// Version 6 → 7 (issue 35): runs gain evaluations (the table is in kSchema); none before.
constexpr const char* kMigrateFrom6 = R"sql(
UPDATE meta SET value = '7' WHERE key = 'schema';
)sql";

// Version 7 → 8 (issue 36): the usage index, invalidations and run text (kUsesSchema). Runs
// stored before are not back-filled: they are indexed from their next event on, and a filter
// on what runs used lists runs stored from version 8 on (docs/traces.md).
constexpr const char* kMigrateFrom7 = R"sql(
UPDATE meta SET value = '8' WHERE key = 'schema';
)sql";

// Version 8 → 9 (issue 36): the SPARQL mirror's queue (kMirrorSchema). Runs stored before are
// not queued: `glassbox traces mirror --all` queues every ended top-level run (docs/traces.md).
// And one usage-index row per run (run_uses.cpp): the rows a run got from several batches are
// merged (terms repeated across them are harmless to FTS5).
constexpr const char* kMigrateFrom8 = R"sql(
CREATE TEMP TABLE run_uses_merged AS
  SELECT session, group_concat(terms, ' ') AS terms FROM run_uses GROUP BY session
  HAVING COUNT(*) > 1;
DELETE FROM run_uses WHERE session IN (SELECT session FROM run_uses_merged);
INSERT INTO run_uses(doc, session, terms)
  SELECT session << 10, session, terms FROM run_uses_merged;
INSERT INTO run_uses_search(rowid, terms) SELECT session << 10, terms FROM run_uses_merged;
DROP TABLE run_uses_merged;
UPDATE meta SET value = '9' WHERE key = 'schema';
)sql";

// The columns added since version 9 without a version of their own (older code reading or writing
// the store ignores them): sampling's (kSamplingSchema) and the events' span facts (a store of
// version 10 written before them has NULL there: those runs' spans are read from their triples).
// Each added unless the table has it.
Result<void> add_columns(Database& db) {
    for (const auto& [table, column, declaration] :
         {std::tuple{"sessions", "sampling", "TEXT"},
          std::tuple{"texts", "created", "INTEGER NOT NULL DEFAULT 0"},
          std::tuple{"events", "span", "TEXT"}}) {
        auto q = db.prepare_once(std::string("SELECT COUNT(*) FROM pragma_table_info('") + table +
                                 "') WHERE name = '" + column + "'");
        if (!q) return q.error();
        auto n = q->first([](const storage::Row& row) { return row.int64(0); });
        if (!n) return n.error();
        if (n->value_or(0) != 0) continue;
        if (auto r = db.exec(std::string("ALTER TABLE ") + table + " ADD COLUMN " + column + " " +
                             declaration);
            !r)
            return r.error();
    }
    return {};
}

Result<void> migrate_from_3(Database& db) {
    if (auto r = db.exec("ALTER TABLE events RENAME TO events_v3;"); !r) return r.error();
    if (auto r = db.exec(kEventsTable); !r) return r.error();
    if (auto r = copy_events_from_3(db); !r) return r.error();
    return db.exec(
        "DROP TABLE events_v3; DROP TABLE triples; UPDATE meta SET value = '4' WHERE key = "
        "'schema';");
}

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
    if (auto r = db.exec(kDropIngestTriggers); !r) return r.error();
    if (version == "1") {
        if (auto r = db.exec(kMigrateFrom1); !r) return r.error();
        version = "2";
    }
    if (version == "2") {
        if (auto r = db.exec(kMigrateFrom2); !r) return r.error();
        version = "3";
    }
    if (version == "3") {
        if (auto r = migrate_from_3(db); !r) return r.error();
        version = "4";
    }
    if (version == "4") {
        if (auto r = db.exec(kMigrateFrom4); !r) return r.error();
        version = "5";
    }
    if (version == "5") {
        // The table before the rows of the sessions stored so far.
        if (auto r = db.exec(kSearchTable); !r) return r.error();
        if (auto r = db.exec(kMigrateFrom5); !r) return r.error();
        version = "6";
    }
    if (version == "6") {
        if (auto r = db.exec(kMigrateFrom6); !r) return r.error();
        version = "7";
    }
    if (version == "7") {
        if (auto r = db.exec(kMigrateFrom7); !r) return r.error();
        version = "8";
    }
    if (version == "8") {
        // The usage tables first: a store of version 7 has none yet.
        if (auto r = db.exec(kUsesSchema); !r) return r.error();
        if (auto r = db.exec(kMigrateFrom8); !r) return r.error();
        version = "9";
    }
    if (version == "9") {
        // The OpenTelemetry exporter's queue, created below with the other tables.
        if (auto r = db.exec("UPDATE meta SET value = '10' WHERE key = 'schema'"); !r)
            return r.error();
        // Sampling's columns are added below (add_columns) whatever the version.
        version = "10";
    }
    if (version == "10") {
        // Version 10 → 11 (issue 35): evaluation runs (kEvalRunsSchema, created below); none
        // before.
        if (auto r = db.exec("UPDATE meta SET value = '11' WHERE key = 'schema'"); !r)
            return r.error();
    }
    if (auto r = db.exec(kSchema); !r) return r.error();
    if (auto r = db.exec(kEventsTable); !r) return r.error();
    if (auto r = db.exec(kSearchTable); !r) return r.error();
    if (auto r = db.exec(kUsesSchema); !r) return r.error();
    if (auto r = db.exec(kMirrorSchema); !r) return r.error();
    if (auto r = db.exec(kOtelSchema); !r) return r.error();
    if (auto r = add_columns(db); !r) return r.error();
    if (auto r = db.exec(kSamplingSchema); !r) return r.error();
    if (auto r = db.exec(kCostsSchema); !r) return r.error();
    if (auto r = db.exec(kEvalRunsSchema); !r) return r.error();
    return transaction->commit();
}

// The same tables on PostgreSQL (schema 6 from the start, no PostgreSQL store of an older version
// was ever released; 6 → 7 adds the evaluations table, which this creates when missing). Text keys
// compare bytewise (COLLATE "C"), as SQLite's do: a UUID prefix is a range of them. Session ids are
// given by the writer (the batch holds the store's writer lock); texts and quarantine rows take the
// next identity.
//
// Events are partitioned by day (issue 34, retention): `part` is the day (UTC, days since the
// epoch) a session started as its first batch saw it, the same for all of a session's events and
// in its sessions row, so prune drops the partition of a day wholly older than its cut-off
// instead of deleting its rows (trace_prune.cpp). Rows prune must keep (pinned traces, running
// ones) move to events_kept first. The writer creates each day's partition when it first needs
// it (trace_event_partitions, under the writer lock). Sessions stay one table: the
// URI's uniqueness, which ingest relies on, cannot span partitions unless the day were part of
// it; turns stay one table too (bounded per conversation, and each deletion rewrites its
// conversation's summary row anyway).
constexpr const char* kPostgresSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
  id BIGINT PRIMARY KEY,
  uri TEXT COLLATE "C" NOT NULL UNIQUE,
  uuid TEXT COLLATE "C",
  kind TEXT COLLATE "C",
  question TEXT,
  parent TEXT COLLATE "C",
  started BIGINT,
  ended BIGINT,
  status TEXT COLLATE "C" NOT NULL DEFAULT 'running',
  service TEXT COLLATE "C",
  worker TEXT COLLATE "C",
  error TEXT,
  last_event_at BIGINT NOT NULL,
  events BIGINT NOT NULL DEFAULT 0,
  conversation TEXT COLLATE "C",
  collection TEXT COLLATE "C",
  tokens_in BIGINT NOT NULL DEFAULT 0,
  tokens_out BIGINT NOT NULL DEFAULT 0,
  pinned BIGINT NOT NULL DEFAULT 0,
  part BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS sessions_started ON sessions(started);
CREATE INDEX IF NOT EXISTS sessions_sub_parent ON sessions(parent, started) WHERE parent IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_uuid ON sessions(uuid);
CREATE INDEX IF NOT EXISTS sessions_top_kind ON sessions(kind, started) WHERE parent IS NULL;
CREATE INDEX IF NOT EXISTS sessions_top_status ON sessions(status, started) WHERE parent IS NULL;
CREATE INDEX IF NOT EXISTS sessions_top_page ON sessions(started, id) WHERE parent IS NULL;
CREATE INDEX IF NOT EXISTS sessions_top_collection ON sessions(collection, started) WHERE parent IS NULL;
CREATE INDEX IF NOT EXISTS sessions_part ON sessions(part);
CREATE TABLE IF NOT EXISTS events(
  session BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  explain_id TEXT,
  state TEXT COLLATE "C" NOT NULL,
  received BIGINT NOT NULL,
  delivery_id BIGINT,
  triple_count BIGINT NOT NULL DEFAULT 0,
  triples BYTEA,
  part BIGINT NOT NULL,
  span TEXT,
  PRIMARY KEY(session, seq, part)) PARTITION BY RANGE (part);
CREATE INDEX IF NOT EXISTS events_received ON events(received);
CREATE TABLE IF NOT EXISTS events_kept PARTITION OF events
  FOR VALUES FROM (1099511627776) TO (MAXVALUE);
-- The partitions of `days` that do not exist yet (events_d<day>, events_dm<-day> before 1970).
CREATE OR REPLACE FUNCTION trace_event_partitions(days BIGINT[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  d BIGINT;
  name TEXT;
BEGIN
  FOREACH d IN ARRAY days LOOP
    name := 'events_d' || CASE WHEN d < 0 THEN 'm' || (-d)::text ELSE d::text END;
    IF to_regclass(name) IS NULL THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                     name, d, d + 1);
    END IF;
  END LOOP;
END $fn$;
CREATE TABLE IF NOT EXISTS texts(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  digest TEXT COLLATE "C" NOT NULL UNIQUE,
  body TEXT NOT NULL,
  last_used BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS texts_last_used ON texts(last_used);
CREATE TABLE IF NOT EXISTS quarantine(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  received BIGINT NOT NULL,
  delivery_id BIGINT UNIQUE,
  service TEXT,
  session TEXT,
  seq TEXT,
  state TEXT,
  reason TEXT NOT NULL,
  payload BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS turns(
  session BIGINT PRIMARY KEY,
  conversation TEXT COLLATE "C" NOT NULL,
  trace TEXT NOT NULL,
  started BIGINT NOT NULL,
  status TEXT NOT NULL,
  question TEXT NOT NULL,
  answer TEXT NOT NULL,
  short_answer TEXT,
  bytes BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_conversation ON turns(conversation, started, session);
CREATE TABLE IF NOT EXISTS conversations(
  id TEXT COLLATE "C" PRIMARY KEY,
  turns BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  started BIGINT NOT NULL,
  last BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS conversations_last ON conversations(last, id);
CREATE TABLE IF NOT EXISTS evaluations(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  session BIGINT NOT NULL,
  run TEXT NOT NULL,
  question_set TEXT NOT NULL,
  question_id TEXT,
  answers TEXT NOT NULL,
  correct BIGINT NOT NULL,
  hit BIGINT,
  exact_match DOUBLE PRECISION,
  f1 DOUBLE PRECISION,
  confidence DOUBLE PRECISION,
  evaluated BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS evaluations_session ON evaluations(session, id);
CREATE TABLE IF NOT EXISTS run_uses(
  doc BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  session BIGINT NOT NULL,
  keys BIGINT[] NOT NULL);
CREATE INDEX IF NOT EXISTS run_uses_session ON run_uses(session);
CREATE INDEX IF NOT EXISTS run_uses_keys ON run_uses USING gin (keys);
CREATE TABLE IF NOT EXISTS invalidations(
  session BIGINT NOT NULL,
  change TEXT COLLATE "C" NOT NULL,
  at BIGINT NOT NULL,
  kind TEXT NOT NULL,
  facts TEXT NOT NULL,
  sources TEXT NOT NULL,
  PRIMARY KEY(session, change));
CREATE TABLE IF NOT EXISTS run_text(session BIGINT PRIMARY KEY, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS run_text_search ON run_text USING gin (to_tsvector('simple', body));
CREATE TABLE IF NOT EXISTS sparql_pending(session BIGINT PRIMARY KEY, due BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS sparql_pending_due ON sparql_pending(due);
CREATE TABLE IF NOT EXISTS otel_pending(session BIGINT PRIMARY KEY, due BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS otel_pending_due ON otel_pending(due);
CREATE TABLE IF NOT EXISTS step_costs(
  session BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  step TEXT COLLATE "C" NOT NULL,
  model TEXT COLLATE "C" NOT NULL,
  day BIGINT NOT NULL,
  input_tokens BIGINT NOT NULL,
  output_tokens BIGINT NOT NULL,
  cost DOUBLE PRECISION,
  currency TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY(session, seq, step));
CREATE INDEX IF NOT EXISTS step_costs_day ON step_costs(day);
CREATE TABLE IF NOT EXISTS eval_runs(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL UNIQUE,
  question_set TEXT NOT NULL,
  set_path TEXT NOT NULL,
  engine TEXT NOT NULL,
  collection TEXT NOT NULL,
  started BIGINT,
  finished BIGINT,
  recorded BIGINT NOT NULL,
  summary TEXT NOT NULL,
  question_rows TEXT NOT NULL,
  reliability TEXT NOT NULL,
  risk_coverage TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS eval_runs_recorded ON eval_runs(recorded, id);
INSERT INTO meta(key, value) VALUES('schema', '11') ON CONFLICT(key) DO NOTHING;
UPDATE meta SET value = '11' WHERE key = 'schema' AND value IN ('6', '7', '8', '9', '10');
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS sampling TEXT COLLATE "C";
ALTER TABLE texts ADD COLUMN IF NOT EXISTS created BIGINT NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN IF NOT EXISTS span TEXT;
CREATE TABLE IF NOT EXISTS sampling_counts(decision TEXT COLLATE "C" PRIMARY KEY,
  runs BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_sampling_todo ON sessions(ended)
  WHERE sampling IS NULL AND parent IS NULL;
)sql";

// The question search index on PostgreSQL: a trigram GIN index (pg_trgm, in PostgreSQL's
// contrib) serves ILIKE '%…%' without reading every question. Optional: a server without the
// extension, or a role that may not create it, keeps the store working with searches that scan.
// The operator class is named with the schema the extension lives in (it may be another one
// than the store's when several stores share the database).
Result<void> create_search_index(storage::sql::Connection& db) {
    if (auto r = db.exec("SAVEPOINT search_index; CREATE EXTENSION IF NOT EXISTS pg_trgm"); !r) {
        return db.exec("ROLLBACK TO SAVEPOINT search_index");
    }
    auto q = db.prepare(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'pg_trgm'");
    if (!q) return q.error();
    auto schema = q->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    q->reset();
    if (!schema) return schema.error();
    if (!*schema) return db.exec("RELEASE SAVEPOINT search_index");
    std::string quoted = "\"";
    for (const char c : **schema) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += '"';
    if (auto r = db.exec("CREATE INDEX IF NOT EXISTS sessions_question_trgm ON sessions USING gin "
                         "(question " +
                         quoted + ".gin_trgm_ops)");
        !r) {
        return db.exec("ROLLBACK TO SAVEPOINT search_index");
    }
    return db.exec("RELEASE SAVEPOINT search_index");
}

// Creates the schema under the store's writer lock: collectors starting together on several
// hosts create it once. A database holding a trace store of another version is left as it is
// (the version check refuses it).
Result<void> create_postgres_schema(storage::sql::Connection& db) {
    auto transaction = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    // A failed statement would end the transaction: the table is looked for before it is read.
    auto has_meta = db.prepare("SELECT to_regclass('meta') IS NOT NULL");
    if (!has_meta) return has_meta.error();
    auto exists = has_meta->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
    has_meta->reset();
    if (!exists) return exists.error();
    std::optional<std::string> version;
    if (exists->value_or(false)) {
        auto known = db.prepare("SELECT value FROM meta WHERE key = 'schema'");
        if (!known) return known.error();
        auto stored =
            known->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
        known->reset();
        if (!stored) return stored.error();
        version = std::move(*stored);
    }
    // Versions 6 to 10 are brought to 11 by the schema's statements themselves (the evaluations
    // table; the usage index, invalidations and run text, not back-filled; the mirror's queue;
    // the OpenTelemetry exporter's queue; the evaluation runs).
    if (version && *version != kSchemaVersion && *version != "6" && *version != "7" &&
        *version != "8" && *version != "9" && *version != "10")
        return {};
    if (auto r = db.exec(kPostgresSchema); !r) return r.error();
    if (auto r = create_search_index(db); !r) return r.error();
    return transaction->commit();
}

}  // namespace

// ---- open ----------------------------------------------------------------------------------

TraceStore::TraceStore(std::filesystem::path path, StoreConfig config,
                       std::unique_ptr<storage::sql::Connection> db)
    : path_(std::move(path)), config_(config), db_(std::move(db)) {}

TraceStore::~TraceStore() = default;

std::string_view TraceStore::backend() const noexcept {
    return storage::sql::dialect_name(db_->dialect());
}

Result<std::unique_ptr<TraceStore>> TraceStore::open(const std::filesystem::path& path,
                                                     OpenMode mode, StoreConfig config) {
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
    // Pages a prune frees go back to the file system (PRAGMA incremental_vacuum) without a VACUUM.
    options.auto_vacuum_incremental = true;
    // The wrapper's message already names the path: "trace store <path>: <why>".
    auto opened = Database::open(path, options);
    if (!opened) return opened.error();
    auto db = std::move(opened).value();
    if (mode == OpenMode::kReadWrite) {
        if (auto r = migrate(*db); !r) {
            return make_error(ErrorType::kInternal,
                              "trace store " + path.string() + ": " + r.error().message);
        }
    }
    return checked(std::unique_ptr<TraceStore>(new TraceStore(
                       path, config, std::make_unique<storage::SqliteConnection>(std::move(db)))),
                   path.string());
}

Result<std::unique_ptr<TraceStore>> TraceStore::open_postgres(const std::string& dsn, OpenMode mode,
                                                              StoreConfig config) {
    storage::PgOptions options;
    options.dsn = dsn;
    options.label = "trace store";
    auto opened = storage::PgConnection::open(options);
    if (!opened) return opened.error();
    std::unique_ptr<storage::sql::Connection> db = std::move(opened).value();
    if (mode == OpenMode::kReadWrite) {
        if (auto r = create_postgres_schema(*db); !r) return r.error();
    }
    return checked(std::unique_ptr<TraceStore>(new TraceStore({}, config, std::move(db))),
                   "at " + storage::dsn_server(dsn));
}

std::string StoreLocation::describe() const {
    if (!postgres()) return path.string();
    return "PostgreSQL at " + storage::dsn_server(postgres_dsn);
}

Result<std::unique_ptr<TraceStore>> TraceStore::open(const StoreLocation& location, OpenMode mode,
                                                     StoreConfig config) {
    if (!location.postgres()) return open(location.path, mode, config);
    const bool replica = mode == OpenMode::kReadOnly && !location.postgres_read_dsn.empty();
    return open_postgres(replica ? location.postgres_read_dsn : location.postgres_dsn, mode,
                         config);
}

Result<std::unique_ptr<TraceStore>> TraceStore::checked(std::unique_ptr<TraceStore> store,
                                                        const std::string& where) {
    const auto fail = [&](const std::string& why) {
        return make_error(ErrorType::kInternal, "trace store " + where + ": " + why);
    };
    // A database that is not a trace store (or a damaged one) is refused here, not later.
    auto version = store->db_->prepare("SELECT value FROM meta WHERE key = 'schema'");
    if (!version) return fail("not a trace store (" + version.error().message + ")");
    auto stored =
        version->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    if (!stored) return fail(stored.error().message);
    if (!*stored) return fail("not a trace store (no schema version)");
    if (**stored != kSchemaVersion) return fail("unsupported schema version " + **stored);
    return store;
}

}  // namespace glassbox::trace
