// Where a triple builder writes its triples: into a list of Triples, or straight into their
// wire JSON.
//
// The explain builders (explain_builder.hpp) describe hundreds of triples per step. Building
// them as Term objects (a heap string per IRI and literal) only to encode them to JSON at once
// cost more than the encoding; TripleJson writes the same bytes append_json(triples) would,
// from the builders' string views, with no Term in between. TripleList keeps the Terms for
// callers that read the triples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/term.hpp"

namespace glassbox::schema {

class TripleSink {
public:
    virtual ~TripleSink() = default;

    // <s> <p> <o>: subject, predicate and object IRIs.
    virtual void iri(std::string_view s, std::string_view p, std::string_view o) = 0;
    // <s> <p> "value"^^datatype; an empty datatype or xsd:string gives a simple literal.
    virtual void literal(std::string_view s, std::string_view p, std::string_view value,
                         std::string_view datatype = {}) = 0;
    // <s> <p> o, for an object of any kind (a knowledge-graph term, a quoted triple).
    virtual void term(std::string_view s, std::string_view p, const Term& o) = 0;

    void integer(std::string_view s, std::string_view p, std::uint64_t value);
    // xsd:double in xsd_double()'s lexical form.
    void number(std::string_view s, std::string_view p, double value);

    // Triples written so far.
    std::size_t size() const noexcept { return count_; }

protected:
    std::size_t count_ = 0;
};

// Collects the triples, each in `graph` (none: the default graph).
class TripleList final : public TripleSink {
public:
    explicit TripleList(std::optional<std::string> graph, std::size_t expected = 16);

    void iri(std::string_view s, std::string_view p, std::string_view o) override;
    void literal(std::string_view s, std::string_view p, std::string_view value,
                 std::string_view datatype = {}) override;
    void term(std::string_view s, std::string_view p, const Term& o) override;

    std::vector<Triple> take() { return std::move(triples_); }

private:
    std::optional<std::string> graph_;
    std::vector<Triple> triples_;
};

// Appends the triples to `out` as the JSON array append_json(out, triples) writes for the same
// triples in `graph`, byte for byte: '[' at construction, ']' from close() (or the destructor).
class TripleJson final : public TripleSink {
public:
    TripleJson(std::string& out, std::optional<std::string_view> graph);
    ~TripleJson() override { close(); }
    TripleJson(const TripleJson&) = delete;
    TripleJson& operator=(const TripleJson&) = delete;

    void iri(std::string_view s, std::string_view p, std::string_view o) override;
    void literal(std::string_view s, std::string_view p, std::string_view value,
                 std::string_view datatype = {}) override;
    void term(std::string_view s, std::string_view p, const Term& o) override;

    void close();

private:
    void begin();                                      // ",{"g":…,"o":"
    void end(std::string_view s, std::string_view p);  // ","p":…,"s":…}"

    std::string& out_;
    std::string head_;  // {"g":"<graph>","o": (or {"o": for the default graph)
    bool closed_ = false;
};

}  // namespace glassbox::schema
