// Human-readable labels of graph terms (rdfs:label by language preference, else a name derived
// from the term) and the entity list the vector index is built from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sql.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

// An entity for vector indexing: an IRI that is the subject or object of some quad.
struct Entity {
    std::int64_t id = 0;  // the key the VectorIndex stores; stable for the file's life
    schema::Term term;
    std::string label;  // as labels() gives it
    bool operator==(const Entity&) const = default;
};

// The best rdfs:label of term ids read before (or that they have none), kept while the file is
// unchanged: graph-rag asks for the labels of every edge it explores, and the same predicates
// and hub entities come back in nearly every request. Each use starts with sync(), which drops
// everything when this connection has written anything (total_changes) or another connection
// has committed (data_version) since the last sync: a label is never older than the file. On
// PostgreSQL, where other hosts write the same collection and neither counter exists, every
// write of quads marks graph_version (note_graph_change) in its transaction, and sync() reads
// the mark (one round trip, against a labels statement saved).
// Bounded like the term caches (two generations). Not thread-safe, like the connection.
class LabelCache {
public:
    explicit LabelCache(std::size_t capacity) { entries_.capacity = capacity; }

    // False inside a write transaction: what it reads may be rolled back (which total_changes
    // does not show), so it is neither served from nor kept in the cache.
    base::Result<bool> sync(storage::sql::Connection& db);
    // nullptr: not known; else the label (nullopt: the id has no rdfs:label).
    const std::optional<std::string>* find(std::int64_t id) { return entries_.find(id); }
    void put(std::int64_t id, std::optional<std::string> label) {
        entries_.put(id, std::move(label));
    }

private:
    base::Result<bool> sync_postgres(storage::sql::Connection& db);

    detail::TwoGenerationCache<std::int64_t, std::optional<std::string>> entries_;
    std::int64_t total_changes_ = -1;
    std::int64_t data_version_ = -1;
    std::int64_t version_ = -1;  // PostgreSQL: graph_version's count and writer when last synced
    std::int64_t writer_ = -1;
};

// Inside every write transaction that changes what the collection states (quads, sources): marks
// it changed for every process's LabelCache (PostgreSQL; SQLite's data_version tells) and moves
// the collection's change number its SPARQL mirror follows (graph_version on both engines).
base::Result<void> note_graph_change(storage::sql::Connection& db);

// One label per term, in order (see GraphStore::labels). Labels adding up to more than
// `max_bytes` end it with kInvalidRequest saying so (the same long label asked for many times
// would otherwise be copied as often).
base::Result<std::vector<std::string>> read_labels(storage::sql::Connection& db,
                                                   TermDictionary& dictionary, LabelCache& cache,
                                                   std::span<const schema::Term> terms,
                                                   std::size_t max_bytes = SIZE_MAX);

// The same labels for terms whose stored ids are known (ids[i] is terms[i]'s, as a match gives
// them): no term is looked up, and each distinct id's rdfs:label is read once. Labels adding up
// to more than `max_bytes` end it with kInvalidRequest naming `op`.
base::Result<std::vector<std::string>> read_labels_of_stored(
    storage::sql::Connection& db, TermDictionary& dictionary, LabelCache& cache,
    std::span<const std::int64_t> ids, std::span<const schema::Term* const> terms,
    std::string_view op, std::size_t max_bytes = SIZE_MAX);

// Gives each of `entities` (id and term set) its label, as read_entities_after does.
base::Result<void> label_entities(storage::sql::Connection& db, TermDictionary& dictionary,
                                  std::vector<Entity>& entities);

// At most `limit` entities with id > after_id, in id order, each with its label.
base::Result<std::vector<Entity>> read_entities_after(storage::sql::Connection& db,
                                                      TermDictionary& dictionary,
                                                      std::int64_t after_id, std::size_t limit);

}  // namespace glassbox::store
