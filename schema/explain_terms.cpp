// The dictionary form of explain triples: the interning writer and the readers of both forms.
#include "schema/explain_terms.hpp"

#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "base/fnv.hpp"
#include "schema/detail/json_reader.hpp"
#include "schema/json_fast.hpp"
#include "schema/term_json.hpp"

namespace glassbox::schema {

using detail::decode_error;
using detail::index_path;
using detail::json;
using detail::type_error;

TripleForm explain_triple_form_from_env() {
    static const TripleForm form = [] {
        const char* plain = std::getenv("GLASSBOX_EXPLAIN_PLAIN");
        return plain != nullptr && std::string_view(plain) == "1" ? TripleForm::kPlain
                                                                  : TripleForm::kDictionary;
    }();
    return form;
}

// ---- the index ------------------------------------------------------------------------------

namespace detail {

namespace {
constexpr std::size_t kInitialSlots = 512;  // a power of two; grown at half full

// The key's 8-byte words folded by multiply and shift, in two lanes of alternate words (the
// lanes' multiplies overlap: the fold of one word waits on the last, and an IRI is 6-12 words),
// then mixed (base::mix64): a few instructions per word, where std::hash takes a few per byte
// of the IRIs (50-100 bytes) every triple of a step names. Only where a key sits in the table
// depends on it.
std::uint64_t key_hash(std::string_view key) noexcept {
    constexpr std::uint64_t kMultiplier = 0x9E3779B97F4A7C15ULL;
    constexpr std::uint64_t kOtherMultiplier = 0xC2B2AE3D27D4EB4FULL;
    const auto fold = [](std::uint64_t h, const char* p, std::size_t n, std::uint64_t m) {
        std::uint64_t word = 0;
        std::memcpy(&word, p, n);
        h = (h ^ word) * m;
        return h ^ (h >> 32);
    };
    std::uint64_t a = key.size() * kMultiplier;
    std::uint64_t b = key.size() * kOtherMultiplier;
    const char* p = key.data();
    std::size_t left = key.size();
    for (; left >= 16; p += 16, left -= 16) {
        a = fold(a, p, 8, kMultiplier);
        b = fold(b, p + 8, 8, kOtherMultiplier);
    }
    if (left >= 8) {
        a = fold(a, p, 8, kMultiplier);
        p += 8;
        left -= 8;
    }
    if (left > 0) b = fold(b, p, left, kOtherMultiplier);
    return base::mix64(a ^ (b * kMultiplier));
}
}  // namespace

TermIndex::TermIndex() : slots_(kInitialSlots) { keys_.reserve(16 * 1024); }

std::uint32_t TermIndex::intern(std::string_view key, bool& added) {
    const std::uint64_t hash = key_hash(key);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = static_cast<std::size_t>(hash) & mask;; at = (at + 1) & mask) {
        Slot& slot = slots_[at];
        if (slot.index == 0) {
            slot = Slot{hash, static_cast<std::uint32_t>(keys_.size()),
                        static_cast<std::uint32_t>(key.size()), ++count_};
            keys_ += key;
            added = true;
            const std::uint32_t index = count_ - 1;
            if (std::size_t{count_} * 2 > slots_.size()) grow();
            return index;
        }
        if (slot.hash == hash && slot.length == key.size() &&
            std::memcmp(keys_.data() + slot.at, key.data(), key.size()) == 0) {
            added = false;
            return slot.index - 1;
        }
    }
}

void TermIndex::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
        if (slot.index == 0) continue;
        std::size_t at = static_cast<std::size_t>(slot.hash) & mask;
        while (slots_[at].index != 0) at = (at + 1) & mask;
        slots_[at] = slot;
    }
}

}  // namespace detail

// ---- the writer -----------------------------------------------------------------------------

namespace {

// A key's parts are told apart by their kind byte and a length prefix, so no two terms share a
// key whatever bytes their values hold.
void append_length(std::string& key, std::size_t size) {
    const auto n = static_cast<std::uint32_t>(size);
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
}

}  // namespace

