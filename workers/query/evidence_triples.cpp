// EvidenceTriples: an explain message's evidence triples as views, read from a JSON tree (as
// schema::for_each_explain_triple walks it) or from the text with schema/json_cursor.hpp.
#include "workers/query/evidence_triples.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "schema/explain_terms.hpp"
#include "schema/json_cursor.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
using schema::JsonCursor;
using schema::JsonKeys;
using schema::JsonText;
namespace v = schema::vocab;

// The predicates the evidence is read from: a selection's type, and what read_evidence reads.
bool read_predicate(std::string_view p) {
    return p == v::kRdfType || p == v::kScore || p == v::kDataTier || p == v::kSourceChunk ||
           p == v::kSourceDocument || p == v::kRdfSubject || p == v::kRdfPredicate ||
           p == v::kRdfObject || p == v::kProvWasDerivedFrom;
}

// A term's value (an IRI, a literal's text, a blank node's label) as a view into `term`; ""
// for anything else.
std::string_view term_view(const json& term) {
    if (!term.is_object()) return {};
    const auto kind = term.find("t");
    if (kind == term.end() || !kind->is_string()) return {};
    const auto& k = kind->get_ref<const std::string&>();
    const char* key = k == "i" ? "i" : k == "l" ? "v" : k == "b" ? "d" : nullptr;
    if (key == nullptr) return {};
    const auto value = term.find(key);
    if (value == term.end() || !value->is_string()) return {};
    return value->get_ref<const std::string&>();
}

// A term as scanned: the string term_view gives, as it stands in the text (absent: "").
struct ScannedTerm {
    JsonText value;
    bool present = false;
};

// {"t": kind, "i" | "v" | "d": value, ...} at nesting `depth`, other keys (a literal's dt and ln,
// a quoted triple's parts) skipped. False for a term that is not an object, whose kind or value
// is not a string, or that repeats one of them: the tree reader decides those.
bool scan_term(JsonCursor& c, int depth, ScannedTerm& out) {
    JsonText kind, iri, literal, blank;
    JsonKeys keys;
    const bool ok = c.object([&](std::string_view key) {
        if (key == "t") return keys.first(1U) && c.raw_string(kind);
        if (key == "i") return keys.first(2U) && c.raw_string(iri);
        if (key == "v") return keys.first(4U) && c.raw_string(literal);
        if (key == "d") return keys.first(8U) && c.raw_string(blank);
        return c.skip(depth + 1);
    });
    if (!ok || kind.escaped) return false;
    out = {};
    const auto pick = [&](const JsonText& value, unsigned bit) {
        if ((keys.seen() & bit) == 0) return;
        out.value = value;
        out.present = true;
    };
    if ((keys.seen() & 1U) == 0) return true;
    if (kind.raw == "i") pick(iri, 2U);
    if (kind.raw == "l") pick(literal, 4U);
    if (kind.raw == "b") pick(blank, 8U);
    return true;
}

// The next value's first byte, 0 at the end.
char peek(JsonCursor& c) { return c.at_end() ? '\0' : *c.position(); }

// One pass over an explain body's text; on success the evidence triples are appended to `out`.
class TextScan {
public:
    TextScan(std::string_view text, std::vector<TripleView>& out,
             std::deque<std::string>& unescaped)
        : cursor_(text), out_(out), unescaped_(unescaped) {}

