// The store's triples-batch, fact-sources and labels requests read from their text in one pass, on
// the project's JSON cursor.
#include "schema/store_requests_text.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "schema/json_cursor.hpp"
#include "schema/term_text.hpp"

namespace glassbox::schema {
namespace {

// The keys every one of these requests has besides its list.
enum : unsigned { kOpKey = 1, kCollectionKey = 2, kListKey = 4, kFirstFreeKey = 8 };

// {"s"?, "p"?, "o"?, "g"?} as decode<TriplePattern> reads it: a position given is a term, and
// "g" given is the graph even when empty (unlike a triple's).
bool read_pattern_text(JsonCursor& r, TriplePattern& out) {
    enum : unsigned { kS = 1, kP = 2, kO = 4, kG = 8 };
    JsonKeys keys;
    return r.object([&](std::string_view key) {
        if (key == "s") return keys.first(kS) && read_json_term(r, out.s.emplace());
        if (key == "p") return keys.first(kP) && read_json_term(r, out.p.emplace());
        if (key == "o") return keys.first(kO) && read_json_term(r, out.o.emplace());
        if (key == "g") return keys.first(kG) && r.string(out.g.emplace());
        return r.skip();
    });
}

// A request's top-level object: "op" (which must be `op`), "collection" and the list under
// `list_key` read here, any other key by `other(key)`.
template <typename ReadList, typename ReadOther>
bool read_request_text(std::string_view text, std::string_view op, std::string& collection,
                       std::string_view list_key, ReadList&& read_list, ReadOther&& other) {
    JsonKeys keys;
    JsonCursor r(text);
    std::string op_read;
    const bool read = r.object([&](std::string_view key) {
        if (key == "op") return keys.first(kOpKey) && r.string(op_read);
        if (key == "collection") return keys.first(kCollectionKey) && r.string(collection);
        if (key == list_key) return keys.first(kListKey) && read_list(r);
        return other(r, key, keys);
    });
    return read && r.at_end() && (keys.seen() & kOpKey) != 0 && op_read == op;
}

bool skip_other(JsonCursor& r, std::string_view, JsonKeys&) { return r.skip(); }

}  // namespace

bool read_triples_batch(std::string_view text, TriplesQueryBatch& out) {
    out = TriplesQueryBatch{};
    enum : unsigned { kLimit = kFirstFreeKey, kLabels = kFirstFreeKey << 1, kRows = kLimit << 2 };
    const auto patterns = [&](JsonCursor& r) {
        return r.array([&] { return read_pattern_text(r, out.patterns.emplace_back()); });
    };
    // An unsigned 32-bit field; beyond its range: false, the tree's error.
    const auto read_u32 = [](JsonCursor& r, std::uint32_t& value) {
        std::uint64_t n = 0;
        if (!r.uint(n) || n > std::numeric_limits<std::uint32_t>::max()) return false;
        value = static_cast<std::uint32_t>(n);
        return true;
    };
    const auto other = [&](JsonCursor& r, std::string_view key, JsonKeys& keys) {
        if (key == "labels") return keys.first(kLabels) && r.boolean(out.labels);
        if (key == "rows") return keys.first(kRows) && read_u32(r, out.rows.emplace());
        if (key != "limit") return r.skip();
        return keys.first(kLimit) && read_u32(r, out.limit);
    };
    return read_request_text(text, "triples-batch", out.collection, "patterns", patterns, other);
}

bool read_fact_sources(std::string_view text, FactSourcesRequest& out) {
    out = FactSourcesRequest{};
    const auto triples = [&](JsonCursor& r) {
        return r.array([&] { return read_json_triple(r, out.triples.emplace_back()); });
    };
    return read_request_text(text, "fact-sources", out.collection, "triples", triples, skip_other);
}

bool read_labels_request(std::string_view text, LabelsRequest& out) {
    out = LabelsRequest{};
    const auto terms = [&](JsonCursor& r) {
        return r.array([&] { return read_json_term(r, out.terms.emplace_back()); });
    };
    return read_request_text(text, "labels", out.collection, "terms", terms, skip_other);
}

}  // namespace glassbox::schema