DictionaryTripleJson::DictionaryTripleJson(std::string& terms, std::string_view graph)
    : terms_(terms), graph_(graph) {
    terms_ += '[';
    triples_.reserve(4096);
    triples_ += '[';
}

std::uint32_t DictionaryTripleJson::iri_index(std::string_view iri) {
    key_.clear();
    key_ += 'i';
    key_ += iri;
    bool added = false;
    const std::uint32_t index = index_.intern(key_, added);
    if (added) {
        if (index > 0) terms_ += ',';
        append_json_iri(terms_, iri);
    }
    return index;
}

std::uint32_t DictionaryTripleJson::subject_index(std::string_view iri) {
    if (subjects_[0].known && iri == subjects_[0].iri) return subjects_[0].index;
    // The other one becomes the last; the slot's string keeps its capacity.
    std::swap(subjects_[0], subjects_[1]);
    KnownIri& last = subjects_[0];
    if (last.known && iri == last.iri) return last.index;
    last.index = object_.known && iri == object_.iri ? object_.index : iri_index(iri);
    last.iri.assign(iri);
    last.known = true;
    return last.index;
}

std::uint32_t DictionaryTripleJson::predicate_index(std::string_view iri) {
    // The slot is chosen by the text's address (the builders pass the vocabulary's constants,
    // so a predicate comes back to its slot), the match decided by the text itself.
    auto& slot =
        predicates_[(reinterpret_cast<std::uintptr_t>(iri.data()) >> 3) % predicates_.size()];
    if (slot.known && slot.iri == iri) return slot.index;
    slot.index = iri_index(iri);
    slot.iri.assign(iri);
    slot.known = true;
    return slot.index;
}

std::uint32_t DictionaryTripleJson::literal_index(std::string_view value, std::string_view datatype,
                                                  std::string_view language) {
    key_.clear();
    key_ += language.empty() ? 'l' : 'L';
    append_length(key_, value.size());
    key_ += value;
    key_ += language.empty() ? datatype : language;
    bool added = false;
    const std::uint32_t index = index_.intern(key_, added);
    if (added) {
        if (index > 0) terms_ += ',';
        append_json_literal(terms_, value, datatype, language);
    }
    return index;
}

std::uint32_t DictionaryTripleJson::term_index(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return iri_index(term.as_iri().value);
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            return literal_index(lit.value, lit.datatype, lit.language);
        }
        case Term::Kind::kBlankNode:
        case Term::Kind::kTriple:
            break;
    }
    // Blank nodes and quoted triples (rare: the builders write neither) are keyed by their JSON,
    // which is canonical: the same term always writes the same bytes.
    std::string text;
    append_json(text, term);
    key_.clear();
    key_ += 'j';
    key_ += text;
    bool added = false;
    const std::uint32_t index = index_.intern(key_, added);
    if (added) {
        if (index > 0) terms_ += ',';
        terms_ += text;
    }
    return index;
}

void DictionaryTripleJson::add(std::uint32_t s, std::uint32_t p, std::uint32_t o,
                               std::optional<std::uint32_t> g) {
    // Written into a buffer first and appended once: a step's triples are mostly these.
    constexpr int kDigits = 10;                     // of a std::uint32_t at most
    std::array<char, 4 * (kDigits + 1) + 2> entry;  // ",[" four indexes, three ',' and ']'
    char* at = entry.data();
    if (count_++ > 0) *at++ = ',';
    *at++ = '[';
    at = std::to_chars(at, at + kDigits, s).ptr;
    *at++ = ',';
    at = std::to_chars(at, at + kDigits, p).ptr;
    *at++ = ',';
    at = std::to_chars(at, at + kDigits, o).ptr;
    if (g) {
        *at++ = ',';
        at = std::to_chars(at, at + kDigits, *g).ptr;
    }
    *at++ = ']';
    triples_.append(entry.data(), at);
}

