// Vector indexes: rows in the database (vectors_<kind>, vectors_<kind>_removed, vector_meta), an
// hnswlib graph in memory, and its checked cache file (own format, see "Index file" below).
#include "workers/store/vector_index.hpp"
#include "workers/store/vector_index_file.hpp"
#include "workers/store/vector_rows.hpp"

#include "base/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_set>

// hnswlib 0.6.2's SSE prefetches read one entry past a full link list (hnswalg.h,
// searchBaseLayer: *(datal + j + 1)), 3 bytes beyond hnswlib's own allocation: harmless on real
// hardware, but AddressSanitizer rightly stops there. Sanitizer builds take hnswlib's scalar code.
#if defined(__SANITIZE_ADDRESS__)
#define NO_MANUAL_VECTORIZATION
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_MANUAL_VECTORIZATION
#endif
#endif
// The one translation unit that includes hnswlib (its header defines non-inline functions).
#include <hnswlib/hnswlib.h>

#if defined(__x86_64__) && !defined(NO_MANUAL_VECTORIZATION)
#include <immintrin.h>
#endif

namespace glassbox::store {

namespace {

#if defined(__x86_64__) && !defined(NO_MANUAL_VECTORIZATION)
// 1 - a·b with AVX2 and FMA (two 8-lane accumulators), for CPUs that have them: hnswlib picks
// its AVX kernels only when the whole build targets AVX, and a build for users does not.
__attribute__((target("avx2,fma"))) float inner_product_distance_avx2(const void* a_ptr,
                                                                      const void* b_ptr,
                                                                      const void* dim_ptr) {
    const auto* a = static_cast<const float*>(a_ptr);
    const auto* b = static_cast<const float*>(b_ptr);
    const std::size_t n = *static_cast<const std::size_t*>(dim_ptr);
    __m256 sum0 = _mm256_setzero_ps();
    __m256 sum1 = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        sum0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), sum0);
        sum1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), sum1);
    }
    const __m256 sum = _mm256_add_ps(sum0, sum1);
    __m128 half = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    half = _mm_add_ps(half, _mm_movehl_ps(half, half));
    half = _mm_add_ss(half, _mm_shuffle_ps(half, half, 1));
    float dot = _mm_cvtss_f32(half);
    for (; i < n; ++i) dot += a[i] * b[i];
    return 1.0f - dot;
}

// The distances of one vector `b` to up to four queries at once, each computed exactly as
// inner_product_distance_avx2(query, b) computes it (the same two accumulators per query, the
// same order of additions), so a scan gives the same floats either way. One load of each block
// of `b` serves every query, and the queries' independent accumulators keep the FMA units busy
// where one query's two chains wait on each other.
template <std::size_t Q>
__attribute__((target("avx2,fma"))) void inner_product_distances_avx2(const float* const* queries,
                                                                      const float* b, std::size_t n,
                                                                      float* out) {
    __m256 sum0[Q];
    __m256 sum1[Q];
    for (std::size_t q = 0; q < Q; ++q) sum0[q] = sum1[q] = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 b0 = _mm256_loadu_ps(b + i);
        const __m256 b1 = _mm256_loadu_ps(b + i + 8);
        // Unrolled (GCC does not at -O2 by itself): the accumulators stay in registers.
#pragma GCC unroll 4
        for (std::size_t q = 0; q < Q; ++q) {
            sum0[q] = _mm256_fmadd_ps(_mm256_loadu_ps(queries[q] + i), b0, sum0[q]);
            sum1[q] = _mm256_fmadd_ps(_mm256_loadu_ps(queries[q] + i + 8), b1, sum1[q]);
        }
    }
    for (std::size_t q = 0; q < Q; ++q) {
        const __m256 sum = _mm256_add_ps(sum0[q], sum1[q]);
        __m128 half = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
        half = _mm_add_ps(half, _mm_movehl_ps(half, half));
        half = _mm_add_ss(half, _mm_shuffle_ps(half, half, 1));
        float dot = _mm_cvtss_f32(half);
        for (std::size_t j = i; j < n; ++j) dot += queries[q][j] * b[j];
        out[q] = 1.0f - dot;
    }
}
#endif

// Fills out[q] with the distance of vector `b` to each query: by the AVX2 kernel for up to
// four queries at a time when the space uses it, else one call of the space's function each.
void distances_to(hnswlib::DISTFUNC<float> distance, void* param,
                  std::span<const float* const> queries, const void* b, float* out) {
    std::size_t q = 0;
#if defined(__x86_64__) && !defined(NO_MANUAL_VECTORIZATION)
    if (distance == inner_product_distance_avx2) {
        const std::size_t n = *static_cast<const std::size_t*>(param);
        const auto* v = static_cast<const float*>(b);
        for (; q + 4 <= queries.size(); q += 4)
            inner_product_distances_avx2<4>(queries.data() + q, v, n, out + q);
        switch (queries.size() - q) {
            case 3:
                inner_product_distances_avx2<3>(queries.data() + q, v, n, out + q);
                return;
            case 2:
                inner_product_distances_avx2<2>(queries.data() + q, v, n, out + q);
                return;
            case 1:
                inner_product_distances_avx2<1>(queries.data() + q, v, n, out + q);
                return;
            default:
                return;
        }
    }
#endif
    for (; q < queries.size(); ++q) out[q] = distance(queries[q], b, param);
}

// hnswlib's inner-product space, with its distance taken from the AVX2 kernel above when the
// CPU has AVX2 and FMA (same vectors, same file format; the sums differ in the last bits only).
class InnerProductSpace final : public hnswlib::SpaceInterface<float> {
public:
    explicit InnerProductSpace(std::size_t dim) : portable_(dim), dim_(dim) {
#if defined(__x86_64__) && !defined(NO_MANUAL_VECTORIZATION)
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            distance_ = inner_product_distance_avx2;
#endif
    }
    std::size_t get_data_size() override { return portable_.get_data_size(); }
    hnswlib::DISTFUNC<float> get_dist_func() override {
        return distance_ != nullptr ? distance_ : portable_.get_dist_func();
    }
    void* get_dist_func_param() override { return &dim_; }

private:
    hnswlib::InnerProductSpace portable_;
    std::size_t dim_;
    hnswlib::DISTFUNC<float> distance_ = nullptr;
};

}  // namespace

using base::ErrorType;
using base::make_error;
using base::Result;

