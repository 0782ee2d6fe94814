// The trace formats of `glassbox traces show --format` (the RDF renderings themselves are
// schema/trace_rdf.hpp, shared with the HTTP gateway).
#include "cli/render/trace_render.hpp"

#include "base/enum_names.hpp"

namespace glassbox::cli::render {
namespace {

// The first is the default.
constexpr base::EnumName<TraceFormat> kTraceFormatNames[] = {
    {TraceFormat::kTree, "tree"},     {TraceFormat::kJson, "json"},
    {TraceFormat::kTurtle, "turtle"}, {TraceFormat::kNTriples, "ntriples"},
    {TraceFormat::kNQuads, "nquads"}, {TraceFormat::kJsonLd, "jsonld"}};

}  // namespace

std::optional<TraceFormat> trace_format_from_string(std::string_view name) noexcept {
    return base::enum_from_name(kTraceFormatNames, name);
}

std::string_view to_string(TraceFormat format) noexcept {
    return base::enum_name(kTraceFormatNames, format);
}

}  // namespace glassbox::cli::render
