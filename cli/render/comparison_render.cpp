// The comparison of two runs as text (cli/render/comparison_render.hpp).
#include "cli/render/comparison_render.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "cli/render/render_text.hpp"

namespace glassbox::cli::render {
namespace {

using schema::ComparedRun;
using schema::Term;
using schema::TraceComparison;

// An IRI by its label, else its prefixed name, else the part after its last '#', '/' or ':'.
std::string iri_name(const std::string& iri, const Labels& labels) {
    if (const auto it = labels.find(iri); it != labels.end() && !it->second.empty())
        return it->second;
    if (auto prefixed = detail::prefixed_name(iri)) return *prefixed;
    const auto cut = iri.find_last_of("#/:");
    if (cut == std::string::npos || cut + 1 >= iri.size()) return iri;
    return iri.substr(cut + 1);
}

std::string term_name(const Term& term, const Labels& labels, int depth = 0) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return iri_name(term.as_iri().value, labels);
        case Term::Kind::kLiteral:
            return "\"" + term.as_literal().value + "\"";
        case Term::Kind::kBlankNode:
            return "_:" + term.as_blank().id;
        case Term::Kind::kTriple: {
            if (depth > 3) return "<< … >>";
            const auto& t = term.as_triple();
            return "<< " + term_name(t.s, labels, depth + 1) + " " +
                   term_name(t.p, labels, depth + 1) + " " + term_name(t.o, labels, depth + 1) +
                   " >>";
        }
    }
    return {};
}

std::string fact_line(const schema::Triple& fact, const Labels& labels) {
    return safe_text(
        detail::single_line(term_name(fact.s, labels) + " " + term_name(fact.p, labels) + " " +
                            term_name(fact.o, labels)),
        false);
}

std::string percent(double p) {
    return std::to_string(static_cast<int>(std::lround(std::clamp(p, 0.0, 1.0) * 100.0))) + " %";
}

std::string confidence_text(const ComparedRun& run) {
    if (!run.confidence) return "none";
    return percent(*run.confidence) + (run.abstained ? " (withheld)" : "");
}

// "a  <uuid>  graph-rag  complete  21 ms  <started>"
std::string run_line(char side, const ComparedRun& run) {
    std::string line(1, side);
    line += "  " + safe_text(detail::session_label(run.session), false);
    line += "  " + safe_text(run.kind.value_or("-"), false);
    line += "  " + safe_text(run.status.empty() ? "-" : run.status, false);
    line += "  " + format_duration(run.duration_ms);
    if (run.started) line += "  " + safe_text(*run.started, false);
    return line;
}

std::string answer_text(const ComparedRun& run) {
    if (run.answer.empty()) return "(no answer)";
    return safe_text(detail::single_line(run.answer), false);
}

void answers(std::ostringstream& out, const TraceComparison& c) {
    out << "answer: " << (c.answer_changed ? "changed" : "unchanged") << '\n';
    if (c.answer_changed) {
        out << "  a: " << answer_text(c.a) << '\n' << "  b: " << answer_text(c.b) << '\n';
    } else {
        out << "  " << answer_text(c.b) << '\n';
    }
    const auto short_a = c.a.short_answer.value_or("");
    const auto short_b = c.b.short_answer.value_or("");
    if (c.short_answer_changed) {
        out << "short answer: " << safe_text(short_a.empty() ? "(none)" : short_a, false) << " -> "
            << safe_text(short_b.empty() ? "(none)" : short_b, false) << '\n';
    } else if (!short_b.empty()) {
        out << "short answer: " << safe_text(short_b, false) << " (unchanged)\n";
    }
    out << "confidence: " << confidence_text(c.a) << " -> " << confidence_text(c.b);
    if (c.confidence_change) {
        const auto points = std::lround(*c.confidence_change * 100.0);
        out << " (" << (points > 0 ? "+" : "") << points << " points)";
    }
    out << '\n';
}

void changes(std::ostringstream& out, const TraceComparison& c, const Labels& labels) {
    out << "sources: " << c.sources_added.size() << " added, " << c.sources_removed.size()
        << " removed, " << c.sources_kept << " kept\n";
    for (const auto& s : c.sources_added) out << "  + " << safe_text(s, false) << '\n';
    for (const auto& s : c.sources_removed) out << "  - " << safe_text(s, false) << '\n';
    out << "facts: " << c.facts_added.size() << " added, " << c.facts_removed.size() << " removed, "
        << c.facts_kept << " kept\n";
    for (const auto& f : c.facts_added) out << "  + " << fact_line(f, labels) << '\n';
    for (const auto& f : c.facts_removed) out << "  - " << fact_line(f, labels) << '\n';
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "-" : safe_text(out, false);
}

}  // namespace

std::string render_comparison(const TraceComparison& c, const Labels& labels) {
    std::ostringstream out;
    out << run_line('a', c.a) << '\n'
        << run_line('b', c.b) << (c.b_revises_a ? "  (revises a)" : "") << '\n';
    if (c.a.question == c.b.question) {
        out << "question: " << safe_text(detail::single_line(c.a.question), false) << '\n';
    } else {
        out << "question a: " << safe_text(detail::single_line(c.a.question), false) << '\n'
            << "question b: " << safe_text(detail::single_line(c.b.question), false) << '\n';
    }
    answers(out, c);
    changes(out, c, labels);
    if (c.a.models != c.b.models) {
        out << "models: a " << joined(c.a.models) << "; b " << joined(c.b.models) << '\n';
    } else {
        out << "models: " << joined(c.b.models) << '\n';
    }
    out << "tokens: a " << c.a.input_tokens << " in / " << c.a.output_tokens << " out; b "
        << c.b.input_tokens << " in / " << c.b.output_tokens << " out\n";
    return out.str();
}

std::vector<std::string> comparison_iris(const TraceComparison& c) {
    std::set<std::string> iris;
    for (const auto* list : {&c.facts_added, &c.facts_removed}) {
        for (const auto& f : *list) {
            if (f.s.is_iri()) iris.insert(f.s.as_iri().value);
            if (f.o.is_iri()) iris.insert(f.o.as_iri().value);
        }
    }
    return {iris.begin(), iris.end()};
}

}  // namespace glassbox::cli::render