namespace detail {

using Graph = hnswlib::HierarchicalNSW<float>;

// The live vectors of a graph that are mostly zeros, by dimension (posting lists): for each
// dimension, the internal id and value of every such vector nonzero there. The hashing embedder's
// vectors have ~15 nonzero of 384 numbers, so a scan that walks the lists of a query's nonzero
// dimensions does a small part of a dense scan's work. Vectors with more nonzeros are scanned
// densely beside the lists.
struct SparseLists {
    std::uint64_t generation = 0;      // HnswState::generation when built
    std::vector<std::uint32_t> start;  // dim + 1 offsets into ids and values
    std::vector<std::uint32_t> ids;
    std::vector<float> values;
    std::vector<std::uint32_t> listed;  // the live ids in the lists (ascending)
    std::vector<std::uint32_t> dense;   // the live ids scanned densely (ascending)
};

struct HnswState {
    std::uint32_t dim = 0;
    std::string model;
    std::int64_t instance = 0;  // vector_meta.instance of the database the graph was built from
    std::int64_t seq = 0;       // the graph holds every change up to this sequence number
    std::size_t live = 0;       // labels in the graph not marked deleted
    // Declared before `graph`: the graph keeps a pointer into the space.
    std::unique_ptr<hnswlib::SpaceInterface<float>> space;
    std::unique_ptr<Graph> graph;
    std::atomic<bool> dirty{false};
    VectorIndexCounters counters;
    // Bumped by every change of the graph (apply()); the scan's sparse lists name the
    // generation they were built from and are rebuilt when it moved.
    std::uint64_t generation = 0;
    mutable std::mutex lists_mutex;
    mutable std::shared_ptr<const SparseLists> lists;  // null until a scan needs them
};

}  // namespace detail

namespace {

using detail::Graph;
using detail::HnswState;
using detail::SparseLists;

// Below this many rows a batch is inserted on the calling thread.
constexpr std::size_t kParallelInsertMin = 2'048;
// hnswlib draws levels with mean 1/ln(M); a level this high in a file means damage.
constexpr std::uint32_t kMaxLevel = 64;

hnswlib::labeltype label_of(std::int64_t key) {
    return static_cast<hnswlib::labeltype>(static_cast<std::uint64_t>(key));
}
std::int64_t key_of(hnswlib::labeltype label) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(label));
}

using detail::Checksum;
using detail::errno_text;
using detail::File;
using detail::FileHeader;
using detail::header_checksum;
using detail::kFormatVersion;
using detail::kMagic;
using detail::read_exact;
using detail::ReadSnapshot;
using Meta = detail::VectorMeta;
using Changes = detail::VectorChanges;

// ---- Index file: the format is in vector_index_file.hpp; writing and reading the graph here --

std::uint64_t links_bytes(const Graph& graph, std::size_t element) {
    const int level = graph.element_levels_[element];
    return level > 0 ? graph.size_links_per_element_ * static_cast<std::size_t>(level) : 0;
}

// Everything a loaded graph must satisfy before hnswlib may walk it: neighbour ids in range and
// present on the level they are linked at, list sizes within M, unique labels, a valid entry point.
std::optional<std::string> check_structure(Graph& graph, std::size_t expected_live) {
    const std::size_t n = graph.cur_element_count;
    std::size_t deleted = 0;
    graph.label_lookup_.clear();
    graph.label_lookup_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto id = static_cast<hnswlib::tableint>(i);
        auto* level0 = graph.get_linklist0(id);
        const std::size_t count0 = graph.getListCount(level0);
        if (count0 > graph.maxM0_) return "element " + std::to_string(i) + " has too many links";
        const auto* links0 = reinterpret_cast<const hnswlib::tableint*>(level0 + 1);
        for (std::size_t j = 0; j < count0; ++j) {
            if (links0[j] >= n) return "element " + std::to_string(i) + " links outside the graph";
        }
        for (int level = 1; level <= graph.element_levels_[i]; ++level) {
            auto* list = graph.get_linklist(id, level);
            const std::size_t count = graph.getListCount(list);
            if (count > graph.maxM_) return "element " + std::to_string(i) + " has too many links";
            const auto* links = reinterpret_cast<const hnswlib::tableint*>(list + 1);
            for (std::size_t j = 0; j < count; ++j) {
                if (links[j] >= n || graph.element_levels_[links[j]] < level) {
                    return "element " + std::to_string(i) + " links to a missing node";
                }
            }
        }
        if (graph.isMarkedDeleted(id)) ++deleted;
        if (!graph.label_lookup_.emplace(graph.getExternalLabel(id), id).second)
            return "a key appears twice";
    }
    graph.num_deleted_ = deleted;
    if (n - deleted != expected_live) return "vector count differs from the header";
    if (n == 0) return std::nullopt;
    if (graph.enterpoint_node_ >= n || graph.maxlevel_ < 0 ||
        graph.element_levels_[graph.enterpoint_node_] != graph.maxlevel_) {
        return "bad entry point";
    }
    return std::nullopt;
}

// Inserts (or replaces) rows in the graph; on several threads for big batches (hnswlib's
// addPoint takes its own per-node locks). Capacity must already suffice.
void insert_rows(Graph& graph, std::span<const std::int64_t> keys, const float* vectors,
                 std::size_t dim, std::size_t threads) {
    const std::size_t n = keys.size();
    std::size_t first = 0;
    // The first insert into an empty graph sets the entry point; keep it off the thread pool.
    if (graph.cur_element_count == 0 && n > 0) {
        graph.addPoint(vectors, label_of(keys[0]));
        first = 1;
    }
    if (threads <= 1 || n - first < kParallelInsertMin) {
        for (std::size_t i = first; i < n; ++i)
            graph.addPoint(vectors + i * dim, label_of(keys[i]));
        return;
    }
    std::atomic<std::size_t> next{first};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&] {
        for (;;) {
            const std::size_t i = next.fetch_add(1);
            if (i >= n) return;
            try {
                graph.addPoint(vectors + i * dim, label_of(keys[i]));
            } catch (...) {
                const std::lock_guard lock(failure_mutex);
                if (!failure) failure = std::current_exception();
                next.store(n);
                return;
            }
        }
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& thread : pool) thread.join();
    if (failure) std::rethrow_exception(failure);
}

