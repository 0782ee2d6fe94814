// The default tree of `glassbox traces show` and chat's /trace: a header with the question, the
// answer and the cost, one line per step, the kept edges and chunks by name, sub-runs nested.
#include <algorithm>
#include <map>
#include <set>

#include "cli/render/render_text.hpp"
#include "cli/render/step_facts.hpp"
#include "cli/render/trace_render.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

using schema::Term;
using schema::TraceDetail;
using schema::TraceEvent;
namespace vocab = schema::vocab;
using namespace detail;

// Token and model totals of a run and its sub-runs.
struct RunCost {
    std::int64_t in = 0;
    std::int64_t out = 0;
    bool any = false;
    std::vector<std::string> models;
};

std::int64_t integer_of(const std::optional<std::string>& text) {
    if (!text || !is_integer_lexical(*text) || (*text)[0] == '-' || text->size() > 15) return 0;
    return std::stoll(*text);
}

StepFacts facts_of(const TraceDetail& trace, const Labels& labels) {
    StepFacts facts;
    for (const auto& event : trace.events)
        for (const auto& triple : event.triples) facts.add(triple);
    facts.set_fallback_labels(&labels);
    return facts;
}

void add_cost(const TraceDetail& trace, RunCost& cost, int depth = 0) {
    const StepFacts facts = facts_of(trace, {});
    std::set<std::string> seen;
    for (const auto& event : trace.events) {
        if (!seen.insert(event.explain_id).second) continue;
        const Term node = schema::iri(event.explain_id);
        const auto in = facts.text(node, vocab::kInputTokens);
        const auto out = facts.text(node, vocab::kOutputTokens);
        if (in || out) cost.any = true;
        cost.in += integer_of(in);
        cost.out += integer_of(out);
        if (auto model = facts.text(node, vocab::kModelName);
            model && std::find(cost.models.begin(), cost.models.end(), *model) == cost.models.end())
            cost.models.push_back(*model);
    }
    if (depth >= schema::kMaxTraceDepth) return;
    for (const auto& sub : trace.subtraces) add_cost(sub, cost, depth + 1);
}

// The gb: classes of a step joined by '+' ("Analysis+ToolUse"), else its prov: class.
std::string step_kind(const StepFacts& facts, const Term& node) {
    std::string gb;
    std::string prov;
    for (const auto& type : facts.values(node, vocab::kRdfType)) {
        if (!type.is_iri()) continue;
        if (auto local = local_name(type.as_iri().value, vocab::kGbNs); !local.empty()) {
            gb += (gb.empty() ? "" : "+") + std::string(local);
        } else if (auto p = local_name(type.as_iri().value, vocab::kProvNs);
                   !p.empty() && prov.empty()) {
            prov = std::string(p);
        }
    }
    if (gb.empty() && facts.value(node, vocab::kProvWasInvalidatedBy) &&
        facts.value(node, vocab::kRdfSubject))
        return "RemovedFacts";  // a batch of a knowledge change's removed facts
    return !gb.empty() ? gb : !prov.empty() ? prov : std::string("step");
}

// The IRIs of people (prov:Agent) a knowledge change names as its author.
constexpr std::string_view kUserAgentPrefix = "urn:glassbox:agent:user:";

std::string quoted(std::string_view text, std::size_t width) {
    return "\"" + cut_at_word(single_line(text), width) + "\"";
}

// A tool's arguments (a JSON object as text) as its one telling value: the question, the
// subject or the prompt; else the text, cut.
std::string tool_arguments(const std::string& arguments) {
    const auto args = nlohmann::json::parse(arguments, nullptr, false);
    if (args.is_object()) {
        for (const char* key : {"question", "subject", "prompt"}) {
            if (const auto it = args.find(key); it != args.end() && it->is_string())
                return quoted(it->get<std::string>(), 80);
        }
    }
    return cut_at_word(single_line(arguments), 80);
}

class SummaryWriter {
public:
    SummaryWriter(const TraceDetail& trace, const TreeOptions& options, std::string& out, int level)
        : trace_(trace),
          options_(options),
          out_(out),
          level_(level),
          facts_(facts_of(trace, options.labels)) {
        for (const auto& event : trace.events) {
            const std::string kind = step_kind(facts_, schema::iri(event.explain_id));
            if (kind == "Focus") has_focus_ = true;
            kind_width_ = std::max(kind_width_, code_points(kind));
        }
    }

