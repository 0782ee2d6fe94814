// bench_graph: the knowledge-graph store's insert rate and pattern-query latency in-process, each
// against a baseline measured in the same run.
//
//   insert  a synthetic graph (--triples, default 1,000,000): entities with a power-law (Zipf)
//           degree as subjects and objects, 40 predicates with skewed use, some literal values
//           and an rdfs:label per entity, inserted by GraphStore::insert in batches of --batch
//           (default 50,000, as `glassbox load rdf` sends), one transaction each. Baseline: the
//           same rows as integers (s, p, o, g) inserted into a plain rowid table of another SQLite
//           file with the same settings, one transaction per batch, interleaved batch by batch with
//           the store. Prints the median batch rate of both, their ratio, the total rate, peak RSS
//           (VmHWM) and bytes on disk per triple (after a WAL checkpoint). --batches-per-commit K
//           runs K store batches in one transaction of the caller (TransactionMode::kCallers):
//           each commit rewrites every index page it dirtied, so fewer commits write less.
//           --staged stages each batch (GraphStore::stage) and commits the whole load once
//           (commit_staged, counted in the store's time), the path `glassbox load` takes.
//   query   --queries (default 2,000) patterns per kind drawn from the loaded triples: s bound;
//           p and o bound; s and p bound; o bound; all three bound. GraphStore::match with
//           limit --limit (default 100) against the integer-only SELECT of the same rows on the
//           same connection (the cost of term lookup and decoding is the ratio). p50 and p90.
//   --postgres  instead, the store on SQLite against PostgreSQL (a server of this run's own,
//           fsync on, started as tests/support/postgres_server.hpp does): the same staged load
//           (--triples, --batch) into each, then --queries graph-RAG store requests (20
//           entities' edges out and in, limit --limit, and the labels of every term) on each.
//           Load triples/s, request p50 and p90 of both, and PostgreSQL / SQLite.
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "schema/term.hpp"
#include "schema/vocabulary.hpp"
#include "storage/pg_connection.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/postgres_server.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/knowledge_base.hpp"

namespace {

using namespace glassbox;
using namespace glassbox::bench;

struct Options : bench::StoreRunOptions {
    Options() { queries = 2'000; }
    std::size_t batch = 50'000;  // as `glassbox load rdf` sends
    std::int64_t cache_kib = 131'072;
    // Insert batches per transaction: above 1 they run in the caller's transaction (kCallers).
    std::size_t batches_per_commit = 1;
    // Stage every batch (GraphStore::stage) and commit once at the end (commit_staged).
    bool staged = false;
    // Compare the store on SQLite and on PostgreSQL (a server of this run's own) instead.
    bool postgres = false;
};

// CPU time of this thread: the machines are shared, so wall time alone mixes in other load.
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

long vm_hwm_kb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    }
    return -1;
}

[[noreturn]] void die(const std::string& what) { bench::fail("bench_graph", what); }

template <typename T>
T check(base::Result<T> result, const char* what) {
    if (!result) die(std::string(what) + ": " + result.error().message);
    return std::move(result).value();
}

void check(base::Result<void> result, const char* what) {
    if (!result) die(std::string(what) + ": " + result.error().message);
}

// A synthetic graph, generated one batch at a time (never all in memory). Each triple also has
// an integer form (term numbers of the generator) for the raw baseline.
class Generator {
public:
    explicit Generator(std::size_t triples)
        : total_(triples),
          entities_(std::max<std::size_t>(triples / 5, 10)),
          rng_(42),
          subjects_(entities_, 1.0, rng_),
          objects_(entities_, 0.9, rng_),
          predicates_(40, 1.2, rng_) {}

    std::size_t entities() const { return entities_; }

