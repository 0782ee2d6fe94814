// The dictionary form of an explain message's triples (docs/protocol.md §8.1): each distinct term
// written once in `explain_terms`, each triple as indexes into it. The writer, and the readers
// every consumer of explain bodies shares (either form in, the same triples out).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "schema/triple_sink.hpp"

namespace glassbox::schema {

// Which form an encoder writes explain_triples in.
enum class TripleForm {
    kPlain,       // each triple a {"g","o","p","s"} object, terms in full (TripleJson)
    kDictionary,  // "explain_terms" and index triples (DictionaryTripleJson)
};

// The form workers write: kDictionary, or kPlain when GLASSBOX_EXPLAIN_PLAIN=1 is set (read
// once per process).
TripleForm explain_triple_form_from_env();

namespace detail {

// Interns term keys: the index of each distinct key, in the order of first sight. Keys are copied
// into one arena (the builders hand over views of temporaries) and found again by an
// open-addressing table of (hash, offset, size): no allocation per key once the arena and the
// table have grown to a message's size.
class TermIndex {
public:
    TermIndex();
    // The key's index; `added` says whether it was new.
    std::uint32_t intern(std::string_view key, bool& added);
    std::uint32_t size() const noexcept { return count_; }

private:
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t at = 0;
        std::uint32_t length = 0;
        std::uint32_t index = 0;  // the term's index + 1; 0 for an empty slot
    };
    void grow();

    std::string keys_;
    std::vector<Slot> slots_;
    std::uint32_t count_ = 0;
};

}  // namespace detail

// Writes triples in the dictionary form: each new term's JSON appended to `terms` (the elements
// of the "explain_terms" array, '[' at construction, ']' from close()), each triple's indexes to
// its own buffer (`[[s,p,o],…]`, from triples() after close()). Triples in `graph` (the message's
// explain_graph) are written [s,p,o]; a Triple in another graph [s,p,o,g].
class DictionaryTripleJson final : public TripleSink {
public:
    DictionaryTripleJson(std::string& terms, std::string_view graph);
    DictionaryTripleJson(const DictionaryTripleJson&) = delete;
    DictionaryTripleJson& operator=(const DictionaryTripleJson&) = delete;

    void iri(std::string_view s, std::string_view p, std::string_view o) override;
    void literal(std::string_view s, std::string_view p, std::string_view value,
                 std::string_view datatype = {}) override;
    void term(std::string_view s, std::string_view p, const Term& o) override;
    // A triple of any terms (a blank node or quoted triple as subject, any graph).
    void triple(const Triple& t);

    // Ends the terms array.
    void close();
    // The explain_triples array, brackets included; complete after close().
    const std::string& triples() const noexcept { return triples_; }
    std::uint32_t term_count() const noexcept { return index_.size(); }

private:
    std::uint32_t iri_index(std::string_view iri);
    // iri_index of a subject IRI. A builder names one subject in several triples in a row, links
    // a node to a new one and then describes the new one, and comes back to the first (a step
    // and its explored edges): the last two subjects and the last IRI object are kept with their
    // indexes (no key built, hashed and compared again).
    std::uint32_t subject_index(std::string_view iri);
    // iri_index of a predicate IRI, the last few kept: a step's triples use a handful of them.
    std::uint32_t predicate_index(std::string_view iri);
    std::uint32_t literal_index(std::string_view value, std::string_view datatype,
                                std::string_view language);
    std::uint32_t term_index(const Term& term);
    void add(std::uint32_t s, std::uint32_t p, std::uint32_t o,
             std::optional<std::uint32_t> g = std::nullopt);

    std::string& terms_;
    std::string graph_;
    std::string triples_;
    std::string key_;  // scratch: the key being looked up
    detail::TermIndex index_;
    struct KnownIri {
        std::string iri;
        std::uint32_t index = 0;
        bool known = false;
    };
    std::array<KnownIri, 2> subjects_;     // subject_index's cache, the last one first
    KnownIri object_;                      // the last IRI object of iri()
    std::array<KnownIri, 16> predicates_;  // predicate_index's cache
    bool closed_ = false;
};

// True when `body` (an explain message) carries its triples in the dictionary form: it has an
// "explain_terms" member that is not null.
bool has_term_dictionary(const nlohmann::json& body);

// The triples of an explain body, in either form (docs/protocol.md §8.1): a plain entry decoded
// as decode_triple does, a dictionary entry as the triple its indexes name, in `graph` when it
// names none (the default graph when `graph` is empty). DecodeError with the JSON path for the
// first malformed entry, term or index.
base::Result<std::vector<Triple>> decode_explain_triples(const nlohmann::json& body,
                                                         std::string_view graph);

// For readers that walk the JSON: calls fn(s, p, o) with each triple's term objects, in order,
// in either form (a dictionary entry's indexes resolved into explain_terms). Entries that are not
// well formed (not an object with s, p and o; not 3 or 4 indexes in range) are skipped.
void for_each_explain_triple(
    const nlohmann::json& body,
    const std::function<void(const nlohmann::json& s, const nlohmann::json& p,
                             const nlohmann::json& o)>& fn);

// `body` in the plain form: a dictionary body's triples written out as triple objects (each with
// "g", explain_graph or its own graph) and explain_terms removed; a plain body as it is. What
// leaves glassbox (HTTP, SSE, MCP) is plain. Malformed entries are dropped.
nlohmann::json plain_explain_body(const nlohmann::json& body);

}  // namespace glassbox::schema
