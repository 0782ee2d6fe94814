// The human-readable tree of a trace (`glassbox traces show`): header, one block per step with
// its facts, nested sub-traces, footer.
#include "cli/render/trace_render.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cli/render/render_text.hpp"
#include "cli/render/step_facts.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

using schema::Term;
using schema::TraceDetail;
using schema::TraceEvent;
using schema::Triple;
namespace vocab = schema::vocab;
using namespace detail;

// ---- tree -----------------------------------------------------------------------------------

// The triples of one session (not its sub-traces), indexed by subject, with a record of which
// ones the tree has shown (so the rest can be shown generically).
class SessionGraph {
public:
    explicit SessionGraph(const TraceDetail& trace) {
        for (const auto& event : trace.events) {
            for (const auto& triple : event.triples) {
                const std::string key = spo_key(triple);
                if (!seen_.insert(key).second) continue;
                by_subject_[term_key(triple.s)].push_back(&triple);
            }
        }
    }

    // The objects of (subject, predicate), marked shown.
    std::vector<Term> take(const Term& subject, std::string_view predicate) {
        std::vector<Term> out;
        for (const Triple* triple : about(subject)) {
            if (triple->p.is_iri() && triple->p.as_iri().value == predicate) {
                out.push_back(triple->o);
                shown_.insert(spo_key(*triple));
            }
        }
        return out;
    }
    std::optional<Term> take_one(const Term& subject, std::string_view predicate) {
        auto values = take(subject, predicate);
        if (values.empty()) return std::nullopt;
        return values.front();
    }
    // The objects of (subject, predicate) without marking them.
    std::vector<Term> peek(const Term& subject, std::string_view predicate) const {
        std::vector<Term> out;
        for (const Triple* triple : about(subject)) {
            if (triple->p.is_iri() && triple->p.as_iri().value == predicate)
                out.push_back(triple->o);
        }
        return out;
    }
    bool has(const Term& subject, std::string_view predicate) const {
        return !peek(subject, predicate).empty();
    }

    // Triples about `subject` not yet shown, now marked shown.
    std::vector<const Triple*> take_rest(const Term& subject) {
        std::vector<const Triple*> out;
        for (const Triple* triple : about(subject)) {
            if (shown_.insert(spo_key(*triple)).second) out.push_back(triple);
        }
        return out;
    }
    void mark_all(const Term& subject) { (void)take_rest(subject); }
    bool shown(const Triple& triple) const { return shown_.count(spo_key(triple)) != 0; }
    void mark(const Triple& triple) { shown_.insert(spo_key(triple)); }

private:
    const std::vector<const Triple*>& about(const Term& subject) const {
        static const std::vector<const Triple*> kNone;
        const auto it = by_subject_.find(term_key(subject));
        return it == by_subject_.end() ? kNone : it->second;
    }

    std::unordered_set<std::string> seen_;
    std::unordered_map<std::string, std::vector<const Triple*>> by_subject_;
    std::unordered_set<std::string> shown_;
};

class TreeWriter {
public:
    TreeWriter(const TraceDetail& trace, const TreeOptions& options, std::string& out)
        : trace_(trace), options_(options), out_(out), graph_(trace) {
        const std::string_view session = trace.session.session;
        constexpr std::string_view kQuestionSuffix = "question";
        if (session.size() > kQuestionSuffix.size() &&
            session.substr(session.size() - kQuestionSuffix.size()) == kQuestionSuffix) {
            run_prefix_ = std::string(session.substr(0, session.size() - kQuestionSuffix.size()));
        }
    }