    void write() {
        header();
        const SubRunPlaces places = place_sub_runs(trace_);
        std::set<std::string> placed;
        for (const auto& event : trace_.events) {
            step(event);
            if (!placed.insert(event.explain_id).second) continue;
            const auto [first, last] = places.by_step.equal_range(event.explain_id);
            for (auto it = first; it != last; ++it)
                sub_run(*it->second.second, "called from " + short_name(it->second.first));
        }
        for (const TraceDetail* sub : places.unplaced) sub_run(*sub, "sub-run");
        footer();
    }

private:
    void line(std::size_t extra, std::string_view text) {
        if (!text.empty()) out_.append(options_.indent + extra, ' ');
        out_.append(text);
        out_ += '\n';
    }
    void field(std::string_view label, std::string_view value) {
        line(0, pad(label, 13) + " " + escape_controls(value, false));
    }

    // An IRI of this run without its "urn:glassbox:<uuid>:" ("analysis:0").
    std::string short_name(const std::string& iri) const {
        const std::string& session = trace_.session.session;
        const auto cut = session.rfind(':');
        if (cut != std::string::npos && iri.size() > cut + 1 &&
            iri.compare(0, cut + 1, session, 0, cut + 1) == 0)
            return iri.substr(cut + 1);
        return iri;
    }

    void header() {
        const auto& s = trace_.session;
        const std::string kind = kind_of(s);
        field("Trace", s.session + (kind.empty() ? "" : " (" + kind + ")"));
        if (s.question && !s.question->empty()) field("Question", single_line(*s.question));
        if (auto answer = run_answer()) field("Answer", *answer);
        const Term question = schema::iri(s.session);
        if (auto collection = facts_.text(question, vocab::kCollection)) {
            field("Collection", *collection);
        } else if (s.collection && !s.collection->empty()) {
            field("Collection", *s.collection);
        }
        std::string status = s.status;
        if (s.duration_ms) status += " in " + format_duration(s.duration_ms);
        if (s.started && !s.started->empty()) status += ", started " + *s.started;
        field("Status", status);
        // docs/traces.md, "Sampling": what is shown is a summary.
        if (s.summary.value_or(false)) field("Summary", "detail not kept: traces.sample");
        for (const auto& e : s.evaluations) field("Evaluation", evaluation_line(e));
        RunCost cost;
        add_cost(trace_, cost);
        if (cost.any || !cost.models.empty()) {
            std::string models;
            for (const auto& m : cost.models) models += (models.empty() ? "" : ", ") + m;
            field("Model", (models.empty() ? std::string("-") : models) + "; tokens " +
                               std::to_string(cost.in) + " in / " + std::to_string(cost.out) +
                               " out" + (trace_.subtraces.empty() ? "" : " (with sub-runs)"));
        }
        cost_field();
    }

    // What the run's and its sub-runs' model calls cost (docs/traces.md, "Cost").
    void cost_field() {
        const auto& s = trace_.session;
        const bool unpriced = s.unpriced && !s.unpriced->empty();
        if (!s.cost && !unpriced) return;
        std::string text =
            s.cost ? format_cost(s.cost) + " " + s.currency.value_or("") : std::string("none");
        if (s.cost && !trace_.subtraces.empty()) text += " (with sub-runs)";
        if (unpriced) {
            std::string models;
            for (const auto& m : *s.unpriced) models += (models.empty() ? "" : ", ") + m;
            text += "; no price for " + models;
        }
        field("Cost", text);
    }

    // The short answer when a step gave one, else the start of the answer text.
    std::optional<std::string> run_answer() const {
        std::optional<std::string> text;
        for (auto it = trace_.events.rbegin(); it != trace_.events.rend(); ++it) {
            const Term node = schema::iri(it->explain_id);
            if (auto short_answer = facts_.text(node, vocab::kShortAnswer);
                short_answer && !short_answer->empty())
                return single_line(*short_answer);
            if (!text) text = facts_.stored_text(node, vocab::kAnswerText, vocab::kAnswerRef);
        }
        if (!text || text->empty()) return std::nullopt;
        return cut_at_word(single_line(*text), 120);
    }

    void footer() {
        const std::string error = error_line(trace_);
        if (error.empty()) return;
        line(0, "");
        line(0, error);
    }