    // The next up to `n` triples; false when all are out.
    bool next(std::size_t n, std::vector<schema::Triple>& triples,
              std::vector<std::array<std::int64_t, 4>>& rows) {
        triples.clear();
        rows.clear();
        while (triples.size() < n && produced_ < total_) {
            ++produced_;
            // The first triples label every entity once, in random order (one fifth of the load).
            if (labelled_ < entities_ && produced_ % 5 == 0) {
                const auto e = labelled_++;
                triples.push_back(schema::make_triple(entity(e), label_,
                                                      schema::lang_literal(label_of(e), "en")));
                rows.push_back({entity_id(e), 1, literal_id(e), 0});
                continue;
            }
            const auto s = subjects_(rng_);
            const auto p = predicates_(rng_);
            if (std::uniform_int_distribution<int>(0, 99)(rng_) < 15) {
                const auto value = std::uniform_int_distribution<std::int64_t>(0, 100'000)(rng_);
                triples.push_back(
                    schema::make_triple(entity(s), predicate(p), schema::xsd_integer(value)));
                rows.push_back({entity_id(s), static_cast<std::int64_t>(p) + 2,
                                literal_id(entities_ + static_cast<std::size_t>(value)), 0});
            } else {
                const auto o = objects_(rng_);
                triples.push_back(schema::make_triple(entity(s), predicate(p), entity(o)));
                rows.push_back({entity_id(s), static_cast<std::int64_t>(p) + 2, entity_id(o), 0});
            }
        }
        return !triples.empty();
    }

private:
    static schema::Term entity(std::size_t e) {
        return schema::iri("http://example.org/kg/entity/E" + std::to_string(e));
    }
    static schema::Term predicate(std::size_t p) {
        return schema::iri("http://example.org/kg/relation/r" + std::to_string(p));
    }
    static std::string label_of(std::size_t e) { return "Entity number " + std::to_string(e); }
    static std::int64_t entity_id(std::size_t e) { return 100 + static_cast<std::int64_t>(e); }
    std::int64_t literal_id(std::size_t l) const {
        return 100 + static_cast<std::int64_t>(entities_) + static_cast<std::int64_t>(l);
    }

    std::size_t total_;
    std::size_t entities_;
    std::size_t produced_ = 0;
    std::size_t labelled_ = 0;
    std::mt19937_64 rng_;
    Zipf subjects_;
    Zipf objects_;
    Zipf predicates_;
    schema::Term label_ = schema::iri(schema::vocab::kRdfsLabel);
};

std::unique_ptr<storage::Database> open_db(const std::filesystem::path& path, const Options& o) {
    // As the store worker opens a collection, with this bench's cache size.
    storage::OpenOptions options = store::KnowledgeBase::open_options(path.filename().string());
    options.cache_size = -o.cache_kib;
    return check(storage::Database::open(path, options), "open");
}

std::uintmax_t file_bytes(const std::filesystem::path& path) {
    std::uintmax_t total = 0;
    for (const char* suffix : {"", "-wal"}) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path.string() + suffix, ec);
        if (!ec) total += size;
    }
    return total;
}

void remove_db(const std::filesystem::path& path) {
    for (const char* suffix : {"", "-wal", "-shm"}) {
        std::error_code ignored;
        std::filesystem::remove(path.string() + suffix, ignored);
    }
}

