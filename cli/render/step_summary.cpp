// One line per explain step as it arrives (`glassbox invoke -x`): the step type, its URI and
// its key facts.
#include "cli/render/trace_render.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "cli/render/render_text.hpp"
#include "cli/render/step_facts.hpp"
#include "schema/explain_terms.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

using nlohmann::json;
using schema::Term;
using schema::Triple;
namespace vocab = schema::vocab;
using namespace detail;

// The selections a step lists, as "what (score); …", at most `max_items` ("+N more").
std::string selection_list(const StepFacts& facts, const Term& node, std::string_view predicate,
                           bool edges, std::size_t max_items,
                           std::map<std::string, std::string>& chunk_names) {
    const auto items = selections(facts, node, predicate, edges, chunk_names, true);
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < max_items; ++i) {
        out += (i == 0 ? "" : "; ") + items[i].text + score_text(items[i].score);
    }
    if (items.size() > max_items) out += "; +" + std::to_string(items.size() - max_items) + " more";
    return out;
}

}  // namespace

void StepSummaries::learn_labels(const StepFacts& facts, const Term& node) {
    std::vector<std::string> wanted;
    const auto want = [&](const Term& term) {
        if (!term.is_iri()) return;
        const auto& iri = term.as_iri().value;
        if (labels_.count(iri) != 0 || facts.labelled(iri)) return;
        if (std::find(wanted.begin(), wanted.end(), iri) == wanted.end()) wanted.push_back(iri);
    };
    for (const auto& seed : facts.values(node, vocab::kSeedEntity)) want(seed);
    for (const auto& edge : facts.values(node, vocab::kSelectedEdge)) {
        for (const auto* part : {&vocab::kRdfSubject, &vocab::kRdfPredicate, &vocab::kRdfObject})
            for (const auto& term : facts.values(edge, *part)) want(term);
    }
    if (wanted.empty()) return;
    Labels answered = labeler_(wanted);
    for (const auto& iri : wanted) {
        const auto it = answered.find(iri);
        // Asked once: an IRI without a label is remembered as such (its local name is shown).
        labels_.emplace(iri, it == answered.end() ? std::string() : it->second);
    }
}

