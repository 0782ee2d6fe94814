// TermBatch: the distinct dictionary keys of a batch's terms, each with its hash.
#include "workers/store/term_batch.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <functional>

#include "schema/nquads.hpp"
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

// A term line as the key it makes: its stored kind (detail::StoredKind), value and qualifier
// (views into the line, or into the term parsed from it).
struct LineTerm {
    int kind;
    std::string_view value;
    std::string_view qualifier;
};

bool ascii_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// LANGTAG without its '@', as N-Quads reads it: [a-zA-Z]+ ('-' [a-zA-Z0-9]+)*.
bool language_tag(std::string_view tag) noexcept {
    std::size_t i = 0;
    while (i < tag.size() && ascii_alpha(tag[i])) ++i;
    if (i == 0) return false;
    while (i < tag.size()) {
        if (tag[i] != '-') return false;
        const std::size_t first = ++i;
        while (i < tag.size() && (ascii_alpha(tag[i]) || (tag[i] >= '0' && tag[i] <= '9'))) ++i;
        if (i == first) return false;
    }
    return true;
}

// `<IRI>` and nothing else: the IRI when it has no escape and is one the store keeps
// (detail::valid_iri refuses every byte N-Quads refuses in an IRI, '>' and '\' among them, and
// asks for the scheme parse_nquads_term asks for), so that it reads as parse_nquads_term reads it.
std::optional<std::string_view> plain_iri(std::string_view text) noexcept {
    if (text.size() < 2 || text.front() != '<' || text.back() != '>') return std::nullopt;
    const std::string_view iri = text.substr(1, text.size() - 2);
    if (!detail::valid_iri(iri)) return std::nullopt;
    return iri;
}

// A term line written plainly: an IRI, or a literal without escapes (alone, with a language or
// with a datatype IRI; xsd:string stored as no datatype, as parse_nquads_term reads it).
std::optional<LineTerm> plain_term(std::string_view line) noexcept {
    if (auto iri = plain_iri(line)) return LineTerm{detail::kIri, *iri, {}};
    if (line.empty() || line.front() != '"') return std::nullopt;
    const std::size_t close = line.find_first_of("\"\\", 1);
    if (close == std::string_view::npos || line[close] != '"') return std::nullopt;
    const std::string_view value = line.substr(1, close - 1);
    const std::string_view rest = line.substr(close + 1);
    if (rest.empty()) return LineTerm{detail::kTypedLiteral, value, {}};
    if (rest.front() == '@') {
        if (!language_tag(rest.substr(1))) return std::nullopt;
        return LineTerm{detail::kLangLiteral, value, rest.substr(1)};
    }
    if (!rest.starts_with("^^")) return std::nullopt;
    const auto datatype = plain_iri(rest.substr(2));
    if (!datatype) return std::nullopt;
    return LineTerm{detail::kTypedLiteral, value,
                    *datatype == schema::kXsdString ? std::string_view{} : *datatype};
}

// Appends a term's dictionary key to `keys`: detail::encode_simple's bytes.
void append_key(std::string& keys, const LineTerm& term) {
    switch (term.kind) {
        case detail::kIri:
            keys.push_back('I');
            break;
        case detail::kBlank:
            keys.push_back('B');
            break;
        default:
            keys.push_back(term.kind == detail::kLangLiteral ? 'G' : 'L');
            keys.append(term.qualifier);
            keys.push_back('\0');
            break;
    }
    keys.append(term.value);
}

// Reads each term line of `text` (after nquads_text_problem found none): plainly when it is
// written plainly, else parsed into `parsed`. False for a line that is not a valid term or holds
// one the store refuses anywhere (detail::check_term in object position).
bool read_term_lines(std::string_view text, std::vector<LineTerm>& lines,
                     std::deque<Term>& parsed) {
    std::string scratch;
    for (std::size_t start = 0; start < text.size();) {
        const char* lf =
            static_cast<const char*>(std::memchr(text.data() + start, '\n', text.size() - start));
        const std::size_t end =
            lf == nullptr ? text.size() : static_cast<std::size_t>(lf - text.data());
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        if (auto plain = plain_term(line)) {
            lines.push_back(*plain);
            continue;
        }
        auto term = schema::parse_nquads_term(line, lines.size() + 1);
        if (!term || term->is_triple() || !detail::check_term(*term, "object").empty())
            return false;
        const Term& kept = parsed.emplace_back(std::move(term).value());
        const auto encoded = detail::encode_simple(kept, scratch);
        lines.push_back({encoded.kind, encoded.value, encoded.qualifier});
    }
    return lines.size() < schema::kDefaultGraphIndex;
}

