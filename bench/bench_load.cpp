// bench_load: `glassbox load rdf` through the bus against `rapper -c` on the same file, and a
// batched pattern query through the bus against the same query in-process, in one run.
//
//   load    a generated N-Triples file (--triples, default 1,000,000; entities with power-law
//           degree, 40 predicates, integer literals and an English rdfs:label per entity, as
//           bench_graph makes them) is loaded --runs times (default 3) into a fresh home by
//           `glassbox load rdf FILE --no-index` against a broker and one `store` worker started
//           here; before each run's loads `rapper -c -i ntriples FILE` (parse and count only)
//           reads the same file --rapper-runs times (default 3) back to back, the median wall
//           the run's baseline (rapper's wall for one file moves between ~1.0 and ~1.7 s in
//           stretches on these VMs). All run under /usr/bin/time: wall and CPU seconds and peak
//           RSS. The store worker's CPU seconds and peak RSS come from /proc. Prints each run and
//           the medians: statements/s of both, their ratio, bytes on disk per triple. With
//           --glassbox PATH each run also loads with that build's binary (CLI and store
//           worker; first in odd runs, second in even ones), for an A/B against another commit
//           in the same run; --binary PATH loads with PATH as this build (a private copy, safe
//           from rebuilds of the tree mid-run).
//   query   --queries (default 300) `triples-batch` requests of 50 subject patterns (entities
//           drawn at random, limit --limit per pattern, default 100) through the bus, against
//           GraphStore::match_batch of the same patterns on the same file in this process (the
//           bus figure includes decoding the reply into triples, and both answers must agree).
//           p50 / p90 of both and their ratio.
//
// Needs `rapper` (raptor2-utils) and /usr/bin/time; the file and homes go to --dir (default
// $TMPDIR), removed afterwards unless --keep.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "bus/bus_client.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/process.hpp"
#include "workers/store/graph_store.hpp"