    void write(int depth) {
        header();
        const SubRunPlaces places = place_sub_runs(trace_);
        std::set<std::string> subtraces_written;
        for (const auto& event : trace_.events) {
            step(event);
            if (subtraces_written.insert(event.explain_id).second) {
                const auto [first, last] = places.by_step.equal_range(event.explain_id);
                for (auto it = first; it != last; ++it)
                    subtrace(*it->second.second, "called from " + display_iri(it->second.first),
                             depth);
            }
        }
        for (const TraceDetail* sub : places.unplaced) subtrace(*sub, "sub-trace", depth);
        footer();
    }

private:
    // ---- layout
    void line(std::size_t extra, std::string_view text) {
        if (!text.empty()) out_.append(options_.indent + extra, ' ');
        out_ += text;
        out_ += '\n';
    }
    void field(std::size_t extra, std::string_view label, std::string_view value) {
        line(extra, pad(label, 13) + " " + std::string(value));
    }
    void text_block(std::size_t extra, std::string_view label, std::string_view text) {
        const std::string safe = escape_controls(text, true);
        std::size_t start = 0;
        bool first = true;
        while (start <= safe.size()) {
            std::size_t end = safe.find('\n', start);
            if (end == std::string::npos) end = safe.size();
            const std::string_view piece = std::string_view(safe).substr(start, end - start);
            if (first) {
                field(extra, label, piece);
                first = false;
            } else {
                line(extra + 14, piece);
            }
            start = end + 1;
        }
    }

    // ---- values
    std::string display_iri(std::string_view iri) const {
        if (!run_prefix_.empty() && iri.size() > run_prefix_.size() &&
            iri.substr(0, run_prefix_.size()) == run_prefix_) {
            return escape_controls(iri.substr(run_prefix_.size()), false);
        }
        if (auto name = prefixed_name(iri)) return *name;
        return "<" + escape_controls(iri, false) + ">";
    }
    std::string display(const Term& term, bool quote_strings = false) const {
        switch (term.kind()) {
            case Term::Kind::kIri:
                return display_iri(term.as_iri().value);
            case Term::Kind::kBlankNode:
                return escape_controls(schema::to_ntriples(term), false);
            case Term::Kind::kTriple: {
                const auto& t = term.as_triple();
                return "<< " + display(t.s) + " " + display(t.p) + " " + display(t.o, true) + " >>";
            }
            case Term::Kind::kLiteral:
                break;
        }
        const auto& lit = term.as_literal();
        std::string value = escape_controls(lit.value, false);
        if (!lit.language.empty())
            return "\"" + value + "\"@" + escape_controls(lit.language, false);
        if (lit.datatype.empty() || lit.datatype == schema::kXsdString) {
            return quote_strings ? "\"" + value + "\"" : value;
        }
        if (lit.datatype == schema::kXsdInteger || lit.datatype == schema::kXsdDouble ||
            lit.datatype == schema::kXsdDecimal || lit.datatype == schema::kXsdBoolean ||
            lit.datatype == schema::kXsdDateTime) {
            return value;
        }
        return "\"" + value + "\"^^" + display_iri(lit.datatype);
    }
    std::string display_all(const std::vector<Term>& terms, bool quote_strings = false) const {
        std::string out;
        for (const auto& term : terms) {
            if (!out.empty()) out += ", ";
            out += display(term, quote_strings);
        }
        return out;
    }
    // A literal's raw text for text_block (which escapes it, keeping its lines); else its display.
    std::string block_text(const Term& term) const {
        return term.is_literal() && term.as_literal().language.empty() ? term.as_literal().value
                                                                       : display(term);
    }
    static std::optional<std::string> text_of(const std::optional<Term>& term) {
        if (!term || !term->is_literal()) return std::nullopt;
        return term->as_literal().value;
    }

    // "Synthesis", "Analysis+ToolUse"; the prov: class when no gb: one; "step" when untyped.
    std::string type_label(const Term& node) const {
        StepTypeLabel label;
        for (const auto& type : graph_.peek(node, vocab::kRdfType)) {
            if (type.is_iri()) label.add(type.as_iri().value);
        }
        return label.label("step");
    }

