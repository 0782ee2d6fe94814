// The dictionary-encoded load batch (schema/indexed_quads.hpp): its writer and its reader.
#include "schema/indexed_quads.hpp"

#include <charconv>
#include <functional>

#include "schema/nquads.hpp"

namespace glassbox::schema {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

void append_index(std::string& out, std::uint32_t index) {
    char digits[16];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, index);
    out.append(digits, end);
}

// A term's lookup hash: its value's, told apart by kind (a literal's datatype and language are
// left to the comparison: most literals of a batch share them).
std::size_t term_hash(const Term& term) noexcept {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return std::hash<std::string_view>{}(term.as_iri().value);
        case Term::Kind::kBlankNode:
            return std::hash<std::string_view>{}(term.as_blank().id) * 3 + 1;
        case Term::Kind::kLiteral:
            return std::hash<std::string_view>{}(term.as_literal().value) * 5 + 2;
        case Term::Kind::kTriple:
            break;
    }
    return 0;
}

}  // namespace

// The index of `term`: an earlier equal term's when the cache still holds it, else a new one's
// (its line appended to `terms`).
std::uint32_t IndexedQuadsWriter::add(const Term& term, std::string& terms) {
    const std::size_t hash = term_hash(term);
    Slot& slot = slots_[hash & (kSlots - 1)];
    if (slot.index != 0 && slot.hash == hash && *firsts_[slot.index - 1] == term)
        return slot.index - 1;
    firsts_.push_back(&term);
    slot = Slot{hash, static_cast<std::uint32_t>(firsts_.size())};
    append_nquads_term(terms, term);
    terms += '\n';
    return static_cast<std::uint32_t>(firsts_.size() - 1);
}

// A graph name's index (a graph name is a string, not a term: looked up apart).
std::uint32_t IndexedQuadsWriter::add_graph(std::string_view graph, std::string& terms) {
    const auto [at, added] = graphs_.try_emplace(graph, static_cast<std::uint32_t>(firsts_.size()));
    if (!added) return at->second;
    const auto index = at->second;
    firsts_.push_back(nullptr);  // never compared: no slot holds it
    append_nquads_term(terms, Term{Iri{std::string(graph)}});
    terms += '\n';
    return index;
}

bool IndexedQuadsWriter::write(std::span<const Triple> batch, std::string& terms,
                               std::string& statements) {
    terms.clear();
    statements.clear();
    firsts_.clear();
    graphs_.clear();
    slots_.assign(kSlots, Slot{});
    const auto add_term = [&](const Term& term) { return add(term, terms); };
    // Dumps are grouped by subject, often by predicate too: a term equal to the previous
    // statement's in the same place reuses its index without being written and looked up.
    const Triple* previous = nullptr;
    std::array<std::uint32_t, 4> at{};
    for (const auto& triple : batch) {
        if (triple.s.is_triple() || triple.o.is_triple()) return false;
        if (previous == nullptr || !(previous->s == triple.s)) at[0] = add_term(triple.s);
        if (previous == nullptr || !(previous->p == triple.p)) at[1] = add_term(triple.p);
        at[2] = add_term(triple.o);
        if (!triple.graph) {
            at[3] = kDefaultGraphIndex;
        } else if (previous == nullptr || previous->graph != triple.graph) {
            at[3] = add_graph(*triple.graph, terms);
        }
        for (int k = 0; k < 3; ++k) {
            append_index(statements, at[static_cast<std::size_t>(k)]);
            statements += k < 2 ? ' ' : '\n';
        }
        if (at[3] != kDefaultGraphIndex) {
            statements.back() = ' ';
            append_index(statements, at[3]);
            statements += '\n';
        }
        previous = &triple;
    }
    return true;
}

namespace {

Result<std::vector<Term>> parse_terms(std::string_view text) {
    if (auto problem = nquads_text_problem(text)) {
        return make_error(ErrorType::kInvalidRequest, "load-triples terms: " + problem->message);
    }
    std::vector<Term> terms;
    std::uint64_t line = 1;
    for (std::size_t start = 0; start < text.size(); ++line) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        auto term = parse_nquads_term(text.substr(start, end - start), line);
        if (!term) {
            return make_error(ErrorType::kInvalidRequest,
                              "load-triples terms: " + term.error().message);
        }
        terms.push_back(std::move(term).value());
        start = end + 1;
    }
    if (terms.size() >= kDefaultGraphIndex) {
        return make_error(ErrorType::kInvalidRequest, "load-triples terms: too many terms");
    }
    return terms;
}

// Empty when the statement's terms stand where they may; else why not.
std::string misplaced_term(const std::vector<Term>& terms, const std::array<std::uint32_t, 4>& at) {
    const Term& s = terms[at[0]];
    if (!s.is_iri() && !s.is_blank())
        return "subject: term " + std::to_string(at[0]) +
               " is a literal; a subject is an IRI or a blank node";
    if (!terms[at[1]].is_iri())
        return "predicate: term " + std::to_string(at[1]) + " is not an IRI";
    if (at[3] != kDefaultGraphIndex && !terms[at[3]].is_iri())
        return "graph: term " + std::to_string(at[3]) + " is not an IRI";
    return {};
}

}  // namespace

Result<IndexedQuads> parse_indexed_quads(std::string_view terms, std::string_view statements) {
    auto parsed = parse_terms(terms);
    if (!parsed) return parsed.error();
    IndexedQuads out{std::move(parsed).value(), {}};
    const auto count = out.terms.size();
    const char* p = statements.data();
    const char* const end = p + statements.size();
    for (std::uint64_t line = 1; p < end; ++line) {
        const auto problem = [&](const std::string& why) {
            return make_error(ErrorType::kInvalidRequest,
                              "load-triples statements line " + std::to_string(line) + ": " + why);
        };
        std::array<std::uint32_t, 4> at{0, 0, 0, kDefaultGraphIndex};
        std::size_t fields = 0;
        for (;;) {
            if (fields == 4) return problem("more than 4 term indexes");
            std::uint32_t index = 0;
            const auto [next, ec] = std::from_chars(p, end, index);
            if (ec != std::errc{} || index >= count) {
                return problem("expected the index of one of the batch's " + std::to_string(count) +
                               " terms");
            }
            at[fields++] = index;
            p = next;
            if (p == end || *p == '\n') break;
            if (*p != ' ') return problem("expected a space or the end of the line");
            ++p;
        }
        if (fields < 3) {
            return problem("expected 3 or 4 term indexes (subject predicate object [graph]), got " +
                           std::to_string(fields));
        }
        if (auto why = misplaced_term(out.terms, at); !why.empty()) return problem(why);
        out.statements.push_back(at);
        if (p < end) ++p;  // its end of line
    }
    return out;
}

}  // namespace glassbox::schema