int run(const Options& o) {
    const auto tag = std::to_string(::getpid());
    const auto store_path = o.dir / ("bench-graph-" + tag + ".db");
    const auto raw_path = o.dir / ("bench-graph-raw-" + tag + ".db");
    remove_db(store_path);
    remove_db(raw_path);
    auto connection = std::make_unique<storage::SqliteConnection>(open_db(store_path, o));
    storage::Database* db = &connection->database();
    auto raw_db = open_db(raw_path, o);
    auto graph = check(store::GraphStore::open(*connection), "open graph store");
    check(raw_db->exec("CREATE TABLE raw(s INTEGER NOT NULL, p INTEGER NOT NULL, o INTEGER NOT "
                       "NULL, g INTEGER NOT NULL)"),
          "raw table");
    const store::SourceRecord source_record{
        "file:///bench/synthetic.nt", store::SourceKind::kFile, {}, 1,
        "2026-11-22T00:00:00Z",       "application/n-triples"};
    const auto source = check(graph->register_source(source_record), "register source");

    std::cout
        << "# bench_graph: " << o.triples << " triples, batches of " << o.batch << ", cache_size "
        << o.cache_kib / 1024
        << " MiB per connection, page size 4096, WAL, synchronous=NORMAL, background checkpoints, "
        << (o.staged ? std::string("staged, one commit")
                     : std::to_string(o.batches_per_commit) + " batch(es) per commit")
        << "\n\n";

    // ---- insert ----
    Generator generator(o.triples);
    std::vector<schema::Triple> triples;
    std::vector<std::array<std::int64_t, 4>> rows;
    std::vector<double> store_rates;
    std::vector<double> raw_rates;
    std::vector<schema::Triple> sample;  // for the queries: every k-th triple
    const std::size_t sample_every = std::max<std::size_t>(1, o.triples / (o.queries * 4));
    std::size_t seen = 0;
    double store_seconds = 0;
    double raw_seconds = 0;
    double store_cpu = 0;
    double raw_cpu = 0;
    std::uint64_t added = 0;
    std::optional<storage::Transaction> open_tx;
    std::size_t batch_number = 0;
    while (generator.next(o.batch, triples, rows)) {
        for (const auto& t : triples) {
            if (seen++ % sample_every == 0) sample.push_back(t);
        }
        const auto t0 = Clock::now();
        const double c0 = thread_cpu_seconds();
        store::InsertCounts counts;
        if (o.staged) {
            (void)check(graph->stage("bench", source_record, triples), "stage");
        } else if (o.batches_per_commit <= 1) {
            counts = check(graph->insert(source, triples), "insert");
        } else {
            if (!open_tx) open_tx.emplace(check(storage::Transaction::begin(*db), "begin"));
            counts =
                check(graph->insert(source, triples, store::TransactionMode::kCallers), "insert");
            if (++batch_number % o.batches_per_commit == 0) {
                check(open_tx->commit(), "commit");
                open_tx.reset();
            }
        }
        const double c1 = thread_cpu_seconds();
        const auto t1 = Clock::now();
        {
            auto tx = check(storage::Transaction::begin(*raw_db), "raw begin");
            for (const auto& r : rows) {
                auto st =
                    check(raw_db->prepare("INSERT INTO raw(s, p, o, g) VALUES(?1, ?2, ?3, ?4)"),
                          "raw prepare");
                st.bind(1, r[0]).bind(2, r[1]).bind(3, r[2]).bind(4, r[3]);
                check(st.run(), "raw insert");
            }
            check(tx.commit(), "raw commit");
        }
        const double c2 = thread_cpu_seconds();
        const auto t2 = Clock::now();
        store_cpu += c1 - c0;
        raw_cpu += c2 - c1;
        added += counts.added;
        const double store_s = std::chrono::duration<double>(t1 - t0).count();
        const double raw_s = std::chrono::duration<double>(t2 - t1).count();
        store_seconds += store_s;
        raw_seconds += raw_s;
        store_rates.push_back(static_cast<double>(triples.size()) / store_s);
        raw_rates.push_back(static_cast<double>(rows.size()) / raw_s);
    }
    if (open_tx) {
        check(open_tx->commit(), "commit");
        open_tx.reset();
    }
    double commit_seconds = 0;
    double commit_cpu = 0;
    if (o.staged) {
        const auto t0 = Clock::now();
        const double c0 = thread_cpu_seconds();
        added = check(graph->commit_staged("bench"), "commit_staged").added;
        commit_cpu = thread_cpu_seconds() - c0;
        commit_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        store_seconds += commit_seconds;
        store_cpu += commit_cpu;
    }
    check(db->exec("PRAGMA wal_checkpoint(TRUNCATE)"), "checkpoint");
    check(raw_db->exec("PRAGMA wal_checkpoint(TRUNCATE)"), "raw checkpoint");
    const auto stats = check(graph->stats(), "stats");
    const double store_median = percentile(store_rates, 0.5);
    const double raw_median = percentile(raw_rates, 0.5);
    std::cout << "## Insert (" << store_rates.size() << " batches)\n\n"
              << "| | median batch triples/s | total triples/s (wall) | total triples/s (CPU) | "
                 "wall s | CPU s |\n"
              << "|---|---|---|---|---|---|\n"
              << "| GraphStore::insert | " << fmt(store_median, 0) << " | "
              << fmt(static_cast<double>(o.triples) / store_seconds, 0) << " | "
              << fmt(static_cast<double>(o.triples) / store_cpu, 0) << " | "
              << fmt(store_seconds, 2) << " | " << fmt(store_cpu, 2) << " |\n"
              << "| raw SQLite (4 integers, no index) | " << fmt(raw_median, 0) << " | "
              << fmt(static_cast<double>(o.triples) / raw_seconds, 0) << " | "
              << fmt(static_cast<double>(o.triples) / raw_cpu, 0) << " | " << fmt(raw_seconds, 2)
              << " | " << fmt(raw_cpu, 2) << " |\n\n"
              << (o.staged ? "staged: the store rows include commit_staged, " +
                                 fmt(commit_seconds, 2) + " s wall, " + fmt(commit_cpu, 2) +
                                 " s CPU (the median batch rate is staging only)\n"
                           : std::string())
              << "ratio raw/store: median batch " << fmt(raw_median / store_median, 2)
              << ", CPU time " << fmt(store_cpu / raw_cpu, 2) << "\n"
              << "quads " << stats.quads << " (added " << added << "), terms " << stats.terms
              << ", subjects " << stats.subjects << ", predicates " << stats.predicates
              << ", objects " << stats.objects << "\n"
              << "bytes on disk per quad: store "
              << fmt(static_cast<double>(file_bytes(store_path)) / static_cast<double>(stats.quads),
                     1)
              << ", raw "
              << fmt(static_cast<double>(file_bytes(raw_path)) / static_cast<double>(o.triples), 1)
              << "\n"
              << "peak RSS (VmHWM) after insert: "
              << fmt(static_cast<double>(vm_hwm_kb()) / 1024.0, 1) << " MiB\n\n";

    // ---- query ----
    std::mt19937_64 rng(7);
    std::shuffle(sample.begin(), sample.end(), rng);
    struct Kind {
        const char* name;
        bool s, p, o;
    };
    const Kind kinds[] = {{"s bound", true, false, false},
                          {"p+o bound", false, true, true},
                          {"s+p bound", true, true, false},
                          {"o bound", false, false, true},
                          {"s+p+o bound", true, true, true}};
    std::cout << "## Pattern queries (GraphStore::match, limit " << o.limit << ", " << o.queries
              << " per kind; baseline: integer-only SELECT of the same rows)\n\n"
              << "| pattern | p50 µs | p90 µs | raw p50 µs | raw p90 µs | ratio p50 | mean rows |\n"
              << "|---|---|---|---|---|---|---|\n";
    for (const auto& kind : kinds) {
        std::vector<double> store_us;
        std::vector<double> raw_us;
        std::size_t rows_total = 0;
        for (std::size_t i = 0; i < o.queries && !sample.empty(); ++i) {
            const auto& t = sample[i % sample.size()];
            schema::TriplePattern pattern;
            if (kind.s) pattern.s = t.s;
            if (kind.p) pattern.p = t.p;
            if (kind.o) pattern.o = t.o;
            const auto t0 = Clock::now();
            const auto found = check(graph->match(pattern, o.limit), "match");
            const auto t1 = Clock::now();
            rows_total += found.size();
            store_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            // The same rows by ids known beforehand: only the index walk.
            std::int64_t ids[3] = {0, 0, 0};
            const std::optional<schema::Term>* parts[3] = {&pattern.s, &pattern.p, &pattern.o};
            for (int k = 0; k < 3; ++k) {
                if (parts[k]->has_value())
                    ids[k] = check(graph->find_term(**parts[k]), "find_term").value_or(-1);
            }
            // The table whose key order serves the pattern, as GraphStore picks it.
            const char* table = kind.s ? "graph_quads" : kind.p ? "graph_pos" : "graph_osp";
            std::string sql = std::string("SELECT s, p, o, g FROM ") + table + " WHERE 1";
            if (kind.s) sql += " AND s = ?1";
            if (kind.p) sql += " AND p = ?2";
            if (kind.o) sql += " AND o = ?3";
            sql += " LIMIT ?4";
            const auto t2 = Clock::now();
            {
                auto st = check(db->prepare(sql), "raw query");
                if (kind.s) st.bind(1, ids[0]);
                if (kind.p) st.bind(2, ids[1]);
                if (kind.o) st.bind(3, ids[2]);
                st.bind(4, static_cast<std::int64_t>(o.limit));
                std::int64_t checksum = 0;
                while (check(st.step(), "raw step"))
                    checksum += st.row().int64(0) + st.row().int64(2);
                if (checksum == -1) std::cout << "";
            }
            const auto t3 = Clock::now();
            raw_us.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
        }
        const double p50 = percentile(store_us, 0.5);
        const double raw_p50 = percentile(raw_us, 0.5);
        std::cout << "| " << kind.name << " | " << fmt(p50, 1) << " | "
                  << fmt(percentile(store_us, 0.9), 1) << " | " << fmt(raw_p50, 1) << " | "
                  << fmt(percentile(raw_us, 0.9), 1) << " | "
                  << fmt(p50 / std::max(raw_p50, 0.001), 2) << " | "
                  << fmt(static_cast<double>(rows_total) /
                             static_cast<double>(std::max<std::size_t>(1, store_us.size())),
                         1)
                  << " |\n";
    }
    std::cout << "\npeak RSS (VmHWM) at the end: "
              << fmt(static_cast<double>(vm_hwm_kb()) / 1024.0, 1) << " MiB\n";
    graph.reset();
    connection.reset();
    raw_db.reset();
    bench::remove_unless_kept(o, {store_path, raw_path}, remove_db);
    return 0;
}