namespace {

using Parts = std::vector<std::string>;

void add(Parts& parts, std::string part) {
    if (!part.empty()) parts.push_back(std::move(part));
}

// What a RAG step found and wrote: the question, concepts, seeds, counts, selections, the answer.
void retrieval_parts(const StepFacts& facts, const Term& node, const std::string& type,
                     std::size_t max_items, std::map<std::string, std::string>& chunk_names,
                     Parts& parts) {
    if (auto query = facts.text(node, vocab::kQuery))
        add(parts, "question \"" + truncate_text(*query, 80) + "\"");
    if (auto used = facts.value(node, vocab::kProvUsed))
        add(parts, "called from " + schema::to_ntriples(*used));
    auto concepts = facts.values(node, vocab::kConcept);
    if (!concepts.empty()) {
        std::string list;
        for (const auto& c : concepts) list += (list.empty() ? "" : ", ") + facts.name(c);
        add(parts, "concepts " + list);
    }
    const auto seeds = facts.values(node, vocab::kSeedEntity);
    if (!seeds.empty()) add(parts, "seeds " + std::to_string(seeds.size()));
    if (auto edges = facts.text(node, vocab::kEdgeCount)) add(parts, "edges " + *edges);
    if (auto chunks = facts.text(node, vocab::kChunkCount)) add(parts, "chunks " + *chunks);
    add(parts, selection_list(facts, node, vocab::kSelectedEdge, true, max_items, chunk_names));
    add(parts, selection_list(facts, node, vocab::kRetrievedChunk, false, max_items, chunk_names));
    add(parts, selection_list(facts, node, vocab::kSelectedChunk, false, max_items, chunk_names));
    const auto citations = facts.values(node, vocab::kCitationProperty);
    if (type.find("Synthesis") != std::string::npos || !citations.empty()) {
        add(parts, "citations " + std::to_string(citations.size()));
    }
    if (auto short_answer = facts.text(node, vocab::kShortAnswer)) {
        add(parts, short_answer->empty()
                       ? std::string("short answer undecided")
                       : "short answer \"" + truncate_text(*short_answer, 80) + "\"");
    }
    if (auto answer = facts.text(node, vocab::kAnswerText)) {
        add(parts, "answer " + std::to_string(code_points(*answer)) + " chars");
    }
}

// Query routing (docs/query.md): the route and why, an escalation, the answer's provenance.
void routing_parts(const StepFacts& facts, const Term& node, Parts& parts) {
    if (auto method = facts.text(node, vocab::kRoutingMethod)) {
        std::string rules;
        for (const auto& r : facts.values(node, vocab::kRuleFired))
            if (r.is_literal()) rules += (rules.empty() ? "" : ", ") + r.as_literal().value;
        add(parts, "route " + facts.text(node, vocab::kEngine).value_or("?") + " by " + *method +
                       (rules.empty() ? "" : " (" + rules + ")") +
                       score_text(facts.number(node, vocab::kConfidence)));
    }
    if (auto from = facts.text(node, vocab::kFromEngine)) {
        add(parts, "escalate " + *from + " -> " + facts.text(node, vocab::kEngine).value_or("?") +
                       score_text(facts.number(node, vocab::kRelevance)) + ": " +
                       truncate_text(facts.text(node, vocab::kReason).value_or(""), 100));
    }
    if (auto chain = facts.text(node, vocab::kDerivationChain)) add(parts, "derivation " + *chain);
    if (auto tier = facts.text(node, vocab::kAggregateTier)) add(parts, "aggregate tier " + *tier);
}

// The time and model a step used, and its status.
void usage_parts(const StepFacts& facts, const Term& node, Parts& parts) {
    if (auto ms = facts.text(node, vocab::kDurationMs)) add(parts, *ms + " ms");
    if (auto model = facts.text(node, vocab::kModelName)) add(parts, "model " + *model);
    const auto in = facts.text(node, vocab::kInputTokens);
    const auto out = facts.text(node, vocab::kOutputTokens);
    if (in || out) add(parts, "tokens " + in.value_or("0") + " in / " + out.value_or("0") + " out");
    if (auto status = facts.text(node, vocab::kStatus)) add(parts, "status " + *status);
}

// The end of the trace and an error, as the message's own fields say. The body is untrusted: a
// field of the wrong type reads as absent, never throws.
void ending_parts(const json& explain_body, Parts& parts) {
    const bool ends = explain_body.is_object() && explain_body.contains("end_of_trace") &&
                      explain_body["end_of_trace"].is_boolean() &&
                      explain_body["end_of_trace"].get<bool>();
    const std::string trace_status = body_string(explain_body, "trace_status");
    if (ends || !trace_status.empty())
        add(parts, "trace " + (trace_status.empty() ? std::string("ended") : trace_status));
    if (explain_body.is_object() && explain_body.contains("error") &&
        explain_body["error"].is_object()) {
        const auto& error = explain_body["error"];
        add(parts, "error " + body_string(error, "type") + ": " + body_string(error, "message"));
    }
}

}  // namespace

std::string StepSummaries::next(const json& explain_body) {
    const std::string explain_id = body_string(explain_body, "explain_id");
    StepFacts facts;
    // Either form of explain_triples (docs/protocol.md §8.1).
    schema::for_each_explain_triple(
        explain_body, [&facts](const json& s, const json& p, const json& o) {
            auto ts = schema::decode_term(s);
            auto tp = schema::decode_term(p);
            auto to = schema::decode_term(o);
            if (ts && tp && to)
                facts.add(Triple{std::move(ts).value(), std::move(tp).value(),
                                 std::move(to).value(), std::nullopt});
        });
    if (labeler_) learn_labels(facts, schema::iri(explain_id));
    facts.set_fallback_labels(&labels_);
    const Term node = schema::iri(explain_id);
    const std::string type = step_type(explain_body);
    Parts parts;
    retrieval_parts(facts, node, type, max_items_, chunk_names_, parts);
    routing_parts(facts, node, parts);
    usage_parts(facts, node, parts);
    ending_parts(explain_body, parts);
    std::string line = "[" + type + "] " + explain_id;
    for (const auto& part : parts) line += "  " + part;
    return escape_controls(line, false);
}

}  // namespace glassbox::cli::render