// What a writer's graph lacks before it writes: the changes stamped after its sequence number,
// when the database still holds the vectors it was built from (same database, model and dimension);
// none otherwise.
Result<Changes> missed_changes(storage::sql::Connection& db, IndexKind kind, const Meta& meta,
                               const detail::HnswState& state) {
    if (meta.seq == state.seq || meta.instance != state.instance || meta.dim != state.dim ||
        meta.model != state.model) {
        return Changes{};
    }
    return detail::read_changes(db, kind, state.seq, meta.dim);
}

std::size_t thread_count(std::size_t configured) {
    if (configured != 0) return configured;
    return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

std::unique_ptr<HnswState> empty_state(const Meta& meta, const VectorIndexOptions& options,
                                       std::size_t capacity) {
    auto state = std::make_unique<HnswState>();
    state->dim = meta.dim;
    state->model = meta.model;
    state->instance = meta.instance;
    state->seq = meta.seq;
    if (meta.dim > 0) {
        state->space = std::make_unique<InnerProductSpace>(meta.dim);
        state->graph =
            std::make_unique<Graph>(state->space.get(), std::max<std::size_t>(capacity, 1),
                                    options.M, options.ef_construction, options.random_seed);
        state->graph->setEf(options.ef_search);
    }
    return state;
}

void reserve(Graph& graph, std::size_t extra) {
    const std::size_t needed = graph.cur_element_count + extra;
    if (needed <= graph.max_elements_) return;
    graph.resizeIndex(std::max(needed, graph.max_elements_ + graph.max_elements_ / 2));
}

// Applies changes to the graph (the caller holds the graph exclusively).
void apply(HnswState& state, const Changes& changes, std::size_t threads) {
    if (!state.graph) return;
    Graph& graph = *state.graph;
    for (const std::int64_t key : changes.removed) {
        const auto found = graph.label_lookup_.find(label_of(key));
        if (found == graph.label_lookup_.end() || graph.isMarkedDeleted(found->second)) continue;
        graph.markDelete(label_of(key));
        --state.live;
    }
    std::size_t added = 0;
    for (const std::int64_t key : changes.keys) {
        const auto found = graph.label_lookup_.find(label_of(key));
        if (found == graph.label_lookup_.end()) {
            ++added;
            ++state.live;
        } else if (graph.isMarkedDeleted(found->second)) {
            ++state.live;
        }
    }
    reserve(graph, added);
    insert_rows(graph, changes.keys, changes.vectors.data(), state.dim, threads);
    if (!changes.removed.empty() || !changes.keys.empty()) {
        state.dirty = true;
        ++state.generation;
    }
}

// ---- file I/O --------------------------------------------------------------------------------

Result<void> write_index_file(const HnswState& state, IndexKind kind,
                              const VectorIndexOptions& options,
                              const std::filesystem::path& target) {
    static std::atomic<std::uint64_t> counter{0};
    const Graph& graph = *state.graph;
    FileHeader header{};
    std::memcpy(header.magic, kMagic, sizeof kMagic);
    header.format_version = kFormatVersion;
    header.kind = static_cast<std::uint32_t>(kind);
    header.dim = state.dim;
    header.model_bytes = static_cast<std::uint32_t>(state.model.size());
    header.m = options.M;
    header.ef_construction = options.ef_construction;
    header.instance = state.instance;
    header.seq = state.seq;
    header.live = state.live;
    header.elements = graph.cur_element_count;
    header.size_data_per_element = graph.size_data_per_element_;
    header.max_level = graph.maxlevel_;
    header.entry_point = graph.enterpoint_node_;

    const std::size_t level0_bytes = graph.cur_element_count * graph.size_data_per_element_;
    Checksum payload;
    payload.add(graph.data_level0_memory_, level0_bytes);
    std::uint64_t payload_bytes = level0_bytes;
    for (std::size_t i = 0; i < graph.cur_element_count; ++i) {
        const auto level = static_cast<std::uint32_t>(graph.element_levels_[i]);
        payload.add(&level, sizeof level);
        const std::uint64_t bytes = links_bytes(graph, i);
        if (bytes > 0) payload.add(graph.linkLists_[i], bytes);
        payload_bytes += sizeof level + bytes;
    }
    header.payload_bytes = payload_bytes;
    header.payload_checksum = payload.value;
    header.header_checksum = header_checksum(header, state.model);

    std::filesystem::path temp = target;
    temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    const auto fail = [&](const std::string& what) {
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);
        return make_error(ErrorType::kInternal,
                          "vector index file " + target.string() + ": " + what);
    };
    {
        File file(detail::create_owner_only(temp.c_str()));
        if (!file) return fail("cannot create " + temp.string() + ": " + errno_text());
        std::setvbuf(file.get(), nullptr, _IOFBF, 1 << 20);
        bool ok =
            std::fwrite(&header, sizeof header, 1, file.get()) == 1 &&
            std::fwrite(state.model.data(), 1, state.model.size(), file.get()) ==
                state.model.size() &&
            std::fwrite(graph.data_level0_memory_, 1, level0_bytes, file.get()) == level0_bytes;
        for (std::size_t i = 0; ok && i < graph.cur_element_count; ++i) {
            const auto level = static_cast<std::uint32_t>(graph.element_levels_[i]);
            const std::uint64_t bytes = links_bytes(graph, i);
            ok = std::fwrite(&level, sizeof level, 1, file.get()) == 1 &&
                 (bytes == 0 || std::fwrite(graph.linkLists_[i], 1, bytes, file.get()) == bytes);
        }
        // Flushed to disk before the rename, so a crash never leaves a renamed partial file
        // (the checksum would catch one, at the price of a rebuild).
        if (!ok || std::fflush(file.get()) != 0 || ::fsync(::fileno(file.get())) != 0) {
            return fail("cannot write " + temp.string() + ": " + errno_text());
        }
    }
    std::error_code error;
    std::filesystem::rename(temp, target, error);
    if (error) return fail("cannot rename " + temp.string() + ": " + error.message());
    return {};
}

// The graph in `file`, or why it cannot be used (then the caller rebuilds).
struct LoadedFile {
    std::unique_ptr<HnswState> state;
    std::string problem;
};

