// Whether two short answers give different values for one fact (docs/confidence.md, conflicts):
// the typed, conservative comparison every comparer of answers uses (the agent's fact against a
// document, the query router's two engines).
#pragma once

#include <string_view>

namespace glassbox::reasoner {

// True only when `a` and `b` plainly give different values, compared by type: numbers (years,
// counts, dates' parts) disagree when the two share no number; yes and no disagree; names
// (neither holding a number) disagree when they share no content word. Anything else (equal
// once normalised, one name inside the other, a number against a name, a partial overlap, a
// long phrase) is not called a conflict: a false conflict lowers a right answer's confidence.
bool values_disagree(std::string_view a, std::string_view b);

}  // namespace glassbox::reasoner
