// Renderers for the `trace` service's replies (docs/traces.md §2): tree, Turtle, N-Triples,
// N-Quads, JSON-LD, tables.
//
// Defined by job: tree_render.cpp (the full tree), rdf_render.cpp (triples, Turtle, N-Triples,
// N-Quads, JSON-LD), list_render.cpp (the list table, tail lines), step_summary.cpp (`invoke -x`
// lines), summary_tree.cpp (the default tree), step_facts.cpp (what both short renderings read),
// observation_summary.cpp (an agent's observations), render_text.cpp (shared text helpers,
// safe_text, format_duration).
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
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "bus/explain_subscriber.hpp"
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

// IRI → label: names for the entities a trace mentions (rdfs:label triples in the trace win).
using Labels = std::map<std::string, std::string, std::less<>>;

struct TreeOptions {
    bool show_sources = false;  // source chunk, document, offsets and data tier of each selection
    std::size_t indent = 0;     // spaces before every line (sub-traces add 4 per level)
    bool full = false;          // every stored triple (the step blocks), not the summary
    // Levels of sub-runs expanded (0: none, each shown as one line); nullopt: all of them
    // (nesting is bounded by schema::kMaxTraceDepth).
    std::optional<std::size_t> depth;
    std::size_t max_items = 10;  // summary: kept edges or chunks listed per step ("+N more")
    Labels labels;               // summary: names of entities the trace does not label itself
};

// A human-readable trace.
//
// The summary (the default): a header (trace, kind, question, answer — the short answer when
// there is one —, collection, status and duration, model and tokens), one line per step (its
// seq, kind and key facts: concepts, seeds, how many edges were explored and kept, the tool and
// a summary of its observation, the route, …), the kept edges and chunks under their step by
// name (labels, scores to 2 decimals, best first, at most max_items), and each sub-run nested
// under the step that called it, with its own header and steps.
//
// `full`: one block per event in seq order (step type and URI, generated time, duration, model,
// tokens, every fact of the step), sub-traces nested where they were called. Predicates it
// does not know are shown generically, so no stored triple is hidden (except the sources of
// selections, shown with show_sources).
//
// Both end with the error when the status is error. Control characters of stored texts are
// escaped: a trace cannot drive the terminal.
std::string render_tree(const schema::TraceDetail& trace, const TreeOptions& options = {});

// The IRIs a summary tree names (the ends of kept edges, seeds): what to ask the store labels for.
std::vector<std::string> iris_to_label(const schema::TraceDetail& trace);

// The `list` table: Session | Kind | Question | Started | Duration | Status, then a count line.
// Sessions with a glassbox URI show its UUID (which `show` accepts, as any unique prefix of it).
std::string render_session_table(const schema::TraceSessionList& list);

// One evaluation of a run on one line (`traces show`): the verdict, the scores, the set, the
// evaluation run, when, and the accepted answers, as stored (the caller escapes it).
std::string evaluation_line(const schema::TraceEvaluation& evaluation);

// `tail`: one line per explain event (received time, kind, session, seq, state, step type,
// explain_id, triple count), or the same as a JSON object with the body.
std::string render_event_line(const bus::ExplainEvent& event, std::string_view received);
nlohmann::json event_json(const bus::ExplainEvent& event, std::string_view received);

// The step type of an explain message: the gb: classes of its explain_id joined by '+'
// ("Analysis+ToolUse"), else its prov: class, else "-".
std::string step_type(const nlohmann::json& explain_body);

// One line per explain message of one run as it arrives (`glassbox invoke -x`), in order: the
// step type, its URI and the step's key facts — the question; concepts; seed, edge and chunk
// counts; the kept edges (labels when the message carries them) and chunks with their scores,
// best first; the citation count; duration, model and tokens — then "trace <status>" on the
// message that ends the trace. At most `max_items` edges or chunks are listed ("+N more" for the
// rest). Control characters are escaped. A re-ranked chunk (which names no chunk itself) is named
// after the retrieved chunk an earlier step named.
// Names for IRIs, asked as a message needs them (cli/trace_labels.hpp asks the store); an IRI
// it does not answer keeps its local name.
using Labeler = std::function<Labels(const std::vector<std::string>& iris)>;

namespace detail {
class StepFacts;
}

class StepSummaries {
public:
    explicit StepSummaries(std::size_t max_items = 5) : max_items_(max_items) {}
    std::string next(const nlohmann::json& explain_body);
    // Names for entities the messages do not label themselves: the seeds and kept edges' ends
    // of each message, asked once per message for those not named yet.
    void set_labeler(Labeler labeler) { labeler_ = std::move(labeler); }

private:
    void learn_labels(const detail::StepFacts& facts, const schema::Term& node);

    std::size_t max_items_;
    Labeler labeler_;
    Labels labels_;                                   // what the labeler answered so far
    std::map<std::string, std::string> chunk_names_;  // selection URI -> its chunk's short name
};

// An agent's observation (a tool's reply) as a short line for a reader: a fact lookup's
// "7 facts about MV Gannet: MV Gannet was built by Brenn and Daughters Shipyard; …", a RAG
// tool's "answer \"Ilse Varrow\"; 2 facts: …" or "…; 2 chunks from lighthouses.md, gale.md", an
// error's message, any other text as it is; cut at a word boundary with "…" past `width` code
// points, never inside a quoted value. Control characters are escaped. `invoke agent`, chat and
// the trace tree all show observations through it.
inline constexpr std::size_t kObservationWidth = 200;
std::string summarize_observation(std::string_view content, bool error = false,
                                  std::size_t width = kObservationWidth);

// `text` with control characters escaped as the tree does (newlines and tabs kept when
// `keep_newlines`): for printing untrusted text such as a streamed answer.
std::string safe_text(std::string_view text, bool keep_newlines);

// "12 ms", "1.25 s", "2 min 5 s"; "-" for none.
std::string format_duration(std::optional<std::int64_t> duration_ms);
// A cost as the renderers show it (docs/traces.md, "Cost"): "-" for none (unpriced), at most 2
// decimals from 1 up, else 3 significant digits ("0.00123"), trailing zeros dropped.
std::string format_cost(std::optional<double> cost);

}  // namespace glassbox::cli::render
