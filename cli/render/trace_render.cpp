// Decoding of `trace` service replies and their renderings: tree, Turtle, N-Triples, N-Quads,
// JSON-LD, tables.
#include "cli/render/trace_render.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

using nlohmann::json;
using schema::Term;
using schema::Triple;
namespace vocab = schema::vocab;

using schema::TraceDetail;
using schema::TraceEvent;
using schema::TraceSessionList;
using schema::TraceSessionSummary;

// The kind shown for a session: its kind, else the service that ran it.
std::string kind_of(const TraceSessionSummary& s) {
    if (s.kind && !s.kind->empty()) return *s.kind;
    return s.service.value_or("");
}

// ---- text helpers ---------------------------------------------------------------------------

// Control characters (C0, DEL, C1) become visible escapes: stored texts never reach the terminal
// raw.
std::string escape_controls(std::string_view text, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n' && keep_newlines) {
            out += '\n';
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += keep_newlines ? "\t" : "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            std::array<char, 8> buf{};
            std::snprintf(buf.data(), buf.size(), "\\x%02X", static_cast<unsigned>(c));
            out += buf.data();
        } else if (c == 0xC2 && i + 1 < text.size() &&
                   static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
            std::array<char, 10> buf{};
            std::snprintf(buf.data(), buf.size(), "\\u%04X",
                          static_cast<unsigned>(static_cast<unsigned char>(text[i + 1])));
            out += buf.data();
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

// Byte offset of code point `n` of UTF-8 `text` (text.size() when past the end).
std::size_t code_point_offset(std::string_view text, std::uint64_t n) {
    std::size_t i = 0;
    for (std::uint64_t seen = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            if (seen == n) return i;
            ++seen;
        }
    }
    return text.size();
}

std::size_t code_points(std::string_view text) {
    std::size_t count = 0;
    for (char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
    }
    return count;
}

// At most `width` code points, the last one an ellipsis when cut.
std::string truncate_text(std::string_view text, std::size_t width) {
    if (code_points(text) <= width) return std::string(text);
    return std::string(text.substr(0, code_point_offset(text, width - 1))) + "\u2026";
}

std::string pad(std::string_view text, std::size_t width) {
    std::string out(text);
    const std::size_t length = code_points(text);
    if (length < width) out.append(width - length, ' ');
    return out;
}

struct Prefix {
    std::string_view name;
    std::string_view ns;
};
constexpr std::array<Prefix, 6> kPrefixes{{{"rdf", vocab::kRdfNs},
                                           {"rdfs", vocab::kRdfsNs},
                                           {"xsd", vocab::kXsdNs},
                                           {"owl", vocab::kOwlNs},
                                           {"prov", vocab::kProvNs},
                                           {"gb", vocab::kGbNs}}};

// A conservative subset of Turtle's PN_LOCAL: letters, digits, '_' and '-', not starting with '-'
// or a digit.
bool is_simple_local_name(std::string_view local) {
    if (local.empty()) return false;
    const auto c0 = static_cast<unsigned char>(local.front());
    if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_')) return false;
    return std::all_of(local.begin(), local.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '-';
    });
}

// "gb:Question" for an IRI in a known namespace with a simple local name.
std::optional<std::string> prefixed_name(std::string_view iri) {
    for (const auto& prefix : kPrefixes) {
        if (iri.size() > prefix.ns.size() && iri.substr(0, prefix.ns.size()) == prefix.ns) {
            const auto local = iri.substr(prefix.ns.size());
            if (is_simple_local_name(local))
                return std::string(prefix.name) + ":" + std::string(local);
        }
    }
    return std::nullopt;
}

std::string_view local_name(std::string_view iri, std::string_view ns) {
    return iri.size() > ns.size() && iri.substr(0, ns.size()) == ns ? iri.substr(ns.size())
                                                                    : std::string_view{};
}

std::string spo_key(const Triple& triple) { return schema::to_ntriples(triple); }
std::string quad_key(const Triple& triple) { return schema::to_nquads(triple); }
std::string term_key(const Term& term) { return schema::to_ntriples(term); }

