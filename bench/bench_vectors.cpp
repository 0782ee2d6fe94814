// bench_vectors: VectorIndex (hnswlib) on clustered vectors — build time, recall@10 and search
// latency against exact brute force computed in the same run, index file size, and loading the
// persisted index against rebuilding it from SQLite.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_util.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/store/vector_index.hpp"

namespace {

using namespace glassbox::bench;
using glassbox::store::IndexKind;
using glassbox::store::VectorIndex;
using glassbox::store::VectorIndexOptions;

struct Config {
    std::size_t count = 100'000;
    std::size_t dim = 384;
    std::size_t queries = 1'000;
    std::size_t clusters = 1'000;
    std::size_t k = 10;
    std::size_t batch = 10'000;
    std::size_t build_threads = 2;
    std::vector<std::size_t> ef_search = {16, 32, 64, 96, 128, 200};
    VectorIndexOptions options;
};

void usage() {
    std::fprintf(
        stderr,
        "usage: bench_vectors [--count N] [--dim D] [--queries Q] [--clusters C] [--k K]\n"
        "                     [--M M] [--ef-construction E] [--ef-search a,b,c] [--threads T]\n");
}

bool parse(int argc, char** argv, Config& config) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (i + 1 >= argc) return false;
        const std::string value = argv[++i];
        const auto number = [&] {
            return static_cast<std::size_t>(std::strtoull(value.c_str(), nullptr, 10));
        };
        if (arg == "--count")
            config.count = number();
        else if (arg == "--dim")
            config.dim = number();
        else if (arg == "--queries")
            config.queries = number();
        else if (arg == "--clusters")
            config.clusters = number();
        else if (arg == "--k")
            config.k = number();
        else if (arg == "--M")
            config.options.M = number();
        else if (arg == "--ef-construction")
            config.options.ef_construction = number();
        else if (arg == "--threads")
            config.build_threads = number();
        else if (arg == "--ef-search") {
            config.ef_search.clear();
            std::size_t start = 0;
            while (start <= value.size()) {
                const std::size_t end = std::min(value.find(',', start), value.size());
                config.ef_search.push_back(
                    std::strtoull(value.substr(start, end - start).c_str(), nullptr, 10));
                start = end + 1;
            }
        } else {
            return false;
        }
    }
    return config.count > 0 && config.dim > 0 && config.queries > 0 && config.clusters > 0 &&
           config.k > 0 && !config.ef_search.empty();
}

// Gaussian clusters around random unit centroids, each with its own spread, so neighbours are
// mostly (not only) in the same cluster — closer to real embeddings than uniform noise.
struct DataSet {
    std::vector<std::vector<float>> vectors;
    std::vector<std::vector<float>> queries;
};

DataSet make_data(const Config& config) {
    std::mt19937_64 random(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> spread(0.5f, 1.0f);
    std::uniform_int_distribution<std::size_t> pick(0, config.clusters - 1);
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config.dim)));
    std::vector<std::vector<float>> centroids(config.clusters, std::vector<float>(config.dim));
    std::vector<float> spreads(config.clusters);
    for (std::size_t c = 0; c < config.clusters; ++c) {
        for (float& x : centroids[c]) x = normal(random) * scale;
        spreads[c] = spread(random);
    }
    const auto point = [&] {
        const std::size_t c = pick(random);
        std::vector<float> v(config.dim);
        for (std::size_t i = 0; i < config.dim; ++i)
            v[i] = centroids[c][i] + spreads[c] * normal(random) * scale;
        return v;
    };
    DataSet data;
    data.vectors.reserve(config.count);
    for (std::size_t i = 0; i < config.count; ++i) data.vectors.push_back(point());
    for (std::size_t i = 0; i < config.queries; ++i) data.queries.push_back(point());
    return data;
}

void normalise(std::vector<float>& v) {
    double norm = 0.0;
    for (const float x : v) norm += double{x} * x;
    const auto inverse = static_cast<float>(1.0 / std::sqrt(norm));
    for (float& x : v) x *= inverse;
}

