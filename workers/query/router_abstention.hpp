// The router's own abstention (docs/confidence.md, abstention): once its confidence is final
// (the winning engine's, lowered when the engines disagree: engine_disagreement.hpp), an answer
// below the floor says it does not know, what it found and why it is unsure, in the engines'
// words (reasoner::abstention_note) and recorded as theirs are (gb:abstained, "abstained").
#pragma once

#include <cstddef>
#include <optional>

#include <nlohmann/json.hpp>

#include "schema/explain_builder.hpp"

namespace glassbox::query {

// Makes the router's FINAL `body` abstain when `confidence` (as the body states it) has a
// calibrated probability below `floor` and the answer is not an abstention already (the engine
// abstained itself). The response then starts with reasoner::abstention_note: the short answer
// it points to, its confidence against the floor, and why it is unsure: the engines' disagreement
// when that took it below the floor (`engine_confidence`, the winning engine's own, was at least
// the floor), else the feature that lowered it most, in the winning engine's words
// (reasoner::doubt_words; the engine is the body's "engine"). It goes on "What was found: " with
// the answer as it was, the engines' disagreement and both citations included. The spans of the
// first `own_citations` citations (the winning engine's) move along with its text; "answer" becomes
// "" and "answer_selections" empty; "abstained" is true, and so is `confidence.abstained` (the
// Conclusion records it). Returns whether it abstained.
bool abstain_below_floor(nlohmann::json& body, schema::explain::AnswerConfidence& confidence,
                         double floor, std::optional<double> engine_confidence,
                         std::size_t own_citations);

}  // namespace glassbox::query