// Why a header (and the model name after it) does not describe a graph for `meta` and
// `options` in a file of `file_size` bytes; std::nullopt when it does.
std::optional<std::string> header_problem(const FileHeader& header, const std::string& model,
                                          IndexKind kind, const Meta& meta,
                                          const VectorIndexOptions& options,
                                          std::uint64_t file_size) {
    if (header_checksum(header, model) != header.header_checksum)
        return "index file header checksum mismatch";
    if (header.kind != static_cast<std::uint32_t>(kind)) return "index file of another kind";
    if (header.instance != meta.instance) return "index file of another database";
    if (header.seq > meta.seq)
        return "index file newer than the database (restored from a backup?)";
    if (header.dim != meta.dim || model != meta.model)
        return "index file of another model or dimension";
    if (header.m != options.M || header.ef_construction != options.ef_construction) {
        return "index file built with other M / ef_construction";
    }
    if (meta.dim == 0) return "the kind holds no vectors";
    if (sizeof header + model.size() + header.payload_bytes != file_size)
        return "index file truncated";
    // A graph with the same parameters has the same layout; the file must agree with it.
    if (header.size_data_per_element == 0 ||
        header.elements > header.payload_bytes / header.size_data_per_element ||
        header.live > header.elements) {
        return "index file header damaged";
    }
    return std::nullopt;
}

// Reads each element's level and upper-level link lists (after level 0) into `graph`, adding
// them to `payload`; `remaining` is what the payload holds after level 0. Why it cannot, or
// std::nullopt.
std::optional<std::string> read_upper_links(std::FILE* file, Graph& graph, const FileHeader& header,
                                            std::uint64_t remaining, Checksum& payload) {
    for (std::size_t i = 0; i < header.elements; ++i) {
        std::uint32_t level = 0;
        if (remaining < sizeof level || !read_exact(file, &level, sizeof level)) {
            return "index file truncated";
        }
        remaining -= sizeof level;
        payload.add(&level, sizeof level);
        if (level > kMaxLevel || static_cast<std::int64_t>(level) > header.max_level) {
            return "index file damaged (level)";
        }
        if (level == 0) continue;
        const std::uint64_t bytes = graph.size_links_per_element_ * level;
        if (bytes > remaining) return "index file truncated";
        // hnswlib allocates one byte more than the lists (hnswalg.h addPoint); so do we.
        auto* links = static_cast<char*>(std::malloc(bytes + 1));
        if (links == nullptr) return "cannot allocate the graph";
        graph.linkLists_[i] = links;
        graph.element_levels_[i] = static_cast<int>(level);
        if (!read_exact(file, links, bytes)) return "index file truncated";
        payload.add(links, bytes);
        remaining -= bytes;
    }
    if (remaining != 0) return "index file damaged (length)";
    return std::nullopt;
}

LoadedFile read_index_file(const std::filesystem::path& path, IndexKind kind, const Meta& meta,
                           const VectorIndexOptions& options) {
    LoadedFile result;
    const auto reject = [&](std::string why) {
        result.state.reset();
        result.problem = std::move(why);
        return std::move(result);
    };
    std::error_code error;
    if (!std::filesystem::exists(path, error)) return reject("no index file");
    const std::uint64_t file_size = std::filesystem::file_size(path, error);
    if (error) return reject("cannot stat the index file: " + error.message());
    File file(std::fopen(path.c_str(), "rbe"));
    if (!file) return reject("cannot open the index file: " + errno_text());
    std::setvbuf(file.get(), nullptr, _IOFBF, 1 << 20);

    FileHeader header{};
    if (!read_exact(file.get(), &header, sizeof header))
        return reject("index file truncated (header)");
    if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0) return reject("not an index file");
    if (header.format_version != kFormatVersion) {
        return reject("index file format " + std::to_string(header.format_version) + ", expected " +
                      std::to_string(kFormatVersion));
    }
    if (header.model_bytes > 4096) return reject("index file header damaged");
    std::string model(header.model_bytes, '\0');
    if (!read_exact(file.get(), model.data(), model.size()))
        return reject("index file truncated (header)");
    if (auto problem = header_problem(header, model, kind, meta, options, file_size))
        return reject(std::move(*problem));

    Meta file_meta = meta;
    file_meta.seq = header.seq;
    const std::size_t elements = header.elements;
    std::unique_ptr<HnswState> state;
    try {
        state = empty_state(file_meta, options, elements + elements / 4 + options.initial_capacity);
    } catch (const std::exception& e) {
        return reject(std::string("cannot allocate the graph: ") + e.what());
    }
    Graph& graph = *state->graph;
    if (graph.size_data_per_element_ != header.size_data_per_element)
        return reject("index file layout differs");

    Checksum payload;
    const std::size_t level0_bytes = elements * graph.size_data_per_element_;
    graph.cur_element_count = elements;  // element_levels_ are 0 until read: nothing to free
    if (!read_exact(file.get(), graph.data_level0_memory_, level0_bytes))
        return reject("index file truncated");
    payload.add(graph.data_level0_memory_, level0_bytes);
    if (auto problem = read_upper_links(file.get(), graph, header,
                                        header.payload_bytes - level0_bytes, payload)) {
        return reject(std::move(*problem));
    }
    if (payload.value != header.payload_checksum) return reject("index file checksum mismatch");
    graph.maxlevel_ = header.max_level;
    graph.enterpoint_node_ = header.entry_point;
    if (elements == 0) {
        graph.maxlevel_ = -1;
        graph.enterpoint_node_ = static_cast<hnswlib::tableint>(-1);
    }
    if (auto problem = check_structure(graph, header.live))
        return reject("index file damaged: " + *problem);
    state->live = header.live;
    result.state = std::move(state);
    return result;
}

}  // namespace

std::string_view to_string(IndexKind kind) noexcept {
    return kind == IndexKind::kEntity ? "entity" : "chunk";
}

VectorIndex::VectorIndex(storage::sql::Connection& db, IndexKind kind,
                         std::filesystem::path index_file, Options options)
    : db_(db), kind_(kind), index_file_(std::move(index_file)), options_(options) {}

VectorIndex::~VectorIndex() {
    if (options_.save_on_close && !discarded_) (void)save();
}

Result<std::unique_ptr<VectorIndex>> VectorIndex::open(storage::sql::Connection& db, IndexKind kind,
                                                       std::filesystem::path index_file,
                                                       Options options) {
    if (options.M < 2 || options.M > 256 || options.ef_construction == 0 ||
        options.ef_search == 0) {
        return make_error(ErrorType::kInvalidRequest,
                          "vector index: M must be 2..256 and ef_construction, ef_search above 0");
    }
    auto index =
        std::unique_ptr<VectorIndex>(new VectorIndex(db, kind, std::move(index_file), options));
    const std::lock_guard lock(index->db_mutex_);
    if (auto r = index->create_schema(); !r) return r.error();
    if (auto r = index->load_or_rebuild(); !r) return r.error();
    return index;
}

