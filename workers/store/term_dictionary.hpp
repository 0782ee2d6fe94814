// The graph store's term dictionary: each RDF term stored once in graph_terms under a stable
// integer id, with the in-memory caches that spare most lookups in the file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sql.hpp"
#include "workers/store/term_batch.hpp"
#include "workers/store/term_cache.hpp"

namespace glassbox::store {

namespace detail {

// Term kinds as stored (never renumber: they are on disk).
enum StoredKind : int { kIri = 0, kBlank = 1, kTypedLiteral = 2, kLangLiteral = 3, kQuoted = 4 };

// The dictionary's lookup key hash (stored in the file, so it must never change).
std::int64_t key_hash(std::string_view key) noexcept;
// An absolute IRI with none of the bytes N-Quads refuses in one (controls, space, <>"{}|^`\).
bool valid_iri(std::string_view iri) noexcept;
// Appends the decimal form of `id`.
void append_id(std::string& key, std::int64_t id);

// The kind and fields of a term that is not a quoted triple, as stored; the views point into
// the term.
struct SimpleKey {
    int kind;
    std::string_view value;
    std::string_view qualifier;
};
// Writes the dictionary key of a term that is not a quoted triple into `key` (replacing what it
// held): a tag byte, then its fields.
SimpleKey encode_simple(const schema::Term& term, std::string& key);

// Empty when the term may stand in `position` ("subject", "predicate", "object", "graph"); else
// why not, the position first. `depth`: how deep in quoted triples the term is.
std::string check_term(const schema::Term& term, std::string_view position, int depth = 0);
// Empty when the triple may be stored; else why not (absolute IRIs, no literal subject, …).
std::string check_triple(const schema::Triple& triple);
// Checks every triple before anything is written: the first invalid one is a kInvalidRequest
// naming it and its index.
base::Result<void> check_triples(std::span<const schema::Triple> triples);

// A statement as dictionary ids (g = 0: the default graph).
struct Quad {
    std::int64_t s, p, o, g;
    auto operator<=>(const Quad&) const = default;
};

// Bounded map: when `current` reaches capacity it becomes `previous` and a new one starts.
template <typename K, typename V>
struct TwoGenerationCache {
    std::size_t capacity = 0;
    std::unordered_map<K, V> current;
    std::unordered_map<K, V> previous;

    const V* find(const K& key) {
        if (auto it = current.find(key); it != current.end()) return &it->second;
        auto it = previous.find(key);
        if (it == previous.end()) return nullptr;
        V value = std::move(it->second);
        previous.erase(it);
        put(key, std::move(value));
        auto again = current.find(key);
        return again == current.end() ? nullptr : &again->second;
    }
    void put(K key, V value) {
        if (capacity == 0) return;
        if (current.size() >= capacity) {
            previous = std::move(current);
            current = {};
            current.reserve(capacity);
        }
        current.insert_or_assign(std::move(key), std::move(value));
    }
    void clear() noexcept {
        current.clear();
        previous.clear();
    }
};

}  // namespace detail

// Term ids are never reused or deleted, so cached ids stay valid across processes sharing the
// file. Not thread-safe (like the connection it uses).
class TermDictionary {
public:
    // term_cache_entries, known_term_limit and decode_cache_entries: see GraphStoreOptions.
    TermDictionary(storage::sql::Connection& db, std::size_t term_cache_entries,
                   std::size_t known_term_limit, std::size_t decode_cache_entries);

    TermDictionary(const TermDictionary&) = delete;
    TermDictionary& operator=(const TermDictionary&) = delete;

    // Lookup-only encoding: nullopt when the term (or a part of a quoted one) is not stored.
    base::Result<std::optional<std::int64_t>> lookup_id(const schema::Term& term);
    // "" is the default graph (id 0).
    base::Result<std::optional<std::int64_t>> lookup_graph(const std::string& graph);
    // Lookup or insert (inside a write transaction).
    base::Result<std::int64_t> intern(const schema::Term& term);

    // The previous statement's terms and ids within one batch: consecutive statements of a file
    // usually share their subject (dumps are grouped by subject), often the predicate and graph.
    struct StatementMemo {
        const schema::Term* s = nullptr;
        const schema::Term* p = nullptr;
        const std::string* g = nullptr;
        std::int64_t s_id = 0, p_id = 0, g_id = 0;
    };
    // The ids of a statement's s, p, o and graph (0: the default graph), interning what is new;
    // a position equal to the previous statement's reuses its id without a lookup.
    base::Result<std::array<std::int64_t, 4>> intern_statement(const schema::Triple& triple,
                                                               StatementMemo& memo);

