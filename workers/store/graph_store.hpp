// The knowledge-graph store: dictionary-encoded RDF 1.2 quads with their sources and data tiers,
// in the collection's SQLite file or PostgreSQL schema, read by graph RAG through pattern
// matches, labels and entities.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "storage/sql.hpp"
#include "workers/store/graph_labels.hpp"
#include "workers/store/graph_sources.hpp"
#include "workers/store/knowledge_change.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

struct InsertCounts {
    std::uint64_t added = 0;            // quads new to the store
    std::uint64_t already_present = 0;  // quads stored before (from this or another source)
    bool operator==(const InsertCounts&) const = default;
};

// Who owns the transaction an insert runs in.
enum class TransactionMode {
    // The insert opens BEGIN IMMEDIATE and commits; the usual case.
    kOwn,
    // The caller has already begun a write transaction (BEGIN IMMEDIATE, storage::Transaction);
    // the insert runs in a SAVEPOINT inside it, so a failed insert still writes nothing, and the
    // caller decides commit or rollback. Term ids learned meanwhile are not cached (they could be
    // rolled back); call forget_cached_terms() after rolling back a transaction in which match()
    // or other reads ran.
    kCallers,
};

struct GraphStats {
    std::uint64_t quads = 0;
    std::uint64_t subjects = 0;    // distinct
    std::uint64_t predicates = 0;  // distinct
    std::uint64_t objects = 0;     // distinct
    std::uint64_t terms = 0;       // dictionary entries (includes quoted triples and graph names)
    std::uint64_t graphs = 0;      // distinct named graphs (the default graph not counted)
    std::uint64_t sources = 0;
    // facts_per_tier[t] for t in 1..4: quads whose best (lowest) source tier is t; [0] unused.
    std::array<std::uint64_t, 5> facts_per_tier{};
    bool operator==(const GraphStats&) const = default;
};

struct GraphStoreOptions {
    // Entries per generation of the term → id cache (two generations: the older is dropped when
    // the newer fills, so memory stays bounded and hot terms survive). About 80 B per entry;
    // 500,000 holds the 470,000 distinct terms of bench_load's 1M triples in one generation.
    std::size_t term_cache_entries = 500'000;
    // Writes keep the hash of every dictionary key in memory (4 bytes each, at most 8 per term
    // with the table's slack), so interning a term the store has never seen needs no lookup in
    // the file. Above this many terms the set is not kept and every new term is looked up.
    std::size_t known_term_limit = 4'000'000;
    // Entries of the id → term cache used to decode results (same two-generation policy).
    std::size_t decode_cache_entries = 100'000;
    // Entries of the id → best label cache of labels() and labels_of_stored (same policy; it
    // is emptied whenever the file changes).
    std::size_t label_cache_entries = 100'000;
    // Staged quads commit_staged() sorts and writes at a time (40 bytes each in memory): bounds
    // a commit's memory; a load up to this size is written in one sorted pass per order.
    std::size_t staged_commit_group = 2'000'000;
};

// Answers per pattern when the caller passes limit 0, and the most any limit can ask for.
inline constexpr std::uint32_t kMaxMatchLimit = 10'000;
// Rows per callback batch of match_each and export_provenance when the caller passes 0.
inline constexpr std::size_t kDefaultStreamBatch = 1'000;

// Bounds the matching of one request (issue 16: one small request must not cost gigabytes).
// Each matched triple takes its estimated wire size (triple_wire_bytes) off `bytes_left`; the
// first triple that does not fit ends the match with `over_bytes` set (that triple left out).
// `should_stop` (a cancelled or expired request) is asked every kBudgetCheckRows rows and ends
// the match with `stopped` set. Either way the result is cut short: the caller answers an error.
struct MatchBudget {
    std::size_t bytes_left = SIZE_MAX;
    std::function<bool()> should_stop;
    bool over_bytes = false;
    bool stopped = false;
    bool exhausted() const noexcept { return over_bytes || stopped; }
};
inline constexpr std::size_t kBudgetCheckRows = 256;

