// bench_trace_filters: the usage index of the trace store (issue 36). Fills a store with N
// synthetic graph-RAG-shaped runs through TraceStore::store_batch (each 4–12 selected facts from
// a few sources, a model, a question and an answer: ~25 uses a run), printing the fill rate as
// it grows; then the p50/p99 of `list` with each usage filter against the unfiltered list
// (target: ≤ 100 ms p50 at 1,000,000 runs); and the ingest cost of the index: the same runs
// stored with the index and without it (StoreConfig::index_uses), alternated, same process.
//
//   bench_trace_filters [--runs N] [--queries Q] [--dir PATH] [--keep] [--ingest-runs N]
// (--keep: the filled store is kept, and reused by the next run with the same --dir.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/fnv.hpp"
#include "schema/explain_builder.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/trace_fixture.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace {

using glassbox::trace::ListQuery;
using glassbox::trace::StoreConfig;
using glassbox::trace::TraceStore;
using glassbox::trace::WallClock;
using glassbox::trace::testing::at;
using glassbox::trace::testing::delivery_of;
using glassbox::trace::testing::FakeRun;
using Clock = std::chrono::steady_clock;
namespace explain = glassbox::schema::explain;

constexpr std::int64_t kT0 = 1'790'000'000'000;
constexpr std::uint64_t kEntities = 50'000;
constexpr std::uint64_t kPredicates = 40;
constexpr std::uint64_t kSources = 2'000;
constexpr std::uint64_t kModels = 5;
constexpr const char* kWords[] = {"lighthouse", "keeper", "designed", "built",   "island",
                                  "harbour",    "storm",  "lamp",     "captain", "shipyard",
                                  "founded",    "tower",  "museum",   "wreck",   "coast"};

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t x[2] = {a, b};
    return glassbox::base::fnv1a64(std::string_view(reinterpret_cast<const char*>(x), sizeof x));
}
std::string entity(std::uint64_t n) { return "https://bench.glassbox.dev/e/" + std::to_string(n); }
std::string predicate(std::uint64_t n) {
    return "https://bench.glassbox.dev/p/" + std::to_string(n);
}
std::string source(std::uint64_t n) { return "file:///bench/source-" + std::to_string(n) + ".ttl"; }
std::string model(std::uint64_t n) { return "model-" + std::to_string(n); }

// Entities and sources skewed (a few are used by many runs), as real questions are.
std::uint64_t skewed(std::uint64_t h, std::uint64_t range) {
    const double u = static_cast<double>(h % 1'000'003) / 1'000'003.0;
    return static_cast<std::uint64_t>(u * u * u * static_cast<double>(range)) % range;
}

struct Edge {
    std::uint64_t s, p, o, src;
};

// Run i's selected facts.
std::vector<Edge> edges_of(std::uint64_t i) {
    std::vector<Edge> out;
    const std::uint64_t n = 4 + i % 9;
    const std::uint64_t topic = skewed(mix(i, 0), kEntities);
    for (std::uint64_t j = 0; j < n; ++j) {
        const std::uint64_t h = mix(i, j + 1);
        out.push_back(Edge{j % 3 == 0 ? topic : skewed(h, kEntities), h % kPredicates,
                           skewed(h >> 20, kEntities), skewed(mix(topic, j % 3), kSources)});
    }
    return out;
}

std::vector<glassbox::schema::ExplainMessage> run_messages(std::uint64_t i, const FakeRun& run) {
    std::vector<glassbox::schema::ExplainMessage> out;
    auto open = run.open();
    out.push_back(open);
    explain::StepInfo info;
    info.generated_at = at(run.started_ms + 1);
    info.model = model(i % kModels);
    std::vector<explain::SelectedEdge> selected;
    for (const auto& e : edges_of(i)) {
        explain::SelectedEdge edge;
        edge.edge = glassbox::schema::make_triple(glassbox::schema::iri(entity(e.s)),
                                                  glassbox::schema::iri(predicate(e.p)),
                                                  glassbox::schema::iri(entity(e.o)));
        edge.score = 0.5;
        edge.source = explain::SourceRef{};
        edge.source->document = source(e.src);
        selected.push_back(std::move(edge));
    }
    glassbox::schema::ExplainMessage focus;
    focus.session = run.session();
    focus.seq = 1;
    focus.service = run.service;
    focus.worker = run.service + "-test/0";
    focus.explain_id = run.uris.focus();
    focus.explain_triples = explain::graph_focus(run.uris, info, selected);
    out.push_back(std::move(focus));
    auto end = run.end(glassbox::schema::TraceStatus::kComplete,
                       std::string("The ") + kWords[mix(i, 99) % 15] + " was " +
                           kWords[mix(i, 98) % 15] + " by " + entity(edges_of(i)[0].o));
    end.seq = 2;
    out.push_back(std::move(end));
    return out;
}

