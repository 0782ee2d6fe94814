// RDF formats by name and file extension, issue lines, and N-Quads batch text for the store
// service (written with the schema's writer, parsed with the schema's parser).
#include "loader/rdf_reader.hpp"

#include "base/utf8.hpp"

#include <string>

#include "schema/nquads.hpp"
#include "text/tokenize.hpp"

namespace glassbox::loader {
namespace {

using base::ErrorType;
using schema::Term;

// A guess of a term's N-Triples size, so a batch is written into one reservation.
std::size_t estimated_size(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return term.as_iri().value.size() + 2;
        case Term::Kind::kBlankNode:
            return term.as_blank().id.size() + 2;
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            return lit.value.size() + lit.datatype.size() + lit.language.size() + 6;
        }
        case Term::Kind::kTriple:
            return 64;
    }
    return 0;
}

}  // namespace

std::string RdfIssue::describe() const {
    std::string out = file;
    if (line > 0) {
        out += ':' + std::to_string(line);
        if (column > 0) out += ':' + std::to_string(column);
    }
    out += ": ";
    out += message;
    // The path and serd's message may quote bytes that are not UTF-8: escaped (issue 16).
    return base::printable_utf8(out);
}

std::string_view to_string(RdfFormat format) noexcept {
    switch (format) {
        case RdfFormat::kNTriples:
            return "ntriples";
        case RdfFormat::kNQuads:
            return "nquads";
        case RdfFormat::kTurtle:
            return "turtle";
        case RdfFormat::kTriG:
            return "trig";
    }
    return "unknown";
}

std::string_view media_type(RdfFormat format) noexcept {
    switch (format) {
        case RdfFormat::kNTriples:
            return "application/n-triples";
        case RdfFormat::kNQuads:
            return "application/n-quads";
        case RdfFormat::kTurtle:
            return "text/turtle";
        case RdfFormat::kTriG:
            return "application/trig";
    }
    return "application/octet-stream";
}

base::Result<RdfFormat> format_from_name(std::string_view name) {
    const std::string key = text::lower(name);
    if (key == "ntriples" || key == "nt") return RdfFormat::kNTriples;
    if (key == "nquads" || key == "nq") return RdfFormat::kNQuads;
    if (key == "turtle" || key == "ttl") return RdfFormat::kTurtle;
    if (key == "trig") return RdfFormat::kTriG;
    return base::make_error(ErrorType::kInvalidRequest,
                            "unknown RDF format '" + base::printable_utf8(name) +
                                "'; accepted: ntriples (nt), nquads (nq), turtle (ttl), trig");
}

base::Result<RdfFormat> format_from_path(const std::filesystem::path& path) {
    const std::string ext = text::lower(path.extension().string());
    if (ext == ".nt") return RdfFormat::kNTriples;
    if (ext == ".nq") return RdfFormat::kNQuads;
    if (ext == ".ttl" || ext == ".turtle") return RdfFormat::kTurtle;
    if (ext == ".trig") return RdfFormat::kTriG;
    if (ext == ".gz") {
        return base::make_error(ErrorType::kInvalidRequest,
                                base::printable_utf8(path.string()) +
                                    ": compressed RDF (.gz) is not supported; decompress it first "
                                    "(gunzip -k " +
                                    base::printable_utf8(path.string()) + ")");
    }
    return base::make_error(
        ErrorType::kInvalidRequest,
        base::printable_utf8(path.string()) + ": cannot tell the RDF format from the extension '" +
            base::printable_utf8(path.extension().string()) +
            "'; accepted: .nt, .nq, .ttl, .turtle, .trig, or name it with --format "
            "ntriples|nquads|turtle|trig");
}

void write_nquads(std::span<const schema::Triple> batch, std::string& out) {
    std::size_t estimate = 0;
    for (const auto& t : batch) {
        estimate += estimated_size(t.s) + estimated_size(t.p) + estimated_size(t.o) + 8;
        if (t.graph) estimate += t.graph->size() + 3;
    }
    out.reserve(out.size() + estimate + estimate / 16);
    for (const auto& t : batch) schema::append_nquads(out, t);
}

base::Result<std::vector<schema::Triple>> parse_nquads(std::string_view text) {
    return schema::parse_nquads(text);
}

}  // namespace glassbox::loader
