// One line per explain step as it arrives (`glassbox invoke -x`): the step type, its URI and
// its key facts.
#include "cli/render/trace_render.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "cli/render/render_text.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

using nlohmann::json;
using schema::Term;
using schema::Triple;
namespace vocab = schema::vocab;
using namespace detail;

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
    if (auto short_answer = facts.text(node, vocab::kShortAnswer)) {
        add(short_answer->empty() ? std::string("short answer undecided")
                                  : "short answer \"" + truncate_text(*short_answer, 80) + "\"");
    }
    if (auto answer = facts.text(node, vocab::kAnswerText)) {
        add("answer " + std::to_string(code_points(*answer)) + " chars");
    }
    // Query routing (docs/query.md): the route and why, an escalation, the answer's provenance.
    if (auto method = facts.text(node, vocab::kRoutingMethod)) {
        std::string rules;
        for (const auto& r : facts.values(node, vocab::kRuleFired))
            if (r.is_literal()) rules += (rules.empty() ? "" : ", ") + r.as_literal().value;
        add("route " + facts.text(node, vocab::kEngine).value_or("?") + " by " + *method +
            (rules.empty() ? "" : " (" + rules + ")") +
            score_text(facts.number(node, vocab::kConfidence)));
    }
    if (auto from = facts.text(node, vocab::kFromEngine)) {
        add("escalate " + *from + " -> " + facts.text(node, vocab::kEngine).value_or("?") +
            score_text(facts.number(node, vocab::kRelevance)) + ": " +
            truncate_text(facts.text(node, vocab::kReason).value_or(""), 100));
    }
    if (auto chain = facts.text(node, vocab::kDerivationChain)) add("derivation " + *chain);
    if (auto tier = facts.text(node, vocab::kAggregateTier)) add("aggregate tier " + *tier);
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