// ---- Turtle -------------------------------------------------------------------------------

bool is_integer_lexical(std::string_view text) {
    std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
    if (i >= text.size()) return false;
    return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

std::string turtle_iri(std::string_view iri) {
    if (auto name = prefixed_name(iri)) return *name;
    return schema::to_ntriples(schema::iri(iri));
}

std::string turtle_term(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return turtle_iri(term.as_iri().value);
        case Term::Kind::kBlankNode:
            return schema::to_ntriples(term);
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            // Bare forms only where they give back the same lexical form and datatype.
            if (lit.language.empty() && lit.datatype == schema::kXsdInteger &&
                is_integer_lexical(lit.value)) {
                return lit.value;
            }
            if (lit.language.empty() && lit.datatype == schema::kXsdBoolean &&
                (lit.value == "true" || lit.value == "false")) {
                return lit.value;
            }
            // The N-Triples string escapes (\" \\ \n \r \t \b \f \uXXXX) are valid Turtle
            // ECHAR/UCHAR.
            std::string out = schema::to_ntriples(schema::literal(lit.value));
            if (!lit.language.empty()) {
                out += '@';
                out += lit.language;
            } else if (!lit.datatype.empty() && lit.datatype != schema::kXsdString) {
                out += "^^";
                out += turtle_iri(lit.datatype);
            }
            return out;
        }
        case Term::Kind::kTriple: {
            const auto& t = term.as_triple();  // Turtle 1.2 triple term
            return "<< " + turtle_term(t.s) + " " + turtle_term(t.p) + " " + turtle_term(t.o) +
                   " >>";
        }
    }
    return {};
}

// ---- JSON-LD --------------------------------------------------------------------------------

json jsonld_node_id(const Term& term);

json jsonld_embedded(const Triple& triple) {
    json node = json::object();
    node["@id"] = jsonld_node_id(triple.s);
    json value;
    if (triple.o.is_literal()) {
        const auto& lit = triple.o.as_literal();
        value = json{{"@value", lit.value}};
        if (!lit.language.empty()) {
            value["@language"] = lit.language;
        } else if (!lit.datatype.empty() && lit.datatype != schema::kXsdString) {
            value["@type"] = lit.datatype;
        }
    } else {
        value = json{{"@id", jsonld_node_id(triple.o)}};
    }
    node[triple.p.is_iri() ? triple.p.as_iri().value : term_key(triple.p)] = json::array({value});
    return node;
}

// An "@id" value: the IRI, "_:label", or (JSON-LD-star) an embedded node for a quoted triple.
json jsonld_node_id(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return term.as_iri().value;
        case Term::Kind::kBlankNode:
            return schema::to_ntriples(term);  // "_:label", the label made valid
        case Term::Kind::kTriple:
            return jsonld_embedded(term.as_triple());
        case Term::Kind::kLiteral:
            break;
    }
    return term_key(term);
}

