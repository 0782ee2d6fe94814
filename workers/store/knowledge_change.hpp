// Changing and retracting knowledge (docs/knowledge.md, "Changing and retracting knowledge"):
// a replacing load's retraction of what a source no longer states, and forgetting a source, a
// fact or a document, each inside one write transaction, with what the change did for its trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sql.hpp"
#include "workers/store/graph_labels.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

// A change's trace lists at most this many removed facts (gb:removedListed says whether all).
inline constexpr std::size_t kMaxListedRemovals = 10'000;

// What a change is: the gb:changeKind of its trace.
inline constexpr std::string_view kChangeReplace = "replace";
inline constexpr std::string_view kChangeForgetSource = "forget-source";
inline constexpr std::string_view kChangeForgetFact = "forget-fact";
inline constexpr std::string_view kChangeForgetDocument = "forget-document";

// A fact no longer stored after a change, and the sources it had.
struct RemovedFact {
    schema::Triple fact;
    std::vector<std::string> sources;
};

// What a change did to one source.
struct SourceChange {
    std::string uri;
    std::uint64_t added = 0;      // facts the source states now and did not before
    std::uint64_t removed = 0;    // facts it stated before that are no longer stored
    std::uint64_t kept = 0;       // facts it no longer states that another source still does
    std::uint64_t unchanged = 0;  // facts it states as before
};

// What one change did: counts, the removed facts (the first kMaxListedRemovals), and what the
// caller must drop from the vector indexes once the transaction committed.
struct KnowledgeChange {
    std::string kind;
    std::vector<SourceChange> sources;  // replace: one per source of the load
    std::uint64_t facts_added = 0;
    std::uint64_t facts_removed = 0;
    std::uint64_t facts_kept = 0;
    std::uint64_t facts_unchanged = 0;
    std::vector<RemovedFact> removed;
    std::vector<std::string> used;                // the sources replaced or forgotten (prov:used)
    std::vector<std::string> removed_sources;     // sources, documents and chunks no longer stored
    std::vector<std::int64_t> orphaned_entities;  // entity ids with no fact left
    std::vector<std::int64_t> removed_chunks;     // chunk rowids deleted
    bool removed_listed() const noexcept { return removed.size() == facts_removed; }
};

// A quad as its term ids (g 0: the default graph).
struct QuadIds {
    std::int64_t s = 0, p = 0, o = 0, g = 0;
    bool operator==(const QuadIds&) const = default;
    bool operator<(const QuadIds& other) const noexcept {
        return std::tie(s, p, o, g) < std::tie(other.s, other.p, other.o, other.g);
    }
};

// Retractions inside the caller's write transaction; finish() once every fact is done.
class FactRetraction {
public:
    FactRetraction(storage::sql::Connection& db, TermDictionary& dictionary,
                   KnowledgeChange& change)
        : db_(db), dictionary_(dictionary), change_(change) {}

    enum class Outcome { kNotStored, kKept, kRemoved };
    // The fact loses `source` (its first source, or a further one); a fact left with no source
    // is removed from every quad table, unless `successor` (a source about to state it: another
    // file of the same replacing load) takes its place. `source_uri` names it in the trace.
    base::Result<Outcome> retract(const QuadIds& q, std::int64_t source,
                                  const std::string& source_uri, std::int64_t successor = 0);
    // Removes the fact whatever its sources (listed with `sources`).
    base::Result<void> remove(const QuadIds& q, std::vector<std::string> sources);
    // The entities left with no fact (for the vector index) and the graph's change mark.
    base::Result<void> finish();

private:
    base::Result<void> delete_rows(const QuadIds& q);
    base::Result<void> list_removed(const QuadIds& q, std::vector<std::string> sources);

    storage::sql::Connection& db_;
    TermDictionary& dictionary_;
    KnowledgeChange& change_;
    std::vector<std::int64_t> touched_;  // subjects and objects of removed facts
};

// At most `limit` entities a change left with no fact (FactRetraction::finish notes them) that
// are the subject or object of a quad again, labelled; each is returned once (its note goes).
base::Result<std::vector<Entity>> take_restored_entities(storage::sql::Connection& db,
                                                         TermDictionary& dictionary,
                                                         std::size_t limit);

// The facts a source provides (as first source or further one), sorted.
base::Result<std::vector<QuadIds>> facts_of_source(storage::sql::Connection& db,
                                                   std::int64_t source);

// The id of the source with this uri, or 0.
base::Result<std::int64_t> source_id_of(storage::sql::Connection& db, std::string_view uri);

// A replacing commit, before its staged quads are written: for each source of the load
// (`source_ids`: the load's number -> source id, `uris` its uri by source id), every fact the
// source provided that `staged` (sorted, by source id) no longer holds loses that source.
struct StagedFact {
    QuadIds q;
    std::int64_t source = 0;
};
base::Result<void> retract_replaced(storage::sql::Connection& db, TermDictionary& dictionary,
                                    std::span<const StagedFact> staged,
                                    const std::unordered_map<std::int64_t, std::string>& uris,
                                    KnowledgeChange& change);

// "<s> <p> "o" <g>": a fact as its change's description and errors name it (N-Quads terms).
std::string fact_text(const schema::Triple& fact);

// Each its own write transaction; kNotFound for an unknown source, fact or document.
base::Result<KnowledgeChange> forget_source(storage::sql::Connection& db,
                                            TermDictionary& dictionary, std::string_view uri);
base::Result<KnowledgeChange> forget_fact(storage::sql::Connection& db, TermDictionary& dictionary,
                                          const schema::Triple& fact);
// The document, its chunks (their keyword rows go with them), the facts whose only sources were
// the document or its chunks, and those source records.
base::Result<KnowledgeChange> forget_document(storage::sql::Connection& db,
                                              TermDictionary& dictionary, std::string_view uri);

}  // namespace glassbox::store
