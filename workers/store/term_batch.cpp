// TermBatch: the distinct dictionary keys of a batch's terms, each with its hash.
#include "workers/store/term_batch.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

using base::Result;
using schema::Term;
using schema::Triple;

namespace {

constexpr std::size_t kMaxKeyBytes = std::size_t{1} << 31;

// Merges equal keys: a linearly probed table of indexes into the batch's distinct terms.
class DistinctKeys {
public:
    // `expected`: about how many distinct keys will come. The table starts large enough for
    // them: growing rehashes every slot, several times for a batch of tens of thousands of terms.
    DistinctKeys(std::string& keys, std::vector<TermBatch::DistinctTerm>& terms,
                 std::size_t expected = 0)
        : keys_(keys),
          terms_(terms),
          slots_(std::bit_ceil(std::max<std::size_t>(4096, 2 * expected))) {}

    // The index of the term whose key is `key` (the last `key.size()` bytes of keys_, just
    // appended): an earlier equal one (the appended bytes are removed), else a new one.
    std::uint32_t add(std::size_t key_offset, int kind, std::string_view value,
                      std::string_view qualifier) {
        const std::string_view key = std::string_view(keys_).substr(key_offset);
        // Probed by the library's hash (word at a time); the dictionary's byte-at-a-time
        // key_hash is computed once per distinct key.
        const auto probe = static_cast<std::uint32_t>(std::hash<std::string_view>{}(key));
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = probe & mask;
        for (; slots_[i].index != 0; i = (i + 1) & mask) {
            const auto& seen = terms_[slots_[i].index - 1];
            if (slots_[i].probe == probe && seen.key_length == key.size() &&
                std::string_view(keys_).substr(seen.key_offset, seen.key_length) == key) {
                keys_.resize(key_offset);
                return slots_[i].index - 1;
            }
        }
        terms_.push_back({static_cast<std::uint64_t>(detail::key_hash(key)),
                          static_cast<std::uint32_t>(key_offset),
                          static_cast<std::uint32_t>(key.size()), kind, value, qualifier});
        const auto index = static_cast<std::uint32_t>(terms_.size());
        slots_[i] = Slot{probe, index};
        if (terms_.size() * 2 > slots_.size()) grow();
        return index - 1;
    }

private:
    // 8 bytes: the table of a 50,000-statement batch (2^17 slots) stays within 1 MiB, most of it
    // in the core's L2 cache (each add probes a slot at random).
    struct Slot {
        std::uint32_t probe = 0;  // the low 32 bits of the key's hash (the table is smaller)
        std::uint32_t index = 0;  // in terms_, + 1; 0: empty
    };

    void grow() {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(old.size() * 2, Slot{});
        const std::size_t mask = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.index == 0) continue;
            std::size_t i = slot.probe & mask;
            while (slots_[i].index != 0) i = (i + 1) & mask;
            slots_[i] = slot;
        }
    }

    std::string& keys_;
    std::vector<TermBatch::DistinctTerm>& terms_;
    std::vector<Slot> slots_;  // a power of two, at most half full
};

// The bytes of the dictionary keys of `terms` (detail::encode_simple: a kind byte, the
// qualifier and a separator for a literal, the value), at most.
std::size_t key_bytes(const std::vector<Term>& terms) {
    std::size_t bytes = 0;
    for (const Term& term : terms) {
        switch (term.kind()) {
            case Term::Kind::kIri:
                bytes += 1 + term.as_iri().value.size();
                break;
            case Term::Kind::kBlankNode:
                bytes += 1 + term.as_blank().id.size();
                break;
            case Term::Kind::kLiteral: {
                const auto& literal = term.as_literal();
                bytes += 2 + literal.value.size() +
                         std::max(literal.language.size(), literal.datatype.size());
                break;
            }
            case Term::Kind::kTriple:
                break;
        }
    }
    return bytes;
}

}  // namespace

