// bench_traces: the trace store and the `trace` service against baselines measured in the same run.
//
// Three sections (--section ingest|reads|rss|all):
//   ingest  explain triples durably committed through TraceStore::store_batch (its default
//           durability, synchronous=FULL, batches of the collector's batch_max) against raw
//           SQLite inserts of exactly the rows the store wrote (same schema read back from the
//           store's file, same synchronous setting, prepared statements, one transaction per
//           batch; an event's triples are its one compressed blob, as the store writes them).
//           Messages are built with schema/explain_builder.hpp: echo chains and
//           graph-RAG chains with focus edges, interleaved across sessions.
//   reads   a store of --sessions sessions (default 100,000); `list` with filters and `show` by
//           URI and by UUID prefix through the bus (`glassbox broker` and `glassbox worker
//           trace-collector` as processes, a BusClient here) against the same requests answered
//           in this process by answer_trace_request on a read-only store (the service's code
//           without the bus).
//   rss     the collector process's RSS (/proc/<pid>/status VmRSS) while echo requests stream
//           through broker, echo worker and collector for --rss-seconds (default 60).
//   backends  (not in `all`) the same store on SQLite and on PostgreSQL (issue 34), same run:
//           store_batch ingest of the ingest workload (durable on both: SQLite synchronous=FULL,
//           a server of this run's own with fsync on and synchronous_commit on), and `list` p50
//           in-process at --list-sessions sessions (default 100,000; the figure is
//           1,000,000) filled on both with the same sessions.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/time_format.hpp"
#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "bus/bus_client.hpp"
#include "schema/explain_builder.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/protocol.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/process.hpp"
#include "workers/trace_collector/trace_service.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/triple_blob.hpp"

#ifndef GLASSBOX_BINARY
#define GLASSBOX_BINARY "glassbox"
#endif

namespace {

using namespace glassbox;
using namespace glassbox::bench;
namespace explain = schema::explain;
using nlohmann::json;
using std::chrono::milliseconds;

double median_of(std::vector<double> v) { return percentile(std::move(v), 0.5); }

// ---- workload ------------------------------------------------------------------------------

const std::vector<std::string> kWords = {
    "graph",    "retrieval", "provenance", "audit",    "invoice",  "supplier",
    "contract", "policy",    "battery",    "market",   "shipment", "warranty",
    "patient",  "dosage",    "turbine",    "pipeline", "license",  "tariff"};

std::string words(std::mt19937_64& rng, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) out += ' ';
        out += kWords[rng() % kWords.size()];
    }
    return out;
}

struct Workload {
    std::vector<trace::Delivery> deliveries;
    std::size_t sessions = 0;
    std::size_t triples = 0;
};

// The explain messages of one session, in seq order.
std::vector<schema::ExplainMessage> echo_session(std::mt19937_64& rng, explain::TimePoint started) {
    const auto run = explain::RunUris::generate();
    const std::string agent = explain::worker_agent_uri("echo");
    // One question in ten is long enough to go to the texts table.
    const std::string question = "echo " + words(rng, rng() % 10 == 0 ? 90 : 8);
    schema::ExplainMessage first;
    first.session = run.question();
    first.seq = 0;
    first.service = "echo";
    first.worker = "bench-host/1";
    first.explain_id = run.question();
    first.explain_triples = explain::echo_question(run, question, started, agent);
    schema::ExplainMessage last = first;
    last.seq = 1;
    last.explain_id = run.synthesis();
    const auto ended = started + milliseconds{3};
    last.explain_triples = explain::echo_synthesis(run, question, ended, milliseconds{3});
    const auto end = explain::trace_end(run, ended, schema::TraceStatus::kComplete);
    last.explain_triples.insert(last.explain_triples.end(), end.begin(), end.end());
    last.end_of_trace = true;
    last.trace_status = schema::TraceStatus::kComplete;
    return {first, last};
}