Result<void> VectorIndex::create_schema() { return detail::create_vector_tables(db_, kind_); }

Result<void> VectorIndex::load_or_rebuild() {
    Meta meta;
    LoadedFile loaded;
    {
        auto snapshot = ReadSnapshot::begin(db_);
        if (!snapshot) return snapshot.error();
        auto m = detail::read_meta(db_, kind_);
        if (!m) return m.error();
        meta = std::move(*m);
    }
    const auto rebuild_because = [&](std::string reason) -> Result<void> {
        if (auto r = rebuild(reason); !r) return r;
        open_report_ = OpenReport{IndexSource::kRebuilt, std::move(reason), 0};
        return {};
    };
    loaded = read_index_file(index_file_, kind_, meta, options_);
    if (!loaded.state) return rebuild_because(loaded.problem);
    {
        const std::unique_lock lock(graph_mutex_);
        loaded.state->counters = state_ ? state_->counters : VectorIndexCounters{};
        ++loaded.state->counters.loads;
        state_ = std::move(loaded.state);
    }
    const std::uint64_t before = state_->counters.caught_up_rows;
    if (auto r = refresh_locked(); !r)
        return rebuild_because("catching up failed: " + r.error().message);
    // The file and the rows it missed must add up to what the database holds.
    auto counted = detail::count_rows(db_, kind_);
    if (!counted) return counted.error();
    const auto [rows, max_key] = *counted;
    std::int64_t held_max = 0;
    bool any = false;
    for (const auto& [label, id] : state_->graph->label_lookup_) {
        if (state_->graph->isMarkedDeleted(id)) continue;
        held_max = any ? std::max(held_max, key_of(label)) : key_of(label);
        any = true;
    }
    if (static_cast<std::uint64_t>(rows) != state_->live || held_max != max_key) {
        return rebuild_because("index file disagrees with the rows (" +
                               std::to_string(state_->live) + " vectors, " + std::to_string(rows) +
                               " rows)");
    }
    // Deleted nodes stay in an hnswlib graph; once they outnumber the live ones, start afresh.
    if (state_->graph->num_deleted_ > std::max<std::size_t>(1'024, state_->live)) {
        return rebuild_because("more deleted than live vectors in the index file");
    }
    open_report_ = OpenReport{IndexSource::kFile, "", state_->counters.caught_up_rows - before};
    return {};
}

Result<void> VectorIndex::rebuild(std::string reason) {
    base::component_logger("store")->info("vector index {}: rebuilding from the rows: {}",
                                          to_string(kind_), reason);
    Meta meta;
    std::vector<std::int64_t> keys;
    std::vector<float> vectors;
    {
        auto snapshot = ReadSnapshot::begin(db_);
        if (!snapshot) return snapshot.error();
        auto m = detail::read_meta(db_, kind_);
        if (!m) return m.error();
        meta = std::move(*m);
        auto changes =
            detail::read_changes(db_, kind_, std::numeric_limits<std::int64_t>::min(), meta.dim);
        if (!changes) return changes.error();
        keys = std::move(changes->keys);
        vectors = std::move(changes->vectors);
    }
    std::unique_ptr<HnswState> state;
    try {
        state = empty_state(meta, options_,
                            std::max(options_.initial_capacity, keys.size() + keys.size() / 4));
        if (state->graph) {
            insert_rows(*state->graph, keys, vectors.data(), meta.dim,
                        thread_count(options_.build_threads));
        }
    } catch (const std::exception& e) {
        return make_error(ErrorType::kInternal, "vector index " + std::string(to_string(kind_)) +
                                                    ": rebuild failed: " + e.what());
    }
    state->live = keys.size();
    state->dirty = true;
    const std::unique_lock lock(graph_mutex_);
    state->counters = state_ ? state_->counters : VectorIndexCounters{};
    ++state->counters.rebuilds;
    state_ = std::move(state);
    return {};
}

Result<void> VectorIndex::refresh() {
    const std::lock_guard lock(db_mutex_);
    return refresh_locked();
}

Result<void> VectorIndex::refresh_locked() {
    {
        // Only this instance writes state_, and only under db_mutex_.
        auto unchanged = detail::meta_unchanged(db_, kind_, state_->seq, state_->instance);
        if (!unchanged) return unchanged.error();
        if (*unchanged) return {};
    }
    Meta meta;
    Changes changes;
    bool start_afresh = false;
    {
        auto snapshot = ReadSnapshot::begin(db_);
        if (!snapshot) return snapshot.error();
        auto m = detail::read_meta(db_, kind_);
        if (!m) return m.error();
        meta = std::move(*m);
        // Another database under the same name, or the kind was emptied and given another model.
        start_afresh = meta.instance != state_->instance || meta.seq < state_->seq ||
                       meta.dim != state_->dim || meta.model != state_->model;
        if (!start_afresh) {
            auto c = detail::read_changes(db_, kind_, state_->seq, meta.dim);
            if (!c) return c.error();
            changes = std::move(*c);
        }
    }
    if (start_afresh) return rebuild("the stored vectors changed model or identity");
    const std::unique_lock lock(graph_mutex_);
    try {
        apply(*state_, changes, thread_count(options_.build_threads));
    } catch (const std::exception& e) {
        return make_error(ErrorType::kInternal,
                          std::string("vector index: catching up failed: ") + e.what());
    }
    state_->seq = meta.seq;
    state_->counters.caught_up_rows += changes.keys.size() + changes.removed.size();
    return {};
}

namespace {

// The vectors checked (one dimension, each key once) and normalised into one flat array.
template <typename T>
Result<std::vector<float>> flatten_rows(std::span<const std::int64_t> keys,
                                        std::span<const std::vector<T>> vectors,
                                        std::string_view model) {
    if (keys.size() != vectors.size()) {
        return make_error(ErrorType::kInvalidRequest, std::to_string(keys.size()) + " keys but " +
                                                          std::to_string(vectors.size()) +
                                                          " vectors");
    }
    if (keys.empty()) return std::vector<float>{};
    if (model.empty())
        return make_error(ErrorType::kInvalidRequest, "vectors need the name of their model");
    const std::size_t dim = vectors[0].size();
    if (dim == 0 || dim > 65'536) {
        return make_error(ErrorType::kInvalidRequest,
                          "vector dimension " + std::to_string(dim) + " (1..65536)");
    }
    std::vector<float> flat(keys.size() * dim);
    std::unordered_set<std::int64_t> seen;
    seen.reserve(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!seen.insert(keys[i]).second) {
            return make_error(ErrorType::kInvalidRequest,
                              "key " + std::to_string(keys[i]) + " appears twice");
        }
        if (vectors[i].size() != dim) {
            return make_error(ErrorType::kInvalidRequest,
                              "vectors[" + std::to_string(i) + "] has " +
                                  std::to_string(vectors[i].size()) + " numbers, vectors[0] " +
                                  std::to_string(dim));
        }
        if (auto why =
                detail::normalise_into(std::span<const T>(vectors[i]), flat.data() + i * dim)) {
            return make_error(ErrorType::kInvalidRequest,
                              "vectors[" + std::to_string(i) + "]: " + *why);
        }
    }
    return flat;
}

// What an add committed: the kind's metadata after it, the rows other connections wrote that
// this instance had not seen, and whether the kind held vectors before.
struct CommittedRows {
    Meta meta;
    Changes missed;
    bool held_vectors = false;
};

// Writes the rows in one transaction, refusing another model or dimension than the stored
// vectors have. The caller holds db_mutex_.
Result<CommittedRows> commit_rows(storage::sql::Connection& db, IndexKind kind,
                                  const HnswState& state, std::span<const std::int64_t> keys,
                                  std::span<const float> flat, std::size_t dim,
                                  std::string_view model) {
    CommittedRows out;
    auto tx = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    auto m = detail::read_meta(db, kind, true);
    if (!m) return m.error();
    out.meta = std::move(*m);
    auto holds = detail::holds_vectors(db, kind);
    if (!holds) return holds.error();
    out.held_vectors = *holds;
    if (out.held_vectors && (out.meta.model != model || out.meta.dim != dim)) {
        return make_error(ErrorType::kInvalidRequest,
                          detail::mismatch_message(out.meta.model, out.meta.dim, model, dim));
    }
    // Rows other connections wrote since this instance last looked, applied with ours.
    auto c = missed_changes(db, kind, out.meta, state);
    if (!c) return c.error();
    out.missed = std::move(*c);
    const std::int64_t seq = out.meta.seq + 1;
    if (auto r = detail::write_rows(db, kind, keys, flat, dim, model, seq); !r) return r.error();
    if (auto r = tx->commit(); !r) return r.error();
    out.meta.seq = seq;
    out.meta.model = std::string(model);
    out.meta.dim = static_cast<std::uint32_t>(dim);
    return out;
}

}  // namespace