    void step(const TraceEvent& event) {
        const Term node = schema::iri(event.explain_id);
        const std::string kind = step_kind(facts_, node);
        if (!blank_written_) {  // one blank line between the header and the steps
            line(0, "");
            blank_written_ = true;
        }
        std::vector<std::string> parts = step_parts(event, node, kind);
        std::string text = "[" + std::to_string(event.seq) + "] " +
                           (parts.empty() ? kind : pad(kind, kind_width_));
        for (const auto& part : parts) text += "  " + part;
        line(0, escape_controls(text, false));
        selections_of(node, kind);
        removed_facts_of(node);
    }

    std::vector<std::string> step_parts(const TraceEvent& event, const Term& node,
                                        const std::string& kind) {
        std::vector<std::string> parts;
        const auto add = [&parts](std::string part) {
            if (!part.empty()) parts.push_back(std::move(part));
        };
        if (kind == "Question") {
            if (auto q = facts_.text(node, vocab::kQuery)) add(quoted(*q, 100));
        }
        if (auto resolved = facts_.text(node, vocab::kResolvedQuestion))
            add("resolved " + quoted(*resolved, 80));
        const auto concepts = facts_.values(node, vocab::kConcept);
        if (!concepts.empty()) {
            std::string list;
            for (const auto& c : concepts) list += (list.empty() ? "" : ", ") + facts_.name(c);
            add("concepts " + list);
        }
        if (const auto seeds = facts_.values(node, vocab::kSeedEntity); !seeds.empty()) {
            std::string list;
            for (std::size_t i = 0; i < seeds.size() && i < 3; ++i)
                list += (i == 0 ? "" : ", ") + facts_.name(seeds[i]);
            if (seeds.size() > 3) list += " +" + std::to_string(seeds.size() - 3) + " more";
            add((seeds.size() == 1 ? "seed " : "seeds ") + list);
        }
        edge_and_chunk_counts(node, kind, add);
        agent_parts(node, add);
        change_parts(node, kind, add);
        routing_parts(node, add);
        answer_parts(node, add);
        if (auto ms = facts_.text(node, vocab::kDurationMs)) add(*ms + " ms");
        if (event.costs) {
            // Each model call with its tokens and cost (docs/traces.md, "Cost").
            for (const auto& call : *event.costs) add(call_cost(call));
        }
        if (event.error) add("error: " + event.error->error().describe());
        return parts;
    }

    template <typename Add>
    void edge_and_chunk_counts(const Term& node, const std::string& kind, const Add& add) {
        const auto edges = facts_.text(node, vocab::kEdgeCount);
        if (edges && kind == "Exploration") {
            explored_ = edges;
            add(*edges + " edges explored");
        } else if (edges) {
            add(*edges + (explored_ ? " of " + *explored_ + " explored" : std::string()) +
                " edges kept");
        }
        if (auto excluded = facts_.text(node, vocab::kExcludedEdgeCount))
            add(*excluded + " excluded");
        if (auto chunks = facts_.text(node, vocab::kChunkCount))
            add(*chunks + (kind == "Exploration" ? " chunks retrieved" : " chunks kept"));
    }

    template <typename Add>
    void agent_parts(const Term& node, const Add& add) {
        if (auto thought = facts_.text(node, vocab::kThought))
            add("thought " + quoted(*thought, 100));
        if (auto action = facts_.text(node, vocab::kAction)) {
            const auto args = facts_.text(node, vocab::kArguments);
            add("-> " + *action + (args ? " " + tool_arguments(*args) : std::string()));
        }
        if (auto observation =
                facts_.stored_text(node, vocab::kObservationText, vocab::kObservationRef)) {
            const bool error =
                facts_.text(node, vocab::kToolStatus) == std::optional<std::string>("error");
            add((error ? "error: " : "") + summarize_observation(*observation, error, 160));
        }
        if (auto reason = facts_.text(node, vocab::kTerminationReason)) add("ended by " + *reason);
    }