// A knowledge change (docs/knowledge.md) removing `removed`: one complete `store` message.
glassbox::schema::ExplainMessage change_message(const FakeRun& run,
                                                const std::vector<Edge>& removed) {
    namespace v = glassbox::schema::vocab;
    using glassbox::schema::iri;
    const std::string q = run.session();
    glassbox::schema::ExplainMessage m;
    const auto add = [&](const std::string& s, std::string_view p, glassbox::schema::Term o) {
        m.explain_triples.push_back(glassbox::schema::make_triple(iri(s), iri(p), std::move(o),
                                                                  std::string(v::kRetrievalGraph)));
    };
    add(q, v::kRdfType, iri(v::kKnowledgeChange));
    add(q, v::kQuery, glassbox::schema::literal("replace file:///bench/source-0.ttl"));
    add(q, v::kChangeKind, glassbox::schema::literal("replace"));
    add(q, v::kRemovedListed, glassbox::schema::xsd_boolean(true));
    for (std::size_t i = 0; i < removed.size(); ++i) {
        const std::string r = run.uris.removed_fact(i);
        add(q, v::kRemovedFact, iri(r));
        add(r, v::kRdfSubject, iri(entity(removed[i].s)));
        add(r, v::kRdfPredicate, iri(predicate(removed[i].p)));
        add(r, v::kRdfObject, iri(entity(removed[i].o)));
    }
    const auto tail = explain::trace_end(run.uris, at(run.started_ms + 5),
                                         glassbox::schema::TraceStatus::kComplete);
    m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
    m.session = q;
    m.service = "store";
    m.worker = "store-bench/0";
    m.explain_id = q;
    m.end_of_trace = true;
    m.trace_status = glassbox::schema::TraceStatus::kComplete;
    return m;
}

FakeRun make_run(std::uint64_t i, std::int64_t started) {
    const std::string question = std::string("Who ") + kWords[mix(i, 97) % 15] + " the " +
                                 kWords[mix(i, 96) % 15] + " " + std::to_string(i % 1000) + "?";
    return FakeRun::make("graph-rag", question, started);
}

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Stores runs [from, to) in batches of `batch` runs.
bool fill(TraceStore& store, std::uint64_t from, std::uint64_t to, std::uint64_t batch,
          std::uint64_t& delivery) {
    for (std::uint64_t at_run = from; at_run < to; at_run += batch) {
        std::vector<glassbox::trace::Delivery> deliveries;
        for (std::uint64_t i = at_run; i < std::min(to, at_run + batch); ++i) {
            const auto run = make_run(i, kT0 + static_cast<std::int64_t>(i) * 100);
            for (const auto& m : run_messages(i, run))
                deliveries.push_back(delivery_of(m, delivery++));
        }
        auto stored = store.store_batch(deliveries, at(kT0 + static_cast<std::int64_t>(to) * 100));
        if (!stored) {
            std::fprintf(stderr, "store_batch: %s\n", stored.error().describe().c_str());
            return false;
        }
    }
    return true;
}

struct Percentiles {
    double p50 = 0, p99 = 0;
};
Percentiles percentiles(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)]};
}

