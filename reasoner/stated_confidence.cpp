// What an answer states about its confidence (reasoner/stated_confidence.hpp).
#include "reasoner/stated_confidence.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

namespace glassbox::reasoner {
namespace {

std::string percent_of(double probability) {
    return std::to_string(static_cast<int>(std::lround(probability * 100.0))) + " %";
}

using Doubt = std::pair<std::string_view, std::string_view>;

// graph-rag's and document-rag's features (reasoner/answer_confidence.hpp).
constexpr Doubt kRagDoubts[] = {
    {"margin", "another answer is about as well supported"},
    {"answer_score", "the facts that give it match the question poorly"},
    {"path_linked", "no chain of facts links it to what the question names"},
    {"answer_found", "it is not among the facts found"},
    {"answer_is_seed", "it is what the question itself names"},
    {"hop_excess", "it lies further from what the question names than the question asks"},
    {"answer_via_type", "it is a class, not a particular thing"},
    {"type_mismatch", "it is not the kind of answer the question asks for"},
    {"question_coverage", "the evidence covers few of the question's words"},
    {"competitors", "many other candidates are as close to the question"},
    {"path_sources", "it rests on few sources"},
    {"weakest_tier", "its sources are of a low tier"},
    {"seed_match", "nothing in the knowledge matches the question's names closely"},
    {"conflict", "sources disagree on it"},
    {"answered", "the evidence did not decide an answer"},
    {"answer_documents", "how many documents state it"},
    {"answer_rank", "where the retrieved text states it"},
    {"cited_documents", "how many documents the answer draws on"},
    {"sentence_coverage", "the sentence that states it shares few of the question's words"},
    {"retrieval_margin", "no passage stands out from the others"},
    {"answer_titled", "whether a document is about it"},
    {"who_not_name", "the question asks who, and it is not shaped like a name"},
    {"answer_top_chunk", "it is read from the best-ranked passage, often a hop short"},
    {"answer_far_chunk", "it is read from a passage far down the retrieval"},
    {"answer_chunk_share", "the passage it is read from matches the question poorly"},
    {"answer_top_chunk_chained",
     "the question chains relations and it is read from the best-ranked passage, a hop short"},
    {"withheld", "the short answer found was too weak to state"},
};

// The agent's features (workers/agent/answer_features.hpp).
constexpr Doubt kAgentDoubts[] = {
    {"answered", "the lookups did not decide an answer"},
    {"final_answer", "the agent stopped before it finished"},
    {"chain_complete", "no completed chain of lookups leads to it"},
    {"planned_hops", "the question chains many relations"},
    {"chain_hops", "the chain of lookups behind it is of an unusual length"},
    {"hop_gap", "the lookups behind it do not follow the question's relations one by one"},
    {"answer_ends", "the lookups end at several things"},
    {"answer_backed", "no fact or citation backs it"},
    {"answer_facts", "few facts lead to it"},
    {"answer_sources", "it rests on few sources"},
    {"weakest_tier", "its sources are of a low tier"},
    {"iterations", "it took many steps"},
    {"empty_lookup", "a lookup came back empty"},
    {"tool_errors", "a tool failed"},
    {"type_mismatch", "it is not the kind of answer the question asks for"},
    {"rag_answer", "it is a retrieval engine's answer, not a chain of lookups"},
    {"rag_confidence", "the retrieval engine that gave it was unsure"},
    {"conflict", "sources disagree on it"},
};

}  // namespace

std::string_view doubt_words(std::string_view engine, std::string_view feature) noexcept {
    if (feature == "engine_conflict") return "the engines disagree on it";
    const auto find = [&](const auto& table) -> std::string_view {
        for (const auto& [name, doubt] : table) {
            if (name == feature) return doubt;
        }
        return "its evidence is weak";
    };
    return engine == "agent" ? find(kAgentDoubts) : find(kRagDoubts);
}

schema::explain::AnswerConfidence stated_confidence(const EvidenceFeatures& features,
                                                    std::string_view engine) {
    schema::explain::AnswerConfidence out;
    const auto* calibrator = shipped_calibrator(engine);
    if (calibrator == nullptr) {
        for (const auto& f : features) out.features.push_back({f.name, f.value, std::nullopt});
        return out;
    }
    const auto scored = calibrate(*calibrator, features);
    out.probability = scored.probability;
    out.calibrator = scored.calibrator;
    for (const auto& f : features) {
        const auto it = std::find_if(scored.effects.begin(), scored.effects.end(),
                                     [&](const auto& e) { return e.name == f.name; });
        out.features.push_back(
            {f.name, f.value,
             it == scored.effects.end() ? std::nullopt : std::optional<double>(it->effect)});
    }
    return out;
}

std::optional<std::string> most_lowering_feature(const schema::explain::AnswerConfidence& c) {
    const schema::explain::EvidenceFeatureRecord* worst = nullptr;
    for (const auto& f : c.features) {
        if (f.effect && *f.effect < 0.0 && (worst == nullptr || *f.effect < *worst->effect))
            worst = &f;
    }
    if (worst == nullptr) return std::nullopt;
    return worst->name;
}

bool below_floor(const schema::explain::AnswerConfidence& confidence, double floor) noexcept {
    return confidence.probability && *confidence.probability < floor;
}

std::string abstention_note(const schema::explain::AnswerConfidence& confidence, double floor,
                            std::string_view said, std::string_view why) {
    const double p = confidence.probability.value_or(0.0);
    std::string note = "I do not know for sure. ";
    note += said.empty() ? std::string("The evidence does not settle on an answer")
                         : "The evidence points to " + std::string(said);
    note += ", but its confidence, " + percent_of(p) + " (" + std::string(confidence_words(p)) +
            "), is below the " + percent_of(floor) +
            " asked for; what lowered it most: " + std::string(why) + ".";
    return note;
}

double sources_share(const std::vector<schema::explain::AnswerConflict>& conflicts) noexcept {
    double share = 1.0;
    for (const auto& c : conflicts) {
        const auto stated = static_cast<double>(c.stated_sources.size());
        const auto both = stated + static_cast<double>(c.rival_sources.size());
        if (both > 0.0) share = std::min(share, stated / both);
    }
    return share;
}

void lower_for_conflicts(schema::explain::AnswerConfidence& confidence) {
    if (confidence.conflicts.empty() || !confidence.probability) return;
    lower_by_share(confidence, sources_share(confidence.conflicts), "conflict");
}

void lower_by_share(schema::explain::AnswerConfidence& confidence, double share,
                    std::string feature) {
    if (!confidence.probability) return;
    share = std::clamp(share, 0.0, 1.0);
    const double before = std::clamp(*confidence.probability, 1e-6, 1.0 - 1e-6);
    const double after = std::clamp(before * share, 1e-6, 1.0 - 1e-6);
    const auto logit = [](double p) { return std::log(p / (1.0 - p)); };
    confidence.probability = before * share;
    confidence.features.push_back({std::move(feature), share, logit(after) - logit(before)});
}

std::string conflicts_note(const std::vector<schema::explain::AnswerConflict>& conflicts,
                           const std::vector<schema::RagCitation>& citations) {
    const auto cited_as = [&](std::uint32_t n, const std::string& selection,
                              const std::vector<std::string>& from) {
        if (n != 0) return "[" + std::to_string(n) + "]";
        for (const auto& c : citations)
            if (!selection.empty() && c.selection == selection)
                return "[" + std::to_string(c.n) + "]";
        return from.empty() ? std::string("another source") : from.front();
    };
    std::string note;
    for (const auto& c : conflicts) {
        note += (note.empty() ? "" : " ") + std::string("Sources disagree on this: ") +
                cited_as(c.stated_citation, c.stated_selection, c.stated_sources) + " gives " +
                c.stated + "; " + cited_as(c.rival_citation, c.rival_selection, c.rival_sources) +
                " gives " + c.rival + ".";
    }
    return note;
}

void add_confidence_fields(nlohmann::json& final,
                           const schema::explain::AnswerConfidence& confidence) {
    if (confidence.probability) {
        final["confidence"] = *confidence.probability;
        final["confidence_words"] = confidence_words(*confidence.probability);
        final["calibrator"] = confidence.calibrator;
    }
    if (confidence.abstained) final["abstained"] = true;
    auto evidence = nlohmann::json::array();
    for (const auto& f : confidence.features) {
        nlohmann::json item{{"name", f.name}, {"value", f.value}};
        if (f.effect) item["effect"] = *f.effect;
        evidence.push_back(std::move(item));
    }
    final["evidence"] = std::move(evidence);
    if (!confidence.conflicts.empty()) {
        auto conflicts = nlohmann::json::array();
        for (const auto& c : confidence.conflicts) {
            conflicts.push_back({{"subject", c.subject},
                                 {"predicate", c.predicate},
                                 {"stated", c.stated},
                                 {"rival", c.rival},
                                 {"stated_sources", c.stated_sources},
                                 {"rival_sources", c.rival_sources}});
            // The steps that kept each value, so a caller (the query router) can record the
            // same gb:Conflict on its own concluding step.
            if (!c.stated_selection.empty())
                conflicts.back()["stated_selection"] = c.stated_selection;
            if (!c.rival_selection.empty()) conflicts.back()["rival_selection"] = c.rival_selection;
        }
        final["conflicts"] = std::move(conflicts);
    }
}

}  // namespace glassbox::reasoner