    template <typename Add>
    void routing_parts(const Term& node, const Add& add) {
        if (auto method = facts_.text(node, vocab::kRoutingMethod)) {
            std::string rules;
            for (const auto& r : facts_.values(node, vocab::kRuleFired))
                if (r.is_literal()) rules += (rules.empty() ? "" : ", ") + r.as_literal().value;
            add("route " + facts_.text(node, vocab::kEngine).value_or("?") + " by " + *method +
                (rules.empty() ? "" : " (" + rules + ")") +
                score_text(facts_.number(node, vocab::kConfidence)));
        }
        if (auto from = facts_.text(node, vocab::kFromEngine)) {
            add("escalate " + *from + " -> " + facts_.text(node, vocab::kEngine).value_or("?") +
                score_text(facts_.number(node, vocab::kRelevance)) + ": " +
                cut_at_word(facts_.text(node, vocab::kReason).value_or(""), 80));
        }
        if (auto reflection = facts_.value(node, vocab::kReflectionProperty)) {
            add("relevance " + score_value(facts_.number(*reflection, vocab::kReflectionScore)) +
                " (" + facts_.text(*reflection, vocab::kReflectionMethod).value_or("?") + ")");
        }
    }

    template <typename Add>
    void answer_parts(const Term& node, const Add& add) {
        const auto short_answer = facts_.text(node, vocab::kShortAnswer);
        if (short_answer) {
            add(short_answer->empty() ? std::string("short answer undecided")
                                      : "short answer " + quoted(*short_answer, 80));
        }
        const auto citations = facts_.values(node, vocab::kCitationProperty);
        if (!citations.empty())
            add(std::to_string(citations.size()) +
                (citations.size() == 1 ? " citation" : " citations"));
        if (!short_answer) {
            if (auto answer = facts_.stored_text(node, vocab::kAnswerText, vocab::kAnswerRef))
                add("answer " + quoted(*answer, 80));
        }
        if (auto tier = facts_.text(node, vocab::kAggregateTier)) add("tier " + *tier);
        // Sources that disagree on the answer (gb:Conflict): the value stated and its rival.
        for (const auto& conflict : facts_.values(node, vocab::kConflictProperty)) {
            add("sources disagree: " +
                quoted(facts_.text(conflict, vocab::kStatedValue).value_or("?"), 40) + " against " +
                quoted(facts_.text(conflict, vocab::kRivalValue).value_or("?"), 40));
        }
        // A routed or agent answer's sources past their revalidation age, each with its dates.
        for (const auto& source : facts_.values(node, vocab::kAnswerSourceProperty)) {
            if (!stale_source(facts_, source)) continue;
            const auto from = facts_.value(source, vocab::kProvWasDerivedFrom);
            add("stale source " + (from ? facts_.name(*from) : facts_.name(source)) + " (" +
                freshness_text(facts_, source) + ")");
        }
    }

    // A knowledge change (docs/knowledge.md §10): its kind, who made it, what it added and
    // removed; a batch of its removed facts says where they are listed.
    template <typename Add>
    void change_parts(const Term& node, const std::string& kind, const Add& add) {
        if (kind == "RemovedFacts") {
            add("listed under the change");
            return;
        }
        const auto change = facts_.text(node, vocab::kChangeKind);
        if (!change) return;
        add(*change);
        for (const auto& agent : facts_.values(node, vocab::kProvWasAssociatedWith)) {
            if (agent.is_iri() && agent.as_iri().value.starts_with(kUserAgentPrefix))
                add("by " + facts_.name(agent));
        }
        std::string counts = facts_.text(node, vocab::kFactsAdded).value_or("0");
        counts.append(" added, ").append(facts_.text(node, vocab::kFactsRemoved).value_or("0"));
        add(counts + " removed");
        const auto sources = facts_.values(node, vocab::kRemovedSource);
        if (!sources.empty())
            add(std::to_string(sources.size()) +
                (sources.size() == 1 ? " source removed" : " sources removed"));
    }

    // The facts a knowledge change removed, as "subject predicate object (source)".
    void removed_facts_of(const Term& node) {
        const auto removed = facts_.values(node, vocab::kRemovedFact);
        for (std::size_t i = 0; i < removed.size() && i < options_.max_items; ++i) {
            std::string text = "removed ";
            for (const auto* part :
                 {&vocab::kRdfSubject, &vocab::kRdfPredicate, &vocab::kRdfObject})
                if (auto term = facts_.value(removed[i], *part))
                    text.append(" ").append(facts_.name(*term));
            if (auto source = facts_.value(removed[i], vocab::kSourceDocument))
                text.append("  (").append(facts_.name(*source)).append(")");
            line(8, escape_controls(text, false));
        }
        if (removed.size() > options_.max_items)
            line(8, "+" + std::to_string(removed.size() - options_.max_items) +
                        " more (--full lists them)");
        for (const auto& source : facts_.values(node, vocab::kRemovedSource))
            line(8, escape_controls("removed source  " + facts_.name(source), false));
    }

