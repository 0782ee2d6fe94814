// VectorIndex on SQLite and PostgreSQL: exact answers on small sets, cosine scores, the persisted
// cache (reload, damage, rebuild, another database's file), catching up with other connections
// (other hosts) and concurrent writers, upsert/remove, errors, concurrent searches.
#include "workers/store/vector_index.hpp"
#include "tests/support/knowledge_site.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

namespace glassbox::store {
namespace {

using base::ErrorType;
using Vectors = std::vector<std::vector<float>>;

Vectors random_vectors(std::size_t count, std::size_t dim, std::uint64_t seed) {
    std::mt19937_64 random(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Vectors out(count, std::vector<float>(dim));
    for (auto& v : out) {
        for (float& x : v) x = normal(random);
    }
    return out;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
    double dot = 0.0, na = 0.0, nb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += double{a[i]} * b[i];
        na += double{a[i]} * a[i];
        nb += double{b[i]} * b[i];
    }
    return dot / std::sqrt(na * nb);
}

// Exact top-k keys by cosine similarity.
std::vector<std::int64_t> brute_force(const Vectors& data, const std::vector<std::int64_t>& keys,
                                      const std::vector<float>& query, std::size_t k) {
    std::vector<std::size_t> order(data.size());
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> scores(data.size());
    for (std::size_t i = 0; i < data.size(); ++i) scores[i] = cosine(data[i], query);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < k; ++i) out.push_back(keys[order[i]]);
    return out;
}

std::vector<std::int64_t> keys_of(const std::vector<VectorMatch>& matches) {
    std::vector<std::int64_t> out;
    for (const auto& m : matches) out.push_back(m.key);
    return out;
}

std::vector<std::int64_t> key_range(std::int64_t first, std::size_t count) {
    std::vector<std::int64_t> keys(count);
    std::iota(keys.begin(), keys.end(), first);
    return keys;
}

// Runs on SQLite and on PostgreSQL (store_testing::KnowledgeTest); the index files live in the
// site's folder on both (beside the SQLite file; a worker's local cache on PostgreSQL).
class VectorIndexTest : public store_testing::KnowledgeTest {
protected:
    void SetUp() override {
        KnowledgeTest::SetUp();
        if (IsSkipped()) return;
        db_ = open_db();
    }
    void TearDown() override {
        db_.reset();
        KnowledgeTest::TearDown();
    }

    // Another connection to the same knowledge base (another process, or host on PostgreSQL).
    std::unique_ptr<storage::sql::Connection> open_db() {
        auto db = site_->connect();
        EXPECT_TRUE(db) << db.error().message;
        return db ? std::move(db).value() : nullptr;
    }

    std::unique_ptr<VectorIndex> open_index(storage::sql::Connection& db,
                                            VectorIndexOptions options = small_options(),
                                            const std::string& file = "kb.chunk.hnsw") {
        auto index = VectorIndex::open(db, IndexKind::kChunk, site_->dir() / file, options);
        EXPECT_TRUE(index) << index.error().message;
        return index ? std::move(index).value() : nullptr;
    }
    std::unique_ptr<VectorIndex> open_index(VectorIndexOptions options = small_options()) {
        return open_index(*db_, options);
    }

    static VectorIndexOptions small_options() {
        VectorIndexOptions options;
        options.initial_capacity = 16;  // small sets grow the graph several times
        options.save_on_close = false;
        return options;
    }

    std::filesystem::path index_file() const { return site_->dir() / "kb.chunk.hnsw"; }

    std::int64_t rows(storage::sql::Connection& db, const std::string& table = "vectors_chunk") {
        auto stmt = db.prepare("SELECT count(*) FROM " + table);
        EXPECT_TRUE(stmt);
        auto n = stmt->first([](const storage::sql::Row& row) { return row.int64(0); });
        EXPECT_TRUE(n && *n);
        return n && *n ? **n : -1;
    }

    // The checks below run through either search: the exact scan (small sets, the default) and
    // the graph walk (exact_scan_max 0, as above the threshold), which finds the same neighbours
    // here.
    void finds_the_exact_nearest_neighbours(std::size_t exact_scan_max);
    void search_each_gives_every_querys_own_search(std::size_t exact_scan_max);
    void search_each_matches_alone_for_every_query_count_and_tail(std::size_t exact_scan_max);

    std::unique_ptr<storage::sql::Connection> db_;
};

void VectorIndexTest::finds_the_exact_nearest_neighbours(std::size_t exact_scan_max) {
    const auto data = random_vectors(300, 32, 1);
    const auto keys = key_range(1000, data.size());
    auto options = small_options();
    options.exact_scan_max = exact_scan_max;
    auto index = open_index(options);
    ASSERT_TRUE(index->add(keys, data, "test-model"));
    EXPECT_EQ(index->size(), 300u);
    EXPECT_EQ(index->dim(), 32u);
    EXPECT_EQ(index->model(), "test-model");
    const auto queries = random_vectors(25, 32, 2);
    for (const auto& q : queries) {
        auto found = index->search(std::span<const float>(q), 5);
        ASSERT_TRUE(found) << found.error().message;
        EXPECT_EQ(keys_of(*found), brute_force(data, keys, q, 5));
    }
    // Each stored vector is its own best match.
    for (std::size_t i = 0; i < data.size(); i += 37) {
        auto found = index->search(std::span<const float>(data[i]), 1);
        ASSERT_TRUE(found);
        ASSERT_EQ(found->size(), 1u);
        EXPECT_EQ((*found)[0].key, keys[i]);
        EXPECT_NEAR((*found)[0].score, 1.0, 1e-5);
    }
    // Removed keys are never found, whichever way the index is searched.
    ASSERT_TRUE(index->remove(std::vector<std::int64_t>{keys[0], keys[37]}));
    auto found = index->search(std::span<const float>(data[0]), 300);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->size(), 298u);
    for (const auto& m : *found) {
        EXPECT_NE(m.key, keys[0]);
        EXPECT_NE(m.key, keys[37]);
    }
}

