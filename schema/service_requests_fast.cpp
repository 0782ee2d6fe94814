// Tree-free writers of graph RAG's store and embeddings requests; see the header for how they are
// tied to the tree encoders.
#include "schema/service_requests_fast.hpp"

#include <charconv>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "schema/json_fast.hpp"

namespace glassbox::schema {
namespace {

// `"key":` after a comma unless it is the object's first; keys are this file's ASCII constants.
void request_key(std::string& out, std::string_view key, bool first = false) {
    if (!first) out += ',';
    out += '"';
    out += key;
    out += "\":";
}

void request_uint(std::string& out, std::uint64_t value) {
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, end);
}

// `[item,item,...]`, each written by `write(item)`.
template <typename Items, typename Write>
void request_array(std::string& out, const Items& items, Write&& write) {
    out += '[';
    bool first = true;
    for (const auto& item : items) {
        if (!first) out += ',';
        first = false;
        write(item);
    }
    out += ']';
}

// A pattern's set positions, keys in sorted order (g, o, p, s); an unset one is left out.
void request_pattern(std::string& out, const TriplePattern& pattern) {
    out += '{';
    bool first = true;
    if (pattern.g) {
        request_key(out, "g", first);
        append_json_string(out, *pattern.g);
        first = false;
    }
    const std::pair<std::string_view, const std::optional<Term>*> terms[] = {
        {"o", &pattern.o}, {"p", &pattern.p}, {"s", &pattern.s}};
    for (const auto& [key, term] : terms) {
        if (!*term) continue;
        request_key(out, key, first);
        append_json(out, **term);
        first = false;
    }
    out += '}';
}

// `{"collection":C,` with the "op" key and the keys between them left to the caller.
void request_start(std::string& out, std::string_view collection) {
    out += '{';
    request_key(out, "collection", true);
    append_json_string(out, collection);
}

}  // namespace

std::string encode_store_request(std::string_view op, const GraphEmbeddingsQuery& m) {
    std::size_t numbers = 0;
    for (const auto& vector : m.vectors) numbers += vector.size();
    std::string out;
    out.reserve(96 + m.collection.size() + op.size() + 2 * m.vectors.size() + 24 * numbers);
    request_start(out, m.collection);
    request_key(out, "limit");
    request_uint(out, m.limit);
    request_key(out, "op");
    append_json_string(out, op);
    request_key(out, "vectors");
    request_array(out, m.vectors, [&out](const std::vector<double>& vector) {
        request_array(out, vector, [&out](double value) { append_json_number(out, value); });
    });
    out += '}';
    return out;
}

std::string encode_store_request(std::string_view op, const TriplesQueryBatch& m) {
    std::string out;
    out.reserve(96 + m.collection.size() + op.size() + 128 * m.patterns.size());
    request_start(out, m.collection);
    request_key(out, "labels");
    out += m.labels ? "true" : "false";
    request_key(out, "limit");
    request_uint(out, m.limit);
    request_key(out, "op");
    append_json_string(out, op);
    request_key(out, "patterns");
    request_array(out, m.patterns,
                  [&out](const TriplePattern& pattern) { request_pattern(out, pattern); });
    if (m.rows) {
        request_key(out, "rows");
        request_uint(out, *m.rows);
    }
    out += '}';
    return out;
}

std::string encode_store_request(std::string_view op, const FactSourcesRequest& m) {
    std::string out;
    out.reserve(64 + m.collection.size() + op.size() + 192 * m.triples.size());
    request_start(out, m.collection);
    request_key(out, "op");
    append_json_string(out, op);
    request_key(out, "triples");
    append_json(out, std::span<const Triple>(m.triples));
    out += '}';
    return out;
}

std::string encode_store_request(std::string_view op, const LabelsRequest& m) {
    std::string out;
    out.reserve(64 + m.collection.size() + op.size() + 64 * m.terms.size());
    request_start(out, m.collection);
    request_key(out, "op");
    append_json_string(out, op);
    request_key(out, "terms");
    request_array(out, m.terms, [&out](const Term& term) { append_json(out, term); });
    out += '}';
    return out;
}

std::string encode_text(const EmbeddingsRequest& m) {
    std::size_t bytes = 16;
    for (const auto& text : m.texts) bytes += 4 + text.size();
    std::string out;
    out.reserve(bytes);
    out += '{';
    request_key(out, "texts", true);
    request_array(out, m.texts, [&out](const std::string& text) { append_json_string(out, text); });
    out += '}';
    return out;
}

}  // namespace glassbox::schema
