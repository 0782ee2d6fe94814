// The two triple sinks: a list of Triples, and the wire JSON written in place.
#include "schema/triple_sink.hpp"

#include <charconv>

#include "schema/json_fast.hpp"

namespace glassbox::schema {

void TripleSink::integer(std::string_view s, std::string_view p, std::uint64_t value) {
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    literal(s, p, std::string_view(buffer, static_cast<std::size_t>(end - buffer)), kXsdInteger);
}

void TripleSink::number(std::string_view s, std::string_view p, double value) {
    literal(s, p, xsd_double_lexical(value), kXsdDouble);
}

// ---- TripleList -----------------------------------------------------------------------------

TripleList::TripleList(std::optional<std::string> graph, std::size_t expected)
    : graph_(std::move(graph)) {
    triples_.reserve(expected);
}

void TripleList::iri(std::string_view s, std::string_view p, std::string_view o) {
    triples_.push_back(Triple{schema::iri(s), schema::iri(p), schema::iri(o), graph_});
    ++count_;
}

void TripleList::literal(std::string_view s, std::string_view p, std::string_view value,
                         std::string_view datatype) {
    triples_.push_back(
        Triple{schema::iri(s), schema::iri(p), typed_literal(value, datatype), graph_});
    ++count_;
}

void TripleList::term(std::string_view s, std::string_view p, const Term& o) {
    triples_.push_back(Triple{schema::iri(s), schema::iri(p), o, graph_});
    ++count_;
}

// ---- TripleJson -----------------------------------------------------------------------------
// The layout of append_json(Triple): keys in sorted order, {"g":…,"o":…,"p":…,"s":…}; the terms
// through json_fast's own term writers.

TripleJson::TripleJson(std::string& out, std::optional<std::string_view> graph) : out_(out) {
    head_.push_back('{');  // not `head_ = "{"`: GCC 12 -O3 -Wrestrict false positive (bug 105329)
    if (graph) {
        head_ += "\"g\":";
        append_json_string(head_, *graph);
        head_ += ',';
    }
    head_ += "\"o\":";
    out_ += '[';
}

void TripleJson::begin() {
    if (count_++ > 0) out_ += ',';
    out_ += head_;
}

void TripleJson::end(std::string_view s, std::string_view p) {
    out_ += ",\"p\":";
    append_json_iri(out_, p);
    out_ += ",\"s\":";
    append_json_iri(out_, s);
    out_ += '}';
}

void TripleJson::iri(std::string_view s, std::string_view p, std::string_view o) {
    begin();
    append_json_iri(out_, o);
    end(s, p);
}

void TripleJson::literal(std::string_view s, std::string_view p, std::string_view value,
                         std::string_view datatype) {
    begin();
    append_json_literal(out_, value, datatype == kXsdString ? std::string_view{} : datatype);
    end(s, p);
}

void TripleJson::term(std::string_view s, std::string_view p, const Term& o) {
    begin();
    append_json(out_, o);
    end(s, p);
}

void TripleJson::close() {
    if (closed_) return;
    closed_ = true;
    out_ += ']';
}

}  // namespace glassbox::schema
