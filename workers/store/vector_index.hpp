// Vector indexes of a collection (entity labels, chunks): float32 vectors kept in the database
// (SQLite, or PostgreSQL's BYTEA rows: no pgvector needed), the source of truth, with an hnswlib
// graph in each process as a cache, persisted in an index file (next to a SQLite database; a
// local cache path of each worker on PostgreSQL) and rebuilt from the rows whenever the file is
// missing, damaged, built differently, of another database or newer than the rows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "storage/sql.hpp"

namespace glassbox::store {

// Which vectors: entity labels (graph RAG seeds) or chunk texts (document RAG). Each kind has
// its own table (vectors_entity, vectors_chunk), model, dimension and index file.
enum class IndexKind { kEntity, kChunk };

std::string_view to_string(IndexKind kind) noexcept;  // "entity", "chunk"

// Defaults, checked with bench/bench_vectors (100,000 clustered 384-d vectors, 1,000 held-out
// queries, exact brute force in the same run; 2 cores, SSE distances):
//   ef_search   16     32     64     96     128
//   recall@10   0.941  0.991  0.999  1.000  1.000
//   p50 ms      0.12   0.17   0.24   0.31   0.45   (brute force 7.7 ms)
// - ef_search 96: 3x the smallest beam that meets the 0.95 target here (real embeddings are less
//   tidy than Gaussian clusters), still about 0.3 ms p50; a query asking for k > 96 searches
//   with a beam of k (hnswlib uses max(ef, k)).
// - M 16: hnswlib's usual value; with 2·M links per vector at layer 0 the file is 1.7 KB per
//   384-d vector (1.5 KB of it the vector); a larger M costs memory and build time for recall
//   the target does not need.
// - ef_construction 100 (hnswlib's default is 200): it sets the cost of the build, and so of
//   every rebuild from SQLite (the slow path: 43 s at 100,000 vectors, against 0.12 s to load
//   the file), and recall is already at the target with ef_search 32.
struct VectorIndexOptions {
    std::size_t M = 16;
    std::size_t ef_construction = 100;
    std::size_t ef_search = 96;
    // Slots allocated when the index is created empty; it grows by half again when full.
    std::size_t initial_capacity = 1'024;
    // Seed of hnswlib's level generator: a rebuild inserted on one thread (fewer than 2,048 rows,
    // or build_threads 1) gives the same graph from the same rows.
    std::size_t random_seed = 100;
    // Threads that insert during a rebuild (hnswlib inserts in parallel); 0: hardware threads.
    std::size_t build_threads = 0;
    // Saves on destruction when dirty (errors ignored: the file is only a cache).
    bool save_on_close = true;
    // Up to this many live vectors a search scans them all (exact, and cheaper than walking the
    // graph at that size: one contiguous distance per vector against the walk's ~1,000 or more
    // scattered ones with a heap); above it, the graph. 0: always the graph.
    std::size_t exact_scan_max = 8'192;
    // The scan walks per-dimension lists of the vectors that are mostly zeros (the hashing
    // embedder's ~15 nonzero of 384) instead of reading every number of every vector (on CPUs
    // with AVX2; the same neighbours, the scores equal to float rounding); false: always the
    // dense scan (tests compare the two).
    bool sparse_scan = true;
};

// One answer of search(): the key given to add() and the cosine similarity to the query.
struct VectorMatch {
    std::int64_t key = 0;
    float score = 0.0f;
    bool operator==(const VectorMatch&) const = default;
};

// How open() came by the in-memory index.
enum class IndexSource {
    kFile,     // loaded from the index file (then caught up with rows added since it was saved)
    kRebuilt,  // rebuilt from the rows in the database; `reason` says why the file was not used
};

struct OpenReport {
    IndexSource source = IndexSource::kRebuilt;
    std::string reason;           // empty for kFile; "no index file", "checksum mismatch", …
    std::uint64_t caught_up = 0;  // rows (added, replaced or removed) applied on top of the file
};

// Monotonic counters of this instance, e.g. to show a reload did not rebuild.
struct VectorIndexCounters {
    std::uint64_t rebuilds = 0;        // full rebuilds from the rows (at open or after a bad state)
    std::uint64_t loads = 0;           // index files loaded
    std::uint64_t caught_up_rows = 0;  // rows another connection wrote, applied incrementally
    std::uint64_t saves = 0;           // index files written
};

namespace detail {
struct HnswState;  // the hnswlib graph and its bookkeeping (vector_index.cpp only: hnswlib.h
                   // defines non-inline functions, so one translation unit may include it)
}

// Thread-safety: search() may run on many threads at once; add(), remove(), refresh() and
// save() exclude searches (a shared_mutex) while they change the graph. The instance uses
// the connection only inside its calls and serialises its own uses of it; the owner must not
// use the same connection on another thread meanwhile (KnowledgeBase::mutex() does that).
//
// Several processes may serve one collection (one SQLite file, or one PostgreSQL schema shared by
// store workers on many hosts): every write bumps a per-kind sequence number (vector_meta.seq,
// drawn inside the writer's transaction with the kind's row locked, so seq order is commit order)
// and stamps the rows it wrote, or the tombstones of the keys it removed, with it; an instance
// that is behind applies just the changes stamped after its own sequence number.
//
// Staleness bound: none beyond the commit. search() and search_each() read vector_meta.seq
// (one indexed read) before they search and apply whatever was committed since, so a search sees
// every vector added or removed by a write that committed before the search started, whichever
// process or host wrote it; add() and remove() apply what they missed along with their own rows.
class VectorIndex {
public:
    using Options = VectorIndexOptions;