// search_each answers each query exactly as search() does (one scan for all of them, or a
// search per query on the graph), and refuses what search() refuses.
void VectorIndexTest::search_each_gives_every_querys_own_search(std::size_t exact_scan_max) {
    const auto data = random_vectors(300, 32, 3);
    auto options = small_options();
    options.exact_scan_max = exact_scan_max;
    auto index = open_index(options);
    ASSERT_TRUE(index->add(key_range(1000, data.size()), data, "test-model"));
    ASSERT_TRUE(index->remove(std::vector<std::int64_t>{1005}));
    std::vector<std::vector<double>> queries;
    for (const auto& q : random_vectors(7, 32, 4)) queries.emplace_back(q.begin(), q.end());
    auto each = index->search_each(queries, 9);
    ASSERT_TRUE(each) << each.error().message;
    ASSERT_EQ(each->size(), queries.size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
        auto alone = index->search(std::span<const double>(queries[i]), 9);
        ASSERT_TRUE(alone);
        ASSERT_EQ((*each)[i].size(), alone->size());
        for (std::size_t j = 0; j < alone->size(); ++j) {
            EXPECT_EQ((*each)[i][j].key, (*alone)[j].key);
            EXPECT_EQ((*each)[i][j].score, (*alone)[j].score);  // the same float, not near it
        }
    }
    auto none = index->search_each(std::vector<std::vector<double>>{}, 9);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    queries[3].resize(31);
    auto short_query = index->search_each(queries, 9);
    ASSERT_FALSE(short_query);
    EXPECT_EQ(short_query.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_EQ(short_query.error().message,
              index->search(std::span<const double>(queries[3]), 9).error().message);
    queries[3].assign(32, 0.0);
    auto zero = index->search_each(queries, 9);
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().type, base::ErrorType::kInvalidRequest);
}

