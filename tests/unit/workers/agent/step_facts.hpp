// Lookup facts for the agent's answer tests: the fact `s p o` (example.org IRIs) as a lookup of
// `looked_up` at `iteration` showed it; the other end is the end that is not the looked-up entity.
#pragma once

#include <cstddef>
#include <string>

#include "workers/agent/answer_evidence.hpp"

namespace glassbox::agent::test_support {

inline const std::string kEx = "http://example.org/";

inline StepFact fact(const std::string& s, const std::string& p, const std::string& o,
                     const std::string& looked_up, std::size_t iteration) {
    StepFact f;
    f.fact.triple =
        schema::make_triple(schema::Term(schema::Iri{kEx + s}), schema::Term(schema::Iri{kEx + p}),
                            schema::Term(schema::Iri{kEx + o}));
    f.fact.entity = kEx + looked_up;
    const std::string& other = looked_up == s ? o : s;
    f.fact.other = kEx + other;
    f.fact.other_label = other;
    f.fact.text = s + " " + p + " " + o;
    f.iteration = iteration;
    return f;
}

}  // namespace glassbox::agent::test_support
