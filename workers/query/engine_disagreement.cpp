// Two engines' short answers that disagree (workers/query/engine_disagreement.hpp).
#include "workers/query/engine_disagreement.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "reasoner/stated_confidence.hpp"
#include "reasoner/value_disagreement.hpp"
#include "text/tokenize.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;

std::string text_of(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The citation `final`'s short answer came from: the first whose selection its
// answer_selections name, else its first citation; null when it cited none.
json ground_citation(const json& final) {
    const auto citations = final.find("citations");
    if (citations == final.end() || !citations->is_array() || citations->empty()) return nullptr;
    if (const auto chosen = final.find("answer_selections");
        chosen != final.end() && chosen->is_array()) {
        for (const auto& c : *citations) {
            if (!c.is_object()) continue;
            const std::string selection = text_of(c, "selection");
            if (!selection.empty() &&
                std::find(chosen->begin(), chosen->end(), selection) != chosen->end())
                return c;
        }
    }
    return citations->front().is_object() ? citations->front() : json(nullptr);
}

// The selection and sources a side of the conflict is recorded with.
void side_of(const EngineRun& run, const json& ground, std::string& selection,
             std::vector<std::string>& sources) {
    selection = ground.is_object() ? text_of(ground, "selection") : std::string();
    if (selection.empty()) selection = run.last_step;
    if (!ground.is_object()) return;
    std::string source = text_of(ground, "chunk");
    if (source.empty()) source = text_of(ground, "document");
    if (!source.empty()) sources.push_back(std::move(source));
}

std::uint32_t citation_number(const json& citation) {
    const auto n = citation.is_object() ? citation.find("n") : citation.end();
    if (!citation.is_object() || n == citation.end() || !n->is_number_integer()) return 0;
    const auto value = n->get<std::int64_t>();
    return value > 0 && value <= UINT32_MAX ? static_cast<std::uint32_t>(value) : 0;
}

// The stated value's share of the engines' confidences, the smallest over the rivals; nullopt
// when an engine of a conflict has none (the sources' share decides then).
std::optional<double> confidence_share(const std::vector<EngineConflict>& found) {
    double share = 1.0;
    for (const auto& e : found) {
        if (!e.stated_confidence || !e.rival_confidence) return std::nullopt;
        const double both = *e.stated_confidence + *e.rival_confidence;
        share = std::min(share, both > 0.0 ? *e.stated_confidence / both : 0.5);
    }
    return share;
}

}  // namespace

std::vector<EngineConflict> engine_conflicts(const std::vector<EngineRun>& runs,
                                             std::size_t winner) {
    std::vector<EngineConflict> out;
    if (winner >= runs.size()) return out;
    const EngineRun& won = runs[winner];
    if (won.error || !won.evidence.short_answer || won.evidence.short_answer->empty()) return out;
    const std::string stated = *won.evidence.short_answer;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const EngineRun& other = runs[i];
        if (i == winner || other.error || other.engine == won.engine ||
            !other.evidence.short_answer)
            continue;
        const std::string rival = *other.evidence.short_answer;
        if (!reasoner::values_disagree(stated, rival)) continue;
        // "1881" and "in 1881" are one rival value (not disagreeing is being the same here).
        const bool said = std::any_of(out.begin(), out.end(), [&](const EngineConflict& e) {
            return !reasoner::values_disagree(e.conflict.rival, rival);
        });
        if (said) continue;
        EngineConflict e;
        e.stated_engine = won.engine;
        e.rival_engine = other.engine;
        e.conflict.stated = stated;
        e.conflict.rival = rival;
        const json stated_ground = ground_citation(won.final);
        e.rival_citation = ground_citation(other.final);
        side_of(won, stated_ground, e.conflict.stated_selection, e.conflict.stated_sources);
        side_of(other, e.rival_citation, e.conflict.rival_selection, e.conflict.rival_sources);
        e.conflict.stated_citation = citation_number(stated_ground);
        e.stated_confidence = won.confidence;
        e.rival_confidence = other.confidence;
        out.push_back(std::move(e));
    }
    return out;
}

std::optional<schema::explain::AnswerConfidence> add_engine_conflicts(
    json& body, std::vector<EngineConflict> found) {
    auto confidence = schema::explain::answer_confidence_of(body);
    // A dispute the winning engine reported itself (the agent's fact against a document) is not
    // said, nor counted, twice.
    if (confidence) {
        const auto n = [](const std::string& v) { return text::normalize(v); };
        std::erase_if(found, [&](const EngineConflict& e) {
            return std::any_of(confidence->conflicts.begin(), confidence->conflicts.end(),
                               [&](const schema::explain::AnswerConflict& c) {
                                   return (n(c.stated) == n(e.conflict.stated) &&
                                           n(c.rival) == n(e.conflict.rival)) ||
                                          (n(c.stated) == n(e.conflict.rival) &&
                                           n(c.rival) == n(e.conflict.stated));
                               });
        });
    }
    if (found.empty()) return confidence;
    if (!body.contains("citations") || !body["citations"].is_array())
        body["citations"] = json::array();
    json& citations = body["citations"];
    std::string note = "The engines disagree:";
    std::vector<schema::explain::AnswerConflict> conflicts;
    for (auto& e : found) {
        if (e.rival_citation.is_object()) {
            std::uint32_t n = 0;
            for (const auto& c : citations) n = std::max(n, citation_number(c));
            e.rival_citation["n"] = n + 1;
            citations.push_back(e.rival_citation);
            e.conflict.rival_citation = n + 1;
        }
        const auto cited = [](std::uint32_t n) {
            return n == 0 ? std::string() : " [" + std::to_string(n) + "]";
        };
        if (conflicts.empty())
            note += " " + e.stated_engine + " gives " + e.conflict.stated +
                    cited(e.conflict.stated_citation);
        note +=
            "; " + e.rival_engine + " gives " + e.conflict.rival + cited(e.conflict.rival_citation);
        conflicts.push_back(e.conflict);
    }
    body["response"] = text_of(body, "response") + "\n\n" + note + ".";
    schema::explain::AnswerConfidence lowered =
        confidence.value_or(schema::explain::AnswerConfidence{});
    // Only the engines' conflicts lower it here: the engine's own already did, in its answer.
    reasoner::lower_by_share(lowered,
                             confidence_share(found).value_or(reasoner::sources_share(conflicts)),
                             "engine_conflict");
    lowered.conflicts.insert(lowered.conflicts.end(), conflicts.begin(), conflicts.end());
    reasoner::add_confidence_fields(body, lowered);
    return lowered;
}

}  // namespace glassbox::query