void DictionaryTripleJson::iri(std::string_view s, std::string_view p, std::string_view o) {
    const auto si = subject_index(s);
    const auto pi = predicate_index(p);
    const auto oi = iri_index(o);
    object_.iri.assign(o);
    object_.index = oi;
    object_.known = true;
    add(si, pi, oi);
}

void DictionaryTripleJson::literal(std::string_view s, std::string_view p, std::string_view value,
                                   std::string_view datatype) {
    const auto si = subject_index(s);
    const auto pi = predicate_index(p);
    add(si, pi, literal_index(value, datatype == kXsdString ? std::string_view{} : datatype, {}));
}

void DictionaryTripleJson::term(std::string_view s, std::string_view p, const Term& o) {
    const auto si = subject_index(s);
    const auto pi = predicate_index(p);
    add(si, pi, term_index(o));
}

void DictionaryTripleJson::triple(const Triple& t) {
    const auto si = term_index(t.s);
    const auto pi = term_index(t.p);
    const auto oi = term_index(t.o);
    if (!t.graph || *t.graph == graph_) {
        add(si, pi, oi);
    } else {
        add(si, pi, oi, iri_index(*t.graph));
    }
}

void DictionaryTripleJson::close() {
    if (closed_) return;
    closed_ = true;
    terms_ += ']';
    triples_ += ']';
}

// ---- the readers ----------------------------------------------------------------------------

bool has_term_dictionary(const json& body) {
    if (!body.is_object()) return false;
    const auto it = body.find("explain_terms");
    return it != body.end() && !it->is_null();
}

