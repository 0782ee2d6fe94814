// Internal to cli/render: the facts of explain steps read by subject, and the pieces both short
// renderings share (the `invoke -x` line and the default `traces show` tree): names by label,
// selections best first, scores rounded.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cli/render/trace_render.hpp"
#include "schema/messages_trace.hpp"
#include "schema/term.hpp"

namespace glassbox::cli::render::detail {

// IRI → label, from rdfs:label triples or from the store (TreeOptions::labels).
using LabelMap = std::map<std::string, std::string, std::less<>>;  // = render::Labels

// The triples of one or more explain messages, by subject.
class StepFacts {
public:
    // Filled with add(): an explain body's triples in either form come from
    // schema::for_each_explain_triple (step_summary.cpp).
    StepFacts() = default;
    void add(const schema::Triple& triple);
    // Labels to use where the triples carry none (they win over these).
    void set_fallback_labels(const LabelMap* labels) noexcept { fallback_ = labels; }

    std::vector<schema::Term> values(const schema::Term& node, std::string_view predicate) const;
    std::optional<schema::Term> value(const schema::Term& node, std::string_view predicate) const;
    std::optional<std::string> text(const schema::Term& node, std::string_view predicate) const;
    std::optional<double> number(const schema::Term& node, std::string_view predicate) const;
    // A text stored inline under `text_predicate`, else the text its `ref_predicate` node
    // carries (a stored text the trace service re-inlined).
    std::optional<std::string> stored_text(const schema::Term& node,
                                           std::string_view text_predicate,
                                           std::string_view ref_predicate) const;
    bool has_type(const schema::Term& node, std::string_view type) const;
    // Whether the triples carry an rdfs:label for `iri`.
    bool labelled(std::string_view iri) const { return labels_.find(iri) != labels_.end(); }

    // An IRI by its label when one is known, else its local name; a literal quoted.
    std::string name(const schema::Term& term) const;

private:
    std::unordered_map<std::string, std::vector<schema::Triple>> by_subject_;
    LabelMap labels_;
    const LabelMap* fallback_ = nullptr;
};

// " (0.42)": a score rounded to 2 decimals; "" for none.
std::string score_text(std::optional<double> score);
// "0.42"; "-" for none.
std::string score_value(std::optional<double> score);

// A source's freshness as the trace records it on the document (or answer source) node
// (docs/knowledge.md §3): "dated 2020-01-01, loaded 2026-12-01T10:40:00Z, max age 30d, STALE",
// each part when recorded; "" when none is.
std::string freshness_text(const StepFacts& facts, const schema::Term& source);
// Whether the trace marks `source` past its collection's revalidation age (gb:stale true).
bool stale_source(const StepFacts& facts, const schema::Term& source);

// One edge or chunk a step selected, as a reader names it.
struct Selection {
    std::optional<double> score;
    std::string text;  // "Greyhollow Light was designed by Ilse Varrow", "lighthouses.md#chunk-2"
};

// The selections `node` links with `predicate` (edges when `edges`, else chunks), best score
// first. A chunk is named by its document's file name and fragment; a re-ranked chunk, which
// names no chunk itself, by the retrieved chunk it came from (`chunk_names`, kept across steps).
// An edge reads "S -p-> O" with `arrows`, else as the sentence "S p O". A selection whose source
// document is stale ends "  STALE (dated …, max age …)".
std::vector<Selection> selections(const StepFacts& facts, const schema::Term& node,
                                  std::string_view predicate, bool edges,
                                  std::map<std::string, std::string>& chunk_names, bool arrows);

// ---- the tree's shared parts (tree_render.cpp, summary_tree.cpp) -----------------------------

// The step that called a sub-trace: what its Question prov:used (docs/vocabulary.md §2); else
// the parent session its summary names.
std::string calling_step(const schema::TraceDetail& sub);
// The event of `trace` a sub-trace goes under: the one whose step is `caller`, else the one
// that describes it (a step sent inside another step's message, as an agent's ToolUse beside its
// Analysis may be). nullopt when no event names it.
std::optional<std::string> event_describing(const schema::TraceDetail& trace,
                                            const std::string& caller);
// A trace's sub-runs by where the tree draws them: under the event that describes their calling
// step (that event's id → (the calling step, the sub-run)), or after every step when no event
// describes it.
struct SubRunPlaces {
    std::multimap<std::string, std::pair<std::string, const schema::TraceDetail*>> by_step;
    std::vector<const schema::TraceDetail*> unplaced;
};
SubRunPlaces place_sub_runs(const schema::TraceDetail& trace);
// The ERROR line of a trace that ended in error ("" for any other): its stored error, else the
// last event's, else a line saying none was stored.
std::string error_line(const schema::TraceDetail& trace);
// One line for a sub-run the tree does not expand: kind, UUID, status, duration, question.
std::string sub_run_line(const schema::TraceDetail& sub);
// The default tree (TreeOptions::full false).
std::string render_summary_tree(const schema::TraceDetail& trace, const TreeOptions& options);

}  // namespace glassbox::cli::render::detail