// The baseline: an exact scan, 4-wide with two accumulators (GCC vector extensions).
using V4 = float __attribute__((vector_size(16)));

float dot(const float* a, const float* b, std::size_t n) {
    V4 s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V4 a0, b0, a1, b1;
        std::memcpy(&a0, a + i, 16);
        std::memcpy(&b0, b + i, 16);
        std::memcpy(&a1, a + i + 4, 16);
        std::memcpy(&b1, b + i + 4, 16);
        s0 += a0 * b0;
        s1 += a1 * b1;
    }
    const V4 s = s0 + s1;
    float total = s[0] + s[1] + s[2] + s[3];
    for (; i < n; ++i) total += a[i] * b[i];
    return total;
}

std::vector<std::int64_t> exact_top(const std::vector<float>& flat, std::size_t dim,
                                    const std::vector<float>& query, std::size_t k,
                                    std::vector<std::pair<float, std::int64_t>>& scratch) {
    const std::size_t n = flat.size() / dim;
    scratch.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        scratch[i] = {dot(flat.data() + i * dim, query.data(), dim), static_cast<std::int64_t>(i)};
    }
    std::partial_sort(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k),
                      scratch.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::int64_t> top;
    for (std::size_t i = 0; i < k; ++i) top.push_back(scratch[i].second);
    return top;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

[[noreturn]] void die(const std::string& what) { fail("bench_vectors", what); }

}  // namespace