    // Creates the tables when needed, then loads `index_file` when it is present, intact, built
    // with the same M / model / dimension for this database (vector_meta.instance: a random
    // number each database draws when it creates its tables, so a file of another SQLite file,
    // PostgreSQL schema or server, or of a deleted and recreated collection, is never trusted),
    // and not newer than the rows; otherwise rebuilds from the rows (never fails because of the
    // file). The directory of `index_file` must exist.
    static base::Result<std::unique_ptr<VectorIndex>> open(storage::sql::Connection& db,
                                                           IndexKind kind,
                                                           std::filesystem::path index_file,
                                                           Options options = {});
    ~VectorIndex();
    VectorIndex(const VectorIndex&) = delete;
    VectorIndex& operator=(const VectorIndex&) = delete;

    // Upserts vectors[i] under keys[i] (the same key again replaces its vector), L2-normalised,
    // in the database (one transaction) and in the graph. kInvalidRequest, with nothing written,
    // when the sizes differ, a key repeats, a vector is empty, zero, not finite or of another
    // length than the others, or model/dimension differ from what the kind already holds ("index
    // holds model X dim 384; got model Y dim 256"). The first add of an empty kind sets both.
    base::Result<void> add(std::span<const std::int64_t> keys,
                           std::span<const std::vector<float>> vectors, std::string_view model);
    // The wire's vectors (schema::EmbeddingsResponse::vectors).
    base::Result<void> add(std::span<const std::int64_t> keys,
                           std::span<const std::vector<double>> vectors, std::string_view model);

    // Removes these keys (absent ones are ignored); the kind keeps its model and dimension.
    base::Result<void> remove(std::span<const std::int64_t> keys);

    // At most k matches, best first; score = cosine similarity. Catches up with rows other
    // connections wrote first. An empty index gives none; a query of another dimension, or zero
    // or not finite, is kInvalidRequest.
    base::Result<std::vector<VectorMatch>> search(std::span<const float> query, std::size_t k);
    base::Result<std::vector<VectorMatch>> search(std::span<const double> query, std::size_t k);
    // search() of each query (results[i] for queries[i], the same matches and scores), with one
    // pass over the vectors for all of them where the index is scanned: each vector is read
    // from memory once, not once per query. The first query that search() refuses is the error.
    base::Result<std::vector<std::vector<VectorMatch>>> search_each(
        std::span<const std::span<const double>> queries, std::size_t k);
    base::Result<std::vector<std::vector<VectorMatch>>> search_each(
        std::span<const std::vector<double>> queries, std::size_t k);

    // Applies what other connections wrote since this instance last looked (one indexed SELECT
    // when nothing changed). search() calls it; exposed for callers that want it off the hot path.
    base::Result<void> refresh();

    // Writes the index file (temp file + rename) when the graph changed since it was loaded or
    // last saved; nothing otherwise.
    base::Result<void> save();
    // The collection is being deleted: the index file is never written again (not by save(),
    // not on destruction), so no cache of a deleted collection reappears beside its successor.
    void discard() noexcept { discarded_ = true; }

    std::size_t size() const;   // vectors held
    std::uint32_t dim() const;  // 0 while the kind holds no vector and none was ever added
    std::string model() const;  // "" likewise
    IndexKind kind() const noexcept { return kind_; }
    const std::filesystem::path& index_file() const noexcept { return index_file_; }
    const OpenReport& open_report() const noexcept { return open_report_; }
    VectorIndexCounters counters() const;

private:
    VectorIndex(storage::sql::Connection& db, IndexKind kind, std::filesystem::path index_file,
                Options options);

    template <typename T>
    base::Result<void> add_rows(std::span<const std::int64_t> keys,
                                std::span<const std::vector<T>> vectors, std::string_view model);
    template <typename T>
    base::Result<std::vector<VectorMatch>> search_impl(std::span<const T> query, std::size_t k);

    base::Result<void> create_schema();
    base::Result<void> load_or_rebuild();
    base::Result<void> rebuild(std::string reason);
    // Caller holds db_mutex_.
    base::Result<void> refresh_locked();

    storage::sql::Connection& db_;
    const IndexKind kind_;
    const std::filesystem::path index_file_;
    const Options options_;
    OpenReport open_report_;

    // Order: db_mutex_ before graph_mutex_.
    std::mutex db_mutex_;
    mutable std::shared_mutex graph_mutex_;
    std::unique_ptr<detail::HnswState> state_;
    std::atomic<bool> discarded_{false};
};

}  // namespace glassbox::store