// One statement line's indexes (graph kDefaultGraphIndex when it has three), as
// parse_indexed_quads reads them; false where it would refuse the line. `p` moves past the line.
bool read_statement(const char*& p, const char* end, std::size_t terms,
                    std::array<std::uint32_t, 4>& at) {
    at = {0, 0, 0, schema::kDefaultGraphIndex};
    std::size_t fields = 0;
    for (;;) {
        if (fields == 4) return false;
        std::uint32_t index = 0;
        const auto [next, ec] = std::from_chars(p, end, index);
        if (ec != std::errc{} || index >= terms) return false;
        at[fields++] = index;
        p = next;
        if (p == end || *p == '\n') break;
        if (*p != ' ') return false;
        ++p;
    }
    if (p < end) ++p;  // its end of line
    return fields >= 3;
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

Result<TermBatch> TermBatch::build(std::string_view terms, std::string_view statements) {
    if (auto batch = read_plainly(terms, statements)) return std::move(*batch);
    auto quads = schema::parse_indexed_quads(terms, statements);
    if (!quads) return quads.error();
    return build(std::move(quads).value());
}

std::optional<TermBatch> TermBatch::read_plainly(std::string_view terms,
                                                 std::string_view statements) {
    if (schema::nquads_text_problem(terms)) return std::nullopt;
    TermBatch batch;
    std::vector<LineTerm> lines;
    // One per line: reserved at once (growing it copied the lines again and again).
    lines.reserve(static_cast<std::size_t>(std::count(terms.begin(), terms.end(), '\n')) + 1);
    if (!read_term_lines(terms, lines, batch.parsed_terms_)) return std::nullopt;
    constexpr std::uint32_t kNotYet = std::numeric_limits<std::uint32_t>::max();
    // Per term line: its index in terms_ once a statement has used it (terms no statement uses
    // are left out, and the others come in the order of first use, as build() orders them).
    std::vector<std::uint32_t> distinct_of(lines.size(), kNotYet);
    batch.terms_.reserve(lines.size());
    batch.keys_.reserve(std::min(terms.size() + lines.size(), kMaxKeyBytes));
    DistinctKeys distinct(batch.keys_, batch.terms_, lines.size());
    const auto add = [&](std::uint32_t at) {
        if (distinct_of[at] != kNotYet) return distinct_of[at];
        const LineTerm& term = lines[at];
        const std::size_t offset = batch.keys_.size();
        append_key(batch.keys_, term);
        distinct_of[at] = distinct.add(offset, term.kind, term.value, term.qualifier);
        return distinct_of[at];
    };
    const auto is_iri = [&lines](std::uint32_t at) { return lines[at].kind == detail::kIri; };
    batch.statements_.reserve(statements.size() / 16);
    const char* p = statements.data();
    const char* const end = p + statements.size();
    while (p < end) {
        std::array<std::uint32_t, 4> wire{};
        if (!read_statement(p, end, lines.size(), wire)) return std::nullopt;
        const bool graph = wire[3] != schema::kDefaultGraphIndex;
        // Where a term may stand (parse_indexed_quads' misplaced terms).
        if (!(is_iri(wire[0]) || lines[wire[0]].kind == detail::kBlank) || !is_iri(wire[1]) ||
            (graph && !is_iri(wire[3])))
            return std::nullopt;
        batch.statements_.push_back(
            {add(wire[0]), add(wire[1]), add(wire[2]), graph ? add(wire[3]) : kDefaultGraph});
        if (batch.keys_.size() > kMaxKeyBytes) return std::nullopt;  // offsets are 32 bits
    }
    batch.size_ = batch.statements_.size();
    return batch;
}

}  // namespace glassbox::store