// About the bytes a triple takes in a JSON reply (compact term encoding, docs/vocabulary.md):
// its strings plus the keys and punctuation around them. Escapes may add to it (a quote or a
// newline doubles its byte), so callers keep their byte budget well under any hard limit.
std::size_t triple_wire_bytes(const schema::Triple& triple) noexcept;
std::size_t term_wire_bytes(const schema::Term& term) noexcept;

// One GraphStore per open knowledge-base connection; not thread-safe (like the connection it uses).
// Several processes may share the file (WAL): term ids are never reused or deleted, so cached
// ids stay valid, and writers serialise on SQLite's write lock.
//
// Patterns: an absent s/p/o matches anything; g absent matches every graph, g == "" only the
// default graph, g == IRI that named graph. Quoted triples match in subject and object position
// (by value, nested ones too). A term the store has never seen matches nothing (not an error).
class GraphStore {
public:
    // Creates the tables if needed (terms, quads, fact_sources, sources; none of the names other
    // parts of the knowledge store use).
    static base::Result<std::unique_ptr<GraphStore>> open(storage::sql::Connection& db,
                                                          GraphStoreOptions options = {});

    GraphStore(const GraphStore&) = delete;
    GraphStore& operator=(const GraphStore&) = delete;

    // Idempotent by uri: registering again updates kind, document_uri, tier, loaded_at and
    // media_type and returns the same id. tier outside 1..4, an empty uri, or a chunk without a
    // document_uri is kInvalidRequest.
    base::Result<std::int64_t> register_source(const SourceRecord& source);

    // Adds the quads and links each (new or present) to the source. Idempotent: the same quads
    // from the same source again add nothing. Every triple is checked first; an invalid one is a
    // kInvalidRequest naming it and its index, and nothing from the call is written. An unknown
    // source_id is kNotFound.
    base::Result<InsertCounts> insert(std::int64_t source_id,
                                      std::span<const schema::Triple> triples,
                                      TransactionMode mode = TransactionMode::kOwn);

    // ---- staged (bulk) loads ----
    // A big load is staged batch by batch and made visible at once: stage() interns the terms
    // and keeps the batch's quads in an unindexed staging table (one short transaction per
    // call; no fact, source or link is visible yet), commit_staged() moves everything staged
    // under `load` into the graph in one transaction (sorted, so each index is written in key
    // order), abort_staged() drops it. Any process on the same file may stage, commit or abort
    // (the staging lives in the file). The result equals insert() of the same batches: the same
    // quads, first sources, fact→source links and counts; only dictionary entries interned by a
    // staged load that is never committed remain (unused terms, invisible to every query).
    //
    // `load` names the staged load: 1-64 of A-Z a-z 0-9 _ - . (kInvalidRequest otherwise);
    // callers pick a random one per load. Triples are checked as by insert(). The source is
    // registered at commit (its fields as the last stage() of that uri gave them).
    // Staged loads untouched for a day are dropped by the next stage() or commit_staged().
    base::Result<std::uint64_t> stage(std::string_view load, const SourceRecord& source,
                                      std::span<const schema::Triple> triples);
    // The same for a batch built by TermBatch::build (which checks the triples) before the
    // caller took its lock: the keys and hashes of its terms, duplicates merged, are then not
    // computed while other requests wait.
    base::Result<std::uint64_t> stage(std::string_view load, const SourceRecord& source,
                                      const TermBatch& batch);
    // Counts over everything staged under `load` (statements = added + already_present);
    // committing a load with nothing staged (or already committed) is all zeros.
    base::Result<InsertCounts> commit_staged(std::string_view load);
    // A replacing commit (`glassbox load rdf --replace`): in the same transaction, each source of
    // the load first loses the facts it provided before and no longer states (a fact left with
    // no source is deleted; unchanged facts keep their rows). `change` gets what it did.
    base::Result<InsertCounts> commit_staged(std::string_view load, KnowledgeChange& change);