namespace {

// The 3 or 4 indexes of a dictionary entry, each checked against `terms` (nullopt + the error).
base::Result<std::array<std::size_t, 4>> entry_indexes(const json& entry, std::size_t terms,
                                                       const std::string& path) {
    if (!entry.is_array()) return type_error(path, "array of 3 or 4 term indexes", entry);
    if (entry.size() != 3 && entry.size() != 4)
        return decode_error(path,
                            "expected 3 or 4 term indexes, got " + std::to_string(entry.size()));
    std::array<std::size_t, 4> out{0, 0, 0, std::numeric_limits<std::size_t>::max()};
    for (std::size_t i = 0; i < entry.size(); ++i) {
        const json& v = entry[i];
        const std::string at = index_path(path, i);
        if (v.is_number_unsigned()) {
            const auto n = v.get<std::uint64_t>();
            if (n >= terms)
                return decode_error(at, "index " + std::to_string(n) + " out of range (" +
                                            std::to_string(terms) + " terms)");
            out[i] = static_cast<std::size_t>(n);
        } else if (v.is_number_integer()) {
            return decode_error(at, "negative term index");
        } else {
            return type_error(at, "term index", v);
        }
    }
    return out;
}

// The same, lenient: nullopt for an entry that is not well formed.
std::optional<std::array<std::size_t, 4>> entry_indexes_or_skip(const json& entry,
                                                                std::size_t terms) {
    if (!entry.is_array() || (entry.size() != 3 && entry.size() != 4)) return std::nullopt;
    std::array<std::size_t, 4> out{0, 0, 0, std::numeric_limits<std::size_t>::max()};
    for (std::size_t i = 0; i < entry.size(); ++i) {
        if (!entry[i].is_number_unsigned()) return std::nullopt;
        const auto n = entry[i].get<std::uint64_t>();
        if (n >= terms) return std::nullopt;
        out[i] = static_cast<std::size_t>(n);
    }
    return out;
}

base::Result<std::vector<Triple>> decode_dictionary(const json& terms_json, const json& entries,
                                                    std::string_view graph) {
    if (!terms_json.is_array()) return type_error("explain_terms", "array", terms_json);
    std::vector<Term> terms;
    terms.reserve(terms_json.size());
    for (std::size_t i = 0; i < terms_json.size(); ++i) {
        auto term = decode_term(terms_json[i], index_path("explain_terms", i));
        if (!term) return std::move(term).error();
        terms.push_back(std::move(term).value());
    }
    std::vector<Triple> out;
    if (entries.is_null()) return out;
    if (!entries.is_array()) return type_error("explain_triples", "array", entries);
    out.reserve(entries.size());
    const std::optional<std::string> message_graph =
        graph.empty() ? std::nullopt : std::optional<std::string>(graph);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string path = index_path("explain_triples", i);
        auto at = entry_indexes(entries[i], terms.size(), path);
        if (!at) return std::move(at).error();
        const auto& x = *at;
        Triple t{terms[x[0]], terms[x[1]], terms[x[2]], message_graph};
        if (entries[i].size() == 4) {
            const Term& g = terms[x[3]];
            if (!g.is_iri())
                return decode_error(index_path(path, 3), "the graph is not an IRI term");
            t.graph = g.as_iri().value;
        }
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace

base::Result<std::vector<Triple>> decode_explain_triples(const json& body, std::string_view graph) {
    try {
        if (!body.is_object()) return type_error("", "object", body);
        static const json kNone;
        const auto entries = body.find("explain_triples");
        const json& list = entries == body.end() ? kNone : *entries;
        if (has_term_dictionary(body)) return decode_dictionary(body["explain_terms"], list, graph);
        std::vector<Triple> out;
        if (list.is_null()) return out;
        if (!list.is_array()) return type_error("explain_triples", "array", list);
        out.reserve(list.size());
        for (std::size_t i = 0; i < list.size(); ++i) {
            auto triple = decode_triple(list[i], index_path("explain_triples", i));
            if (!triple) return std::move(triple).error();
            out.push_back(std::move(triple).value());
        }
        return out;
    } catch (const std::exception& e) {
        return base::make_error(base::ErrorType::kDecodeError,
                                std::string("explain_triples: ") + e.what());
    }
}

void for_each_explain_triple(const json& body,
                             const std::function<void(const json&, const json&, const json&)>& fn) {
    if (!body.is_object()) return;
    const auto entries = body.find("explain_triples");
    if (entries == body.end() || !entries->is_array()) return;
    if (has_term_dictionary(body)) {
        const json& terms = body["explain_terms"];
        if (!terms.is_array()) return;
        for (const auto& entry : *entries) {
            if (const auto at = entry_indexes_or_skip(entry, terms.size()))
                fn(terms[(*at)[0]], terms[(*at)[1]], terms[(*at)[2]]);
        }
        return;
    }
    for (const auto& triple : *entries) {
        if (!triple.is_object()) continue;
        const auto s = triple.find("s");
        const auto p = triple.find("p");
        const auto o = triple.find("o");
        if (s == triple.end() || p == triple.end() || o == triple.end()) continue;
        fn(*s, *p, *o);
    }
}

json plain_explain_body(const json& body) {
    if (!has_term_dictionary(body)) return body;
    json out = body;
    out.erase("explain_terms");
    json triples = json::array();
    const json& terms = body["explain_terms"];
    const auto entries = body.find("explain_triples");
    if (terms.is_array() && entries != body.end() && entries->is_array()) {
        const auto graph = body.find("explain_graph");
        const std::string message_graph =
            graph != body.end() && graph->is_string() ? graph->get<std::string>() : std::string();
        for (const auto& entry : *entries) {
            const auto at = entry_indexes_or_skip(entry, terms.size());
            if (!at) continue;
            json triple{{"s", terms[(*at)[0]]}, {"p", terms[(*at)[1]]}, {"o", terms[(*at)[2]]}};
            if (entry.size() == 4) {
                const json& g = terms[(*at)[3]];
                const auto iri = g.is_object() ? g.find("i") : g.end();
                if (!g.is_object() || iri == g.end() || !iri->is_string()) continue;
                triple["g"] = *iri;
            } else if (!message_graph.empty()) {
                triple["g"] = message_graph;
            }
            triples.push_back(std::move(triple));
        }
    }
    out["explain_triples"] = std::move(triples);
    return out;
}

}  // namespace glassbox::schema