// ---- the store on SQLite against PostgreSQL (--postgres) ------------------------------------

// A load as `glassbox load` sends it (a staged batch at a time, one commit), timed whole and
// in its two parts.
struct LoadSeconds {
    double staging = 0;
    double commit = 0;
    double whole() const { return staging + commit; }
};

LoadSeconds load_seconds(storage::sql::Connection& db, const Options& o,
                         std::vector<schema::Term>& entities) {
    auto graph = check(store::GraphStore::open(db), "open graph store");
    const store::SourceRecord source{"file:///bench/synthetic.nt", store::SourceKind::kFile, {}, 1,
                                     "2026-11-22T00:00:00Z",       "application/n-triples"};
    Generator generator(o.triples);
    std::vector<schema::Triple> triples;
    std::vector<std::array<std::int64_t, 4>> rows;
    std::mt19937_64 pick(11);
    const auto t0 = Clock::now();
    while (generator.next(o.batch, triples, rows)) {
        (void)check(graph->stage("bench", source, triples), "stage");
        for (std::size_t k = 0; k < 64 && entities.size() < 4'096; ++k) {
            const auto& t = triples[pick() % triples.size()];
            entities.push_back(k % 2 == 0 || !t.o.is_iri() ? t.s : t.o);
        }
    }
    const auto t1 = Clock::now();
    (void)check(graph->commit_staged("bench"), "commit_staged");
    return {std::chrono::duration<double>(t1 - t0).count(),
            std::chrono::duration<double>(Clock::now() - t1).count()};
}

