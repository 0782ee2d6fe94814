// Renderers for the `trace` service's replies (docs/traces.md §2): tree, Turtle, N-Triples,
// N-Quads, JSON-LD, tables.
//
// Defined by job: tree_render.cpp (the tree), rdf_render.cpp (triples, Turtle, N-Triples,
// N-Quads, JSON-LD), list_render.cpp (the list table, tail lines), step_summary.cpp (`invoke -x`
// lines), render_text.cpp (shared text helpers, safe_text, format_duration).
//
// Pure functions, no sockets: the CLI (`glassbox traces`) decodes a reply with
// schema::decode<schema::TraceDetail> / <schema::TraceSessionList> and hands the value here.
//
// Graphs: every explain triple lives in urn:graph:retrieval (docs/vocabulary.md §1). Turtle and
// N-Triples have no graphs, so their output holds the triples of every graph merged (for a
// trace: exactly the triples of urn:graph:retrieval); N-Quads and JSON-LD keep the graph.
// Every RDF rendering carries each distinct stored triple once: a triple stored by two events
// is one RDF triple, so a parser finds exactly as many triples as distinct_triples() returns.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bus/explain_subscriber.hpp"
#include "base/result.hpp"
#include "schema/messages_trace.hpp"
#include "schema/term.hpp"
#include "schema/trace_rdf.hpp"

namespace glassbox::cli::render {

// The RDF renderings (schema/trace_rdf.hpp, shared with the HTTP gateway).
using schema::rdf::distinct_triples;
using schema::rdf::render_jsonld;
using schema::rdf::render_nquads;
using schema::rdf::render_ntriples;
using schema::rdf::render_turtle;
using schema::rdf::trace_triples;

enum class TraceFormat { kTree, kJson, kTurtle, kNTriples, kNQuads, kJsonLd };
// "tree", "json", "turtle", "ntriples", "nquads", "jsonld".
std::optional<TraceFormat> trace_format_from_string(std::string_view name) noexcept;
std::string_view to_string(TraceFormat format) noexcept;

struct TreeOptions {
    bool show_sources = false;  // source chunk, document, offsets and data tier of each selection
    std::size_t indent = 0;     // spaces before every line (sub-traces add 4 per level)
};

// A human-readable trace: a header (session, kind, status, times, question), one block per
// event in seq order (step type and URI, generated time, duration, model, tokens, the step's
// facts), sub-traces nested where they were called, and a footer with the error when the
// status is error. Predicates it does not know are shown generically, so no stored triple is
// hidden (except the sources of selections, shown with show_sources). Control characters of
// stored texts are escaped: a trace cannot drive the terminal.
std::string render_tree(const schema::TraceDetail& trace, const TreeOptions& options = {});

// The `list` table: Session | Kind | Question | Started | Duration | Status, then a count line.
// Sessions with a glassbox URI show its UUID (which `show` accepts, as any unique prefix of it).
std::string render_session_table(const schema::TraceSessionList& list);

// `tail`: one line per explain event (received time, kind, session, seq, state, step type,
// explain_id, triple count), or the same as a JSON object with the body.
std::string render_event_line(const bus::ExplainEvent& event, std::string_view received);
nlohmann::json event_json(const bus::ExplainEvent& event, std::string_view received);

// The step type of an explain message: the gb: classes of its explain_id joined by '+'
// ("Analysis+ToolUse"), else its prov: class, else "-".
std::string step_type(const nlohmann::json& explain_body);

// One line for an explain message as it arrives (`glassbox invoke -x`): the step type, its URI
// and the step's key facts — the question; concepts; seed, edge and chunk counts; the kept edges
// (labels when the message carries them) and chunks with their scores, best first; the citation
// count; duration, model and tokens — then "trace <status>" on the message that ends the trace.
// At most `max_items` edges or chunks are listed ("+N more" for the rest). Control characters
// are escaped.
std::string render_step_summary(const nlohmann::json& explain_body, std::size_t max_items = 5);

// The same for the explain messages of one run, in order: a re-ranked chunk (which names no chunk
// itself) is named after the retrieved chunk an earlier step named.
class StepSummaries {
public:
    explicit StepSummaries(std::size_t max_items = 5) : max_items_(max_items) {}
    std::string next(const nlohmann::json& explain_body);

private:
    std::size_t max_items_;
    std::map<std::string, std::string> chunk_names_;  // selection URI -> its chunk's short name
};

// `text` with control characters escaped as the tree does (newlines and tabs kept when
// `keep_newlines`): for printing untrusted text such as a streamed answer.
std::string safe_text(std::string_view text, bool keep_newlines);

// "12 ms", "1.25 s", "2 min 5 s"; "-" for none.
std::string format_duration(std::optional<std::int64_t> duration_ms);

}  // namespace glassbox::cli::render