int main(int argc, char** argv) {
    Config config;
    if (!parse(argc, argv, config)) {
        usage();
        return 2;
    }
    config.options.build_threads = config.build_threads;
    config.options.save_on_close = false;
    const VectorIndexOptions defaults;

    const auto dir = std::filesystem::temp_directory_path() /
                     ("glassbox-bench-vectors-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto index_file = dir / "bench.chunk.hnsw";
    std::printf(
        "bench_vectors: %zu vectors, dim %zu, %zu Gaussian clusters, %zu held-out queries, k %zu\n",
        config.count, config.dim, config.clusters, config.queries, config.k);
    std::printf(
        "  M %zu, ef_construction %zu, %zu build threads (defaults: M %zu, ef_construction %zu, "
        "ef_search %zu)\n",
        config.options.M, config.options.ef_construction, config.build_threads, defaults.M,
        defaults.ef_construction, defaults.ef_search);

    auto data = make_data(config);
    std::vector<std::int64_t> keys(config.count);
    std::iota(keys.begin(), keys.end(), 0);

    auto opened = glassbox::storage::Database::open(dir / "bench.db", {.label = "bench"});
    if (!opened) die(opened.error().message);
    auto db = std::make_unique<glassbox::storage::SqliteConnection>(std::move(opened).value());

    // ---- build: add() in batches (SQLite rows + graph inserts) ----
    double build_seconds = 0.0;
    {
        auto index = VectorIndex::open(*db, IndexKind::kChunk, index_file, config.options);
        if (!index) die(index.error().message);
        const auto start = Clock::now();
        for (std::size_t first = 0; first < config.count; first += config.batch) {
            const std::size_t n = std::min(config.batch, config.count - first);
            const auto from = data.vectors.begin() + static_cast<std::ptrdiff_t>(first);
            std::vector<std::vector<float>> batch(from, from + static_cast<std::ptrdiff_t>(n));
            auto added = (*index)->add(std::span<const std::int64_t>(keys).subspan(first, n), batch,
                                       "bench-model");
            if (!added) die(added.error().message);
        }
        build_seconds = seconds(Clock::now() - start);
        const auto save_start = Clock::now();
        if (auto saved = (*index)->save(); !saved) die(saved.error().message);
        const double save_seconds = seconds(Clock::now() - save_start);
        std::printf(
            "build: %.1f s (%.0f vectors/s), save %.2f s, index file %.1f MB (%.0f B/vector)\n",
            build_seconds, static_cast<double>(config.count) / build_seconds, save_seconds,
            static_cast<double>(std::filesystem::file_size(index_file)) / 1e6,
            static_cast<double>(std::filesystem::file_size(index_file)) /
                static_cast<double>(config.count));
    }

    // ---- exact brute force: ground truth and the latency baseline ----
    std::vector<float> flat;
    flat.reserve(config.count * config.dim);
    for (auto& v : data.vectors) {
        normalise(v);
        flat.insert(flat.end(), v.begin(), v.end());
    }
    data.vectors.clear();
    data.vectors.shrink_to_fit();
    std::vector<std::vector<std::int64_t>> truth;
    std::vector<double> brute_ms;
    {
        std::vector<std::pair<float, std::int64_t>> scratch;
        for (auto& q : data.queries) {
            auto normalised = q;
            normalise(normalised);
            const auto start = Clock::now();
            truth.push_back(exact_top(flat, config.dim, normalised, config.k, scratch));
            brute_ms.push_back(seconds(Clock::now() - start) * 1e3);
        }
    }
    const double brute_p50 = percentile(brute_ms, 0.5);
    const double brute_p90 = percentile(brute_ms, 0.9);
    std::printf("brute force (exact scan, SIMD dot): p50 %.3f ms, p90 %.3f ms\n", brute_p50,
                brute_p90);

    // ---- hnsw: each ef_search reopens the persisted index (timing the load) ----
    std::vector<double> load_seconds;
    std::printf("%10s %10s %10s %10s %14s %14s\n", "ef_search", "recall@10", "p50 ms", "p90 ms",
                "brute/hnsw p50", "brute/hnsw p90");
    for (const std::size_t ef : config.ef_search) {
        auto options = config.options;
        options.ef_search = ef;
        const auto start = Clock::now();
        auto index = VectorIndex::open(*db, IndexKind::kChunk, index_file, options);
        if (!index) die(index.error().message);
        load_seconds.push_back(seconds(Clock::now() - start));
        if ((*index)->open_report().source != glassbox::store::IndexSource::kFile) {
            die("expected a load from file, got a rebuild: " + (*index)->open_report().reason);
        }
        std::vector<double> ms;
        double hits = 0.0;
        for (std::size_t i = 0; i < data.queries.size(); ++i) {
            const auto t0 = Clock::now();
            auto found = (*index)->search(std::span<const float>(data.queries[i]), config.k);
            ms.push_back(seconds(Clock::now() - t0) * 1e3);
            if (!found) die(found.error().message);
            for (const auto& match : *found) {
                if (std::find(truth[i].begin(), truth[i].end(), match.key) != truth[i].end())
                    hits += 1.0;
            }
        }
        const double recall = hits / static_cast<double>(config.k * data.queries.size());
        const double p50 = percentile(ms, 0.5);
        const double p90 = percentile(ms, 0.9);
        std::printf("%10zu %10.4f %10.3f %10.3f %13.0fx %13.0fx%s\n", ef, recall, p50, p90,
                    brute_p50 / p50, brute_p90 / p90,
                    ef == defaults.ef_search ? "  (default)" : "");
    }
    const double load_median = percentile(load_seconds, 0.5);

    // ---- rebuild from SQLite (no index file) ----
    std::filesystem::remove(index_file);
    const auto rebuild_start = Clock::now();
    auto rebuilt = VectorIndex::open(*db, IndexKind::kChunk, index_file, config.options);
    if (!rebuilt) die(rebuilt.error().message);
    const double rebuild_seconds = seconds(Clock::now() - rebuild_start);
    if ((*rebuilt)->open_report().source != glassbox::store::IndexSource::kRebuilt)
        die("expected a rebuild");
    std::printf(
        "open: load from file median %.3f s (%zu loads, one per ef_search); rebuild from SQLite "
        "%.1f s; rebuild/load %.0fx\n",
        load_median, load_seconds.size(), rebuild_seconds, rebuild_seconds / load_median);
    rebuilt->reset();
    db.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return 0;
}