// Graph-RAG's store requests: per request, the edges in and out of `kFrontier` entities
// (triples-batch, limit --limit) and the labels of every term they hold; ms of each request.
std::vector<double> rag_request_ms(storage::sql::Connection& db, const Options& o,
                                   const std::vector<schema::Term>& entities) {
    constexpr std::size_t kFrontier = 20;
    auto graph = check(store::GraphStore::open(db), "open graph store");
    std::mt19937_64 rng(7);
    std::vector<double> ms;
    for (std::size_t q = 0; q < o.queries; ++q) {
        std::vector<schema::TriplePattern> patterns;
        for (std::size_t k = 0; k < kFrontier; ++k) {
            const auto& e = entities[rng() % entities.size()];
            patterns.push_back({e, std::nullopt, std::nullopt, std::nullopt});
            patterns.push_back({std::nullopt, std::nullopt, e, std::nullopt});
        }
        const auto t0 = Clock::now();
        std::vector<std::vector<std::int64_t>> ids;
        const auto found = check(graph->match_batch(patterns, o.limit, nullptr, &ids), "match");
        std::vector<std::int64_t> all_ids;
        std::vector<const schema::Term*> terms;
        for (std::size_t i = 0; i < found.size(); ++i) {
            all_ids.insert(all_ids.end(), ids[i].begin(), ids[i].end());
            for (const auto& t : found[i]) terms.insert(terms.end(), {&t.s, &t.p, &t.o});
        }
        (void)check(graph->labels_of_stored(all_ids, terms, "bench"), "labels");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return ms;
}

int run_backends(const Options& o) {
    if (auto why = integration::PostgresServer::unavailable()) {
        std::cout << "# bench_graph --postgres: skipped (" << *why << ")\n";
        return 0;
    }
    integration::PostgresServer::Options server_options;
    server_options.durable = true;  // fsync on, as a production server runs
    integration::PostgresServer server(server_options);
    server.exec("CREATE SCHEMA bench");
    const auto sqlite_path = o.dir / ("bench-graph-backends-" + std::to_string(::getpid()) + ".db");
    remove_db(sqlite_path);
    auto sqlite = std::make_unique<storage::SqliteConnection>(open_db(sqlite_path, o));
    storage::PgOptions pg_options;
    pg_options.dsn = server.dsn();
    pg_options.search_path = "bench";
    auto postgres = check(storage::PgConnection::open(pg_options), "connect to PostgreSQL");
    std::cout << "# bench_graph --postgres: " << o.triples << " triples staged in batches of "
              << o.batch << " and committed once; " << o.queries
              << " graph-RAG store requests (20 entities: edges out and in, limit " << o.limit
              << ", then the labels of every term)\n\n| | SQLite | PostgreSQL | PostgreSQL / "
                 "SQLite |\n|---|---:|---:|---:|\n";
    std::vector<schema::Term> entities;
    const LoadSeconds sqlite_load = load_seconds(*sqlite, o, entities);
    std::vector<schema::Term> unused;
    const LoadSeconds pg_load = load_seconds(*postgres, o, unused);
    // As autovacuum does after a load of this size (within a minute or so): the planner's
    // statistics, and the visibility map and hint bits that spare index-only scans their heap
    // fetches (bench_traces does the same).
    check(postgres->exec("VACUUM ANALYZE"), "vacuum");
    auto sqlite_ms = rag_request_ms(*sqlite, o, entities);
    auto pg_ms = rag_request_ms(*postgres, o, entities);

    const double n = static_cast<double>(o.triples);
    std::cout << "| load, triples/s | " << fmt(n / sqlite_load.whole(), 0) << " | "
              << fmt(n / pg_load.whole(), 0) << " | "
              << fmt(sqlite_load.whole() / pg_load.whole(), 2) << " |\n";
    std::cout << "| load's staging, s | " << fmt(sqlite_load.staging, 3) << " | "
              << fmt(pg_load.staging, 3) << " | " << fmt(pg_load.staging / sqlite_load.staging, 2)
              << " |\n| load's commit, s | " << fmt(sqlite_load.commit, 3) << " | "
              << fmt(pg_load.commit, 3) << " | " << fmt(pg_load.commit / sqlite_load.commit, 2)
              << " |\n";
    for (const double at : {0.5, 0.9}) {
        const double a = percentile(sqlite_ms, at);
        const double b = percentile(pg_ms, at);
        std::cout << "| graph-RAG request p" << static_cast<int>(at * 100) << ", ms | " << fmt(a, 3)
                  << " | " << fmt(b, 3) << " | " << fmt(b / a, 2) << " |\n";
    }
    postgres.reset();
    sqlite.reset();
    remove_db(sqlite_path);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    const auto take = [&o](bench::Args& args) {
        const std::string& arg = args.arg();
        if (arg == "--batch") {
            o.batch = args.number();
        } else if (arg == "--cache-mib") {
            o.cache_kib = static_cast<std::int64_t>(args.number()) * 1024;
        } else if (arg == "--batches-per-commit") {
            o.batches_per_commit = args.number();
        } else if (arg == "--staged") {
            o.staged = true;
        } else if (arg == "--postgres") {
            o.postgres = true;
        } else {
            return false;
        }
        return true;
    };
    if (const auto status = bench::read_store_run_options(
            argc, argv, "bench_graph", o, store::kMaxMatchLimit, take,
            "usage: bench_graph [--triples N] [--batch N] [--queries N] [--limit N] "
            "[--cache-mib N] [--batches-per-commit K] [--staged] [--postgres] [--dir PATH] "
            "[--keep]\n"))
        return *status;
    return o.postgres ? run_backends(o) : run(o);
}