Result<TermBatch> TermBatch::build(std::span<const Triple> triples) {
    if (auto r = detail::check_triples(triples); !r) return r.error();
    TermBatch batch;
    batch.triples_ = triples;
    batch.size_ = triples.size();
    for (const auto& triple : triples) {
        if (triple.s.is_triple() || triple.o.is_triple()) {
            batch.by_statement_ = true;
            return batch;
        }
    }
    batch.statements_.reserve(triples.size());
    DistinctKeys distinct(batch.keys_, batch.terms_);
    std::string key;
    const auto add = [&](const Term& term) {
        const auto encoded = detail::encode_simple(term, key);
        const std::size_t offset = batch.keys_.size();
        batch.keys_.append(key);
        return distinct.add(offset, encoded.kind, encoded.value, encoded.qualifier);
    };
    // Consecutive statements usually share their subject (dumps are grouped by subject), often
    // the predicate and graph: equal to the previous statement's, a position reuses its index.
    const Triple* previous = nullptr;
    for (const auto& triple : triples) {
        std::array<std::uint32_t, 4> at{};
        at[0] = previous != nullptr && previous->s == triple.s ? batch.statements_.back()[0]
                                                               : add(triple.s);
        at[1] = previous != nullptr && previous->p == triple.p ? batch.statements_.back()[1]
                                                               : add(triple.p);
        at[2] = add(triple.o);
        if (!triple.graph) {
            at[3] = kDefaultGraph;
        } else if (previous != nullptr && previous->graph == triple.graph) {
            at[3] = batch.statements_.back()[3];
        } else {
            // A graph name is an IRI term; its view must point into the triple, not a temporary.
            key.assign("I");
            key.append(*triple.graph);
            const std::size_t offset = batch.keys_.size();
            batch.keys_.append(key);
            at[3] = distinct.add(offset, detail::StoredKind::kIri, *triple.graph, {});
        }
        batch.statements_.push_back(at);
        previous = &triple;
        if (batch.keys_.size() > kMaxKeyBytes) {  // offsets are 32 bits: a giant batch goes
            TermBatch whole;                      // statement by statement
            whole.triples_ = triples;
            whole.size_ = triples.size();
            whole.by_statement_ = true;
            return whole;
        }
    }
    return batch;
}

Result<TermBatch> TermBatch::build(schema::IndexedQuads quads) {
    TermBatch batch;
    batch.owned_terms_ = std::move(quads.terms);
    batch.size_ = quads.statements.size();
    const std::vector<Term>& terms = batch.owned_terms_;
    constexpr std::uint32_t kNotYet = std::numeric_limits<std::uint32_t>::max();
    // Per term of the batch: its index in terms_ once a statement has used it.
    std::vector<std::uint32_t> distinct_of(terms.size(), kNotYet);
    // The batch's terms are nearly all distinct (the client merges most repeats): room for all of
    // them and their keys at once, instead of copying the keys and terms as they grow.
    batch.terms_.reserve(terms.size());
    batch.keys_.reserve(std::min(key_bytes(terms), kMaxKeyBytes));
    DistinctKeys distinct(batch.keys_, batch.terms_, terms.size());
    std::string key;
    std::string why;
    // The position decides only which kinds may stand there, and parse_indexed_quads checked
    // that for every use: a term's contents need checking at its first use alone.
    const auto add = [&](std::uint32_t at, std::string_view position) -> std::uint32_t {
        if (distinct_of[at] != kNotYet || !why.empty()) return distinct_of[at];
        const Term& term = terms[at];
        why = term.is_triple() ? std::string(position) + ": a quoted triple cannot be sent here"
                               : detail::check_term(term, position);
        if (!why.empty()) return kNotYet;
        const auto encoded = detail::encode_simple(term, key);
        const std::size_t offset = batch.keys_.size();
        batch.keys_.append(key);
        distinct_of[at] = distinct.add(offset, encoded.kind, encoded.value, encoded.qualifier);
        return distinct_of[at];
    };
    batch.statements_.reserve(quads.statements.size());
    for (std::size_t i = 0; i < quads.statements.size(); ++i) {
        const auto& wire = quads.statements[i];
        std::array<std::uint32_t, 4> at{add(wire[0], "subject"), add(wire[1], "predicate"),
                                        add(wire[2], "object"), kDefaultGraph};
        if (wire[3] != schema::kDefaultGraphIndex) at[3] = add(wire[3], "graph");
        if (!why.empty()) {
            return base::make_error(base::ErrorType::kInvalidRequest,
                                    "statement " + std::to_string(i) + ": " + why);
        }
        batch.statements_.push_back(at);
        if (batch.keys_.size() > kMaxKeyBytes) {  // offsets are 32 bits
            return base::make_error(base::ErrorType::kInvalidRequest,
                                    "a dictionary-encoded batch too large to stage");
        }
    }
    return batch;
}

}  // namespace glassbox::store