std::vector<schema::ExplainMessage> graph_rag_session(std::mt19937_64& rng,
                                                      explain::TimePoint started) {
    const auto run = explain::RunUris::generate();
    const std::string agent = explain::worker_agent_uri("graph-rag");
    std::vector<schema::ExplainMessage> out;
    const auto message = [&](std::string explain_id, std::vector<schema::Triple> triples) {
        schema::ExplainMessage m;
        m.session = run.question();
        m.seq = out.size();
        m.service = "graph-rag";
        m.worker = "bench-host/2";
        m.explain_id = std::move(explain_id);
        m.explain_triples = std::move(triples);
        out.push_back(std::move(m));
    };
    auto at = started;
    const auto step = [&](std::optional<std::string> derived_from, int ms) {
        at += milliseconds{ms};
        explain::StepInfo info;
        info.generated_at = at;
        info.derived_from = std::move(derived_from);
        info.duration = milliseconds{ms};
        return info;
    };
    message(run.question(),
            explain::question(run, "what about " + words(rng, 10) + "?", started, agent));
    std::vector<std::string> concepts;
    for (int i = 0; i < 4; ++i) concepts.push_back(words(rng, 2));
    message(run.grounding(), explain::grounding(run, step(std::nullopt, 40), concepts));
    std::vector<std::string> seeds;
    for (int i = 0; i < 5; ++i)
        seeds.push_back("http://example.org/kg/entity/" + std::to_string(rng() % 100'000));
    message(run.exploration(),
            explain::graph_exploration(run, step(run.grounding(), 25), seeds, 180));
    std::vector<explain::SelectedEdge> edges;
    for (int i = 0; i < 8; ++i) {
        explain::SelectedEdge e;
        e.edge = schema::make_triple(
            schema::iri(seeds[static_cast<std::size_t>(i) % seeds.size()]),
            schema::iri("http://example.org/kg/rel/" + kWords[rng() % kWords.size()]),
            schema::literal(words(rng, 3)));
        e.score = 0.5 + static_cast<double>(rng() % 500) / 1000.0;
        e.concept_label = concepts[static_cast<std::size_t>(i) % concepts.size()];
        e.reasoning = "relevant because " + words(rng, 6);
        e.source = explain::SourceRef{
            "http://example.org/doc/" + std::to_string(i) + "/chunk/" + std::to_string(rng() % 50),
            "http://example.org/doc/" + std::to_string(i), rng() % 5000, 200};
        e.data_tier = 1 + static_cast<int>(rng() % 4);
        edges.push_back(std::move(e));
    }
    message(run.focus(), explain::graph_focus(run, step(run.exploration(), 300), edges));
    explain::StepInfo synthesis = step(run.focus(), 900);
    synthesis.input_tokens = 1800;
    synthesis.output_tokens = 220;
    synthesis.model = "gpt-4o-mini";
    const std::string answer = "Answer: " + words(rng, 120);
    message(run.synthesis(),
            explain::synthesis(
                run, synthesis, explain::StoredText{answer, run.text("answer")},
                {explain::Citation{0, 40, {run.edge_selection(0), run.edge_selection(1)}},
                 explain::Citation{41, 90, {run.edge_selection(2)}}}));
    const auto end = explain::trace_end(run, at, schema::TraceStatus::kComplete);
    auto& last = out.back();
    last.explain_triples.insert(last.explain_triples.end(), end.begin(), end.end());
    last.end_of_trace = true;
    last.trace_status = schema::TraceStatus::kComplete;
    return out;
}

// `sessions` sessions (a `graph_share` of them graph RAG), started over the `spread` before
// `newest`; `concurrent` sessions at a time have their events interleaved, as a collector sees
// concurrent requests.
Workload make_workload(std::size_t sessions, double graph_share, explain::TimePoint newest,
                       std::chrono::hours spread, std::uint64_t seed, std::size_t concurrent = 16) {
    std::mt19937_64 rng(seed);
    Workload w;
    w.sessions = sessions;
    std::uint64_t delivery_id = 1;
    const auto spread_ms = std::chrono::duration_cast<milliseconds>(spread).count();
    for (std::size_t first = 0; first < sessions; first += concurrent) {
        std::vector<std::vector<schema::ExplainMessage>> group;
        for (std::size_t i = first; i < std::min(sessions, first + concurrent); ++i) {
            const auto started = newest - milliseconds{static_cast<std::int64_t>(
                                              rng() % static_cast<std::uint64_t>(spread_ms))};
            const bool graph = static_cast<double>(rng() % 1000) < graph_share * 1000.0;
            group.push_back(graph ? graph_rag_session(rng, started) : echo_session(rng, started));
        }
        for (std::size_t seq = 0;; ++seq) {
            bool any = false;
            for (const auto& messages : group) {
                if (seq >= messages.size()) continue;
                any = true;
                const auto& m = messages[seq];
                trace::Delivery d;
                d.delivery_id = delivery_id++;
                d.service = m.service;
                d.session = m.session;
                d.seq = std::to_string(m.seq);
                d.state = m.end_of_trace ? std::string(schema::protocol::kStateComplete)
                                         : std::string(schema::protocol::kStateOpen);
                d.body = schema::dump(schema::encode(m));
                w.triples += m.explain_triples.size();
                w.deliveries.push_back(std::move(d));
            }
            if (!any) break;
        }
    }
    return w;
}

// ---- raw SQLite ------------------------------------------------------------------------------

// The one raw sqlite3 handle of the baseline.
struct RawDb {
    sqlite3* handle = nullptr;
    explicit RawDb(const std::string& path, int flags) {
        if (sqlite3_open_v2(path.c_str(), &handle, flags, nullptr) != SQLITE_OK) {
            throw std::runtime_error("cannot open " + path);
        }
    }
    ~RawDb() { sqlite3_close_v2(handle); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;
    void exec(const std::string& sql) const {
        char* message = nullptr;
        if (sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
            std::string text = message != nullptr ? message : "?";
            sqlite3_free(message);
            throw std::runtime_error("sqlite: " + text + " in " + sql.substr(0, 80));
        }
    }
};

struct StatementDeleter {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

Statement prepare(const RawDb& db, const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db.handle, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) !=
        SQLITE_OK) {
        throw std::runtime_error(std::string("prepare: ") + sqlite3_errmsg(db.handle) + " in " +
                                 sql);
    }
    return Statement{raw};
}

// A BLOB column's bytes (an event's compressed triples), bound back as a blob.
struct Blob {
    std::string bytes;
};
using Value = std::variant<std::monostate, std::int64_t, std::string, Blob>;
using Row = std::vector<Value>;

// The rows a store wrote, each table's rows grouped by the batch that wrote them.
struct StoredRows {
    std::vector<std::string> ddl;  // CREATE statements, in creation order
    struct Table {
        std::string name;
        std::string column_list;  // "(a, b)" when the rows are not whole rows of the table
        std::size_t columns = 0;
        std::vector<std::vector<Row>> by_batch;
    };
    std::vector<Table> tables;  // in insertion order: sessions, its question index, texts, events
    std::size_t triples = 0;
};

std::vector<Row> read_rows(const RawDb& db, const std::string& sql) {
    auto s = prepare(db, sql);
    std::vector<Row> rows;
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
        Row row;
        for (int c = 0; c < sqlite3_column_count(s.get()); ++c) {
            switch (sqlite3_column_type(s.get(), c)) {
                case SQLITE_NULL:
                    row.emplace_back(std::monostate{});
                    break;
                case SQLITE_INTEGER:
                    row.emplace_back(std::int64_t{sqlite3_column_int64(s.get(), c)});
                    break;
                case SQLITE_BLOB:
                    row.emplace_back(Blob{
                        std::string(static_cast<const char*>(sqlite3_column_blob(s.get(), c)),
                                    static_cast<std::size_t>(sqlite3_column_bytes(s.get(), c)))});
                    break;
                default:
                    row.emplace_back(
                        std::string(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), c)),
                                    static_cast<std::size_t>(sqlite3_column_bytes(s.get(), c))));
            }
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

// Reads back what the store committed; batch b held deliveries [b * batch, (b + 1) * batch).
StoredRows read_stored(const std::string& path, std::size_t batch, std::size_t batches) {
    RawDb db(path, SQLITE_OPEN_READONLY);
    StoredRows out;
    for (const auto& row :
         // The full-text indexes' shadow tables come with their CREATE VIRTUAL TABLE; the
         // question index's rows are inserted as the store inserts them (below).
         read_rows(db,
                   "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND NOT (type = 'table' "
                   "AND name LIKE '%\\_search\\_%' ESCAPE '\\') ORDER BY rowid")) {
        out.ddl.push_back(std::get<std::string>(row[0]));
    }
    const auto batch_of_delivery = [&](std::int64_t delivery_id) {
        return static_cast<std::size_t>(delivery_id - 1) / batch;
    };
    // events: session, seq, explain_id, state, received, delivery_id, triple_count, triples, span
    auto events = read_rows(db,
                            "SELECT session, seq, explain_id, state, received, delivery_id, "
                            "triple_count, triples, span FROM events");
    std::map<std::int64_t, std::size_t> session_batch;
    std::map<std::int64_t, std::size_t> text_batch;
    trace::TripleBlobReader reader;
    for (const auto& e : events) {
        const auto b = batch_of_delivery(std::get<std::int64_t>(e[5]));
        auto [it, fresh] = session_batch.emplace(std::get<std::int64_t>(e[0]), b);
        if (!fresh) it->second = std::min(it->second, b);
        const auto count = std::get<std::int64_t>(e[6]);
        out.triples += static_cast<std::size_t>(count);
        const auto* blob = std::get_if<Blob>(&e[7]);
        auto records =
            reader.decode(blob ? std::as_bytes(std::span{blob->bytes.data(), blob->bytes.size()})
                               : std::span<const std::byte>{},
                          count);
        if (!records) throw std::runtime_error(records.error().message);
        for (const auto& record : *records) {
            if (!record.text_id) continue;
            auto [t, first] = text_batch.emplace(*record.text_id, b);
            if (!first) t->second = std::min(t->second, b);
        }
    }
    const auto table = [&](std::string name, std::vector<Row> rows, const auto& batch_of,
                           std::string column_list = {}) {
        StoredRows::Table t;
        t.name = std::move(name);
        t.column_list = std::move(column_list);
        t.columns = rows.empty() ? 0 : rows.front().size();
        t.by_batch.resize(batches);
        for (auto& r : rows) t.by_batch[batch_of(r)].push_back(std::move(r));
        out.tables.push_back(std::move(t));
    };
    table("sessions", read_rows(db, "SELECT * FROM sessions"),
          [&](const Row& r) { return session_batch.at(std::get<std::int64_t>(r[0])); });
    // The usage index, the run texts and the model calls' costs ingest writes beside them
    // (issues 36, 37), each row in its run's batch, and their full-text rows as ingest writes
    // them.
    const auto run_batch = [&](std::size_t column) {
        return [&session_batch, column](const Row& r) {
            const auto found = session_batch.find(std::get<std::int64_t>(r[column]));
            return found == session_batch.end() ? std::size_t{0} : found->second;
        };
    };
    table("run_uses", read_rows(db, "SELECT * FROM run_uses"), run_batch(1));
    table("run_uses_search", read_rows(db, "SELECT doc, terms, doc >> 10 FROM run_uses"),
          run_batch(2), "(rowid, terms)");
    table("run_text", read_rows(db, "SELECT * FROM run_text"), run_batch(0));
    table("run_text_search", read_rows(db, "SELECT session, body FROM run_text"), run_batch(0),
          "(rowid, body)");
    table("step_costs", read_rows(db, "SELECT * FROM step_costs"), run_batch(0));
    table(
        "sessions_search",
        read_rows(db, "SELECT id, question FROM sessions WHERE question IS NOT NULL"),
        [&](const Row& r) { return session_batch.at(std::get<std::int64_t>(r[0])); }, "(rowid, q)");
    table("texts", read_rows(db, "SELECT * FROM texts"),
          [&](const Row& r) { return text_batch.at(std::get<std::int64_t>(r[0])); });
    table(
        "events", std::move(events),
        [&](const Row& r) { return batch_of_delivery(std::get<std::int64_t>(r[5])); },
        "(session, seq, explain_id, state, received, delivery_id, triple_count, triples, span)");
    return out;
}

// Seconds to insert `rows` into a fresh file with the store's schema, WAL, synchronous=FULL.
double raw_insert(const std::string& path, const StoredRows& rows) {
    RawDb db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("PRAGMA synchronous=FULL");
    for (const auto& ddl : rows.ddl) db.exec(ddl);
    std::vector<Statement> inserts;
    for (const auto& t : rows.tables) {
        std::string sql = "INSERT INTO " + t.name + t.column_list + " VALUES(";
        const auto bound = t.column_list.empty()
                               ? t.columns
                               : static_cast<std::size_t>(
                                     std::count(t.column_list.begin(), t.column_list.end(), ',')) +
                                     1;
        for (std::size_t c = 0; c < bound; ++c) sql += c == 0 ? "?" : ",?";
        // Every column in the store's order: the SELECT above reads sessions whole (SELECT *).
        inserts.push_back(prepare(db, sql + ")"));
    }
    auto begin = prepare(db, "BEGIN IMMEDIATE");
    auto commit = prepare(db, "COMMIT");
    const auto start = Clock::now();
    const std::size_t batches = rows.tables.front().by_batch.size();
    for (std::size_t b = 0; b < batches; ++b) {
        sqlite3_step(begin.get());
        sqlite3_reset(begin.get());
        for (std::size_t t = 0; t < rows.tables.size(); ++t) {
            sqlite3_stmt* s = inserts[t].get();
            // A row may carry a column past the statement's (the batch it was read with).
            const auto bound = std::min(rows.tables[t].columns,
                                        static_cast<std::size_t>(sqlite3_bind_parameter_count(s)));
            for (const auto& row : rows.tables[t].by_batch[b]) {
                for (std::size_t c = 0; c < bound; ++c) {
                    const int index = static_cast<int>(c) + 1;
                    if (const auto* i = std::get_if<std::int64_t>(&row[c])) {
                        sqlite3_bind_int64(s, index, *i);
                    } else if (const auto* text = std::get_if<std::string>(&row[c])) {
                        sqlite3_bind_text(s, index, text->data(), static_cast<int>(text->size()),
                                          SQLITE_STATIC);
                    } else if (const auto* blob = std::get_if<Blob>(&row[c])) {
                        sqlite3_bind_blob(s, index, blob->bytes.data(),
                                          static_cast<int>(blob->bytes.size()), SQLITE_STATIC);
                    } else {
                        sqlite3_bind_null(s, index);
                    }
                }
                if (sqlite3_step(s) != SQLITE_DONE)
                    throw std::runtime_error(sqlite3_errmsg(db.handle));
                sqlite3_reset(s);
            }
        }
        if (sqlite3_step(commit.get()) != SQLITE_DONE)
            throw std::runtime_error(sqlite3_errmsg(db.handle));
        sqlite3_reset(commit.get());
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
}

void remove_db(const std::filesystem::path& path) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(path.string() + suffix, ec);
}

// ---- sections --------------------------------------------------------------------------------

struct Options {
    std::string section = "all";
    std::size_t ingest_sessions = 4000;
    double graph_share = 0.3;
    std::vector<std::size_t> batches = {1024, 128};
    int rounds = 3;
    std::size_t read_sessions = 100'000;
    int read_iterations = 200;
    int rss_seconds = 60;
    std::size_t list_sessions = 100'000;
    std::filesystem::path dir;
};

// Triples per second of store_batch over `chunks` into a new store at `path` whose question
// index (issue 34) is not kept: after the open its FTS5 table is replaced by a plain table of
// the same columns (ingest writes its rows there, a B-tree append each) and its delete trigger
// dropped. Beside the store's own figure in the same round, what keeping the index costs ingest.
double rate_without_question_index(const std::filesystem::path& path,
                                   const std::vector<std::vector<trace::Delivery>>& chunks) {
    remove_db(path);
    auto store = trace::TraceStore::open(path, trace::OpenMode::kReadWrite);
    if (!store) throw std::runtime_error(store.error().message);
    RawDb(path.string(), SQLITE_OPEN_READWRITE)
        .exec(
            "DROP TRIGGER sessions_search_delete; DROP TABLE sessions_search; "
            "CREATE TABLE sessions_search(q TEXT)");
    std::size_t triples = 0;
    const auto start = Clock::now();
    for (const auto& chunk : chunks) {
        auto outcome = (*store)->store_batch(chunk);
        if (!outcome) throw std::runtime_error(outcome.error().message);
        triples += outcome->triples;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    store.value().reset();
    remove_db(path);
    return static_cast<double>(triples) / seconds;
}

void bench_ingest(const Options& o, std::ostream& out) {
    const auto workload =
        make_workload(o.ingest_sessions, o.graph_share, std::chrono::system_clock::now(),
                      std::chrono::hours{24}, 42);
    std::size_t bytes = 0;
    for (const auto& d : workload.deliveries) bytes += d.body.size();
    out << "\n## Ingest: durable commits (WAL, synchronous=FULL), store_batch vs raw SQLite\n\n";
    out << "workload: " << workload.sessions << " sessions (" << fmt(o.graph_share * 100, 0)
        << "% graph-RAG), " << workload.deliveries.size() << " explain messages, "
        << workload.triples << " triples, " << fmt(static_cast<double>(bytes) / 1e6, 1)
        << " MB of bodies; " << o.rounds << " rounds, median\n\n";
    out << "| batch (deliveries) | commits | store triples/s | raw triples/s | store/raw | store "
           "msgs/s | store without the question index | with/without |\n";
    out << "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    const auto path = o.dir / "ingest.db";
    const auto raw_path = o.dir / "ingest-raw.db";
    for (const std::size_t batch : o.batches) {
        const std::size_t batches = (workload.deliveries.size() + batch - 1) / batch;
        std::vector<double> store_rate, raw_rate, ratio, msg_rate, bare_rate, index_ratio;
        for (int round = 0; round < o.rounds; ++round) {
            remove_db(path);
            auto store = trace::TraceStore::open(path, trace::OpenMode::kReadWrite);
            if (!store) throw std::runtime_error(store.error().message);
            std::vector<std::vector<trace::Delivery>> chunks;
            for (std::size_t b = 0; b < batches; ++b) {
                const auto first =
                    workload.deliveries.begin() + static_cast<std::ptrdiff_t>(b * batch);
                const auto last =
                    workload.deliveries.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                      workload.deliveries.size(), (b + 1) * batch));
                chunks.emplace_back(first, last);
            }
            std::size_t stored_triples = 0;
            const auto start = Clock::now();
            for (const auto& chunk : chunks) {
                auto outcome = (*store)->store_batch(chunk);
                if (!outcome) throw std::runtime_error(outcome.error().message);
                if (outcome->quarantined != 0)
                    throw std::runtime_error("bench messages were quarantined");
                stored_triples += outcome->triples;
            }
            const double store_s = std::chrono::duration<double>(Clock::now() - start).count();
            store.value().reset();
            const auto rows = read_stored(path.string(), batch, batches);
            if (rows.triples != stored_triples) throw std::runtime_error("triple count mismatch");
            remove_db(raw_path);
            const double raw_s = raw_insert(raw_path.string(), rows);
            store_rate.push_back(static_cast<double>(stored_triples) / store_s);
            raw_rate.push_back(static_cast<double>(rows.triples) / raw_s);
            ratio.push_back(store_rate.back() / raw_rate.back());
            msg_rate.push_back(static_cast<double>(workload.deliveries.size()) / store_s);
            bare_rate.push_back(rate_without_question_index(o.dir / "ingest-bare.db", chunks));
            index_ratio.push_back(store_rate.back() / bare_rate.back());
        }
        out << "| " << batch << " | " << batches << " | " << fmt(median_of(store_rate), 0) << " | "
            << fmt(median_of(raw_rate), 0) << " | " << fmt(median_of(ratio), 2) << " | "
            << fmt(median_of(msg_rate), 0) << " | " << fmt(median_of(bare_rate), 0) << " | "
            << fmt(median_of(index_ratio), 2) << " |\n";
        out.flush();
    }
    remove_db(path);
    remove_db(raw_path);
}

