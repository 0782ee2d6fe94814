// Internal to cli/render: text helpers the renderers share (control-character escapes, widths,
// prefixed names, the fields of an explain body shown in one line).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "schema/messages_trace.hpp"
#include "schema/term.hpp"
#include "schema/trace_rdf.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render::detail {

// Control characters (C0, DEL, C1) become visible escapes: stored texts never reach the terminal
// raw. Newlines and tabs are kept when `keep_newlines`.
std::string escape_controls(std::string_view text, bool keep_newlines);
// Byte offset of code point `n` of UTF-8 `text` (text.size() when past the end).
std::size_t code_point_offset(std::string_view text, std::uint64_t n);
std::size_t code_points(std::string_view text);
// At most `width` code points, "…" marking a cut.
std::string truncate_text(std::string_view text, std::size_t width);
// At most `width` code points, cut at the last space before the limit (mid-word only when a
// single word fills it), trailing punctuation dropped and "…" marking the cut.
std::string cut_at_word(std::string_view text, std::size_t width);
// Runs of whitespace (newlines, tabs) as one space, ends trimmed: a text on one line.
std::string single_line(std::string_view text);
// `text` padded with spaces to `width` code points.
std::string pad(std::string_view text, std::size_t width);

// Prefixed names and triple keys: schema/trace_rdf.hpp.
using schema::rdf::kPrefixes;
using schema::rdf::prefixed_name;
using schema::rdf::quad_key;
using schema::rdf::spo_key;
using schema::rdf::term_key;
// The part of `iri` after namespace `ns`; empty when `iri` is not in it.
std::string_view local_name(std::string_view iri, std::string_view ns);
bool is_integer_lexical(std::string_view text);

// A step's label from its rdf:types, given one by one: its gb: classes joined with "+"
// ("Analysis+ToolUse"), else its first prov: class, else what the caller shows for no type.
class StepTypeLabel {
public:
    void add(std::string_view type_iri);
    // Controls escaped; `untyped` when no type was a gb: or prov: class.
    std::string label(std::string_view untyped) const;

private:
    std::string gb_;
    std::string prov_;
};

// The kind shown for a session: its kind, else the service that ran it.
std::string kind_of(const schema::TraceSessionSummary& s);
// One model call of a step with its cost (docs/traces.md, "Cost"): "tokens 120 in / 30 out, cost
// 0.00123 USD", or "…, no price for <model>".
std::string call_cost(const schema::StepCost& call);
// urn:glassbox:<uuid>:question → <uuid> (which `show` accepts); other sessions as they are.
std::string session_label(const std::string& session);

// A string field of an explain body ("" when absent), and its number of triples.
std::string body_string(const nlohmann::json& body, const char* key);
std::size_t triple_count(const nlohmann::json& body);

}  // namespace glassbox::cli::render::detail