template <typename T>
Result<void> VectorIndex::add_rows(std::span<const std::int64_t> keys,
                                   std::span<const std::vector<T>> vectors,
                                   std::string_view model) {
    auto rows = flatten_rows(keys, vectors, model);
    if (!rows) return rows.error();
    if (keys.empty()) return {};
    std::vector<float> flat = std::move(rows).value();
    const std::size_t dim = flat.size() / keys.size();

    const std::lock_guard db_lock(db_mutex_);
    auto committed = commit_rows(db_, kind_, *state_, keys, flat, dim, model);
    if (!committed) return committed.error();
    const Meta& meta = committed->meta;
    Changes& missed = committed->missed;
    const bool holds_vectors = committed->held_vectors;

    // Committed: the database is right whatever happens below; a graph that cannot follow is
    // rebuilt.
    const bool same_graph = meta.instance == state_->instance && meta.dim == state_->dim &&
                            meta.model == state_->model && static_cast<bool>(state_->graph);
    if (!same_graph && holds_vectors)
        return rebuild("the stored vectors changed model or identity");
    const std::size_t threads = thread_count(options_.build_threads);
    try {
        const std::unique_lock lock(graph_mutex_);
        if (!same_graph) {
            // The kind held no vector: this add sets model and dimension; start an empty graph.
            auto fresh =
                empty_state(meta, options_, std::max(options_.initial_capacity, keys.size()));
            fresh->counters = state_->counters;
            state_ = std::move(fresh);
            missed = Changes{};
        }
        apply(*state_, missed, threads);
        state_->counters.caught_up_rows += missed.keys.size() + missed.removed.size();
        Changes ours{{}, std::vector<std::int64_t>(keys.begin(), keys.end()), std::move(flat)};
        apply(*state_, ours, threads);
        state_->seq = meta.seq;
    } catch (const std::exception& e) {
        return rebuild(std::string("updating the graph failed: ") + e.what());
    }
    return {};
}

Result<void> VectorIndex::add(std::span<const std::int64_t> keys,
                              std::span<const std::vector<float>> vectors, std::string_view model) {
    return add_rows(keys, vectors, model);
}

Result<void> VectorIndex::add(std::span<const std::int64_t> keys,
                              std::span<const std::vector<double>> vectors,
                              std::string_view model) {
    return add_rows(keys, vectors, model);
}

Result<void> VectorIndex::remove(std::span<const std::int64_t> keys) {
    if (keys.empty()) return {};
    const std::lock_guard db_lock(db_mutex_);
    Meta meta;
    Changes missed;
    std::vector<std::int64_t> removed;
    {
        auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
        if (!tx) return tx.error();
        auto m = detail::read_meta(db_, kind_, true);
        if (!m) return m.error();
        meta = std::move(*m);
        auto c = missed_changes(db_, kind_, meta, *state_);
        if (!c) return c.error();
        missed = std::move(*c);
        const std::int64_t seq = meta.seq + 1;
        auto gone = detail::remove_rows(db_, kind_, keys, seq);
        if (!gone) return gone.error();
        removed = std::move(*gone);
        if (removed.empty() && missed.keys.empty() && missed.removed.empty()) return {};
        if (!removed.empty()) {
            if (auto r = detail::set_seq(db_, kind_, seq); !r) return r;
            meta.seq = seq;
        }
        if (auto r = tx->commit(); !r) return r;
    }
    if (meta.instance != state_->instance || meta.dim != state_->dim ||
        meta.model != state_->model) {
        return rebuild("the stored vectors changed model or identity");
    }
    try {
        const std::unique_lock lock(graph_mutex_);
        apply(*state_, missed, thread_count(options_.build_threads));
        state_->counters.caught_up_rows += missed.keys.size() + missed.removed.size();
        apply(*state_, Changes{removed, {}, {}}, 1);
        state_->seq = meta.seq;
    } catch (const std::exception& e) {
        return rebuild(std::string("updating the graph failed: ") + e.what());
    }
    return {};
}

