// A batch of statements as the distinct dictionary keys of its terms, built before the store's
// write lock is taken, so that the locked part of a staged load looks each distinct term up once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/indexed_quads.hpp"
#include "schema/term.hpp"

namespace glassbox::store {

// Built by build(), which checks every triple first (detail::check_triples: the same error, and
// nothing built, for an invalid one). Its views point into the triples, which must outlive it.
// A batch holding a quoted triple keeps only the triples (by_statement()): a quoted triple's key
// is made of its parts' ids, known only inside the transaction.
class TermBatch {
public:
    static constexpr std::uint32_t kDefaultGraph = std::numeric_limits<std::uint32_t>::max();

    struct DistinctTerm {
        std::uint64_t hash;  // detail::key_hash of the key
        std::uint32_t key_offset;
        std::uint32_t key_length;
        int kind;  // detail::StoredKind
        std::string_view value;
        std::string_view qualifier;
    };

    static base::Result<TermBatch> build(std::span<const schema::Triple> triples);
    // The same for a dictionary-encoded batch, whose terms the batch keeps (moving the batch
    // keeps the views valid). Each term a statement uses is checked once, where it is first
    // used (the same errors as for triples, "statement N: " before them); terms no statement
    // uses are left out.
    static base::Result<TermBatch> build(schema::IndexedQuads quads);
    // The same straight from a dictionary-encoded batch's two texts (schema/indexed_quads.hpp):
    // a term line written plainly (an IRI, or a literal without escapes) goes into its key
    // without being made a Term first; any other line is parsed as parse_nquads_term parses it.
    // A batch this reading does not take whole (a line or index it refuses, a term that fails
    // its check or stands where it may not) is read by parse_indexed_quads and build(), so the
    // result and every error are theirs. The views point into `terms`, which must outlive the
    // batch.
    static base::Result<TermBatch> build(std::string_view terms, std::string_view statements);

    // How many statements the batch holds.
    std::size_t size() const noexcept { return size_; }

    // True when the batch holds a quoted triple: intern it statement by statement instead.
    bool by_statement() const noexcept { return by_statement_; }
    // The triples of a batch built from triples (empty for a dictionary-encoded one, which is
    // never by_statement()).
    std::span<const schema::Triple> triples() const noexcept { return triples_; }

    // Each distinct term once, in the order of its first occurrence.
    const std::vector<DistinctTerm>& terms() const noexcept { return terms_; }
    std::string_view key(const DistinctTerm& term) const noexcept {
        return std::string_view(keys_).substr(term.key_offset, term.key_length);
    }
    // Per statement, the indexes in terms() of its subject, predicate, object and graph
    // (kDefaultGraph for the default graph).
    const std::vector<std::array<std::uint32_t, 4>>& statements() const noexcept {
        return statements_;
    }

private:
    // build(terms, statements) without its fallback: nullopt for what it does not take.
    static std::optional<TermBatch> read_plainly(std::string_view terms,
                                                 std::string_view statements);

    std::span<const schema::Triple> triples_;
    std::vector<schema::Term> owned_terms_;  // a dictionary-encoded batch's terms
    // The term lines read_plainly() parsed as terms (a deque: the views stay where they are).
    std::deque<schema::Term> parsed_terms_;
    std::size_t size_ = 0;
    bool by_statement_ = false;
    std::string keys_;
    std::vector<DistinctTerm> terms_;
    std::vector<std::array<std::uint32_t, 4>> statements_;
};

}  // namespace glassbox::store