    // ---- blocks
    void header() {
        const auto& s = trace_.session;
        field(0, "Trace", escape_controls(s.session, false));
        field(0, "Kind", escape_controls(kind_of(s), false));
        field(0, "Status", escape_controls(s.status, false));
        if (s.question && !s.question->empty())
            field(0, "Question", escape_controls(*s.question, false));
        if (s.parent) field(0, "Parent", escape_controls(*s.parent, false));
        field(0, "Started",
              s.started.value_or("").empty() ? "-" : escape_controls(*s.started, false));
        field(0, "Ended", s.ended.value_or("").empty() ? "-" : escape_controls(*s.ended, false));
        field(0, "Duration", format_duration(s.duration_ms));
        if (s.worker && !s.worker->empty()) field(0, "Worker", escape_controls(*s.worker, false));
        field(0, "Events", std::to_string(trace_.events.size()));
        // docs/traces.md, "Sampling": what is shown is a summary.
        if (s.summary.value_or(false)) field(0, "Summary", "detail not kept: traces.sample");
        for (const auto& e : s.evaluations)
            field(0, "Evaluation", escape_controls(evaluation_line(e), false));
    }

    void footer() {
        const std::string error = error_line(trace_);
        if (error.empty()) return;
        line(0, "");
        line(0, error);
    }

    void subtrace(const TraceDetail& sub, const std::string& label, int depth) {
        line(4, "\u2514\u2500 " + label);
        if (options_.depth && static_cast<std::size_t>(depth) >= *options_.depth) {
            line(8, sub_run_line(sub) + "  (--depth to expand)");
            return;
        }
        if (depth + 1 > schema::kMaxTraceDepth) {
            line(8, "(sub-traces nested too deep to show)");
            return;
        }
        TreeOptions options = options_;
        options.indent = options_.indent + 4;
        TreeWriter writer(sub, options, out_);
        writer.write(depth + 1);
    }

    void step(const TraceEvent& event) {
        const Term node = schema::iri(event.explain_id);
        line(0, "");
        std::string title = "[" + std::to_string(event.seq) + "] " + type_label(node) + "  " +
                            escape_controls(event.explain_id, false);
        std::string detail = escape_controls(event.state, false);
        if (!event.received.empty())
            detail += (detail.empty() ? "" : ", ") + std::string("received ") +
                      escape_controls(event.received, false);
        if (!detail.empty()) title += "  (" + detail + ")";
        line(0, title);
        event_ = &event;
        if (event.error) field(4, "error", escape_controls(event.error->error().describe(), false));
        step_facts(node);
        leftovers(event);
    }

    void step_facts(const Term& node) {
        (void)graph_.take(node, vocab::kRdfType);
        fact(node, vocab::kQuery, "query");
        fact(node, vocab::kProvStartedAtTime, "started");
        fact(node, vocab::kProvEndedAtTime, "ended");
        fact(node, vocab::kStatus, "status");
        fact(node, vocab::kProvGeneratedAtTime, "generated");
        fact(node, vocab::kDurationMs, "duration", false, " ms");
        model(node);
        tokens(node);
        agents(node, vocab::kProvWasAssociatedWith, "worker");
        fact(node, vocab::kProvUsed, "called from");
        fact(node, vocab::kProvWasInformedBy, "informed by");
        const Term session = schema::iri(trace_.session.session);
        std::vector<Term> generated_by = graph_.take(node, vocab::kProvWasGeneratedBy);
        generated_by.erase(std::remove(generated_by.begin(), generated_by.end(), session),
                           generated_by.end());
        if (!generated_by.empty()) field(4, "generated by", display_all(generated_by));
        fact(node, vocab::kProvWasDerivedFrom, "derived from");

        fact(node, vocab::kConcept, "concepts", true);
        fact(node, vocab::kSeedEntity, "seed entities");
        fact(node, vocab::kEdgeCount, "edge count");
        fact(node, vocab::kChunkCount, "chunk count");
        fact(node, vocab::kIteration, "iteration");
        for (const auto& v : graph_.take(node, vocab::kThought))
            text_block(4, "thought", block_text(v));
        fact(node, vocab::kAction, "action");
        fact(node, vocab::kArguments, "arguments");
        fact(node, vocab::kRoutingMethod, "method");
        fact(node, vocab::kRuleFired, "rules fired", true);
        fact(node, vocab::kConfidence, "confidence");
        fact(node, vocab::kEngine, "engine");
        fact(node, vocab::kReason, "reason");
        fact(node, vocab::kRelevance, "relevance");

        for (const auto& edge : graph_.take(node, vocab::kSelectedEdge)) selected_edge(edge);
        for (const auto& chunk : graph_.take(node, vocab::kRetrievedChunk))
            chunk_selection(chunk, "retrieved");
        for (const auto& chunk : graph_.take(node, vocab::kSelectedChunk))
            chunk_selection(chunk, "selected");

        texts(node, vocab::kObservationText, vocab::kObservationRef, "observation");
        fact(node, vocab::kShortAnswer, "short answer", true);
        fact(node, vocab::kShortAnswerSupportedBy, "answer from");
        const std::optional<std::string> answer =
            texts(node, vocab::kAnswerText, vocab::kAnswerRef, "answer");
        for (const auto& citation : graph_.take(node, vocab::kCitationProperty))
            cited(citation, answer);

        generic(node, 4);
    }

