// The trace formats of `glassbox traces show --format` (the RDF renderings themselves are
// schema/trace_rdf.hpp, shared with the HTTP gateway).
#include "cli/render/trace_render.hpp"

namespace glassbox::cli::render {

std::optional<TraceFormat> trace_format_from_string(std::string_view name) noexcept {
    if (name == "tree") return TraceFormat::kTree;
    if (name == "json") return TraceFormat::kJson;
    if (name == "turtle") return TraceFormat::kTurtle;
    if (name == "ntriples") return TraceFormat::kNTriples;
    if (name == "nquads") return TraceFormat::kNQuads;
    if (name == "jsonld") return TraceFormat::kJsonLd;
    return std::nullopt;
}

std::string_view to_string(TraceFormat format) noexcept {
    switch (format) {
        case TraceFormat::kTree:
            return "tree";
        case TraceFormat::kJson:
            return "json";
        case TraceFormat::kTurtle:
            return "turtle";
        case TraceFormat::kNTriples:
            return "ntriples";
        case TraceFormat::kNQuads:
            return "nquads";
        case TraceFormat::kJsonLd:
            return "jsonld";
    }
    return "tree";
}

}  // namespace glassbox::cli::render