// The scan scores a vector against several queries at once (four at a time, then the rest):
// with a dimension that leaves a tail after the 16-float blocks, and every count of queries
// from one to six, each query still gets the very floats of its own search.
void VectorIndexTest::search_each_matches_alone_for_every_query_count_and_tail(
    std::size_t exact_scan_max) {
    const auto data = random_vectors(200, 45, 11);
    auto options = small_options();
    options.exact_scan_max = exact_scan_max;
    auto index = open_index(options);
    ASSERT_TRUE(index->add(key_range(1, data.size()), data, "test-model"));
    std::vector<std::vector<double>> all;
    for (const auto& q : random_vectors(6, 45, 12)) all.emplace_back(q.begin(), q.end());
    for (std::size_t count = 1; count <= all.size(); ++count) {
        const std::vector<std::vector<double>> queries(
            all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
        auto each = index->search_each(queries, 5);
        ASSERT_TRUE(each) << each.error().message;
        ASSERT_EQ(each->size(), count);
        for (std::size_t i = 0; i < count; ++i) {
            auto alone = index->search(std::span<const double>(queries[i]), 5);
            ASSERT_TRUE(alone);
            ASSERT_EQ((*each)[i].size(), alone->size()) << count << " queries";
            for (std::size_t j = 0; j < alone->size(); ++j) {
                EXPECT_EQ((*each)[i][j].key, (*alone)[j].key) << count << " queries";
                EXPECT_EQ((*each)[i][j].score, (*alone)[j].score) << count << " queries";
            }
        }
    }
}

constexpr std::size_t kScan = VectorIndexOptions{}.exact_scan_max;
constexpr std::size_t kGraph = 0;

TEST_P(VectorIndexTest, FindsTheExactNearestNeighboursOfASmallSetByScan) {
    finds_the_exact_nearest_neighbours(kScan);
}
TEST_P(VectorIndexTest, FindsTheExactNearestNeighboursOfASmallSetByGraph) {
    finds_the_exact_nearest_neighbours(kGraph);
}
TEST_P(VectorIndexTest, SearchEachGivesEveryQuerysOwnSearchByScan) {
    search_each_gives_every_querys_own_search(kScan);
}
TEST_P(VectorIndexTest, SearchEachGivesEveryQuerysOwnSearchByGraph) {
    search_each_gives_every_querys_own_search(kGraph);
}
TEST_P(VectorIndexTest, SearchEachMatchesAloneForEveryQueryCountAndTailByScan) {
    search_each_matches_alone_for_every_query_count_and_tail(kScan);
}
TEST_P(VectorIndexTest, SearchEachMatchesAloneForEveryQueryCountAndTailByGraph) {
    search_each_matches_alone_for_every_query_count_and_tail(kGraph);
}

TEST_P(VectorIndexTest, ScoresAreCosineSimilaritiesBestFirst) {
    auto index = open_index();
    const Vectors data = {{3, 4, 0, 0}, {0, 0, 2, 0}, {1, 1, 0, 0}, {-5, 0, 0, 0}};
    const std::vector<std::int64_t> keys = {1, 2, 3, 4};
    ASSERT_TRUE(index->add(keys, data, "m"));
    const std::vector<double> query = {10, 0, 0, 0};  // not unit length: normalised too
    auto found = index->search(std::span<const double>(query), 10);
    ASSERT_TRUE(found) << found.error().message;
    ASSERT_EQ(found->size(), 4u);
    EXPECT_EQ(keys_of(*found), (std::vector<std::int64_t>{3, 1, 2, 4}));
    EXPECT_NEAR((*found)[0].score, 1 / std::sqrt(2.0), 1e-6);
    EXPECT_NEAR((*found)[1].score, 0.6, 1e-6);
    EXPECT_NEAR((*found)[2].score, 0.0, 1e-6);
    EXPECT_NEAR((*found)[3].score, -1.0, 1e-6);
    // k above the size gives everything; k 0 nothing.
    auto none = index->search(std::span<const double>(query), 0);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

// The exact scan keeps the k best (distance, key) pairs as it reads (issue 33: k entries per
// query, not one per vector): equal scores come in key order, whatever order the vectors were
// added in, and a removed key is skipped, for k below, at and above the number of ties.
TEST_P(VectorIndexTest, TheExactScanOrdersEqualScoresByKeyForEveryK) {
    auto index = open_index();
    std::vector<std::int64_t> keys;
    Vectors data;
    for (std::int64_t i = 0; i < 60; ++i) {
        keys.push_back(1000 - 7 * i);  // added in falling key order
        data.push_back(i % 3 == 0 ? std::vector<float>{2, 0, 0} : std::vector<float>{1, 1, 0});
    }
    ASSERT_TRUE(index->add(keys, data, "m"));
    ASSERT_TRUE(index->remove(std::vector<std::int64_t>{1000 - 7 * 57}));
    std::vector<std::int64_t> best;  // the 19 left along {1, 0, 0}, by key
    for (std::int64_t i = 0; i < 60; i += 3) {
        if (i != 57) best.push_back(1000 - 7 * i);
    }
    std::sort(best.begin(), best.end());
    const std::vector<double> query = {1, 0, 0};
    for (const std::size_t k :
         {std::size_t{1}, std::size_t{5}, std::size_t{19}, std::size_t{25}, std::size_t{100}}) {
        auto found = index->search(std::span<const double>(query), k);
        ASSERT_TRUE(found) << found.error().message;
        ASSERT_EQ(found->size(), std::min<std::size_t>(k, 59)) << k;
        const auto got = keys_of(*found);
        const std::size_t tied = std::min<std::size_t>(k, best.size());
        EXPECT_EQ(
            std::vector<std::int64_t>(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(tied)),
            std::vector<std::int64_t>(best.begin(),
                                      best.begin() + static_cast<std::ptrdiff_t>(tied)))
            << k;
        for (std::size_t i = 1; i < found->size(); ++i) {
            const auto& a = (*found)[i - 1];
            const auto& b = (*found)[i];
            EXPECT_TRUE(a.score > b.score || (a.score == b.score && a.key < b.key))
                << k << " " << i;
        }
    }
}

// Vectors mostly zeros, as the hashing embedder's (2 to 12 nonzero, signed, of `dim`), then
// `dense` fully dense ones.
Vectors sparse_vectors(std::size_t count, std::size_t dense, std::size_t dim, std::uint64_t seed) {
    std::mt19937_64 random(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<std::size_t> nonzero(2, 12);
    std::uniform_int_distribution<std::size_t> position(0, dim - 1);
    Vectors out(count, std::vector<float>(dim, 0.0f));
    for (auto& v : out) {
        for (std::size_t n = nonzero(random); n > 0; --n) v[position(random)] = normal(random);
    }
    for (auto& v : random_vectors(dense, dim, seed + 1)) out.push_back(std::move(v));
    return out;
}

// The scan through the sparse lists (issue 33) answers every query with the dense scan's keys,
// and scores equal to float rounding: mostly-zero vectors beside dense ones, a removed key,
// queries sparse, dense and sharing no dimension with some vectors (which then sit at score 0,
// in key order), every k from one past the live count; one index scans by the lists, one over
// the same rows reads every number. A query alone gets the very floats it gets among others.
TEST_P(VectorIndexTest, TheSparseScanFindsTheDenseScansNeighbours) {
    constexpr std::size_t kDim = 72;
    const auto data = sparse_vectors(240, 20, kDim, 21);
    auto listed = open_index();
    ASSERT_TRUE(listed->add(key_range(500, data.size()), data, "m"));
    ASSERT_TRUE(listed->remove(std::vector<std::int64_t>{503, 640}));
    auto dense_options = small_options();
    dense_options.sparse_scan = false;
    auto dense = open_index(dense_options);
    ASSERT_EQ(dense->size(), listed->size());
    std::vector<std::vector<double>> queries;
    for (const auto& q : sparse_vectors(8, 3, kDim, 22)) queries.emplace_back(q.begin(), q.end());
    std::vector<double> one_dimension(kDim, 0.0);
    one_dimension[17] = 1.0;
    queries.push_back(one_dimension);
    for (const std::size_t k :
         {std::size_t{1}, std::size_t{7}, std::size_t{60}, std::size_t{258}, std::size_t{400}}) {
        auto by_lists = listed->search_each(queries, k);
        auto by_numbers = dense->search_each(queries, k);
        ASSERT_TRUE(by_lists) << by_lists.error().message;
        ASSERT_TRUE(by_numbers) << by_numbers.error().message;
        for (std::size_t q = 0; q < queries.size(); ++q) {
            const auto& a = (*by_lists)[q];
            const auto& b = (*by_numbers)[q];
            ASSERT_EQ(a.size(), std::min<std::size_t>(k, 258)) << k << " " << q;
            ASSERT_EQ(a.size(), b.size()) << k << " " << q;
            for (std::size_t i = 0; i < a.size(); ++i) {
                EXPECT_EQ(a[i].key, b[i].key) << k << " " << q << " " << i;
                EXPECT_NEAR(a[i].score, b[i].score, 1e-6) << k << " " << q << " " << i;
            }
        }
        auto alone = listed->search(std::span<const double>(queries[0]), k);
        ASSERT_TRUE(alone);
        EXPECT_EQ(*alone, (*by_lists)[0]) << k;
    }
    // The lists follow changes: a vector added, one replaced and one removed after a scan.
    const auto more = sparse_vectors(2, 0, kDim, 23);
    for (auto* index : {listed.get(), dense.get()}) {
        ASSERT_TRUE(index->add(std::vector<std::int64_t>{900, 510}, more, "m"));
        ASSERT_TRUE(index->remove(std::vector<std::int64_t>{511}));
    }
    auto after_lists = listed->search_each(queries, 258);
    auto after_numbers = dense->search_each(queries, 258);
    ASSERT_TRUE(after_lists && after_numbers);
    for (std::size_t q = 0; q < queries.size(); ++q) {
        EXPECT_EQ(keys_of((*after_lists)[q]), keys_of((*after_numbers)[q])) << q;
    }
    for (const auto& matches : *after_lists) {
        EXPECT_TRUE(std::any_of(matches.begin(), matches.end(),
                                [](const VectorMatch& m) { return m.key == 900; }));
        EXPECT_TRUE(std::none_of(matches.begin(), matches.end(),
                                 [](const VectorMatch& m) { return m.key == 511; }));
    }
}

TEST_P(VectorIndexTest, StoresUnitVectorsInTheDatabase) {
    auto index = open_index();
    ASSERT_TRUE(index->add(std::vector<std::int64_t>{7}, Vectors{{0, 3, 4}}, "m"));
    auto stmt = db_->prepare("SELECT vector FROM vectors_chunk WHERE key = 7");
    ASSERT_TRUE(stmt);
    auto blob = stmt->first([](const storage::sql::Row& row) {
        const auto bytes = row.blob(0);
        return std::vector<std::byte>(bytes.begin(), bytes.end());
    });
    ASSERT_TRUE(blob && *blob);
    ASSERT_EQ((*blob)->size(), 3 * sizeof(float));
    float v[3];
    std::memcpy(v, (*blob)->data(), sizeof v);
    EXPECT_FLOAT_EQ(v[0], 0.0f);
    EXPECT_FLOAT_EQ(v[1], 0.6f);
    EXPECT_FLOAT_EQ(v[2], 0.8f);
    auto meta = db_->prepare("SELECT model, dim FROM vector_meta WHERE kind = 'chunk'");
    ASSERT_TRUE(meta);
    auto stored = meta->first([](const storage::sql::Row& row) {
        return std::pair{std::string(row.text(0)), row.int64(1)};
    });
    ASSERT_TRUE(stored && *stored);
    EXPECT_EQ((*stored)->first, "m");
    EXPECT_EQ((*stored)->second, 3);
}

TEST_P(VectorIndexTest, ReloadsThePersistedIndexWithoutRebuilding) {
    const auto data = random_vectors(400, 16, 3);
    const auto keys = key_range(1, data.size());
    const auto query = random_vectors(1, 16, 4)[0];
    std::vector<VectorMatch> before;
    {
        auto index = open_index();
        EXPECT_EQ(index->open_report().source, IndexSource::kRebuilt);
        EXPECT_EQ(index->open_report().reason, "no index file");
        ASSERT_TRUE(index->add(keys, data, "m"));
        ASSERT_TRUE(index->save());
        EXPECT_EQ(index->counters().saves, 1u);
        ASSERT_TRUE(index->save());  // not dirty: no second write
        EXPECT_EQ(index->counters().saves, 1u);
        before = *index->search(std::span<const float>(query), 10);
    }
    ASSERT_TRUE(std::filesystem::exists(index_file()));
    auto index = open_index();
    EXPECT_EQ(index->open_report().source, IndexSource::kFile) << index->open_report().reason;
    EXPECT_EQ(index->counters().rebuilds, 0u);
    EXPECT_EQ(index->counters().loads, 1u);
    EXPECT_EQ(index->size(), 400u);
    EXPECT_EQ(index->model(), "m");
    auto after = index->search(std::span<const float>(query), 10);
    ASSERT_TRUE(after);
    EXPECT_EQ(*after, before);
}

TEST_P(VectorIndexTest, SavesOnCloseWhenAsked) {
    auto options = small_options();
    options.save_on_close = true;
    {
        auto index = open_index(options);
        ASSERT_TRUE(index->add(key_range(1, 50), random_vectors(50, 16, 5), "m"));
    }
    auto index = open_index(options);
    EXPECT_EQ(index->open_report().source, IndexSource::kFile) << index->open_report().reason;
}

TEST_P(VectorIndexTest, RebuildsFromTheRowsWhenTheFileIsMissingOrDamaged) {
    const auto data = random_vectors(300, 16, 6);
    const auto keys = key_range(1, data.size());
    const auto queries = random_vectors(10, 16, 7);
    std::vector<std::vector<std::int64_t>> expected;
    {
        auto index = open_index();
        ASSERT_TRUE(index->add(keys, data, "m"));
        ASSERT_TRUE(index->save());
        for (const auto& q : queries)
            expected.push_back(keys_of(*index->search(std::span<const float>(q), 5)));
    }
    const auto good = index_file().string() + ".good";
    std::filesystem::copy_file(index_file(), good);
    const auto size = std::filesystem::file_size(good);

    struct Damage {
        std::string name;
        std::function<void()> apply;
    };
    const auto flip_at = [&](std::uintmax_t offset) {
        std::fstream f(index_file(), std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(static_cast<std::streamoff>(offset));
        char c = 0;
        f.read(&c, 1);
        c = static_cast<char>(c ^ 0x5A);
        f.seekp(static_cast<std::streamoff>(offset));
        f.write(&c, 1);
    };
    const std::vector<Damage> damages = {
        {"deleted", [&] { std::filesystem::remove(index_file()); }},
        {"empty", [&] { std::filesystem::resize_file(index_file(), 0); }},
        {"truncated", [&] { std::filesystem::resize_file(index_file(), size / 2); }},
        {"one byte short", [&] { std::filesystem::resize_file(index_file(), size - 1); }},
        {"flipped byte in the graph", [&] { flip_at(size / 2); }},
        {"flipped byte in the header", [&] { flip_at(40); }},
        {"garbage",
         [&] {
             std::ofstream(index_file(), std::ios::binary | std::ios::trunc)
                 << std::string(5000, 'x');
         }},
    };
    for (const auto& damage : damages) {
        SCOPED_TRACE(damage.name);
        std::filesystem::copy_file(good, index_file(),
                                   std::filesystem::copy_options::overwrite_existing);
        damage.apply();
        auto index = open_index();
        EXPECT_EQ(index->open_report().source, IndexSource::kRebuilt);
        EXPECT_FALSE(index->open_report().reason.empty());
        EXPECT_EQ(index->counters().rebuilds, 1u);
        EXPECT_EQ(index->size(), 300u);
        for (std::size_t i = 0; i < queries.size(); ++i) {
            EXPECT_EQ(keys_of(*index->search(std::span<const float>(queries[i]), 5)), expected[i]);
        }
    }
}

TEST_P(VectorIndexTest, RebuildsWhenBuiltWithOtherParametersOrForAnotherDatabase) {
    {
        auto index = open_index();
        ASSERT_TRUE(index->add(key_range(1, 40), random_vectors(40, 16, 8), "m"));
        ASSERT_TRUE(index->save());
    }
    auto other_m = small_options();
    other_m.M = 24;
    EXPECT_EQ(open_index(other_m)->open_report().source, IndexSource::kRebuilt);

    // A new database with the old index file at the same place (a new SQLite file; another
    // PostgreSQL schema: another collection, or one deleted and recreated): the file must not be
    // taken for its own.
    db_.reset();
    std::unique_ptr<store_testing::KnowledgeSite> other_site;
    if (on_postgres()) {
        other_site = std::make_unique<store_testing::KnowledgeSite>(GetParam());
        auto other = other_site->connect();
        ASSERT_TRUE(other) << other.error().message;
        db_ = std::move(other).value();
    } else {
        std::filesystem::remove(site_->dir() / "kb.db");
        std::filesystem::remove(site_->dir() / "kb.db-wal");
        std::filesystem::remove(site_->dir() / "kb.db-shm");
        db_ = open_db();
    }
    auto index = open_index();
    EXPECT_EQ(index->open_report().source, IndexSource::kRebuilt);
    EXPECT_EQ(index->open_report().reason, "index file of another database");
    EXPECT_EQ(index->size(), 0u);
    index.reset();
    db_.reset();
}

TEST_P(VectorIndexTest, CatchesUpWithRowsAnotherConnectionWrote) {
    const auto data = random_vectors(200, 16, 9);
    auto first = open_index();
    ASSERT_TRUE(first->add(key_range(1, 100), Vectors(data.begin(), data.begin() + 100), "m"));

    auto other_db = open_db();
    auto second = open_index(*other_db);
    EXPECT_EQ(second->size(), 100u);

    // The other connection adds, replaces and removes; this one sees it before its next search.
    ASSERT_TRUE(second->add(key_range(101, 100), Vectors(data.begin() + 100, data.end()), "m"));
    ASSERT_TRUE(second->add(std::vector<std::int64_t>{1}, Vectors{data[150]}, "m"));
    ASSERT_TRUE(second->remove(std::vector<std::int64_t>{2, 3}));
    const auto rebuilds = first->counters().rebuilds;
    auto found = first->search(std::span<const float>(data[150]), 2);
    ASSERT_TRUE(found) << found.error().message;
    ASSERT_EQ(found->size(), 2u);
    EXPECT_EQ(first->size(), 198u);
    const auto hits = keys_of(*found);
    EXPECT_TRUE(std::find(hits.begin(), hits.end(), 1) != hits.end());
    EXPECT_TRUE(std::find(hits.begin(), hits.end(), 151) != hits.end());
    EXPECT_EQ(first->counters().caught_up_rows, 103u);  // 100 added, 1 replaced, 2 removed
    EXPECT_EQ(first->counters().rebuilds, rebuilds);
    for (const std::int64_t gone : {2, 3}) {
        auto near =
            first->search(std::span<const float>(data[static_cast<std::size_t>(gone - 1)]), 1);
        ASSERT_TRUE(near);
        EXPECT_NE((*near)[0].key, gone);
    }

    // A writer that is behind applies what it missed along with its own rows.
    ASSERT_TRUE(second->add(std::vector<std::int64_t>{500}, Vectors{data[0]}, "m"));
    ASSERT_TRUE(first->add(std::vector<std::int64_t>{501}, Vectors{data[1]}, "m"));
    EXPECT_EQ(first->size(), 200u);
    ASSERT_TRUE(second->refresh());
    EXPECT_EQ(second->size(), 200u);
}

// Issue 34: two store workers (two connections: two hosts on PostgreSQL, each with an index cache
// file of its own) serve one collection. What one adds, replaces or removes, the other's next
// search sees (the stated bound: every write committed before the search started), applied
// incrementally, never by a rebuild.
TEST_P(VectorIndexTest, TwoHostsSeeEachOthersWritesAtTheirNextSearch) {
    const auto data = random_vectors(70, 16, 21);
    auto host_a = open_db();
    auto host_b = open_db();
    auto a = open_index(*host_a, small_options(), "host-a.chunk.hnsw");
    auto b = open_index(*host_b, small_options(), "host-b.chunk.hnsw");
    ASSERT_TRUE(a->add(key_range(1, 50), Vectors(data.begin(), data.begin() + 50), "m"));
    for (std::size_t i = 0; i < 50; i += 7) {
        auto found = b->search(std::span<const float>(data[i]), 1);
        ASSERT_TRUE(found) << found.error().message;
        ASSERT_EQ(found->size(), 1u);
        EXPECT_EQ((*found)[0].key, static_cast<std::int64_t>(i + 1));
    }
    EXPECT_EQ(b->size(), 50u);
    // B opened before the kind had a model: it takes A's first vectors by a rebuild; from then
    // on every change is applied incrementally.
    const auto b_rebuilds = b->counters().rebuilds;
    const auto b_caught_up = b->counters().caught_up_rows;

    ASSERT_TRUE(a->remove(std::vector<std::int64_t>{1, 2}));
    ASSERT_TRUE(a->add(std::vector<std::int64_t>{3}, Vectors{data[60]}, "m"));
    auto gone = b->search(std::span<const float>(data[0]), 50);
    ASSERT_TRUE(gone) << gone.error().message;
    EXPECT_EQ(gone->size(), 48u);
    for (const auto& m : *gone) EXPECT_TRUE(m.key != 1 && m.key != 2) << m.key;
    auto replaced = b->search(std::span<const float>(data[60]), 1);
    ASSERT_TRUE(replaced);
    EXPECT_EQ((*replaced)[0].key, 3);
    EXPECT_NEAR((*replaced)[0].score, 1.0, 1e-5);

    ASSERT_TRUE(b->add(key_range(51, 10), Vectors(data.begin() + 50, data.begin() + 60), "m"));
    auto back = a->search(std::span<const float>(data[55]), 1);
    ASSERT_TRUE(back);
    EXPECT_EQ((*back)[0].key, 56);
    EXPECT_EQ(a->size(), 58u);
    EXPECT_EQ(a->counters().rebuilds, 1u) << "only at open (no index file yet)";
    EXPECT_EQ(a->counters().caught_up_rows, 10u);
    EXPECT_EQ(b->counters().rebuilds, b_rebuilds);
    EXPECT_EQ(b->counters().caught_up_rows, b_caught_up + 3);  // 2 removed, 1 replaced
}

// Two writers at once on two connections while a reader on a third searches all along: every
// write draws its seq with the kind's row locked, so seq order is commit order and the reader,
// applying what is stamped above the seq it has seen, never skips a change committed behind a
// later one. Once the writers are done, its next search holds exactly the stored vectors.
TEST_P(VectorIndexTest, AReaderLosesNoChangeOfTwoConcurrentWriters) {
    constexpr std::size_t kBatches = 25;
    constexpr std::size_t kBatch = 8;
    constexpr std::size_t kDim = 8;
    auto reader_db = open_db();
    auto reader = open_index(*reader_db, small_options(), "reader.chunk.hnsw");
    ASSERT_TRUE(reader->add(std::vector<std::int64_t>{1}, random_vectors(1, kDim, 30), "m"));
    std::vector<std::unique_ptr<storage::sql::Connection>> writer_dbs;
    std::vector<std::unique_ptr<VectorIndex>> writers;
    for (int w = 0; w < 2; ++w) {
        writer_dbs.push_back(open_db());
        writers.push_back(open_index(*writer_dbs.back(), small_options(),
                                     "writer-" + std::to_string(w) + ".chunk.hnsw"));
    }
    std::atomic<int> running{2};
    std::atomic<std::size_t> write_failures{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 2; ++w) {
        threads.emplace_back([&, w] {
            const auto data =
                random_vectors(kBatches * kBatch, kDim, 31 + static_cast<unsigned>(w));
            const std::int64_t base = 1'000 * (w + 1);
            for (std::size_t b = 0; b < kBatches; ++b) {
                const auto first = static_cast<std::ptrdiff_t>(b * kBatch);
                if (!writers[static_cast<std::size_t>(w)]->add(
                        key_range(base + first, kBatch),
                        Vectors(data.begin() + first,
                                data.begin() + first + static_cast<std::ptrdiff_t>(kBatch)),
                        "m"))
                    ++write_failures;
                // Every fifth batch removes the first key of the one before.
                if (b % 5 == 4 && !writers[static_cast<std::size_t>(w)]->remove(
                                      std::vector<std::int64_t>{base + first - 8}))
                    ++write_failures;
            }
            --running;
        });
    }
    const std::vector<float> query(kDim, 1.0f);
    std::size_t search_failures = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (running > 0 && std::chrono::steady_clock::now() < deadline) {
        if (!reader->search(std::span<const float>(query), 5)) ++search_failures;
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(write_failures, 0u);
    EXPECT_EQ(search_failures, 0u);

    // What the reader holds against a fresh rebuild from the rows.
    const std::size_t expected = 1 + 2 * (kBatches * kBatch - kBatches / 5);
    auto all = reader->search(std::span<const float>(query), 10'000);
    ASSERT_TRUE(all) << all.error().message;
    EXPECT_EQ(reader->size(), expected);
    auto fresh_db = open_db();
    auto fresh = open_index(*fresh_db, small_options(), "fresh.chunk.hnsw");
    auto truth = fresh->search(std::span<const float>(query), 10'000);
    ASSERT_TRUE(truth) << truth.error().message;
    auto held = keys_of(*all);
    auto stored = keys_of(*truth);
    std::sort(held.begin(), held.end());
    std::sort(stored.begin(), stored.end());
    EXPECT_EQ(stored.size(), expected);
    EXPECT_EQ(held, stored);
    EXPECT_EQ(reader->counters().rebuilds, 1u) << "only at open (no index file yet)";
}

TEST_P(VectorIndexTest, AFileThatIsBehindIsLoadedAndCaughtUp) {
    const auto data = random_vectors(120, 16, 10);
    {
        auto index = open_index();
        ASSERT_TRUE(index->add(key_range(1, 100), Vectors(data.begin(), data.begin() + 100), "m"));
        ASSERT_TRUE(index->save());
        // Written after the save (as another process would): the file does not cover these.
        ASSERT_TRUE(index->add(key_range(101, 20), Vectors(data.begin() + 100, data.end()), "m"));
        ASSERT_TRUE(index->remove(std::vector<std::int64_t>{5}));
    }
    auto index = open_index();
    EXPECT_EQ(index->open_report().source, IndexSource::kFile) << index->open_report().reason;
    EXPECT_EQ(index->open_report().caught_up, 21u);
    EXPECT_EQ(index->size(), 119u);
    auto found = index->search(std::span<const float>(data[110]), 1);
    ASSERT_TRUE(found);
    EXPECT_EQ((*found)[0].key, 111);
}

TEST_P(VectorIndexTest, ModelOrDimensionMismatchIsRejectedAndNothingWritten) {
    auto index = open_index();
    ASSERT_TRUE(index->add(key_range(1, 3), random_vectors(3, 8, 11), "model-a"));

    auto other_model = index->add(key_range(10, 2), random_vectors(2, 8, 12), "model-b");
    ASSERT_FALSE(other_model);
    EXPECT_EQ(other_model.error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(other_model.error().message,
              "index holds model model-a dim 8; got model model-b dim 8");

    auto other_dim = index->add(key_range(10, 2), random_vectors(2, 4, 13), "model-a");
    ASSERT_FALSE(other_dim);
    EXPECT_EQ(other_dim.error().type, ErrorType::kInvalidRequest);
    EXPECT_EQ(other_dim.error().message,
              "index holds model model-a dim 8; got model model-a dim 4");

    EXPECT_EQ(index->size(), 3u);
    EXPECT_EQ(rows(*db_), 3);
    EXPECT_EQ(index->model(), "model-a");
    EXPECT_EQ(index->dim(), 8u);

    const std::vector<float> short_query(4, 1.0f);
    auto bad_query = index->search(std::span<const float>(short_query), 3);
    ASSERT_FALSE(bad_query);
    EXPECT_EQ(bad_query.error().type, ErrorType::kInvalidRequest);
}

TEST_P(VectorIndexTest, InvalidVectorsAreRejectedAndNothingWritten) {
    auto index = open_index();
    const auto nan = std::numeric_limits<float>::quiet_NaN();
    struct Case {
        std::string name;
        std::vector<std::int64_t> keys;
        Vectors vectors;
    };
    const std::vector<Case> cases = {
        {"count mismatch", {1, 2}, {{1, 0}}},    {"repeated key", {1, 1}, {{1, 0}, {0, 1}}},
        {"ragged", {1, 2}, {{1, 0}, {0, 1, 0}}}, {"zero", {1, 2}, {{1, 0}, {0, 0}}},
        {"nan", {1, 2}, {{1, 0}, {nan, 1}}},     {"empty vector", {1}, {{}}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto r = index->add(c.keys, c.vectors, "m");
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest);
    }
    EXPECT_FALSE(index->add(std::vector<std::int64_t>{1}, Vectors{{1, 0}}, ""));
    EXPECT_EQ(rows(*db_), 0);
    EXPECT_EQ(index->size(), 0u);
    EXPECT_EQ(index->dim(), 0u);
    // An empty index answers nothing, whatever the query's length.
    auto empty = index->search(std::span<const float>(std::vector<float>{1, 2, 3}), 5);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
}

TEST_P(VectorIndexTest, AddingAKeyAgainReplacesItsVector) {
    auto index = open_index();
    const Vectors first = {{1, 0, 0, 0}, {0, 0, 1, 0}};
    ASSERT_TRUE(index->add(std::vector<std::int64_t>{1, 2}, first, "m"));
    ASSERT_TRUE(index->add(std::vector<std::int64_t>{1}, Vectors{{0, 1, 0, 0}}, "m"));
    EXPECT_EQ(index->size(), 2u);
    EXPECT_EQ(rows(*db_), 2);
    auto found = index->search(std::span<const float>(std::vector<float>{0, 1, 0, 0}), 1);
    ASSERT_TRUE(found);
    EXPECT_EQ((*found)[0].key, 1);
    EXPECT_NEAR((*found)[0].score, 1.0, 1e-6);
    auto old = index->search(std::span<const float>(std::vector<float>{1, 0, 0, 0}), 2);
    ASSERT_TRUE(old);
    for (const auto& m : *old) EXPECT_NEAR(m.score, 0.0, 1e-6) << m.key;
    // The replacement survives a reload.
    ASSERT_TRUE(index->save());
    index.reset();
    index = open_index();
    EXPECT_EQ(index->open_report().source, IndexSource::kFile);
    found = index->search(std::span<const float>(std::vector<float>{0, 1, 0, 0}), 1);
    EXPECT_EQ((*found)[0].key, 1);
    EXPECT_NEAR((*found)[0].score, 1.0, 1e-6);
}

TEST_P(VectorIndexTest, RemoveDropsKeysAndTheyCanComeBack) {
    const auto data = random_vectors(60, 16, 14);
    const auto keys = key_range(1, data.size());
    auto index = open_index();
    ASSERT_TRUE(index->add(keys, data, "m"));
    ASSERT_TRUE(index->remove(std::vector<std::int64_t>{1, 2, 3, 9999}));  // 9999 never added
    EXPECT_EQ(index->size(), 57u);
    EXPECT_EQ(rows(*db_), 57);
    auto all = index->search(std::span<const float>(data[0]), 100);
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 57u);
    for (const auto& m : *all) EXPECT_GT(m.key, 3);

    ASSERT_TRUE(index->save());
    index.reset();
    index = open_index();
    EXPECT_EQ(index->open_report().source, IndexSource::kFile) << index->open_report().reason;
    EXPECT_EQ(index->size(), 57u);
    ASSERT_TRUE(index->add(std::vector<std::int64_t>{2}, Vectors{data[1]}, "m"));
    auto back = index->search(std::span<const float>(data[1]), 1);
    ASSERT_TRUE(back);
    EXPECT_EQ((*back)[0].key, 2);
    EXPECT_EQ(index->size(), 58u);

    // Removing everything keeps model and dimension; a new model may then take the kind over.
    ASSERT_TRUE(index->remove(keys));
    EXPECT_EQ(index->size(), 0u);
    EXPECT_EQ(index->dim(), 16u);
    ASSERT_TRUE(index->add(std::vector<std::int64_t>{1}, Vectors{{1, 2, 3}}, "other"));
    EXPECT_EQ(index->model(), "other");
    EXPECT_EQ(index->dim(), 3u);
    EXPECT_EQ(index->size(), 1u);
}

TEST_P(VectorIndexTest, GrowsPastItsInitialCapacity) {
    auto options = small_options();
    options.initial_capacity = 4;
    auto index = open_index(options);
    const auto data = random_vectors(150, 16, 15);
    for (std::size_t i = 0; i < data.size(); i += 10) {
        ASSERT_TRUE(index->add(key_range(static_cast<std::int64_t>(i), 10),
                               Vectors(data.begin() + static_cast<std::ptrdiff_t>(i),
                                       data.begin() + static_cast<std::ptrdiff_t>(i + 10)),
                               "m"));
    }
    EXPECT_EQ(index->size(), 150u);
    for (std::size_t i = 0; i < data.size(); i += 7) {
        auto found = index->search(std::span<const float>(data[i]), 1);
        ASSERT_TRUE(found);
        EXPECT_EQ((*found)[0].key, static_cast<std::int64_t>(i));
    }
}

TEST_P(VectorIndexTest, SearchesRunConcurrentlyWithAdds) {
    constexpr std::size_t kDim = 16;
    constexpr std::size_t kBatches = 40;
    constexpr std::size_t kBatch = 25;
    const auto data = random_vectors(kBatches * kBatch, kDim, 16);
    auto index = open_index();
    ASSERT_TRUE(
        index->add(key_range(0, kBatch), Vectors(data.begin(), data.begin() + kBatch), "m"));

    std::atomic<bool> adding{true};
    std::atomic<std::size_t> searches{0};
    std::atomic<std::size_t> failures{0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::vector<std::thread> searchers;
    for (int t = 0; t < 4; ++t) {
        searchers.emplace_back([&, t] {
            std::size_t i = static_cast<std::size_t>(t);
            while ((adding || searches < 100) && std::chrono::steady_clock::now() < deadline) {
                const auto& q = data[i++ % kBatch];  // always present: the first batch
                auto found = index->search(std::span<const float>(q), 5);
                if (!found || found->empty() ||
                    !std::is_sorted(found->begin(), found->end(),
                                    [](const VectorMatch& a, const VectorMatch& b) {
                                        return a.score > b.score;
                                    })) {
                    ++failures;
                } else if (std::abs((*found)[0].score - 1.0f) > 1e-4f) {
                    ++failures;
                }
                ++searches;
            }
        });
    }
    for (std::size_t b = 1; b < kBatches; ++b) {
        const auto first = static_cast<std::ptrdiff_t>(b * kBatch);
        // EXPECT, not ASSERT: the searchers must be joined whatever happens.
        EXPECT_TRUE(index->add(key_range(first, kBatch),
                               Vectors(data.begin() + first,
                                       data.begin() + first + static_cast<std::ptrdiff_t>(kBatch)),
                               "m"));
        if (b % 10 == 0) {
            EXPECT_TRUE(index->remove(std::vector<std::int64_t>{first}));
        }
    }
    adding = false;
    for (auto& t : searchers) t.join();
    EXPECT_EQ(failures, 0u);
    EXPECT_GE(searches, 100u);
    EXPECT_EQ(index->size(), kBatches * kBatch - 3);
}

TEST(IndexKindNames, AreTheTableSuffixes) {
    EXPECT_EQ(to_string(IndexKind::kEntity), "entity");
    EXPECT_EQ(to_string(IndexKind::kChunk), "chunk");
}

GLASSBOX_KNOWLEDGE_BACKENDS(VectorIndexTest);

}  // namespace
}  // namespace glassbox::store