    // The kept edges and chunks of a step by name, best first (the retrieved chunks when no
    // Focus step re-ranked them).
    void selections_of(const Term& node, const std::string& kind) {
        std::vector<Selection> items =
            selections(facts_, node, vocab::kSelectedEdge, true, chunk_names_, false);
        for (auto& chunk :
             selections(facts_, node, vocab::kSelectedChunk, false, chunk_names_, false))
            items.push_back(std::move(chunk));
        auto retrieved =
            selections(facts_, node, vocab::kRetrievedChunk, false, chunk_names_, false);
        if (!has_focus_ || kind != "Exploration") {
            for (auto& chunk : retrieved) items.push_back(std::move(chunk));
        }
        for (std::size_t i = 0; i < items.size() && i < options_.max_items; ++i)
            line(8, escape_controls(score_value(items[i].score) + "  " + items[i].text, false));
        if (items.size() > options_.max_items)
            line(8, "+" + std::to_string(items.size() - options_.max_items) +
                        " more (--full lists them)");
    }

    void sub_run(const TraceDetail& sub, const std::string& label) {
        line(4, "\u2514\u2500 " + escape_controls(label, false));
        const bool expand = !options_.depth || static_cast<std::size_t>(level_) < *options_.depth;
        if (!expand || level_ + 1 > schema::kMaxTraceDepth) {
            line(8, sub_run_line(sub) + (expand ? "" : "  (--depth to expand)"));
            return;
        }
        TreeOptions options = options_;
        options.indent = options_.indent + 4;
        SummaryWriter writer(sub, options, out_, level_ + 1);
        writer.write();
    }

    const TraceDetail& trace_;
    const TreeOptions& options_;
    std::string& out_;
    int level_;
    StepFacts facts_;
    bool has_focus_ = false;
    std::size_t kind_width_ = 0;  // the widest step kind of the run: summaries start in one column
    bool blank_written_ = false;
    std::optional<std::string> explored_;             // the Exploration's edge count
    std::map<std::string, std::string> chunk_names_;  // selection URI -> its chunk's short name
};

}  // namespace

namespace detail {

std::string sub_run_line(const TraceDetail& sub) {
    const auto& s = sub.session;
    std::string text = kind_of(s) + " " + session_label(s.session) + " " + s.status;
    if (s.duration_ms) text += " in " + format_duration(s.duration_ms);
    if (s.question && !s.question->empty()) text += "  " + quoted(*s.question, 80);
    return escape_controls(text, false);
}

std::string render_summary_tree(const TraceDetail& trace, const TreeOptions& options) {
    std::string out;
    SummaryWriter writer(trace, options, out, 0);
    writer.write();
    return out;
}

}  // namespace detail

// The removed facts of a knowledge change whose terms are labelled for the tree.
constexpr std::size_t kRemovedFactsLabelled = 50;

std::vector<std::string> iris_to_label(const TraceDetail& trace) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    const auto note = [&](const Term& term) {
        if (term.is_iri() && seen.insert(term.as_iri().value).second)
            out.push_back(term.as_iri().value);
    };
    const auto visit = [&](const TraceDetail& run, auto& self, int depth) -> void {
        const StepFacts facts = facts_of(run, {});
        for (const auto& event : run.events) {
            const Term node = schema::iri(event.explain_id);
            for (const auto& seed : facts.values(node, vocab::kSeedEntity)) note(seed);
            auto statements = facts.values(node, vocab::kSelectedEdge);
            // A knowledge change's removed facts, as many as a tree lists by default.
            auto removed = facts.values(node, vocab::kRemovedFact);
            if (removed.size() > kRemovedFactsLabelled) removed.resize(kRemovedFactsLabelled);
            statements.insert(statements.end(), removed.begin(), removed.end());
            for (const auto& edge : statements) {
                for (const auto* part :
                     {&vocab::kRdfSubject, &vocab::kRdfPredicate, &vocab::kRdfObject})
                    for (const auto& t : facts.values(edge, *part)) note(t);
            }
        }
        if (depth >= schema::kMaxTraceDepth) return;
        for (const auto& sub : run.subtraces) self(sub, self, depth + 1);
    };
    visit(trace, visit, 0);
    return out;
}

}  // namespace glassbox::cli::render
