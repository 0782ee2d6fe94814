// One-line renderings: the `traces list` table and the `traces tail` event lines.
#include "cli/render/trace_render.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>

#include "cli/render/render_text.hpp"
#include "schema/explain_terms.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

using nlohmann::json;
using schema::Term;
using schema::TraceSessionList;
namespace vocab = schema::vocab;
using namespace detail;

// A share as "0.83".
std::string two_places(double share) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", share);
    return buffer;
}

// The EVAL cell: the latest evaluation's verdict and F1 ("✓ F1 1.00"), with the number of
// evaluations when there are several ("✗ F1 0.40 (3)"); "-" for none.
std::string evaluation_cell(const std::vector<schema::TraceEvaluation>& evaluations) {
    if (evaluations.empty()) return "-";
    const auto& e = evaluations.back();
    std::string out = e.correct ? "\u2713" : "\u2717";
    if (e.f1) out += " F1 " + two_places(*e.f1);
    if (evaluations.size() > 1) out += " (" + std::to_string(evaluations.size()) + ")";
    return out;
}

}  // namespace

std::string evaluation_line(const schema::TraceEvaluation& e) {
    std::string out = e.correct ? "\u2713 correct" : "\u2717 wrong";
    if (e.hit) out += *e.hit ? ", hit" : ", no hit";
    if (e.exact_match) out += ", exact " + two_places(*e.exact_match);
    if (e.f1) out += ", F1 " + two_places(*e.f1);
    if (e.confidence) out += ", confidence " + two_places(*e.confidence);
    out += "; set " + e.set;
    if (e.question_id) out += " #" + *e.question_id;
    out += ", run " + e.run;
    if (!e.evaluated.empty()) out += ", " + e.evaluated;
    if (!e.answers.empty()) {
        out += "; accepted:";
        for (std::size_t i = 0; i < e.answers.size(); ++i)
            out += (i == 0 ? " " : " | ") + e.answers[i];
    }
    return out;
}

std::string render_session_table(const TraceSessionList& list) {
    constexpr std::size_t kQuestionWidth = 48;
    // SUB-RUNS: a top-level run's sub-traces (an agent's tool calls, a query's engines) stay
    // under it (`traces show`), counted here rather than listed beside it (--all lists them).
    // TOKENS: the model tokens in/out of the run and its sub-runs; COLLECTION: what it asked.
    // EVAL: the latest evaluation's score, shown when a run of the page has one. COST: what the
    // run's model calls cost (docs/traces.md, "Cost"), shown when a run of the page has a cost or
    // an unpriced model ("?": no price; "+?": more calls without one).
    constexpr std::size_t kColumns = 11;
    constexpr std::size_t kCostColumn = 7;
    std::array<std::string, kColumns> titles{"SESSION", "KIND",     "COLLECTION", "QUESTION",
                                             "STARTED", "DURATION", "TOKENS",     "COST",
                                             "STATUS",  "SUB-RUNS", "EVAL"};
    std::vector<std::array<std::string, kColumns>> rows;
    bool evaluated = false;
    bool costed = false;
    std::set<std::string> currencies;
    for (const auto& s : list.sessions) {
        const bool used_model = s.input_tokens > 0 || s.output_tokens > 0;
        evaluated = evaluated || !s.evaluations.empty();
        const bool unpriced = s.unpriced && !s.unpriced->empty();
        costed = costed || s.cost || unpriced;
        if (s.cost && s.currency) currencies.insert(*s.currency);
        rows.push_back(
            {escape_controls(session_label(s.session), false), escape_controls(kind_of(s), false),
             s.collection ? escape_controls(*s.collection, false) : "-",
             truncate_text(escape_controls(s.question.value_or(""), false), kQuestionWidth),
             s.started.value_or("").empty() ? "-" : escape_controls(*s.started, false),
             format_duration(s.duration_ms),
             used_model ? std::to_string(s.input_tokens) + "/" + std::to_string(s.output_tokens)
                        : "-",
             s.cost ? format_cost(s.cost) + (unpriced ? "+?" : "") : (unpriced ? "?" : "-"),
             // AFFECTED: a knowledge change removed something the run used (issue 36).
             // SUMMARY: sampling kept a summary of the run (docs/traces.md, "Sampling").
             // PINNED: never pruned (`traces pin`, docs/traces.md, "Retention").
             escape_controls(s.status, false) + (s.affected > 0 ? " AFFECTED" : "") +
                 (s.summary.value_or(false) ? " SUMMARY" : "") + (s.pinned ? " PINNED" : ""),
             s.subtraces > 0 ? std::to_string(s.subtraces) : "-", evaluation_cell(s.evaluations)});
    }
    const std::size_t shown_columns = evaluated ? kColumns : kColumns - 1;
    if (currencies.size() == 1) titles[kCostColumn] = "COST " + *currencies.begin();
    std::array<std::size_t, kColumns> widths{};
    for (std::size_t c = 0; c < titles.size(); ++c) {
        widths[c] = code_points(titles[c]);
        for (const auto& row : rows) widths[c] = std::max(widths[c], code_points(row[c]));
    }
    auto write_row = [&](const std::array<std::string, kColumns>& row, std::string& out) {
        std::string text;
        for (std::size_t c = 0; c < shown_columns; ++c) {
            if (c == kCostColumn && !costed) continue;
            text += c + 1 == shown_columns ? row[c] : pad(row[c], widths[c] + 2);
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
    StepTypeLabel label;
    // Either form of explain_triples (docs/protocol.md §8.1).
    schema::for_each_explain_triple(explain_body, [&](const json& s, const json& p, const json& o) {
        auto ts = schema::decode_term(s);
        auto tp = schema::decode_term(p);
        auto to = schema::decode_term(o);
        if (!ts || !tp || !to || *ts != subject || *tp != type || !to->is_iri()) return;
        label.add(to->as_iri().value);
    });
    return label.label("-");
}

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

}  // namespace glassbox::cli::render