json jsonld_value(const Term& term) {
    if (!term.is_literal()) return json{{"@id", jsonld_node_id(term)}};
    const auto& lit = term.as_literal();
    json value{{"@value", lit.value}};
    if (!lit.language.empty()) {
        value["@language"] = lit.language;
    } else if (!lit.datatype.empty() && lit.datatype != schema::kXsdString) {
        value["@type"] = lit.datatype;
    }
    return value;
}

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
        std::multimap<std::string, const TraceDetail*> subtraces_by_step;
        std::vector<const TraceDetail*> unplaced;
        for (const auto& sub : trace_.subtraces) {
            const std::string caller = caller_of(sub);
            bool placed = false;
            for (const auto& event : trace_.events) {
                if (!caller.empty() && event.explain_id == caller) {
                    placed = true;
                    break;
                }
            }
            if (placed) {
                subtraces_by_step.emplace(caller, &sub);
            } else {
                unplaced.push_back(&sub);
            }
        }
        std::set<std::string> subtraces_written;
        for (const auto& event : trace_.events) {
            step(event);
            if (subtraces_written.insert(event.explain_id).second) {
                const auto [first, last] = subtraces_by_step.equal_range(event.explain_id);
                for (auto it = first; it != last; ++it)
                    subtrace(*it->second, "called from " + display_iri(it->first), depth);
            }
        }
        for (const TraceDetail* sub : unplaced) subtrace(*sub, "sub-trace", depth);
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
        const std::string value = escape_controls(lit.value, false);
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
        std::string gb;
        std::string prov;
        for (const auto& type : graph_.peek(node, vocab::kRdfType)) {
            if (!type.is_iri()) continue;
            const auto& iri = type.as_iri().value;
            if (auto local = local_name(iri, vocab::kGbNs); !local.empty()) {
                gb += (gb.empty() ? "" : "+") + std::string(local);
            } else if (auto prov_local = local_name(iri, vocab::kProvNs);
                       !prov_local.empty() && prov.empty()) {
                prov = std::string(prov_local);
            }
        }
        if (!gb.empty()) return escape_controls(gb, false);
        if (!prov.empty()) return escape_controls(prov, false);
        return "step";
    }

    // ---- blocks
    void header() {
        const auto& s = trace_.session;
        field(0, "Trace", escape_controls(s.session, false));
        field(0, "Kind", escape_controls(kind_of(s), false));
        field(0, "Status", escape_controls(s.status, false));
        if (s.question && !s.question->empty()) field(0, "Question", escape_controls(*s.question, false));
        if (s.parent) field(0, "Parent", escape_controls(*s.parent, false));
        field(0, "Started", s.started.value_or("").empty() ? "-" : escape_controls(*s.started, false));
        field(0, "Ended", s.ended.value_or("").empty() ? "-" : escape_controls(*s.ended, false));
        field(0, "Duration", format_duration(s.duration_ms));
        if (s.worker && !s.worker->empty()) field(0, "Worker", escape_controls(*s.worker, false));
        field(0, "Events", std::to_string(trace_.events.size()));
    }

    void footer() {
        const auto& s = trace_.session;
        if (s.status != "error") return;
        std::optional<base::Error> error;
        if (s.error) error = s.error->error();
        for (auto it = trace_.events.rbegin(); !error && it != trace_.events.rend(); ++it) {
            if (it->error) error = it->error->error();
        }
        line(0, "");
        if (error) {
            line(0, "ERROR  " + escape_controls(error->describe(), false));
        } else {
            line(0, "ERROR  the trace ended with status error (no error message was stored)");
        }
    }

    // The step that called a sub-trace: what its Question prov:used (docs/vocabulary.md §2);
    // else the parent session the summary names (shown after that session's Question).
    std::string caller_of(const TraceDetail& sub) const {
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

    void subtrace(const TraceDetail& sub, const std::string& label, int depth) {
        line(4, "\u2514\u2500 " + label);
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
        }
        for (const auto& document : documents) {
            (void)graph_.take(document, vocab::kRdfType);
            lines.push_back("document " + display(document));
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
    std::string run_prefix_;  // "urn:glassbox:<uuid>:" of this session, for short names
};

std::string session_label(const std::string& session) {
    // urn:glassbox:<uuid>:question → <uuid>, which `show` accepts (any unique prefix of it).
    constexpr std::string_view kPrefix = "urn:glassbox:";
    constexpr std::string_view kSuffix = ":question";
    if (session.size() == kPrefix.size() + 36 + kSuffix.size() && session.rfind(kPrefix, 0) == 0 &&
        session.compare(session.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
        return session.substr(kPrefix.size(), 36);
    }
    return session;
}

}  // namespace

// ---- triples ----------------------------------------------------------------------------------

namespace {
void collect_triples(const TraceDetail& trace, std::unordered_set<std::string>& seen,
                     std::vector<Triple>& out) {
    for (const auto& event : trace.events) {
        for (const auto& triple : event.triples) {
            if (seen.insert(quad_key(triple)).second) out.push_back(triple);
        }
    }
    for (const auto& sub : trace.subtraces) collect_triples(sub, seen, out);
}
}  // namespace

std::vector<Triple> trace_triples(const TraceDetail& trace) {
    std::unordered_set<std::string> seen;
    std::vector<Triple> out;
    collect_triples(trace, seen, out);
    return out;
}

std::vector<Triple> distinct_triples(const std::vector<Triple>& triples) {
    std::unordered_set<std::string> seen;
    std::vector<Triple> out;
    for (const auto& triple : triples) {
        if (!seen.insert(spo_key(triple)).second) continue;
        Triple copy = triple;
        copy.graph.reset();
        out.push_back(std::move(copy));
    }
    return out;
}

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

// ---- renderings -------------------------------------------------------------------------------

std::string render_tree(const TraceDetail& trace, const TreeOptions& options) {
    std::string out;
    TreeWriter writer(trace, options, out);
    writer.write(0);
    return out;
}

std::string render_turtle(const std::vector<Triple>& triples) {
    const auto distinct = distinct_triples(triples);
    std::set<std::string> graphs;
    for (const auto& triple : triples) graphs.insert(triple.graph.value_or(""));
    std::string out = "# glassbox trace. Turtle has no named graphs: these are the triples of ";
    if (graphs.empty() || (graphs.size() == 1 && *graphs.begin() == vocab::kRetrievalGraph)) {
        out += "<" + std::string(vocab::kRetrievalGraph) + ">";
    } else {
        out += "the graphs";
        for (const auto& graph : graphs)
            out += graph.empty() ? std::string(" (default)") : " <" + graph + ">";
        out += ", merged";
    }
    out += ".\n";
    for (const auto& prefix : kPrefixes) {
        out += "@prefix " + std::string(prefix.name) + ": <" + std::string(prefix.ns) + "> .\n";
    }

    // Subjects, then predicates, in first-seen order; rdf:type first, written `a`.
    std::vector<std::string> subject_order;
    std::unordered_map<std::string, std::vector<const Triple*>> by_subject;
    for (const auto& triple : distinct) {
        const std::string key = term_key(triple.s);
        auto [it, inserted] = by_subject.try_emplace(key);
        if (inserted) subject_order.push_back(key);
        it->second.push_back(&triple);
    }
    for (const auto& key : subject_order) {
        const auto& about = by_subject[key];
        std::vector<std::string> predicate_order;
        std::unordered_map<std::string, std::vector<const Triple*>> by_predicate;
        for (const Triple* triple : about) {
            const std::string p = term_key(triple->p);
            auto [it, inserted] = by_predicate.try_emplace(p);
            if (inserted) predicate_order.push_back(p);
            it->second.push_back(triple);
        }
        const std::string rdf_type = term_key(schema::iri(vocab::kRdfType));
        std::stable_partition(predicate_order.begin(), predicate_order.end(),
                              [&](const std::string& p) { return p == rdf_type; });
        out += "\n" + turtle_term(about.front()->s);
        bool first_predicate = true;
        for (const auto& p : predicate_order) {
            const auto& values = by_predicate[p];
            out += first_predicate ? " " : " ;\n    ";
            first_predicate = false;
            out += p == rdf_type ? std::string("a") : turtle_term(values.front()->p);
            bool first_object = true;
            for (const Triple* triple : values) {
                out += first_object ? " " : ", ";
                first_object = false;
                out += turtle_term(triple->o);
            }
        }
        out += " .\n";
    }
    return out;
}

std::string render_ntriples(const std::vector<Triple>& triples) {
    std::string out;
    for (const auto& triple : distinct_triples(triples)) {
        out += schema::to_ntriples(triple);
        out += '\n';
    }
    return out;
}

std::string render_nquads(const std::vector<Triple>& triples) {
    std::unordered_set<std::string> seen;
    std::string out;
    for (const auto& triple : triples) {
        std::string line = schema::to_nquads(triple);
        if (!seen.insert(line).second) continue;
        out += line;
        out += '\n';
    }
    return out;
}

json render_jsonld(const std::vector<Triple>& triples) {
    // graph ("" = default) → subject key → node object, all in first-seen order.
    struct GraphNodes {
        std::vector<std::string> order;
        std::unordered_map<std::string, json> nodes;
    };
    std::vector<std::string> graph_order;
    std::unordered_map<std::string, GraphNodes> graphs;
    std::unordered_set<std::string> seen;
    for (const auto& triple : triples) {
        if (!seen.insert(quad_key(triple)).second) continue;
        const std::string graph = triple.graph.value_or("");
        auto [git, new_graph] = graphs.try_emplace(graph);
        if (new_graph) graph_order.push_back(graph);
        const std::string subject = term_key(triple.s);
        auto [nit, new_node] = git->second.nodes.try_emplace(subject, json::object());
        if (new_node) {
            git->second.order.push_back(subject);
            nit->second["@id"] = jsonld_node_id(triple.s);
        }
        json& node = nit->second;
        const bool is_type =
            triple.p == schema::iri(vocab::kRdfType) && (triple.o.is_iri() || triple.o.is_blank());
        if (is_type) {
            node["@type"].push_back(triple.o.is_iri() ? json(triple.o.as_iri().value)
                                                      : jsonld_node_id(triple.o));
        } else {
            const std::string predicate =
                triple.p.is_iri() ? triple.p.as_iri().value : term_key(triple.p);
            node[predicate].push_back(jsonld_value(triple.o));
        }
    }
    json out = json::array();
    for (const auto& graph : graph_order) {
        auto& nodes = graphs[graph];
        json list = json::array();
        for (const auto& subject : nodes.order) list.push_back(std::move(nodes.nodes[subject]));
        if (graph.empty()) {
            for (auto& node : list) out.push_back(std::move(node));
        } else {
            out.push_back(json{{"@id", graph}, {"@graph", std::move(list)}});
        }
    }
    return out;
}

std::string format_duration(std::optional<std::int64_t> duration_ms) {
    if (!duration_ms || *duration_ms < 0) return "-";
    const std::int64_t ms = *duration_ms;
    std::array<char, 48> buf{};
    if (ms < 1000) {
        std::snprintf(buf.data(), buf.size(), "%lld ms", static_cast<long long>(ms));
    } else if (ms < 60'000) {
        std::snprintf(buf.data(), buf.size(), "%.2f s", static_cast<double>(ms) / 1000.0);
    } else if (ms < 3'600'000) {
        std::snprintf(buf.data(), buf.size(), "%lld min %lld s",
                      static_cast<long long>(ms / 60'000), static_cast<long long>(ms / 1000 % 60));
    } else {
        std::snprintf(buf.data(), buf.size(), "%lld h %lld min",
                      static_cast<long long>(ms / 3'600'000),
                      static_cast<long long>(ms / 60'000 % 60));
    }
    return buf.data();
}

std::string render_session_table(const TraceSessionList& list) {
    constexpr std::size_t kQuestionWidth = 48;
    const std::array<std::string, 6> titles{"SESSION", "KIND",     "QUESTION",
                                            "STARTED", "DURATION", "STATUS"};
    std::vector<std::array<std::string, 6>> rows;
    for (const auto& s : list.sessions) {
        rows.push_back({escape_controls(session_label(s.session), false),
                        escape_controls(kind_of(s), false),
                        truncate_text(escape_controls(s.question.value_or(""), false), kQuestionWidth),
                        s.started.value_or("").empty() ? "-" : escape_controls(*s.started, false),
                        format_duration(s.duration_ms), escape_controls(s.status, false)});
    }
    std::array<std::size_t, 6> widths{};
    for (std::size_t c = 0; c < titles.size(); ++c) {
        widths[c] = code_points(titles[c]);
        for (const auto& row : rows) widths[c] = std::max(widths[c], code_points(row[c]));
    }
    auto write_row = [&](const std::array<std::string, 6>& row, std::string& out) {
        std::string text;
        for (std::size_t c = 0; c < row.size(); ++c) {
            text += c + 1 == row.size() ? row[c] : pad(row[c], widths[c] + 2);
        }
        while (!text.empty() && text.back() == ' ') text.pop_back();
        out += text + "\n";
    };
    std::string out;
    if (rows.empty()) {
        out = "(no sessions)\n";
    } else {
        write_row(titles, out);
        for (const auto& row : rows) write_row(row, out);
    }
    const auto shown = static_cast<std::int64_t>(rows.size());
    if (shown > 0) {
        out += std::to_string(list.offset + 1) + "-" + std::to_string(list.offset + shown) +
               " of " + std::to_string(list.total) + (list.total_exact ? "" : "+") + " sessions\n";
        if (list.next) out += "next page: --after " + *list.next + "\n";
    } else if (list.total > 0) {
        out += std::to_string(list.total) + " sessions, none from offset " +
               std::to_string(list.offset) + "\n";
    }
    return out;
}

std::string step_type(const json& explain_body) {
    if (!explain_body.is_object()) return "-";
    const auto id = explain_body.find("explain_id");
    const auto triples = explain_body.find("explain_triples");
    if (id == explain_body.end() || !id->is_string() || triples == explain_body.end() ||
        !triples->is_array()) {
        return "-";
    }
    const Term subject = schema::iri(id->get<std::string>());
    const Term type = schema::iri(vocab::kRdfType);
    std::string gb;
    std::string prov;
    for (const auto& value : *triples) {
        auto triple = schema::decode_triple(value);
        if (!triple || triple->s != subject || triple->p != type || !triple->o.is_iri()) continue;
        const auto& iri = triple->o.as_iri().value;
        if (auto local = local_name(iri, vocab::kGbNs); !local.empty()) {
            gb += (gb.empty() ? "" : "+") + std::string(local);
        } else if (auto prov_local = local_name(iri, vocab::kProvNs);
                   !prov_local.empty() && prov.empty()) {
            prov = std::string(prov_local);
        }
    }
    if (!gb.empty()) return escape_controls(gb, false);
    if (!prov.empty()) return escape_controls(prov, false);
    return "-";
}

namespace {
std::string body_string(const json& body, const char* key) {
    if (!body.is_object()) return {};
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string{};
}
std::size_t triple_count(const json& body) {
    if (!body.is_object()) return 0;
    const auto it = body.find("explain_triples");
    return it != body.end() && it->is_array() ? it->size() : 0;
}
}  // namespace

std::string render_event_line(const bus::ExplainEvent& event, std::string_view received) {
    std::string line = escape_controls(received, false) + "  " +
                       escape_controls(event.service, false) + "  " +
                       escape_controls(event.session, false) + "  #" + std::to_string(event.seq) +
                       "  " + escape_controls(event.state, false) + "  " + step_type(event.body) +
                       "  " + escape_controls(body_string(event.body, "explain_id"), false) + "  " +
                       std::to_string(triple_count(event.body)) + " triples";
    const std::string status = body_string(event.body, "trace_status");
    if (!status.empty()) line += "  trace " + escape_controls(status, false);
    return line;
}

json event_json(const bus::ExplainEvent& event, std::string_view received) {
    return json{{"received", received},
                {"kind", event.service},
                {"topic", event.topic},
                {"session", event.session},
                {"seq", event.seq},
                {"state", event.state},
                {"step_type", step_type(event.body)},
                {"explain_id", body_string(event.body, "explain_id")},
                {"triples", triple_count(event.body)},
                {"body", event.body}};
}

// ---- one line per explain step (`glassbox invoke -x`) ----------------------------------------

std::string safe_text(std::string_view text, bool keep_newlines) {
    return escape_controls(text, keep_newlines);
}

namespace {

// The triples of one explain message, by subject, for the summary line.
class StepFacts {
public:
    explicit StepFacts(const json& triples) {
        if (!triples.is_array()) return;
        for (const auto& value : triples) {
            auto triple = schema::decode_triple(value);
            if (!triple) continue;
            if (triple->p.is_iri() && triple->p.as_iri().value == vocab::kRdfsLabel &&
                triple->o.is_literal() && triple->s.is_iri()) {
                labels_.emplace(triple->s.as_iri().value, triple->o.as_literal().value);
            }
            by_subject_[term_key(triple->s)].push_back(std::move(triple).value());
        }
    }

    std::vector<Term> values(const Term& node, std::string_view predicate) const {
        std::vector<Term> out;
        const auto it = by_subject_.find(term_key(node));
        if (it == by_subject_.end()) return out;
        for (const auto& triple : it->second) {
            if (triple.p.is_iri() && triple.p.as_iri().value == predicate) out.push_back(triple.o);
        }
        return out;
    }
    std::optional<Term> value(const Term& node, std::string_view predicate) const {
        auto all = values(node, predicate);
        if (all.empty()) return std::nullopt;
        return all.front();
    }
    std::optional<std::string> text(const Term& node, std::string_view predicate) const {
        auto term = value(node, predicate);
        if (!term || !term->is_literal()) return std::nullopt;
        return term->as_literal().value;
    }
    std::optional<double> number(const Term& node, std::string_view predicate) const {
        auto lexical = text(node, predicate);
        if (!lexical) return std::nullopt;
        char* end = nullptr;
        const double parsed = std::strtod(lexical->c_str(), &end);
        if (end == lexical->c_str()) return std::nullopt;
        return parsed;
    }

    // An IRI by its rdfs:label when the message carries one, else its local name.
    std::string name(const Term& term) const {
        switch (term.kind()) {
            case Term::Kind::kIri: {
                const auto& iri = term.as_iri().value;
                if (auto it = labels_.find(iri); it != labels_.end()) return it->second;
                const auto cut = iri.find_last_of("#/:");
                return cut == std::string::npos || cut + 1 == iri.size() ? iri
                                                                         : iri.substr(cut + 1);
            }
            case Term::Kind::kLiteral:
                return "\"" + term.as_literal().value + "\"";
            case Term::Kind::kBlankNode:
                return schema::to_ntriples(term);
            case Term::Kind::kTriple: {
                const auto& t = term.as_triple();
                return "<< " + name(t.s) + " " + name(t.p) + " " + name(t.o) + " >>";
            }
        }
        return {};
    }

private:
    std::unordered_map<std::string, std::vector<Triple>> by_subject_;
    std::unordered_map<std::string, std::string> labels_;
};

std::string score_text(std::optional<double> score) {
    if (!score) return "";
    std::array<char, 32> buf{};
    std::snprintf(buf.data(), buf.size(), " (%.2f)", *score);
    return buf.data();
}

// The selections a step lists (edges or chunks), best score first, as "what (score)". A chunk is
// named by its document's file name and fragment ("notes.md#chunk-2"); a re-ranked chunk, which
// names no chunk itself, by the retrieved chunk it came from (`chunk_names`, kept across steps).
std::string selections(const StepFacts& facts, const Term& node, std::string_view predicate,
                       bool edges, std::size_t max_items,
                       std::map<std::string, std::string>& chunk_names) {
    struct Item {
        std::optional<double> score;
        std::string text;
    };
    std::vector<Item> items;
    for (const auto& selection : facts.values(node, predicate)) {
        Item item{facts.number(selection, vocab::kScore), {}};
        if (edges) {
            const auto s = facts.value(selection, vocab::kRdfSubject);
            const auto p = facts.value(selection, vocab::kRdfPredicate);
            const auto o = facts.value(selection, vocab::kRdfObject);
            item.text = (s ? facts.name(*s) : "?") + " -" + (p ? facts.name(*p) : "?") + "-> " +
                        (o ? facts.name(*o) : "?");
        } else {
            const auto chunk = facts.value(selection, vocab::kSourceChunk);
            if (chunk && chunk->is_iri()) {
                const auto& iri = chunk->as_iri().value;
                const auto slash = iri.find_last_of('/');
                item.text = slash == std::string::npos || slash + 1 == iri.size()
                                ? iri
                                : iri.substr(slash + 1);
            } else {
                for (const auto& from : facts.values(selection, vocab::kProvWasDerivedFrom)) {
                    if (!from.is_iri()) continue;
                    if (auto it = chunk_names.find(from.as_iri().value); it != chunk_names.end()) {
                        item.text = it->second;
                        break;
                    }
                }
                if (item.text.empty()) item.text = facts.name(selection);
            }
            if (selection.is_iri()) chunk_names[selection.as_iri().value] = item.text;
        }
        items.push_back(std::move(item));
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.score.value_or(-1e300) > b.score.value_or(-1e300);
    });
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < max_items; ++i) {
        out += (i == 0 ? "" : "; ") + items[i].text + score_text(items[i].score);
    }
    if (items.size() > max_items) out += "; +" + std::to_string(items.size() - max_items) + " more";
    return out;
}

}  // namespace

std::string render_step_summary(const json& explain_body, std::size_t max_items) {
    return StepSummaries(max_items).next(explain_body);
}

std::string StepSummaries::next(const json& explain_body) {
    const std::size_t max_items = max_items_;
    const std::string explain_id = body_string(explain_body, "explain_id");
    const StepFacts facts(explain_body.is_object()
                              ? explain_body.value("explain_triples", json::array())
                              : json::array());
    const Term node = schema::iri(explain_id);
    const std::string type = step_type(explain_body);
    std::vector<std::string> parts;
    auto add = [&parts](std::string part) {
        if (!part.empty()) parts.push_back(std::move(part));
    };

    if (auto query = facts.text(node, vocab::kQuery)) {
        add("question \"" + truncate_text(*query, 80) + "\"");
    }
    if (auto used = facts.value(node, vocab::kProvUsed))
        add("called from " + schema::to_ntriples(*used));
    auto concepts = facts.values(node, vocab::kConcept);
    if (!concepts.empty()) {
        std::string list;
        for (const auto& c : concepts) list += (list.empty() ? "" : ", ") + facts.name(c);
        add("concepts " + list);
    }
    const auto seeds = facts.values(node, vocab::kSeedEntity);
    if (!seeds.empty()) add("seeds " + std::to_string(seeds.size()));
    if (auto edges = facts.text(node, vocab::kEdgeCount)) add("edges " + *edges);
    if (auto chunks = facts.text(node, vocab::kChunkCount)) add("chunks " + *chunks);
    add(selections(facts, node, vocab::kSelectedEdge, true, max_items, chunk_names_));
    add(selections(facts, node, vocab::kRetrievedChunk, false, max_items, chunk_names_));
    add(selections(facts, node, vocab::kSelectedChunk, false, max_items, chunk_names_));
    const auto citations = facts.values(node, vocab::kCitationProperty);
    if (type.find("Synthesis") != std::string::npos || !citations.empty()) {
        add("citations " + std::to_string(citations.size()));
    }
    if (auto answer = facts.text(node, vocab::kAnswerText)) {
        add("answer " + std::to_string(code_points(*answer)) + " chars");
    }
    if (auto ms = facts.text(node, vocab::kDurationMs)) add(*ms + " ms");
    if (auto model = facts.text(node, vocab::kModelName)) add("model " + *model);
    const auto in = facts.text(node, vocab::kInputTokens);
    const auto out = facts.text(node, vocab::kOutputTokens);
    if (in || out) add("tokens " + in.value_or("0") + " in / " + out.value_or("0") + " out");
    if (auto status = facts.text(node, vocab::kStatus)) add("status " + *status);

    // The body is untrusted: a field of the wrong type reads as absent, never throws.
    const bool ends = explain_body.is_object() && explain_body.contains("end_of_trace") &&
                      explain_body["end_of_trace"].is_boolean() &&
                      explain_body["end_of_trace"].get<bool>();
    const std::string trace_status = body_string(explain_body, "trace_status");
    if (ends || !trace_status.empty()) {
        add("trace " + (trace_status.empty() ? std::string("ended") : trace_status));
    }
    if (explain_body.is_object() && explain_body.contains("error") &&
        explain_body["error"].is_object()) {
        const auto& error = explain_body["error"];
        add("error " + body_string(error, "type") + ": " + body_string(error, "message"));
    }

    std::string line = "[" + type + "] " + explain_id;
    for (const auto& part : parts) line += "  " + part;
    return escape_controls(line, false);
}
}  // namespace glassbox::cli::render