// The ingest cost of the index: the same deliveries (built beforehand, not timed) stored by
// store_batch into a store with the index and into one without, alternating which goes first,
// 100 runs a batch; the median of the per-batch ratios and the total times.
void ingest_cost(const std::filesystem::path& dir, std::uint64_t runs) {
    std::vector<double> ratios;
    double with_ms = 0, without_ms = 0;
    for (const char* name : {"with.db", "without.db"}) {
        std::filesystem::remove(dir / name);
        std::filesystem::remove(dir / (std::string(name) + "-wal"));
    }
    StoreConfig with_config, without_config;
    without_config.index_uses = false;
    auto with =
        TraceStore::open(dir / "with.db", glassbox::trace::OpenMode::kReadWrite, with_config);
    auto without =
        TraceStore::open(dir / "without.db", glassbox::trace::OpenMode::kReadWrite, without_config);
    if (!with || !without) return;
    constexpr std::uint64_t kBatch = 100;
    std::uint64_t delivery = 1;
    for (std::uint64_t at_run = 0; at_run < runs; at_run += kBatch) {
        std::vector<glassbox::trace::Delivery> deliveries;
        for (std::uint64_t i = 10'000'000 + at_run; i < 10'000'000 + at_run + kBatch; ++i) {
            const auto run = make_run(i, kT0 + static_cast<std::int64_t>(i) * 100);
            for (const auto& m : run_messages(i, run))
                deliveries.push_back(delivery_of(m, delivery++));
        }
        double took[2] = {0, 0};
        const bool with_first = (at_run / kBatch) % 2 == 0;
        for (const bool index : {with_first, !with_first}) {
            const auto t = Clock::now();
            auto stored = (index ? **with : **without).store_batch(deliveries, at(kT0));
            took[index ? 0 : 1] = ms_since(t);
            if (!stored) return;
        }
        with_ms += took[0];
        without_ms += took[1];
        ratios.push_back(took[0] / took[1]);
    }
    std::sort(ratios.begin(), ratios.end());
    const double median = ratios[ratios.size() / 2];
    std::printf(
        "ingest (store_batch, %llu runs, batches of %llu): with the index %.0f µs/run, without "
        "%.0f µs/run; median per-batch ratio %.2fx (+%.1f %%), totals %.2fx\n",
        static_cast<unsigned long long>(runs), static_cast<unsigned long long>(kBatch),
        with_ms * 1000 / static_cast<double>(runs), without_ms * 1000 / static_cast<double>(runs),
        median, (median - 1) * 100, with_ms / without_ms);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t runs = 1'000'000;
    int queries = 40;
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "bench_trace_filters";
    bool keep = false;
    std::uint64_t ingest_runs = 4000;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc)
            runs = std::stoull(argv[++i]);
        else if (a == "--queries" && i + 1 < argc)
            queries = std::stoi(argv[++i]);
        else if (a == "--dir" && i + 1 < argc)
            dir = argv[++i];
        else if (a == "--keep")
            keep = true;
        else if (a == "--ingest-runs" && i + 1 < argc)
            ingest_runs = std::stoull(argv[++i]);
    }
    std::filesystem::create_directories(dir);
    ingest_cost(dir, ingest_runs);

    const auto path = dir / "filters.db";
    const bool reuse = keep && std::filesystem::exists(path);
    if (!reuse) {
        std::filesystem::remove(path);
        std::filesystem::remove(dir / "filters.db-wal");
    }
    StoreConfig config;
    config.synchronous_full = false;  // the fill only: the reads measured do not depend on it
    auto opened = TraceStore::open(path, glassbox::trace::OpenMode::kReadWrite, config);
    if (!opened) {
        std::fprintf(stderr, "%s\n", opened.error().describe().c_str());
        return 1;
    }
    TraceStore& store = **opened;
    std::uint64_t delivery = 1;
    if (!reuse) {
        const auto started = Clock::now();
        auto last = started;
        const std::uint64_t step = std::max<std::uint64_t>(runs / 10, 1);
        for (std::uint64_t at_run = 0; at_run < runs; at_run += step) {
            const std::uint64_t to = std::min(runs, at_run + step);
            if (!fill(store, at_run, to, 500, delivery)) return 1;
            std::printf("filled %8llu runs: %.1f s total, last %llu at %.0f runs/s\n",
                        static_cast<unsigned long long>(to), ms_since(started) / 1000,
                        static_cast<unsigned long long>(to - at_run),
                        static_cast<double>(to - at_run) * 1000 / ms_since(last));
            std::fflush(stdout);
            last = Clock::now();
        }
        // Three knowledge changes, each removing facts of one run (and so of the runs sharing
        // them): the affected filter then has rows to find.
        for (std::uint64_t c = 0; c < 3; ++c) {
            const std::uint64_t victim = runs / 2 + c * 7;
            const auto change = FakeRun::make("store", "replace",
                                              kT0 + static_cast<std::int64_t>(runs) * 100 + 1000);
            const auto t = Clock::now();
            auto stored = store.store_batch(
                {delivery_of(change_message(change, edges_of(victim)), delivery++)},
                at(kT0 + static_cast<std::int64_t>(runs) * 100 + 2000));
            if (!stored) {
                std::fprintf(stderr, "change: %s\n", stored.error().describe().c_str());
                return 1;
            }
            std::printf(
                "knowledge change removing the %zu facts of run %llu stored and marked in %.1f "
                "ms\n",
                edges_of(victim).size(), static_cast<unsigned long long>(victim), ms_since(t));
        }
    }
    auto stats = store.stats(at(kT0));
    if (stats) std::printf("store: %s sessions\n", (*stats)["sessions"].dump().c_str());

    std::mt19937_64 rng(42);
    const auto pick = [&](std::uint64_t range) { return rng() % range; };
    struct Case {
        const char* name;
        std::function<ListQuery()> make;
    };
    const std::vector<Case> cases = {
        {"(no filter)", [] { return ListQuery{}; }},
        {"uses_source",
         [&] {
             ListQuery q;
             q.uses_source = source(skewed(rng(), kSources));
             return q;
         }},
        {"uses_document",
         [&] {
             ListQuery q;
             q.uses_document = source(pick(kSources));
             return q;
         }},
        {"uses_fact",
         [&] {
             const std::uint64_t i = pick(runs);
             const Edge e = edges_of(i)[0];
             ListQuery q;
             q.uses_fact = "<" + entity(e.s) + "> <" + predicate(e.p) + "> <" + entity(e.o) + ">";
             return q;
         }},
        {"entity",
         [&] {
             ListQuery q;
             q.entity = entity(skewed(rng(), kEntities));
             return q;
         }},
        {"entity (rare)",
         [&] {
             ListQuery q;
             q.entity = entity(kEntities - 1 - pick(kEntities / 4));
             return q;
         }},
        {"model",
         [&] {
             ListQuery q;
             q.model = model(pick(kModels));
             return q;
         }},
        {"text (1 word)",
         [&] {
             ListQuery q;
             q.text = kWords[pick(15)];
             return q;
         }},
        {"text (2 words)",
         [&] {
             ListQuery q;
             q.text = std::string(kWords[pick(15)]) + " " + kWords[pick(15)];
             return q;
         }},
        {"affected",
         [] {
             ListQuery q;
             q.affected = true;
             return q;
         }},
        {"entity + model + kind",
         [&] {
             ListQuery q;
             q.entity = entity(skewed(rng(), kEntities));
             q.model = model(pick(kModels));
             q.kind = "graph-rag";
             return q;
         }},
    };
    std::printf("\n%-24s %10s %10s %10s  (list, limit 50, %d queries each)\n", "filter", "p50 ms",
                "p99 ms", "rows p50", queries);
    for (const auto& c : cases) {
        std::vector<double> times;
        std::vector<double> rows;
        for (int k = 0; k < queries; ++k) {
            ListQuery q = c.make();
            const auto t = Clock::now();
            auto listed = store.list(q, at(kT0));
            times.push_back(ms_since(t));
            if (!listed) {
                std::fprintf(stderr, "%s: %s\n", c.name, listed.error().describe().c_str());
                return 1;
            }
            rows.push_back(static_cast<double>((*listed)["total"].get<std::int64_t>()));
        }
        const auto p = percentiles(times);
        std::printf("%-24s %10.2f %10.2f %10.0f  %s\n", c.name, p.p50, p.p99, percentiles(rows).p50,
                    p.p50 <= 100 ? "met" : "NOT met");
    }
    if (!keep) std::filesystem::remove_all(dir);
    return 0;
}