namespace {

using namespace glassbox;
using namespace glassbox::bench;
namespace fs = std::filesystem;
using nlohmann::json;

struct Options : bench::StoreRunOptions {
    Options() { queries = 300; }
    std::size_t runs = 3;
    std::size_t rapper_runs = 3;
    // --glassbox PATH: each run also loads the file with another build's binary (CLI and store
    // worker; the broker stays this build's), before this build's load in odd runs and after it
    // in even ones: an A/B in one run.
    std::string other;
    // --binary PATH: this build's binary (CLI and store worker) is PATH, a copy that others'
    // rebuilds of the shared tree cannot change mid-run; default, the one built beside this.
    std::string binary = GLASSBOX_BINARY;
};

[[noreturn]] void die(const std::string& what) { bench::fail("bench_load", what); }

constexpr const char* kEntity = "http://example.org/kg/entity/E";

// Writes the file; returns the number of entities.
std::size_t write_ntriples(const fs::path& path, std::size_t triples) {
    const std::size_t entities = std::max<std::size_t>(triples / 5, 10);
    std::mt19937_64 rng(42);
    Zipf subjects(entities, 1.0, rng);
    Zipf objects(entities, 0.9, rng);
    Zipf predicates(40, 1.2, rng);
    std::ofstream out(path, std::ios::binary);
    std::string line;
    std::size_t labelled = 0;
    for (std::size_t produced = 1; produced <= triples; ++produced) {
        line.clear();
        if (labelled < entities && produced % 5 == 0) {
            const auto e = labelled++;
            line += "<" + std::string(kEntity) + std::to_string(e) +
                    "> <http://www.w3.org/2000/01/rdf-schema#label> \"Entity number " +
                    std::to_string(e) + "\"@en .\n";
        } else {
            const auto s = subjects(rng);
            const auto p = predicates(rng);
            line += "<" + std::string(kEntity) + std::to_string(s) +
                    "> <http://example.org/kg/relation/r" + std::to_string(p) + "> ";
            if (std::uniform_int_distribution<int>(0, 99)(rng) < 15) {
                line += "\"" + std::to_string(std::uniform_int_distribution<int>(0, 100'000)(rng)) +
                        "\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n";
            } else {
                line += "<" + std::string(kEntity) + std::to_string(objects(rng)) + "> .\n";
            }
        }
        out << line;
    }
    if (!out) die("cannot write " + path.string());
    return entities;
}

// /usr/bin/time -f "%e %U %S %M": wall s, user s, system s, peak RSS KiB.
struct Timed {
    double wall = 0, cpu = 0, rss_mib = 0;
    std::string out, err;
    int code = -1;
};

Timed run_timed(const std::string& name, std::vector<std::string> argv, const fs::path& dir) {
    const auto report = dir / (name + ".time");
    std::vector<std::string> full = {"/usr/bin/time", "-f", "%e %U %S %M", "-o", report.string()};
    full.insert(full.end(), argv.begin(), argv.end());
    glassbox::integration::ChildProcess child(name, full, dir);
    auto status = child.wait_exit(std::chrono::milliseconds{1'800'000});
    if (!status) die(name + " did not finish");
    Timed t;
    t.code = status->exited ? status->code : -1;
    t.out = child.stdout_text();
    t.err = child.stderr_text();
    std::ifstream in(report);
    std::string last, line;
    while (std::getline(in, line)) {
        if (!line.empty()) last = line;  // "Command exited with non-zero status" comes first
    }
    std::istringstream fields(last);
    double user = 0, system = 0, rss_kib = 0;
    fields >> t.wall >> user >> system >> rss_kib;
    t.cpu = user + system;
    t.rss_mib = rss_kib / 1024.0;
    return t;
}

// CPU seconds and peak RSS (MiB) of a running process, from /proc.
std::pair<double, double> proc_usage(pid_t pid) {
    double cpu = 0, rss = 0;
    {
        std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto close = text.rfind(')');
        if (close != std::string::npos) {
            std::istringstream rest(text.substr(close + 2));
            std::string field;
            std::vector<std::string> fields;
            while (rest >> field) fields.push_back(field);
            // fields[0] is state (stat field 3); utime and stime are stat fields 14 and 15.
            if (fields.size() > 12) {
                cpu = (std::stod(fields[11]) + std::stod(fields[12])) /
                      static_cast<double>(sysconf(_SC_CLK_TCK));
            }
        }
    }
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) rss = std::strtod(line.c_str() + 6, nullptr) / 1024.0;
    }
    return {cpu, rss};
}

// The benchmark's broker and store worker; a broker that does not start ends the benchmark.
struct Cluster : bench::BenchCluster {
    void start_broker() {
        if (const auto why = BenchCluster::start_broker()) die(*why);
    }
};

void wait_for_service(glassbox::bus::BusClient& client, const std::string& service) {
    if (!bench::wait_for_service(client, service)) die("service " + service + " never came up");
}

std::uintmax_t dir_bytes(const fs::path& dir) {
    std::uintmax_t total = 0;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
        if (entry.is_regular_file(ec)) total += entry.file_size(ec);
    }
    return total;
}