    // The ids of a batch's distinct terms (in TermBatch::terms() order), interning what is new
    // (inside a write transaction). Each distinct term is looked up once, the cache's slots
    // fetched ahead; the new ones are inserted in the order of their first occurrence (the ids a
    // statement-by-statement load gives). The batch must not be by_statement().
    base::Result<std::vector<std::int64_t>> intern_batch(const TermBatch& batch);

    base::Result<schema::Term> decode(std::int64_t id);

    // PostgreSQL: caches the ids of these terms (quoted triples left out) that are stored and
    // not cached yet, read by one statement, so that the lookups that follow need no round trip
    // each. Does nothing on SQLite (a lookup there costs microseconds) or while not caching.
    base::Result<void> prefetch_ids(std::span<const schema::Term* const> terms);
    // PostgreSQL: puts the terms of these ids (0 and repeats allowed) that the decode cache lacks
    // into it (and their ids into the term cache), read by one statement, so that decode() and
    // lookup_id() of them need no round trip each. Quoted triples' parts are decoded as usual.
    // Nothing on SQLite or while not caching.
    base::Result<void> prefetch_terms(std::span<const std::int64_t> ids);

    // At the start of the store's own write transaction: brings the known-hash set up to date
    // with the file (the write lock keeps it so until the transaction ends), and marks it usable.
    base::Result<void> sync_known_terms();
    // Marks the known-hash set unusable when the transaction that synchronised it ends.
    class KnownTermsScope {
    public:
        explicit KnownTermsScope(TermDictionary& dictionary) noexcept : dictionary_(dictionary) {}
        ~KnownTermsScope() { dictionary_.known_ready_ = false; }
        KnownTermsScope(const KnownTermsScope&) = delete;
        KnownTermsScope& operator=(const KnownTermsScope&) = delete;

    private:
        TermDictionary& dictionary_;
    };

    // While false (inside a caller's transaction) ids learned are not cached: they could be
    // rolled back.
    void set_caching(bool on) noexcept { caching_ = on; }
    // Drops both caches and the known-hash set (after a rollback).
    void forget_cached_terms() noexcept;

private:
    // The largest term id in the file (0 when it has none); ids are never deleted or reused.
    base::Result<std::int64_t> largest_term_id();
    base::Result<std::int64_t> intern_key(std::string& key, int kind, std::string_view value,
                                          std::string_view qualifier, const std::int64_t* parts);
    // Inserts a term known to be new; its id.
    base::Result<std::int64_t> insert_key(std::int64_t hash, int kind, std::string_view value,
                                          std::string_view qualifier, const std::int64_t* parts);
    base::Result<std::optional<std::int64_t>> find_key(std::int64_t hash, int kind,
                                                       std::string_view value,
                                                       std::string_view qualifier,
                                                       const std::int64_t* parts);
    // The ids of the batch's terms `missed` (indexes in batch.terms()) that the file holds, by
    // one statement per slice; the others go to `fresh`, in the order of first occurrence.
    base::Result<void> find_batch_keys(const TermBatch& batch,
                                       std::span<const std::uint32_t> missed,
                                       std::vector<std::int64_t>& ids,
                                       std::vector<std::uint32_t>& fresh);
    // Inserts a batch's new terms (indexes in batch.terms(), in the order of first occurrence) by
    // one statement through the row feed kTermFeedTable, and sets their ids.
    base::Result<void> insert_new_terms(const TermBatch& batch,
                                        std::span<const std::uint32_t> fresh,
                                        std::vector<std::int64_t>& ids);
    // Empties the known-hash set: the next write transaction synchronises it from scratch.
    void drop_known_terms() noexcept;

    // The row feed a batch's new terms are inserted through (registered on first use).
    static constexpr const char* kTermFeedTable = "glassbox_term_feed";

    storage::sql::Connection& db_;
    std::size_t known_term_limit_;
    bool term_feed_registered_ = false;
    bool caching_ = true;     // false while inside a caller's transaction
    std::string key_buffer_;  // the key of the term being interned (not used for quoted triples)
    TermIdCache term_ids_;
    detail::TwoGenerationCache<std::int64_t, schema::Term> decoded_;
    // Every dictionary key's hash, complete through term id known_through_; trusted only while
    // known_ready_ (inside a write transaction that synchronised it).
    TermHashSet known_hashes_;
    std::int64_t known_through_ = 0;
    bool known_ready_ = false;
};

}  // namespace glassbox::store