    bool run(ExplainHead& head) {
        JsonCursor& c = cursor_;
        JsonText session, explain_id;
        std::vector<std::string_view> seen;  // the top level's keys: a repeated one is the tree's
        const bool ok = c.object([&](std::string_view key) {
            if (std::find(seen.begin(), seen.end(), key) != seen.end()) return false;
            seen.push_back(key);
            if (key == "session") return c.raw_string(session);
            if (key == "explain_id") return c.raw_string(explain_id);
            if (key == "explain_terms") return terms();
            if (key == "explain_triples") return entries();
            return c.skip(1);
        });
        if (!ok || !c.at_end()) return false;
        // Either form alone (docs/protocol.md §8.1); a mixture is left to the tree reader.
        if (dictionary_ ? !plain_.empty() : !indexed_.empty()) return false;
        if (dictionary_ && !resolve_indexed()) return false;
        for (auto& [s, p, o] : plain_) keep(s, p, o);
        head.session = session.str();
        head.explain_id = explain_id.str();
        return true;
    }

private:
    // explain_terms: null (the plain form) or an array of terms (the dictionary form).
    bool terms() {
        JsonCursor& c = cursor_;
        if (peek(c) == 'n') return c.skip(1);
        dictionary_ = true;
        return c.array([&] { return scan_term(c, 2, terms_.emplace_back()); });
    }

    // explain_triples: triple objects (plain) or arrays of 3 or 4 term indexes (dictionary).
    bool entries() {
        JsonCursor& c = cursor_;
        return c.array([&] {
            const char next = peek(c);
            if (next == '[') return index_entry();
            if (next != '{') return false;
            std::array<ScannedTerm, 3> spo;
            JsonKeys keys;
            const bool ok = c.object([&](std::string_view key) {
                if (key == "s") return keys.first(1U) && scan_term(c, 3, spo[0]);
                if (key == "p") return keys.first(2U) && scan_term(c, 3, spo[1]);
                if (key == "o") return keys.first(4U) && scan_term(c, 3, spo[2]);
                return c.skip(3);
            });
            if (!ok || keys.seen() != 7U) return false;
            if (read_predicate(view(spo[1]))) plain_.push_back(spo);
            return true;
        });
    }

    bool index_entry() {
        JsonCursor& c = cursor_;
        std::array<std::uint64_t, 4> at{};
        std::size_t n = 0;
        const bool ok = c.array([&] { return n < at.size() && c.uint(at[n++]); });
        if (!ok || n < 3) return false;
        largest_ = std::max({largest_, at[0], at[1], at[2], n == 4 ? at[3] : 0});
        indexed_.push_back({at[0], at[1], at[2]});
        return true;
    }

    // An index entry out of range is skipped by the tree reader: left to it.
    bool resolve_indexed() {
        if (!indexed_.empty() && largest_ >= terms_.size()) return false;
        for (const auto& [s, p, o] : indexed_) {
            if (read_predicate(view(terms_[p]))) keep(terms_[s], terms_[p], terms_[o]);
        }
        return true;
    }

    // The term's value as a view: into the text, or (escaped) into its unescaped copy, which
    // then stands for it.
    std::string_view view(ScannedTerm& term) {
        if (!term.present) return {};
        if (term.value.escaped) {
            unescaped_.push_back(term.value.str());
            term.value = JsonText{unescaped_.back(), false};
        }
        return term.value.raw;
    }

    void keep(ScannedTerm& s, ScannedTerm& p, ScannedTerm& o) {
        out_.push_back({view(s), view(p), view(o)});
    }

    JsonCursor cursor_;
    std::vector<TripleView>& out_;
    std::deque<std::string>& unescaped_;
    bool dictionary_ = false;
    std::vector<ScannedTerm> terms_;
    std::vector<std::array<std::uint64_t, 3>> indexed_;
    std::uint64_t largest_ = 0;
    std::vector<std::array<ScannedTerm, 3>> plain_;  // the plain triples with a read predicate
};

}  // namespace

void EvidenceTriples::add(const json& body) {
    // Either form of explain_triples (docs/protocol.md §8.1).
    schema::for_each_explain_triple(body, [&](const json& s, const json& p, const json& o) {
        const std::string_view predicate = term_view(p);
        if (read_predicate(predicate)) triples_.push_back({term_view(s), predicate, term_view(o)});
    });
}

bool EvidenceTriples::add_text(std::string_view text, ExplainHead& head) {
    const std::size_t before = triples_.size();
    if (TextScan(text, triples_, unescaped_).run(head)) return true;
    triples_.resize(before);
    return false;
}

}  // namespace glassbox::query
