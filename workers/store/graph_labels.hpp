// Human-readable labels of graph terms (rdfs:label by language preference, else a name derived
// from the term) and the entity list the vector index is built from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

// An entity for vector indexing: an IRI that is the subject or object of some quad.
struct Entity {
    std::int64_t id = 0;  // the key the VectorIndex stores; stable for the file's life
    schema::Term term;
    std::string label;  // as labels() gives it
    bool operator==(const Entity&) const = default;
};

// One label per term, in order (see GraphStore::labels). Labels adding up to more than
// `max_bytes` end it with kInvalidRequest saying so (the same long label asked for many times
// would otherwise be copied as often).
base::Result<std::vector<std::string>> read_labels(storage::Database& db,
                                                   TermDictionary& dictionary,
                                                   std::span<const schema::Term> terms,
                                                   std::size_t max_bytes = SIZE_MAX);

// The same labels for terms whose stored ids are known (ids[i] is terms[i]'s, as a match gives
// them): no term is looked up, and each distinct id's rdfs:label is read once. Labels adding up
// to more than `max_bytes` end it with kInvalidRequest naming `op`.
base::Result<std::vector<std::string>> read_labels_of_stored(
    storage::Database& db, TermDictionary& dictionary, std::span<const std::int64_t> ids,
    std::span<const schema::Term* const> terms, std::string_view op,
    std::size_t max_bytes = SIZE_MAX);

// At most `limit` entities with id > after_id, in id order, each with its label.
base::Result<std::vector<Entity>> read_entities_after(storage::Database& db,
                                                      TermDictionary& dictionary,
                                                      std::int64_t after_id, std::size_t limit);

}  // namespace glassbox::store