    // Retractions (knowledge_change.hpp), each its own write transaction; kNotFound for a source,
    // fact or document the collection does not hold.
    base::Result<KnowledgeChange> forget_source(std::string_view uri);
    base::Result<KnowledgeChange> forget_fact(const schema::Triple& fact);
    base::Result<KnowledgeChange> forget_document(std::string_view uri);
    base::Result<void> abort_staged(std::string_view load);

    // At most `limit` quads (0 or more than kMaxMatchLimit: kMaxMatchLimit), in index order;
    // with a budget, fewer once it is exhausted (see MatchBudget).
    base::Result<std::vector<schema::Triple>> match(const schema::TriplePattern& pattern,
                                                    std::uint32_t limit = 0,
                                                    MatchBudget* budget = nullptr);
    // results[i] answers patterns[i]; every pattern is read from one snapshot. With a budget,
    // an exhausted budget ends the batch (the results so far are returned, the last one cut).
    // With `ids`, (*ids)[i] gets the stored ids of results[i]'s terms: subject, predicate and
    // object of each triple in turn (for labels_of_stored). With `first_rows`, results[i] holds
    // only the first first_rows->rows matches (a prefix of what the limit alone answers) and
    // first_rows->counts[i] patterns[i]'s number of matches up to the limit: on SQLite the
    // matches past `rows` are counted on the key order's index, never read or decoded. A budget
    // counts the bytes of the rows kept only.
    struct FirstRows {
        std::uint32_t rows = 0;
        std::vector<std::uint32_t> counts;
    };
    base::Result<std::vector<std::vector<schema::Triple>>> match_batch(
        std::span<const schema::TriplePattern> patterns, std::uint32_t limit_per_pattern = 0,
        MatchBudget* budget = nullptr, std::vector<std::vector<std::int64_t>>* ids = nullptr,
        FirstRows* first_rows = nullptr);
    // Every match, `batch_size` (0: kDefaultStreamBatch) at a time; stops early when on_batch
    // returns false. The callback may call this store again.
    using TripleBatchFn = std::function<bool(std::span<const schema::Triple>)>;
    base::Result<void> match_each(const schema::TriplePattern& pattern, std::size_t batch_size,
                                  const TripleBatchFn& on_batch);

    // Where a fact came from: one entry per source, best tier first. Empty if the fact is not
    // stored. The graph of `fact` is part of the fact.
    base::Result<std::vector<SourceRecord>> sources_of(const schema::Triple& fact);
    // sources_of() of each fact (results[i] for facts[i]), read from one snapshot; on
    // PostgreSQL by one statement for them all (and one for their terms' ids), not three round
    // trips a fact. With a budget, each source takes the bytes of its strings (uri,
    // document_uri, loaded_at, source_date: less than its wire size) off `bytes_left`, the first
    // that does not fit ending the reading with `over_bytes` set, and should_stop is asked before
    // each fact read on its own (SQLite), ending it with `stopped` set; either way the results
    // are cut short.
    base::Result<std::vector<std::vector<SourceRecord>>> sources_of_each(
        std::span<const schema::Triple> facts, MatchBudget* budget = nullptr);

    // One label per term, in order: its rdfs:label (language "en", then none, then any), else an
    // IRI's local name (after the last '#', '/' or ':'), else a literal's value, else the
    // N-Triples form (blank nodes, quoted triples).
    // Labels adding up to more than `max_bytes`: kInvalidRequest (see read_labels).
    base::Result<std::vector<std::string>> labels(std::span<const schema::Term> terms,
                                                  std::size_t max_bytes = SIZE_MAX);

    // labels() of terms whose stored ids are known (ids[i] is terms[i]'s, from match_batch),
    // without looking them up; above `max_bytes`: kInvalidRequest naming `op`.
    base::Result<std::vector<std::string>> labels_of_stored(
        std::span<const std::int64_t> ids, std::span<const schema::Term* const> terms,
        std::string_view op, std::size_t max_bytes = SIZE_MAX);

