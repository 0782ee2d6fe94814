// The dictionary-encoded form of a load-triples batch: each distinct term written once, the
// statements as indexes into those terms (docs/protocol.md, load-triples), so that the store
// parses and checks a term once per batch however many statements use it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// The graph index of a statement in the default graph.
inline constexpr std::uint32_t kDefaultGraphIndex = std::numeric_limits<std::uint32_t>::max();

// A batch read from its two texts: the terms in line order, and per statement the indexes of
// its subject, predicate, object and graph (kDefaultGraphIndex for the default graph). Each
// index is below terms.size(), and each term used where it may stand: a subject is an IRI or a
// blank node, a predicate and a graph name are IRIs (the terms' contents, such as whether an
// IRI is absolute, are the store's to check).
struct IndexedQuads {
    std::vector<Term> terms;
    std::vector<std::array<std::uint32_t, 4>> statements;
};

// Writes batches in the dictionary-encoded form; keeps its lookup cache's memory between batches
// (the client writes many).
class IndexedQuadsWriter {
public:
    // `terms`: the batch's terms in order of first use, one per line in its N-Quads form (a
    // repeated term usually once; see kSlots) (schema::append_nquads_term; a graph name as an IRI).
    // `statements`: a line per statement, "S P O" or "S P O G", the 0-based decimal indexes of its
    // terms. Both are replaced. False when a triple holds a quoted triple, which this form cannot
    // carry (the texts are then meaningless).
    bool write(std::span<const Triple> batch, std::string& terms, std::string& statements);

private:
    std::uint32_t add(const Term& term, std::string& terms);
    std::uint32_t add_graph(std::string_view graph, std::string& terms);

    struct Slot {
        std::size_t hash = 0;
        std::uint32_t index = 0;  // the term's index + 1; 0: an empty slot
    };
    // A repeated term is found in a cache of recent terms (one per slot, the newest kept): a
    // term that left it is written again under a new index, which the format allows and the
    // store merges. A table of every term of the batch cost the client more (cache misses on a
    // table of megabytes) than it saved the store. Terms are looked up as terms, not as text: a
    // hit is neither written nor escaped again.
    static constexpr std::size_t kSlots = 16384;
    std::vector<Slot> slots_;
    std::vector<const Term*> firsts_;  // per index: the term's first use in the batch
    std::unordered_map<std::string_view, std::uint32_t> graphs_;  // graph name -> its index
};

// Reads the two texts IndexedQuadsWriter writes. Errors (kInvalidRequest, nothing returned):
// a term line that is not exactly one IRI, blank node or literal (parse_nquads_term's message,
// its line being the term's index + 1), a NUL byte or invalid UTF-8 in the terms, a statement
// line without 3 or 4 indexes, an index that is not a decimal number below the number of
// terms, or a term where it may not stand.
base::Result<IndexedQuads> parse_indexed_quads(std::string_view terms, std::string_view statements);

}  // namespace glassbox::schema