int run(const Options& o) {
    const auto work = o.dir / ("bench-load-" + std::to_string(::getpid()));
    fs::remove_all(work);
    fs::create_directories(work);
    const auto file = work / "synthetic.nt";
    const auto entities = write_ntriples(file, o.triples);
    std::cout << "# bench_load: " << o.triples << " triples (" << entities << " entities), "
              << fmt(static_cast<double>(fs::file_size(file)) / 1e6, 1) << " MB of N-Triples; "
              << o.runs
              << " runs; glassbox load rdf --no-index through a broker and one store worker vs "
                 "rapper -c\n\n";

    std::cout
        << "## Load\n\n| run | glassbox | load wall s | load statements/s | CLI CPU s | CLI peak "
           "RSS MiB | store CPU s | "
           "store peak RSS MiB | rapper -c wall s (median) | rapper statements/s | load/rapper "
           "(rate) |\n"
        << "|---|---|---|---|---|---|---|---|---|---|---|\n";
    // The other build's figures (--glassbox), loaded in the same runs.
    struct Figures {
        std::vector<double> rates, ratios, cli_cpu, store_cpu, walls;
    } other;
    std::vector<double> load_rates, rapper_rates, ratios, cli_rss, store_rss, cli_cpu, store_cpu,
        load_walls;
    double bytes_per_triple = 0;
    std::vector<double> all_rapper_walls;
    fs::path last_home;
    std::unique_ptr<Cluster> cluster;
    for (std::size_t run = 1; run <= o.runs; ++run) {
        std::vector<double> rapper_walls;
        for (std::size_t k = 0; k < o.rapper_runs; ++k) {
            const auto rapper = run_timed(
                "rapper", {"/usr/bin/rapper", "-c", "-i", "ntriples", file.string()}, work);
            if (rapper.code != 0) die("rapper failed: " + rapper.err);
            // rapper -c prints "rapper: Parsing returned N triples" on stderr.
            if (rapper.err.find("returned " + std::to_string(o.triples) + " triples") ==
                std::string::npos) {
                die("rapper counted otherwise: " + rapper.err);
            }
            rapper_walls.push_back(rapper.wall);
            all_rapper_walls.push_back(rapper.wall);
        }
        const double rapper_wall = percentile(rapper_walls, 0.5);

        // One load into a fresh home by `binary` (CLI and store worker).
        struct Loaded {
            Timed load;
            json summary;
            std::pair<double, double> before, after;  // the store worker's CPU s, peak RSS MiB
        };
        const auto load_with = [&](const std::string& binary, const std::string& name) {
            cluster = std::make_unique<Cluster>();
            cluster->dir = work / ("cluster-" + std::to_string(run) + name);
            fs::create_directories(cluster->dir);
            cluster->start_broker();
            last_home = cluster->dir / "home";
            auto& worker =
                cluster->start("store", {binary, "worker", "store", "--broker", cluster->endpoint,
                                         "--home", last_home.string(), "--heartbeat-ms", "500"});
            {
                glassbox::bus::BusClientConfig config;
                config.endpoint = cluster->endpoint;
                glassbox::bus::BusClient client(config);
                wait_for_service(client, "store");
            }
            Loaded out;
            out.before = proc_usage(worker.pid());
            out.load = run_timed("load",
                                 {binary, "load", "rdf", file.string(), "--no-index", "--json",
                                  "--broker", cluster->endpoint, "--timeout-ms", "600000"},
                                 cluster->dir);
            if (out.load.code != 0) die(binary + " load failed: " + out.load.err);
            out.summary = json::parse(out.load.out, nullptr, false);
            if (!out.summary.is_object() ||
                out.summary.value("statements", std::uint64_t{0}) != o.triples) {
                die(binary + " load reported otherwise: " + out.load.out);
            }
            out.after = proc_usage(worker.pid());
            return out;
        };
        const double rapper_rate = static_cast<double>(o.triples) / rapper_wall;
        // One row of the table: a load's figures against this run's rapper.
        const auto print_row = [&](const std::string& name, const Loaded& loaded) {
            const double rate = static_cast<double>(o.triples) / loaded.load.wall;
            std::cout << "| " << run << " | " << name << " | " << fmt(loaded.load.wall, 2) << " | "
                      << fmt(rate, 0) << " | " << fmt(loaded.load.cpu, 2) << " | "
                      << fmt(loaded.load.rss_mib, 1) << " | "
                      << fmt(loaded.after.first - loaded.before.first, 2) << " | "
                      << fmt(loaded.after.second, 1) << " | " << fmt(rapper_wall, 2) << " | "
                      << fmt(rapper_rate, 0) << " | " << fmt(rate / rapper_rate, 2) << " |\n";
        };
        // The two builds take turns going first, so that whatever favours one slot (the file
        // fresh in the page cache after rapper, a machine warming up) falls on both sides: with
        // one binary in both slots, either slot read up to 13 % slower in different pairs
        // (2026-12-03). This build's cluster is kept for the query part.
        const auto load_other = [&] {
            if (o.other.empty()) return;
            auto kept = std::move(cluster);
            const auto kept_home = last_home;
            const auto ab = load_with(o.other, "-other");
            const double rate = static_cast<double>(o.triples) / ab.load.wall;
            other.rates.push_back(rate);
            other.ratios.push_back(rate / rapper_rate);
            other.cli_cpu.push_back(ab.load.cpu);
            other.store_cpu.push_back(ab.after.first - ab.before.first);
            other.walls.push_back(ab.load.wall);
            print_row(o.other, ab);
            cluster = std::move(kept);
            last_home = kept_home;
        };
        const bool other_first = run % 2 == 1;
        if (other_first) load_other();
        const auto loaded = load_with(o.binary, "");
        const auto& [load, summary, before, after] = loaded;
        const double load_rate = static_cast<double>(o.triples) / load.wall;
        load_rates.push_back(load_rate);
        rapper_rates.push_back(rapper_rate);
        ratios.push_back(load_rate / rapper_rate);
        cli_rss.push_back(load.rss_mib);
        store_rss.push_back(after.second);
        cli_cpu.push_back(load.cpu);
        store_cpu.push_back(after.first - before.first);
        load_walls.push_back(load.wall);
        bytes_per_triple = static_cast<double>(dir_bytes(last_home / "knowledge")) /
                           static_cast<double>(summary.value("added", std::uint64_t{1}));
        print_row("this build", loaded);
        if (!other_first) load_other();
        std::cout.flush();
        if (run < o.runs) cluster.reset();
    }
    std::cout << "\nmedians: load " << fmt(percentile(load_rates, 0.5), 0) << " statements/s (wall "
              << fmt(percentile(load_walls, 0.5), 2) << " s), rapper -c "
              << fmt(percentile(rapper_rates, 0.5), 0) << " statements/s (its walls "
              << fmt(percentile(all_rapper_walls, 0), 2) << "-"
              << fmt(percentile(all_rapper_walls, 1), 2) << " s over " << all_rapper_walls.size()
              << " parses), load/rapper " << fmt(percentile(ratios, 0.5), 2) << "; CPU s: CLI "
              << fmt(percentile(cli_cpu, 0.5), 2) << ", store "
              << fmt(percentile(store_cpu, 0.5), 2) << "; peak RSS MiB: CLI "
              << fmt(percentile(cli_rss, 0.5), 1) << ", store "
              << fmt(percentile(store_rss, 0.5), 1) << " (max "
              << fmt(*std::max_element(store_rss.begin(), store_rss.end()), 1)
              << ")\nbytes on disk per stored triple (database, WAL, no vector index): "
              << fmt(bytes_per_triple, 1) << "\n";
    if (!o.other.empty()) {
        std::cout << "medians of " << o.other << ": load " << fmt(percentile(other.rates, 0.5), 0)
                  << " statements/s (wall " << fmt(percentile(other.walls, 0.5), 2)
                  << " s), load/rapper " << fmt(percentile(other.ratios, 0.5), 2) << "; CPU s: CLI "
                  << fmt(percentile(other.cli_cpu, 0.5), 2) << ", store "
                  << fmt(percentile(other.store_cpu, 0.5), 2) << "\n";
    }
    std::cout << "\n";

    // ---- batched query through the bus vs in-process ----
    glassbox::bus::BusClientConfig config;
    config.endpoint = cluster->endpoint;
    config.parse_bodies =
        false;  // the reply is decoded into triples inside the timing, as a caller would
    glassbox::bus::BusClient client(config);
    glassbox::storage::OpenOptions open_options;
    open_options.cache_size = -65'536;  // as the store worker opens it
    auto db =
        glassbox::storage::Database::open(last_home / "knowledge" / "default.db", open_options);
    if (!db) die("open: " + db.error().message);
    auto connection = std::make_unique<glassbox::storage::SqliteConnection>(std::move(*db));
    auto graph = store::GraphStore::open(*connection);
    if (!graph) die("graph: " + graph.error().message);
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<std::size_t> pick(0, entities - 1);
    std::vector<double> bus_ms, local_ms;
    std::size_t rows = 0;
    for (std::size_t i = 0; i < o.queries + 10; ++i) {  // the first 10 warm up
        std::vector<schema::TriplePattern> patterns;
        for (int k = 0; k < 50; ++k) {
            patterns.push_back(
                schema::TriplePattern{schema::iri(kEntity + std::to_string(pick(rng))),
                                      std::nullopt, std::nullopt, std::nullopt});
        }
        json body = schema::encode(schema::TriplesQueryBatch{patterns, o.limit, ""});
        body["op"] = "triples-batch";
        auto t0 = Clock::now();
        auto replies = client.call("store", body, std::chrono::milliseconds{30'000});
        if (!replies) die("triples-batch: " + replies.error().message);
        auto answer = schema::decode_text<schema::TriplesBatchResponse>(replies->back().text);
        const double bus = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (!answer) die("triples-batch reply: " + answer.error().message);
        t0 = Clock::now();
        auto local = (*graph)->match_batch(patterns, o.limit);
        const double in_process =
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (!local) die("match_batch: " + local.error().message);
        if (answer->results != *local) die("the bus and in-process answers differ");
        if (i < 10) continue;
        for (const auto& r : *local) rows += r.size();
        bus_ms.push_back(bus);
        local_ms.push_back(in_process);
    }
    std::cout << "## Batched pattern query (triples-batch, 50 subject patterns, limit " << o.limit
              << " each, " << o.queries << " requests; mean "
              << fmt(static_cast<double>(rows) / static_cast<double>(o.queries), 0)
              << " triples per request)\n\n| | p50 ms | p90 ms |\n|---|---|---|\n"
              << "| through the bus | " << fmt(percentile(bus_ms, 0.5), 3) << " | "
              << fmt(percentile(bus_ms, 0.9), 3) << " |\n| in-process match_batch | "
              << fmt(percentile(local_ms, 0.5), 3) << " | " << fmt(percentile(local_ms, 0.9), 3)
              << " |\n\nratio bus/in-process p50: "
              << fmt(percentile(bus_ms, 0.5) / std::max(percentile(local_ms, 0.5), 1e-6), 2)
              << "\n";
    graph->reset();
    connection.reset();
    cluster.reset();
    bench::remove_unless_kept(o, {work}, [](const fs::path& path) { fs::remove_all(path); });
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    const auto take = [&o](bench::Args& args) {
        if (args.arg() == "--glassbox") {
            o.other = args.value();
            return true;
        }
        if (args.arg() == "--binary") {
            o.binary = args.value();
            return true;
        }
        if (args.arg() == "--rapper-runs") {
            o.rapper_runs = args.number();
            return true;
        }
        if (args.arg() != "--runs") return false;
        o.runs = args.number();
        return true;
    };
    if (const auto status = bench::read_store_run_options(
            argc, argv, "bench_load", o, store::kMaxMatchLimit, take,
            "usage: bench_load [--triples N] [--runs N] [--queries N] [--limit N] [--dir PATH] "
            "[--keep] [--glassbox PATH] [--binary PATH] [--rapper-runs N]\n"))
        return *status;
    if (!fs::exists("/usr/bin/rapper")) die("needs /usr/bin/rapper (raptor2-utils)");
    if (!fs::exists("/usr/bin/time")) die("needs /usr/bin/time");
    return run(o);
}