    // One labelled line for every value of `predicate` on `node`, if it has any.
    void fact(const Term& node, std::string_view predicate, std::string_view label,
              bool quote_strings = false, std::string_view unit = {}) {
        const auto values = graph_.take(node, predicate);
        if (values.empty()) return;
        std::string text = display_all(values, quote_strings);
        if (!unit.empty()) text += unit;
        field(4, label, text);
    }

    void model(const Term& node) {
        const auto names = graph_.take(node, vocab::kModelName);
        const auto agents = graph_.take(node, vocab::kProvWasAttributedTo);
        for (const auto& agent : agents) {
            // The agent node says only what gb:model says (type, label); shown through it.
            (void)graph_.take(agent, vocab::kRdfType);
            (void)graph_.take(agent, vocab::kRdfsLabel);
        }
        if (!names.empty()) {
            field(4, "model", display_all(names));
        } else if (!agents.empty()) {
            field(4, "model", display_all(agents));
        }
    }

    void agents(const Term& node, std::string_view predicate, std::string_view label) {
        const auto values = graph_.take(node, predicate);
        for (const auto& agent : values) {
            (void)graph_.take(agent, vocab::kRdfType);
            (void)graph_.take(agent, vocab::kRdfsLabel);
        }
        if (!values.empty()) field(4, label, display_all(values));
    }

    void tokens(const Term& node) {
        const auto in = graph_.take(node, vocab::kInputTokens);
        const auto out = graph_.take(node, vocab::kOutputTokens);
        if (in.empty() && out.empty()) return;
        field(4, "tokens",
              (in.empty() ? "-" : display_all(in)) + " in, " +
                  (out.empty() ? "-" : display_all(out)) + " out");
        // What the call cost (docs/traces.md, "Cost"), as the trace collector priced it.
        if (event_ == nullptr || !event_->costs || !node.is_iri()) return;
        for (const auto& call : *event_->costs) {
            if (call.step != node.as_iri().value) continue;
            field(4, "cost",
                  call.cost ? format_cost(call.cost) + " " + escape_controls(call.currency, false)
                            : "none (no price for " + escape_controls(call.model, false) + ")");
        }
    }

    // An inline text, or a stored one (its reference; the text itself when the reply re-inlined
    // it).
    std::optional<std::string> texts(const Term& node, std::string_view text_property,
                                     std::string_view ref_property, std::string_view label) {
        std::optional<std::string> first;
        for (const auto& text : graph_.take(node, text_property)) {
            if (text.is_literal() && !first) first = text.as_literal().value;
            text_block(4, label, block_text(text));
        }
        for (const auto& ref : graph_.take(node, ref_property)) {
            std::optional<std::string> stored;
            std::vector<const Triple*> more;
            for (const Triple* triple : graph_.take_rest(ref)) {
                if (triple->o.is_literal() && !stored) {
                    stored = triple->o.as_literal().value;
                } else {
                    more.push_back(triple);
                }
            }
            if (stored) {
                if (!first) first = stored;
                text_block(4, label, *stored);
                field(4, "", "(stored as " + display(ref) + ")");
            } else {
                field(4, label, "stored as " + display(ref) + " (text not in the reply)");
            }
            for (const Triple* triple : more)
                field(8, display(triple->p), display(triple->o, true));
        }
        return first;
    }