// The benchmark's broker and trace collector; a broker that does not start throws.
struct Cluster : bench::BenchCluster {
    Cluster() { grace = milliseconds{3000}; }
    void start_broker() {
        if (const auto why = BenchCluster::start_broker()) throw std::runtime_error(*why);
    }
    glassbox::integration::ChildProcess& start_collector(const std::filesystem::path& home) {
        return start("trace-collector",
                     {GLASSBOX_BINARY, "worker", "trace-collector", "--broker", endpoint, "--home",
                      home.string(), "--heartbeat-ms", "500"});
    }
};

// FINAL body of one call, or throws.
json call_once(glassbox::bus::BusClient& client, const std::string& service, const json& body) {
    auto replies = client.call(service, body, milliseconds{30'000});
    if (!replies) throw std::runtime_error(service + ": " + replies.error().message);
    return replies->back().body;
}

void wait_for_service(glassbox::bus::BusClient& client, const std::string& service) {
    if (!bench::wait_for_service(client, service))
        throw std::runtime_error("service " + service + " never came up");
}

void bench_reads(const Options& o, std::ostream& out) {
    const auto home = o.dir / "reads-home";
    std::filesystem::create_directories(home);
    const auto path = home / "traces.db";
    // Filling 100,000 sessions takes minutes: a store left by an earlier run with as many
    // sessions is reused (opened read-write first, so schema additions such as new indexes apply).
    std::optional<std::int64_t> newest_ms;
    if (std::filesystem::exists(path)) {
        auto store = trace::TraceStore::open(path, trace::OpenMode::kReadWrite);
        auto stats = store ? (*store)->stats() : base::Result<json>(store.error());
        if (stats && (*stats).value("sessions", std::size_t{0}) == o.read_sessions) {
            trace::ListQuery q;
            q.limit = 1;
            auto first = (*store)->list(q);
            if (first && !(*first)["sessions"].empty()) {
                newest_ms = glassbox::base::parse_xsd_datetime_ms(
                    (*first)["sessions"][0].value("started", ""));
            }
        }
    }
    const auto newest = newest_ms ? std::chrono::system_clock::time_point{milliseconds{*newest_ms}}
                                  : std::chrono::system_clock::now();
    out << "\n## Reads: " << o.read_sessions
        << " stored sessions, through the bus vs in-process\n\n";
    if (newest_ms) {
        out << "setup: reusing " << path.string() << "; db "
            << fmt(static_cast<double>(std::filesystem::file_size(path)) / 1e6, 0) << " MB\n\n";
    } else {
        remove_db(path);
        const auto start = Clock::now();
        trace::StoreConfig fill;
        fill.synchronous_full = false;  // setup only: the figures below are reads
        auto store = trace::TraceStore::open(path, trace::OpenMode::kReadWrite, fill);
        if (!store) throw std::runtime_error(store.error().message);
        std::size_t triples = 0;
        std::size_t done = 0;
        while (done < o.read_sessions) {
            const std::size_t n = std::min<std::size_t>(4096, o.read_sessions - done);
            const auto w = make_workload(n, 0.15, newest, std::chrono::hours{24 * 30}, 1000 + done);
            for (std::size_t b = 0; b < w.deliveries.size(); b += 1024) {
                std::vector<trace::Delivery> chunk(
                    w.deliveries.begin() + static_cast<std::ptrdiff_t>(b),
                    w.deliveries.begin() +
                        static_cast<std::ptrdiff_t>(std::min(w.deliveries.size(), b + 1024)));
                auto outcome = (*store)->store_batch(chunk);
                if (!outcome) throw std::runtime_error(outcome.error().message);
            }
            triples += w.triples;
            done += n;
        }
        out << "setup: " << done << " sessions, " << triples << " triples stored in "
            << fmt(ms_since(start) / 1000.0, 1) << " s; db "
            << fmt(static_cast<double>(std::filesystem::file_size(path)) / 1e6, 0) << " MB\n\n";
    }

    auto reader = trace::TraceStore::open(path, trace::OpenMode::kReadOnly);
    if (!reader) throw std::runtime_error(reader.error().message);
    // Sessions to show: a spread of them (echo and graph-RAG), by URI and by 8-hex UUID prefix.
    std::vector<std::string> uris;
    {
        trace::ListQuery q;
        q.limit = 10'000;
        q.offset = static_cast<std::int64_t>(o.read_sessions / 3);
        auto listed = (*reader)->list(q);
        if (!listed) throw std::runtime_error(listed.error().message);
        std::mt19937_64 rng(7);
        const auto& sessions = (*listed)["sessions"];
        for (int i = 0; i < o.read_iterations && !sessions.empty(); ++i) {
            uris.push_back(sessions[rng() % sessions.size()]["session"]);
        }
    }
    // The `next` cursor of the page ending at session 5000: the keyset twin of offset=5000.
    std::string cursor_at_5000;
    {
        trace::ListQuery q;
        q.offset = 4950;
        auto listed = (*reader)->list(q);
        if (!listed) throw std::runtime_error(listed.error().message);
        const auto& next = (*listed)["next"];
        if (!next.is_string()) throw std::runtime_error("no next cursor after 5000 sessions");
        cursor_at_5000 = next.get<std::string>();
    }
    const auto day_until = glassbox::base::format_xsd_datetime_ms(
        std::chrono::duration_cast<milliseconds>(newest.time_since_epoch()).count() -
        86'400'000LL * 10);
    const auto day_since = glassbox::base::format_xsd_datetime_ms(
        std::chrono::duration_cast<milliseconds>(newest.time_since_epoch()).count() -
        86'400'000LL * 11);
    struct Case {
        std::string name;
        std::function<json(int)> body;
    };
    const std::vector<Case> cases = {
        {"list (no filter, limit 50)",
         [](int) {
             return json{{"op", "list"}};
         }},
        {"list kind=graph-rag",
         [](int) {
             return json{{"op", "list"}, {"kind", "graph-rag"}};
         }},
        {"list status=complete",
         [](int) {
             return json{{"op", "list"}, {"status", "complete"}};
         }},
        {"list since/until (1 day)",
         [&](int) {
             return json{{"op", "list"}, {"since", day_since}, {"until", day_until}};
         }},
        {"list search=word",
         [](int i) {
             return json{{"op", "list"},
                         {"search", kWords[static_cast<std::size_t>(i) % kWords.size()]}};
         }},
        {"list search=word, exact total",
         [](int i) {
             return json{{"op", "list"},
                         {"search", kWords[static_cast<std::size_t>(i) % kWords.size()]},
                         {"exact_total", true}};
         }},
        {"list offset=5000",
         [](int) {
             return json{{"op", "list"}, {"offset", 5000}};
         }},
        {"list after=cursor (page at 5000)",
         [&](int) {
             return json{{"op", "list"}, {"after", cursor_at_5000}};
         }},
        {"show by URI",
         [&](int i) {
             return json{{"op", "show"},
                         {"session", uris[static_cast<std::size_t>(i) % uris.size()]}};
         }},
        {"show by UUID prefix (8)",
         [&](int i) {
             return json{
                 {"op", "show"},
                 {"session", uris[static_cast<std::size_t>(i) % uris.size()].substr(13, 8)}};
         }},
    };

    Cluster cluster;
    cluster.dir = o.dir;
    cluster.start_broker();
    cluster.start_collector(home);
    glassbox::bus::BusClientConfig client_config;
    client_config.endpoint = cluster.endpoint;
    glassbox::bus::BusClient client(client_config);
    wait_for_service(client, "trace");

    out << "| request | bus p50 ms | bus p99 ms | in-process p50 ms | in-process p99 ms | "
           "bus/in-process p50 |\n";
    out << "|---|---:|---:|---:|---:|---:|\n";
    const auto no_partials = [](const json&) { return true; };
    for (const auto& c : cases) {
        std::vector<double> bus, local;
        for (int i = -10; i < o.read_iterations; ++i) {  // 10 warm-up calls each
            const auto body = c.body(i < 0 ? -i : i);
            auto start = Clock::now();
            auto answer = trace::answer_trace_request(**reader, body, no_partials);
            const double local_ms = ms_since(start);
            if (!answer) throw std::runtime_error(c.name + ": " + answer.error().message);
            start = Clock::now();
            (void)call_once(client, "trace", body);
            const double bus_ms = ms_since(start);
            if (i < 0) continue;
            local.push_back(local_ms);
            bus.push_back(bus_ms);
        }
        out << "| " << c.name << " | " << fmt(percentile(bus, 0.5), 2) << " | "
            << fmt(percentile(bus, 0.99), 2) << " | " << fmt(percentile(local, 0.5), 2) << " | "
            << fmt(percentile(local, 0.99), 2) << " | "
            << fmt(percentile(bus, 0.5) / percentile(local, 0.5), 2) << " |\n";
        out.flush();
    }
}

std::optional<long> rss_kb(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    }
    return std::nullopt;
}

void bench_rss(const Options& o, std::ostream& out) {
    const auto home = o.dir / "rss-home";
    std::filesystem::create_directories(home);
    remove_db(home / "traces.db");
    Cluster cluster;
    cluster.dir = o.dir;
    cluster.start_broker();
    cluster.start("echo-worker", {GLASSBOX_BINARY, "worker", "echo", "--broker", cluster.endpoint,
                                  "--threads", "2", "--heartbeat-ms", "500"});
    auto& collector = cluster.start_collector(home);
    glassbox::bus::BusClientConfig client_config;
    client_config.endpoint = cluster.endpoint;
    glassbox::bus::BusClient client(client_config);
    wait_for_service(client, "echo");
    wait_for_service(client, "trace");

    out << "\n## Collector RSS over " << o.rss_seconds
        << " s of sustained echo ingest (VmRSS, /proc)\n\n";
    const long start_kb = rss_kb(collector.pid()).value_or(-1);
    long peak_kb = start_kb;
    std::vector<std::pair<int, long>> samples{{0, start_kb}};
    std::mt19937_64 rng(3);
    std::uint64_t finals = 0;
    std::uint64_t errors = 0;
    const auto start = Clock::now();
    const auto until = start + std::chrono::seconds{o.rss_seconds};
    auto next_sample = start + std::chrono::seconds{1};
    const int sample_every = std::max(1, o.rss_seconds / 10);
    while (Clock::now() < until) {
        while (client.in_flight() < 32) {
            const std::string question = rng() % 10 == 0 ? words(rng, 90) : words(rng, 8);
            if (!client.send("echo", json{{"question", question}, {"partials", 0}},
                             milliseconds{30'000}))
                break;
        }
        auto reply = client.next(milliseconds{50});
        if (reply && reply->terminal())
            ++(reply->kind == glassbox::bus::ReplyKind::kFinal ? finals : errors);
        if (Clock::now() >= next_sample) {
            const int second = static_cast<int>(
                std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count());
            const long kb = rss_kb(collector.pid()).value_or(-1);
            peak_kb = std::max(peak_kb, kb);
            if (second % sample_every == 0) samples.emplace_back(second, kb);
            next_sample += std::chrono::seconds{1};
        }
    }
    while (client.in_flight() > 0) {
        auto reply = client.next(milliseconds{5000});
        if (!reply) break;
        if (reply->terminal())
            ++(reply->kind == glassbox::bus::ReplyKind::kFinal ? finals : errors);
    }
    const double load_s = std::chrono::duration<double>(Clock::now() - start).count();
    // Let the collector drain the spool, then read the final RSS.
    json stats;
    const auto drain_until = Clock::now() + milliseconds{120'000};
    while (Clock::now() < drain_until) {
        stats = call_once(client, "trace", {{"op", "stats"}});
        if (stats.value("sessions", std::uint64_t{0}) >= finals) break;
        std::this_thread::sleep_for(milliseconds{200});
    }
    const double drained_s = std::chrono::duration<double>(Clock::now() - start).count();
    const long end_kb = rss_kb(collector.pid()).value_or(-1);
    peak_kb = std::max(peak_kb, end_kb);
    out << "load: " << finals << " echo requests answered (" << errors << " errors) in "
        << fmt(load_s, 1) << " s = " << fmt(static_cast<double>(finals) / load_s, 0)
        << " sessions/s; stored " << stats.value("sessions", 0) << " sessions, "
        << stats.value("events", 0) << " events, " << stats.value("triples", 0)
        << " triples, drained at " << fmt(drained_s, 1) << " s; db "
        << fmt(stats.value("db_bytes", 0.0) / 1e6, 0) << " MB\n\n";
    out << "| RSS start MB | RSS peak MB | RSS end MB |\n|---:|---:|---:|\n";
    out << "| " << fmt(static_cast<double>(start_kb) / 1024.0, 1) << " | "
        << fmt(static_cast<double>(peak_kb) / 1024.0, 1) << " | "
        << fmt(static_cast<double>(end_kb) / 1024.0, 1) << " |\n\nsamples (s: MB):";
    for (const auto& [second, kb] : samples)
        out << " " << second << ": " << fmt(static_cast<double>(kb) / 1024.0, 1);
    out << "\n";
}

// ---- backends: SQLite against PostgreSQL ---------------------------------------------------

// Where one backend's store lives in this run.
struct BackendStore {
    std::string name;
    std::function<base::Result<std::unique_ptr<trace::TraceStore>>(const trace::StoreConfig&)> open;
    std::function<void()> clear;  // an empty store again
    // After a bulk fill: what a server's background work would have done by the time of the
    // first queries (PostgreSQL: autovacuum's VACUUM and ANALYZE after that many inserted rows;
    // the VACUUM also moves the GIN index's pending entries into the index proper).
    std::function<void()> settle = [] {};
};

// Triples per second of store_batch over the ingest workload in batches of `batch`.
double ingest_rate(const BackendStore& backend, const Workload& workload, std::size_t batch) {
    backend.clear();
    auto store = backend.open({});
    if (!store) throw std::runtime_error(backend.name + ": " + store.error().message);
    std::size_t triples = 0;
    const auto start = Clock::now();
    for (std::size_t b = 0; b < workload.deliveries.size(); b += batch) {
        const std::vector<trace::Delivery> chunk(
            workload.deliveries.begin() + static_cast<std::ptrdiff_t>(b),
            workload.deliveries.begin() +
                static_cast<std::ptrdiff_t>(std::min(workload.deliveries.size(), b + batch)));
        auto outcome = (*store)->store_batch(chunk);
        if (!outcome) throw std::runtime_error(backend.name + ": " + outcome.error().message);
        triples += outcome->triples;
    }
    return static_cast<double>(triples) /
           std::chrono::duration<double>(Clock::now() - start).count();
}

// Fills the store with `sessions` echo-like sessions over the last 30 days (setup, not timed).
void fill_sessions(const BackendStore& backend, std::size_t sessions) {
    backend.clear();
    trace::StoreConfig fill;
    fill.synchronous_full = false;
    auto store = backend.open(fill);
    if (!store) throw std::runtime_error(backend.name + ": " + store.error().message);
    const auto newest = std::chrono::system_clock::now();
    for (std::size_t done = 0; done < sessions;) {
        const std::size_t n = std::min<std::size_t>(4096, sessions - done);
        const auto w = make_workload(n, 0.0, newest, std::chrono::hours{24 * 30}, 5000 + done);
        for (std::size_t b = 0; b < w.deliveries.size(); b += 2048) {
            const std::vector<trace::Delivery> chunk(
                w.deliveries.begin() + static_cast<std::ptrdiff_t>(b),
                w.deliveries.begin() +
                    static_cast<std::ptrdiff_t>(std::min(w.deliveries.size(), b + 2048)));
            auto outcome = (*store)->store_batch(chunk);
            if (!outcome) throw std::runtime_error(backend.name + ": " + outcome.error().message);
        }
        done += n;
    }
}

// p50 ms of `list` for each query, in process, over `iterations`.
std::vector<double> list_p50s(const BackendStore& backend,
                              const std::vector<trace::ListQuery>& queries, int iterations) {
    auto store = backend.open({});
    if (!store) throw std::runtime_error(backend.name + ": " + store.error().message);
    std::vector<double> out;
    for (const auto& q : queries) {
        std::vector<double> ms;
        for (int i = 0; i < iterations; ++i) {
            const auto start = Clock::now();
            auto listed = (*store)->list(q);
            if (!listed) throw std::runtime_error(backend.name + ": " + listed.error().message);
            ms.push_back(ms_since(start));
        }
        out.push_back(median_of(ms));
    }
    return out;
}

void bench_backends(const Options& o, std::ostream& out) {
    if (auto why = integration::PostgresServer::unavailable()) {
        out << "\n## Backends: skipped (" << *why << ")\n";
        return;
    }
    integration::PostgresServer::Options server_options;
    server_options.durable = true;
    integration::PostgresServer server(server_options);
    server.create_database("bench");
    const auto sqlite_path = o.dir / "backends.db";
    const std::vector<BackendStore> backends = {
        {"sqlite",
         [&](const trace::StoreConfig& c) {
             return trace::TraceStore::open(sqlite_path, trace::OpenMode::kReadWrite, c);
         },
         [&] { remove_db(sqlite_path); }},
        {"postgres",
         [&](const trace::StoreConfig& c) {
             return trace::TraceStore::open_postgres(server.dsn("bench"),
                                                     trace::OpenMode::kReadWrite, c);
         },
         [&] {
             server.exec(
                 "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA "
                 "public",
                 "bench");
         },
         [&] { server.exec("VACUUM ANALYZE", "bench"); }}};
    const auto workload =
        make_workload(o.ingest_sessions, o.graph_share, std::chrono::system_clock::now(),
                      std::chrono::hours{24}, 42);
    out << "\n## Backends: the trace store on SQLite and on PostgreSQL "
        << "(a server of this run's own, fsync on)\n\n";
    out << "Ingest, durable commits: " << workload.sessions << " sessions, "
        << workload.deliveries.size() << " messages, " << workload.triples << " triples; "
        << o.rounds << " rounds, median\n\n";
    out << "| batch | sqlite triples/s | postgres triples/s | postgres/sqlite "
           "|\n|---:|---:|---:|---:|\n";
    for (const std::size_t batch : o.batches) {
        std::vector<double> lite, pg, ratio;
        for (int round = 0; round < o.rounds; ++round) {
            lite.push_back(ingest_rate(backends[0], workload, batch));
            pg.push_back(ingest_rate(backends[1], workload, batch));
            ratio.push_back(pg.back() / lite.back());
        }
        out << "| " << batch << " | " << fmt(median_of(lite), 0) << " | " << fmt(median_of(pg), 0)
            << " | " << fmt(median_of(ratio), 2) << " |\n";
        out.flush();
    }
    // Two searches: one no question holds (every question read without an index) and two
    // adjacent words about 1 question in 50 holds.
    std::vector<trace::ListQuery> queries(5);
    queries[1].kind = "graph-rag";
    queries[2].search = "question 12";
    queries[3].status = "error";
    queries[4].search = "turbine tariff";
    const char* names[] = {"newest 50", "kind=graph-rag", "search=\"question 12\"", "status=error",
                           "search=\"turbine tariff\""};
    out << "\n`list` in process at " << o.list_sessions << " sessions, p50 ms of "
        << o.read_iterations << "\n\n| query | sqlite | postgres |\n|---|---:|---:|\n";
    std::vector<std::vector<double>> p50;
    for (const auto& backend : backends) {
        const auto start = Clock::now();
        fill_sessions(backend, o.list_sessions);
        backend.settle();
        std::cerr << "bench_traces: " << backend.name << " filled in "
                  << fmt(ms_since(start) / 1000.0, 1) << " s\n";
        p50.push_back(list_p50s(backend, queries, o.read_iterations));
    }
    for (std::size_t q = 0; q < queries.size(); ++q) {
        out << "| " << names[q] << " | " << fmt(p50[0][q], 2) << " | " << fmt(p50[1][q], 2)
            << " |\n";
    }
    remove_db(sqlite_path);
}

void usage() {
    std::cerr << "usage: bench_traces [--section ingest|reads|rss|backends|all] "
                 "[--ingest-sessions N] [--rounds N]\n"
                 "                    [--read-sessions N] [--read-iterations N] [--rss-seconds N] "
                 "[--list-sessions N] [--dir PATH]\n";
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto next = [&] { return option_value(argc, argv, i, usage); };
        if (arg == "--section") {
            o.section = next();
        } else if (arg == "--ingest-sessions") {
            o.ingest_sessions = std::stoul(next());
        } else if (arg == "--rounds") {
            o.rounds = std::stoi(next());
        } else if (arg == "--read-sessions") {
            o.read_sessions = std::stoul(next());
        } else if (arg == "--read-iterations") {
            o.read_iterations = std::stoi(next());
        } else if (arg == "--rss-seconds") {
            o.rss_seconds = std::stoi(next());
        } else if (arg == "--list-sessions") {
            o.list_sessions = std::stoul(next());
        } else if (arg == "--dir") {
            o.dir = next();
        } else {
            usage();
            return 2;
        }
    }
    // Durable commits mean something only on a real disk: when $TMPDIR is a tmpfs, pass --dir.
    std::optional<integration::TempDir> tmp;
    if (o.dir.empty()) o.dir = tmp.emplace("bench-traces").path();
    std::filesystem::create_directories(o.dir);
    try {
        std::cout << "# bench_traces (dir " << o.dir.string() << ")\n";
        if (o.section == "ingest" || o.section == "all") bench_ingest(o, std::cout);
        if (o.section == "reads" || o.section == "all") bench_reads(o, std::cout);
        if (o.section == "rss" || o.section == "all") bench_rss(o, std::cout);
        if (o.section == "backends") bench_backends(o, std::cout);
    } catch (const std::exception& e) {
        std::cerr << "bench_traces: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
