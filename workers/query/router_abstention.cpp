// The router's own abstention (workers/query/router_abstention.hpp).
#include "workers/query/router_abstention.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/utf8.hpp"
#include "reasoner/stated_confidence.hpp"
#include "workers/query/relevance.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;

// Why the answer is unsure, as reasoner::abstention_note says it after "what lowered it most: ":
// the engines' disagreement whenever it is what took the confidence below the floor, else the
// winning `engine`'s words for the feature that lowered it most.
std::string doubt_of(const schema::explain::AnswerConfidence& confidence,
                     std::optional<double> engine_confidence, double floor,
                     std::string_view engine) {
    const bool engines_disagree =
        std::any_of(confidence.features.begin(), confidence.features.end(),
                    [](const auto& f) { return f.name == "engine_conflict"; });
    if (engines_disagree && engine_confidence && *engine_confidence >= floor)
        return std::string(reasoner::doubt_words(engine, "engine_conflict"));
    const auto worst = reasoner::most_lowering_feature(confidence);
    return std::string(worst ? reasoner::doubt_words(engine, *worst) : "its evidence is weak");
}

void shift_spans(json& citations, std::size_t count, std::uint64_t shift) {
    if (!citations.is_array()) return;
    for (std::size_t i = 0; i < std::min(count, citations.size()); ++i) {
        json& citation = citations[i];
        if (!citation.is_object() || !citation.contains("spans") || !citation["spans"].is_array())
            continue;
        for (auto& span : citation["spans"]) {
            for (const char* key : {"start", "end"}) {
                if (!span.is_object() || !span.contains(key) || !span[key].is_number_integer())
                    continue;
                if (const auto at = span[key].get<std::int64_t>(); at >= 0)
                    span[key] = static_cast<std::uint64_t>(at) + shift;
            }
        }
    }
}

}  // namespace

bool abstain_below_floor(json& body, schema::explain::AnswerConfidence& confidence, double floor,
                         std::optional<double> engine_confidence, std::size_t own_citations) {
    if (confidence.abstained || !reasoner::below_floor(confidence, floor)) return false;
    const std::string found = string_of(body, "response");
    std::string note = reasoner::abstention_note(
        confidence, floor, string_of(body, "answer"),
        doubt_of(confidence, engine_confidence, floor, string_of(body, "engine")));
    if (!found.empty()) {
        note += reasoner::kWhatWasFound;
        if (const auto c = body.find("citations"); c != body.end())
            shift_spans(*c, own_citations, base::count_code_points(note));
        note += found;
    }
    body["response"] = std::move(note);
    body["answer"] = "";
    body["answer_selections"] = json::array();
    body["abstained"] = true;
    confidence.abstained = true;
    return true;
}

}  // namespace glassbox::query