    // A document's freshness (docs/knowledge.md §3), its triples taken: "dated 2020-01-01,
    // loaded 2026-12-01T10:40:00Z, max age 30d, STALE"; "" when none is recorded.
    std::string freshness(const Term& document) {
        std::string out;
        const auto part = [&](std::string_view predicate, const std::string& name) {
            const auto values = graph_.take(document, predicate);
            if (values.empty()) return;
            out.append(out.empty() ? "" : ", ").append(name).append(" ");
            for (std::size_t i = 0; i < values.size(); ++i)
                out.append(i ? " " : "")
                    .append(values[i].is_literal()
                                ? escape_controls(values[i].as_literal().value, false)
                                : display(values[i]));
        };
        part(vocab::kDctermsDate, "dated");
        part(vocab::kProvGeneratedAtTime, "loaded");
        part(vocab::kMaxAge, "max age");
        const auto stale = graph_.take(document, vocab::kStale);
        if (!stale.empty() && text_of(stale.front()) == std::optional<std::string>("true"))
            out.append(out.empty() ? "" : ", ").append("STALE");
        return out;
    }

    void source(const Term& selection, std::size_t extra) {
        const auto tiers = graph_.take(selection, vocab::kDataTier);
        const auto chunks = graph_.take(selection, vocab::kSourceChunk);
        const auto documents = graph_.take(selection, vocab::kSourceDocument);
        // prov:wasDerivedFrom the source chunk restates gb:sourceChunk; other derivations are
        // shown.
        std::vector<Term> derived = graph_.peek(selection, vocab::kProvWasDerivedFrom);
        std::vector<Term> others;
        for (const auto& from : derived) {
            if (std::find(chunks.begin(), chunks.end(), from) == chunks.end())
                others.push_back(from);
        }
        (void)graph_.take(selection, vocab::kProvWasDerivedFrom);
        if (!others.empty()) field(extra, "derived from", display_all(others));

        std::vector<std::string> lines;
        for (const auto& chunk : chunks) {
            std::string text = "chunk " + display(chunk);
            const auto offset = text_of(graph_.take_one(chunk, vocab::kCharOffset));
            const auto length = text_of(graph_.take_one(chunk, vocab::kCharLength));
            if (offset || length) {
                text += " (chars " + (offset ? escape_controls(*offset, false) : "?") + "+" +
                        (length ? escape_controls(*length, false) : "?") + ")";
            }
            const auto chunk_documents = graph_.take(chunk, vocab::kProvWasDerivedFrom);
            if (!chunk_documents.empty()) text += " of " + display_all(chunk_documents);
            (void)graph_.take(chunk, vocab::kRdfType);
            for (const auto& document : chunk_documents)
                (void)graph_.take(document, vocab::kRdfType);
            lines.push_back(std::move(text));
            for (const Triple* triple : graph_.take_rest(chunk)) {
                lines.push_back("  " + display(triple->p) + " " + display(triple->o, true));
            }
            for (const auto& document : chunk_documents) {
                if (auto fresh = freshness(document); !fresh.empty())
                    lines.push_back("  " + display(document) + ": " + fresh);
            }
        }
        for (const auto& document : documents) {
            (void)graph_.take(document, vocab::kRdfType);
            lines.push_back("document " + display(document));
            if (auto fresh = freshness(document); !fresh.empty()) lines.push_back("  " + fresh);
            for (const Triple* triple : graph_.take_rest(document)) {
                lines.push_back("  " + display(triple->p) + " " + display(triple->o, true));
            }
        }
        if (!tiers.empty()) lines.insert(lines.begin(), "tier " + display_all(tiers));
        if (!options_.show_sources) return;
        bool first = true;
        for (const auto& text : lines) {
            field(extra, first ? "source" : "", text);
            first = false;
        }
    }