    // IRIs that are the subject or object of a quad, with id > after_id, in id order.
    base::Result<std::vector<Entity>> entities_after(std::int64_t after_id, std::size_t limit);
    // What the `index` op embeds next: first the entities a change left with no fact (their
    // vectors removed) that are the subject or object of a quad again (their ids are below the
    // index mark), each returned once; then entities_after(after_id, limit).
    base::Result<std::vector<Entity>> entities_to_index(std::int64_t after_id, std::size_t limit);
    // The terms with these ids, in order; an id the store does not have is kNotFound.
    base::Result<std::vector<schema::Term>> terms(std::span<const std::int64_t> ids);
    // The id of a stored term, or nullopt (for callers that hold ids, e.g. the vector index).
    base::Result<std::optional<std::int64_t>> find_term(const schema::Term& term);

    // Counts; scans the quads (seconds at tens of millions), so not for a hot path.
    base::Result<GraphStats> stats();

    // Extraction provenance as PROV triples in graph urn:graph:source, streamed in batches:
    // each source is a prov:Entity (gb:Document / gb:Chunk for those kinds) with gb:dataTier
    // (xsd:integer) and prov:generatedAtTime (its loaded_at, when known); a chunk
    // prov:wasDerivedFrom its document; each fact, as a quoted triple << s p o >>,
    // prov:wasDerivedFrom each source it was loaded from.
    base::Result<void> export_provenance(std::size_t batch_size, const TripleBatchFn& on_batch);

    // Drops both term caches (see TransactionMode::kCallers).
    void forget_cached_terms() noexcept;

private:
    GraphStore(storage::sql::Connection& db, GraphStoreOptions options);

    base::Result<void> create_schema();
    base::Result<void> migrate_index_tables();
    // One result row (s, p, o, g ids, then the object's kind, value, qualifier) as a triple.
    // Positions the pattern binds are copied from it; the previous row's subject and predicate
    // are reused when the ids repeat (rows come in key order), so most rows need no lookup.
    struct RowMemo {
        std::int64_t s = 0, p = 0;
        schema::Term s_term, p_term;
    };
    base::Result<schema::Triple> decode_row(const storage::sql::Row& st,
                                            const schema::TriplePattern& pattern, RowMemo& memo);
    // A provenance row's fact (s, p, o ids first; with `joined`, their terms from column 4 on).
    base::Result<schema::Triple> fact_of_row(const storage::sql::Row& row, bool joined);
    base::Result<InsertCounts> insert_rows(std::int64_t source_id,
                                           std::span<const schema::Triple> triples);
    base::Result<InsertCounts> insert_rows_by_sets(std::int64_t source_id,
                                                   std::span<const schema::Triple> triples);
    // match_batch on PostgreSQL: the patterns' terms looked up together, and every pattern of a
    // shape answered by one statement (a round trip per shape, not per pattern and term).
    base::Result<std::vector<std::vector<schema::Triple>>> match_batch_by_sets(
        std::span<const schema::TriplePattern> patterns, std::uint32_t limit, MatchBudget* budget,
        std::vector<std::vector<std::int64_t>>* ids, FirstRows* first_rows);
    // A quad as a triple: the positions `pattern` binds copied from it, the rest decoded.
    base::Result<schema::Triple> decode_quad(const detail::Quad& q,
                                             const schema::TriplePattern& pattern);
    // With `ids`, appends each row's subject, predicate and object ids to it. With `count`, reads
    // only the first `rows` matches and sets *count to the number of matches up to `limit`.
    base::Result<std::vector<schema::Triple>> match_rows(const schema::TriplePattern& pattern,
                                                         std::uint32_t limit, MatchBudget* budget,
                                                         std::vector<std::int64_t>* ids = nullptr,
                                                         std::uint32_t* count = nullptr,
                                                         std::uint32_t rows = kMaxMatchLimit);

    storage::sql::Connection& db_;
    GraphStoreOptions options_;
    TermDictionary dictionary_;
    LabelCache labels_;
    // match_rows' statement text per pattern shape (match_shape), built on first use.
    static constexpr std::size_t kMatchShapes = 32;
    std::array<std::string, kMatchShapes> match_sql_by_shape_;
};

}  // namespace glassbox::store