namespace {

// Per query, the k least (distance 1 - cosine, key) pairs offered so far, as a max-heap: the k a
// sort of every pair would keep (keys are distinct, so the order is total, and the order of the
// offers does not matter), in k entries per query instead of one per vector.
class NearestK {
public:
    NearestK(std::size_t queries, std::size_t k)
        : capacity_(k), heaps_(queries * k), held_(queries, 0) {}

    void offer(std::size_t q, float distance, std::int64_t key) {
        const Scored scored{distance, key};
        Scored* heap = heaps_.data() + q * capacity_;
        std::size_t& n = held_[q];
        if (n < capacity_) {
            heap[n++] = scored;
            std::push_heap(heap, heap + n);
        } else if (scored < heap[0]) {
            std::pop_heap(heap, heap + n);
            heap[n - 1] = scored;
            std::push_heap(heap, heap + n);
        }
    }
    std::vector<std::vector<VectorMatch>> take() {
        std::vector<std::vector<VectorMatch>> out(held_.size());
        for (std::size_t q = 0; q < held_.size(); ++q) {
            Scored* heap = heaps_.data() + q * capacity_;
            std::sort_heap(heap, heap + held_[q]);
            out[q].resize(held_[q]);
            for (std::size_t i = 0; i < held_[q]; ++i)
                out[q][i] = VectorMatch{heap[i].second, 1.0f - heap[i].first};
        }
        return out;
    }

private:
    using Scored = std::pair<float, std::int64_t>;
    std::size_t capacity_;
    std::vector<Scored> heaps_;
    std::vector<std::size_t> held_;
};

#if defined(__x86_64__) && !defined(NO_MANUAL_VECTORIZATION)
// A vector goes in the sparse lists when at most this share of its numbers (1 in 4) is nonzero.
constexpr std::size_t kListedMaxShare = 4;

std::shared_ptr<const SparseLists> build_lists(const HnswState& state) {
    const Graph& graph = *state.graph;
    const std::size_t dim = state.dim;
    auto lists = std::make_shared<SparseLists>();
    lists->generation = state.generation;
    lists->start.assign(dim + 1, 0);
    for (std::size_t i = 0; i < graph.cur_element_count; ++i) {
        const auto id = static_cast<hnswlib::tableint>(i);
        if (graph.isMarkedDeleted(id)) continue;
        const auto* v = reinterpret_cast<const float*>(graph.getDataByInternalId(id));
        const auto nonzero =
            static_cast<std::size_t>(std::count_if(v, v + dim, [](float x) { return x != 0.0f; }));
        if (nonzero * kListedMaxShare > dim) {
            lists->dense.push_back(static_cast<std::uint32_t>(i));
            continue;
        }
        lists->listed.push_back(static_cast<std::uint32_t>(i));
        for (std::size_t d = 0; d < dim; ++d) lists->start[d + 1] += v[d] != 0.0f ? 1 : 0;
    }
    for (std::size_t d = 0; d < dim; ++d) lists->start[d + 1] += lists->start[d];
    lists->ids.resize(lists->start[dim]);
    lists->values.resize(lists->start[dim]);
    std::vector<std::uint32_t> next(lists->start.begin(), lists->start.end() - 1);
    for (const std::uint32_t i : lists->listed) {  // ascending ids within each list
        const auto* v = reinterpret_cast<const float*>(graph.getDataByInternalId(i));
        for (std::size_t d = 0; d < dim; ++d) {
            if (v[d] == 0.0f) continue;
            lists->ids[next[d]] = i;
            lists->values[next[d]++] = v[d];
        }
    }
    return lists;
}

// The graph's current lists (built by the first scan after a change; the caller holds the graph
// shared, so no change runs meanwhile).
std::shared_ptr<const SparseLists> current_lists(const HnswState& state) {
    const std::lock_guard lock(state.lists_mutex);
    if (!state.lists || state.lists->generation != state.generation)
        state.lists = build_lists(state);
    return state.lists;
}

// The scan through the lists, each listed vector's dot product with the query summed by fused
// multiply-adds over the dimensions where both are nonzero, in ascending dimension (a listed
// vector the query shares no dimension with is at distance exactly 1); the dense vectors are
// scored by the dense kernel. The sums are exact to the last bits of float rounding but not
// the dense kernel's very floats (its sixteen partial sums are added in another order): every
// search at this size takes this path, alone or with other queries, so they agree.
__attribute__((target("avx2,fma"))) void scan_lists(const HnswState& state,
                                                    const SparseLists& lists,
                                                    std::span<const float* const> queries,
                                                    NearestK& nearest) {
    const Graph& graph = *state.graph;
    const std::size_t dim = state.dim;
    std::vector<float> dots(graph.cur_element_count);
    for (std::size_t q = 0; q < queries.size(); ++q) {
        const float* query = queries[q];
        std::fill(dots.begin(), dots.end(), 0.0f);
        for (std::size_t d = 0; d < dim; ++d) {
            const float x = query[d];
            if (x == 0.0f) continue;
            for (std::uint32_t j = lists.start[d]; j < lists.start[d + 1]; ++j) {
                float& dot = dots[lists.ids[j]];
                dot = __builtin_fmaf(x, lists.values[j], dot);
            }
        }
        for (const std::uint32_t id : lists.listed)
            nearest.offer(q, 1.0f - dots[id], key_of(graph.getExternalLabel(id)));
        for (const std::uint32_t id : lists.dense) {
            nearest.offer(q,
                          inner_product_distance_avx2(query, graph.getDataByInternalId(id), &dim),
                          key_of(graph.getExternalLabel(id)));
        }
    }
}
#endif

// The k nearest of every live vector for each query, by one scan: best first, equal scores in
// key order. Each vector is compared with every query while it is in cache (the scan reads
// megabytes: once for all queries, not once per query); each distance is the one a scan for
// that query alone computes. With `sparse` (VectorIndexOptions::sparse_scan), on CPUs with the
// AVX2 kernel, the mostly-zero vectors are scored through their lists instead (scan_lists).
std::vector<std::vector<VectorMatch>> exact_scan(const HnswState& state,
                                                 std::span<const float* const> queries,
                                                 std::size_t k, bool sparse) {
    const Graph& graph = *state.graph;
    const auto distance = state.space->get_dist_func();
    void* const param = state.space->get_dist_func_param();
    NearestK nearest(queries.size(), std::min<std::size_t>(k, graph.cur_element_count));
    if (std::min<std::size_t>(k, graph.cur_element_count) == 0) return nearest.take();
#if defined(__x86_64__) && !defined(NO_MANUAL_VECTORIZATION)
    if (sparse && distance == inner_product_distance_avx2) {
        scan_lists(state, *current_lists(state), queries, nearest);
        return nearest.take();
    }
#else
    (void)sparse;
#endif
    std::vector<float> distances(queries.size());
    for (std::size_t i = 0; i < graph.cur_element_count; ++i) {
        const auto id = static_cast<hnswlib::tableint>(i);
        if (graph.isMarkedDeleted(id)) continue;
        const void* data = graph.getDataByInternalId(id);
        const std::int64_t key = key_of(graph.getExternalLabel(id));
        distances_to(distance, param, queries, data, distances.data());
        for (std::size_t q = 0; q < queries.size(); ++q) nearest.offer(q, distances[q], key);
    }
    return nearest.take();
}

}  // namespace