    void selected_edge(const Term& edge) {
        (void)graph_.take(edge, vocab::kRdfType);
        std::string title = "edge " + display(edge);
        if (auto v = graph_.take(edge, vocab::kScore); !v.empty())
            title += "  score " + display_all(v);
        if (auto v = graph_.take(edge, vocab::kConcept); !v.empty())
            title += "  concept " + display_all(v, true);
        line(4, title);
        const auto s = graph_.take(edge, vocab::kRdfSubject);
        const auto p = graph_.take(edge, vocab::kRdfPredicate);
        const auto o = graph_.take(edge, vocab::kRdfObject);
        if (!s.empty() || !p.empty() || !o.empty()) {
            field(8, "statement",
                  (s.empty() ? "?" : display_all(s)) + " " + (p.empty() ? "?" : display_all(p)) +
                      " " + (o.empty() ? "?" : display_all(o, true)));
        }
        for (const auto& reasoning : graph_.take(edge, vocab::kReasoning))
            text_block(8, "reasoning", block_text(reasoning));
        source(edge, 8);
        generic(edge, 8);
    }

    void chunk_selection(const Term& chunk, std::string_view kind) {
        (void)graph_.take(chunk, vocab::kRdfType);
        std::string title = std::string(kind) + " chunk " + display(chunk);
        if (auto v = graph_.take(chunk, vocab::kScore); !v.empty())
            title += "  score " + display_all(v);
        line(4, title);
        for (const auto& reasoning : graph_.take(chunk, vocab::kReasoning))
            text_block(8, "reasoning", block_text(reasoning));
        // Its place in each ranking the fusion combined (document RAG).
        std::string fusion;
        auto ranking = [&](std::string_view rank_predicate, std::string_view score_predicate,
                           std::string_view name) {
            const auto rank = graph_.take(chunk, rank_predicate);
            const auto score = graph_.take(chunk, score_predicate);
            if (rank.empty() && score.empty()) return;
            if (!fusion.empty()) fusion += ", ";
            fusion += std::string(name);
            if (!rank.empty()) fusion += " rank " + display_all(rank);
            if (!score.empty()) fusion += " score " + display_all(score);
        };
        ranking(vocab::kVectorRank, vocab::kVectorScore, "vector");
        ranking(vocab::kKeywordRank, vocab::kKeywordScore, "keyword");
        if (!fusion.empty()) field(8, "fusion", fusion);
        source(chunk, 8);
        generic(chunk, 8);
    }

    void cited(const Term& citation, const std::optional<std::string>& answer) {
        (void)graph_.take(citation, vocab::kRdfType);
        const auto start = text_of(graph_.take_one(citation, vocab::kSpanStart));
        const auto end = text_of(graph_.take_one(citation, vocab::kSpanEnd));
        std::string title = "citation " + display(citation);
        if (start || end) {
            title += "  [" + escape_controls(start.value_or("?"), false) + ", " +
                     escape_controls(end.value_or("?"), false) + ")";
        }
        if (answer && start && end && is_integer_lexical(*start) && is_integer_lexical(*end) &&
            (*start)[0] != '-' && (*end)[0] != '-') {
            const auto from = code_point_offset(*answer, std::stoull(*start));
            const auto to = code_point_offset(*answer, std::stoull(*end));
            if (from < to)
                title += " \"" +
                         escape_controls(std::string_view(*answer).substr(from, to - from), false) +
                         "\"";
        }
        const auto support = graph_.take(citation, vocab::kSupportedBy);
        if (!support.empty()) title += "  \u2190 " + display_all(support);
        line(4, title);
        // gb:supportedBy is a sub-property of prov:wasDerivedFrom; a restatement is not shown
        // twice.
        std::vector<Term> derived = graph_.peek(citation, vocab::kProvWasDerivedFrom);
        std::vector<Term> others;
        for (const auto& from : derived) {
            if (std::find(support.begin(), support.end(), from) == support.end())
                others.push_back(from);
        }
        (void)graph_.take(citation, vocab::kProvWasDerivedFrom);
        if (!others.empty()) field(8, "derived from", display_all(others));
        generic(citation, 8);
    }