template <typename T>
Result<std::vector<VectorMatch>> VectorIndex::search_impl(std::span<const T> query, std::size_t k) {
    {
        const std::lock_guard db_lock(db_mutex_);
        if (auto r = refresh_locked(); !r) return r.error();
    }
    const std::shared_lock lock(graph_mutex_);
    const HnswState& state = *state_;
    if (state.dim != 0 && query.size() != state.dim) {
        return make_error(ErrorType::kInvalidRequest, "query has dimension " +
                                                          std::to_string(query.size()) +
                                                          "; the index holds model " + state.model +
                                                          " dim " + std::to_string(state.dim));
    }
    std::vector<VectorMatch> matches;
    if (k == 0 || state.live == 0 || !state.graph) return matches;
    std::vector<float> normalised(query.size());
    if (auto why = detail::normalise_into(query, normalised.data())) {
        return make_error(ErrorType::kInvalidRequest, "query: " + *why);
    }
    if (state.live <= options_.exact_scan_max) {
        const float* one = normalised.data();
        return std::move(
            exact_scan(state, std::span<const float* const>(&one, 1), k, options_.sparse_scan)
                .front());
    }
    try {
        auto found = state.graph->searchKnn(normalised.data(), std::min(k, state.live));
        matches.resize(found.size());
        // hnswlib's queue pops the farthest first; InnerProductSpace's distance is 1 - cosine.
        for (std::size_t i = found.size(); i-- > 0; found.pop()) {
            matches[i] = VectorMatch{key_of(found.top().second), 1.0f - found.top().first};
        }
    } catch (const std::exception& e) {
        return make_error(ErrorType::kInternal, std::string("vector search failed: ") + e.what());
    }
    return matches;
}

Result<std::vector<VectorMatch>> VectorIndex::search(std::span<const float> query, std::size_t k) {
    return search_impl(query, k);
}

Result<std::vector<VectorMatch>> VectorIndex::search(std::span<const double> query, std::size_t k) {
    return search_impl(query, k);
}

Result<std::vector<std::vector<VectorMatch>>> VectorIndex::search_each(
    std::span<const std::vector<double>> queries, std::size_t k) {
    std::vector<std::span<const double>> spans(queries.begin(), queries.end());
    return search_each(std::span<const std::span<const double>>(spans), k);
}

Result<std::vector<std::vector<VectorMatch>>> VectorIndex::search_each(
    std::span<const std::span<const double>> queries, std::size_t k) {
    std::vector<std::vector<VectorMatch>> results;
    {
        const std::lock_guard db_lock(db_mutex_);
        if (auto r = refresh_locked(); !r) return r.error();
    }
    {
        const std::shared_lock lock(graph_mutex_);
        const HnswState& state = *state_;
        const bool scanned =
            k != 0 && state.live != 0 && state.graph && state.live <= options_.exact_scan_max;
        if (scanned && state.dim != 0) {
            // What search_impl checks of each query, in the same order; the normalised queries
            // one after another in one buffer.
            std::vector<float> normalised(queries.size() * state.dim);
            std::vector<const float*> pointers;
            pointers.reserve(queries.size());
            for (const auto query : queries) {
                if (query.size() != state.dim) break;
                float* into = normalised.data() + pointers.size() * state.dim;
                if (detail::normalise_into(query, into)) break;
                pointers.push_back(into);
            }
            if (pointers.size() == queries.size())
                return exact_scan(state, pointers, k, options_.sparse_scan);
        }
    }
    // Not scanned, or a query search() refuses: one search per query gives its answer or error.
    results.reserve(queries.size());
    for (const auto query : queries) {
        auto found = search(query, k);
        if (!found) return std::move(found).error();
        results.push_back(std::move(found).value());
    }
    return results;
}

Result<void> VectorIndex::save() {
    // Every writer of the graph holds db_mutex_: holding it keeps the graph still while searches
    // (shared lock) go on during the write.
    const std::lock_guard db_lock(db_mutex_);
    if (discarded_) return {};
    {
        const std::shared_lock lock(graph_mutex_);
        if (!state_ || !state_->dirty.load() || !state_->graph) return {};
        if (auto r = write_index_file(*state_, kind_, options_, index_file_); !r) return r;
    }
    const std::unique_lock lock(graph_mutex_);
    state_->dirty = false;
    ++state_->counters.saves;
    return {};
}

std::size_t VectorIndex::size() const {
    const std::shared_lock lock(graph_mutex_);
    return state_->live;
}

std::uint32_t VectorIndex::dim() const {
    const std::shared_lock lock(graph_mutex_);
    return state_->dim;
}

std::string VectorIndex::model() const {
    const std::shared_lock lock(graph_mutex_);
    return state_->model;
}

VectorIndexCounters VectorIndex::counters() const {
    const std::shared_lock lock(graph_mutex_);
    return state_->counters;
}

}  // namespace glassbox::store