    // Whatever is left about `node`, predicate by predicate.
    void generic(const Term& node, std::size_t extra) {
        for (const Triple* triple : graph_.take_rest(node)) {
            if (triple->o.is_literal() &&
                triple->o.as_literal().value.find('\n') != std::string::npos) {
                text_block(extra, display(triple->p), triple->o.as_literal().value);
            } else {
                field(extra, display(triple->p), display(triple->o, true));
            }
        }
    }

    // Triples of the event not shown with its step, grouped by subject.
    void leftovers(const TraceEvent& event) {
        std::vector<Term> subjects;
        for (const auto& triple : event.triples) {
            if (graph_.shown(triple)) continue;
            if (std::find(subjects.begin(), subjects.end(), triple.s) == subjects.end())
                subjects.push_back(triple.s);
        }
        for (const auto& subject : subjects) {
            const bool session = subject == schema::iri(trace_.session.session);
            line(4, (session ? std::string("session ") : std::string("also ")) + display(subject));
            if (session) {
                // The closing triples of the run (trace_end) arrive with the last step.
                if (auto v = graph_.take(subject, vocab::kProvEndedAtTime); !v.empty())
                    field(8, "ended", display_all(v));
                if (auto v = graph_.take(subject, vocab::kStatus); !v.empty())
                    field(8, "status", display_all(v));
            } else if (const auto types = graph_.peek(subject, vocab::kRdfType); !types.empty()) {
                (void)graph_.take(subject, vocab::kRdfType);
                field(8, "a", display_all(types));
            }
            generic(subject, 8);
        }
    }

    const TraceDetail& trace_;
    const TreeOptions& options_;
    std::string& out_;
    SessionGraph graph_;
    const TraceEvent* event_ = nullptr;  // the event whose step block is being written
    std::string run_prefix_;             // "urn:glassbox:<uuid>:" of this session, for short names
};

}  // namespace

namespace detail {

std::string calling_step(const TraceDetail& sub) {
    const Term question = schema::iri(sub.session.session);
    const Term used = schema::iri(vocab::kProvUsed);
    for (const auto& event : sub.events) {
        for (const auto& triple : event.triples) {
            if (triple.s == question && triple.p == used && triple.o.is_iri()) {
                return triple.o.as_iri().value;
            }
        }
    }
    return sub.session.parent.value_or("");
}

std::optional<std::string> event_describing(const TraceDetail& trace, const std::string& caller) {
    if (caller.empty()) return std::nullopt;
    for (const auto& event : trace.events) {
        if (event.explain_id == caller) return event.explain_id;
    }
    const Term node = schema::iri(caller);
    for (const auto& event : trace.events) {
        for (const auto& triple : event.triples) {
            if (triple.s == node) return event.explain_id;
        }
    }
    return std::nullopt;
}

std::string error_line(const TraceDetail& trace) {
    const auto& s = trace.session;
    if (s.status != "error") return {};
    std::optional<base::Error> error;
    if (s.error) error = s.error->error();
    for (auto it = trace.events.rbegin(); !error && it != trace.events.rend(); ++it) {
        if (it->error) error = it->error->error();
    }
    return "ERROR  " +
           escape_controls(error
                               ? error->describe()
                               : "the trace ended with status error (no error message was stored)",
                           false);
}

SubRunPlaces place_sub_runs(const TraceDetail& trace) {
    SubRunPlaces places;
    for (const auto& sub : trace.subtraces) {
        const std::string caller = calling_step(sub);
        if (const auto step = event_describing(trace, caller)) {
            places.by_step.emplace(*step, std::pair{caller, &sub});
        } else {
            places.unplaced.push_back(&sub);
        }
    }
    return places;
}

}  // namespace detail

std::string render_tree(const TraceDetail& trace, const TreeOptions& options) {
    if (!options.full) return detail::render_summary_tree(trace, options);
    std::string out;
    TreeWriter writer(trace, options, out);
    writer.write(0);
    return out;
}

}  // namespace glassbox::cli::render
