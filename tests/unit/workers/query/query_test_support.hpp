// What the query service's unit tests share: the small knowledge graph they ask about, and
// looking into a stream's explain triples and its FINAL.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "schema/term.hpp"
#include "tests/support/rag_cluster.hpp"

namespace glassbox::query::testing {

// Cruz Azul FC, its country, coach and the country's capital, with labels.
inline const std::string kCruzAzulGraph = R"(
<urn:kg:cruz_azul> <urn:kg:is_in_country> <urn:kg:mexico> .
<urn:kg:cruz_azul> <urn:kg:coach> <urn:kg:robert_dante> .
<urn:kg:mexico> <urn:kg:capital> <urn:kg:mexico_city> .
<urn:kg:cruz_azul> <http://www.w3.org/2000/01/rdf-schema#label> "Cruz Azul FC" .
<urn:kg:mexico> <http://www.w3.org/2000/01/rdf-schema#label> "Mexico" .
<urn:kg:mexico_city> <http://www.w3.org/2000/01/rdf-schema#label> "Mexico City" .
<urn:kg:is_in_country> <http://www.w3.org/2000/01/rdf-schema#label> "is in country" .
<urn:kg:robert_dante> <http://www.w3.org/2000/01/rdf-schema#label> "Robert Dante Siboldi" .
)";

inline std::vector<schema::Term> objects(const std::vector<schema::Triple>& triples,
                                         const std::string& s, std::string_view p) {
    std::vector<schema::Term> out;
    for (const auto& t : triples) {
        if (t.s == schema::iri(s) && t.p == schema::iri(p)) out.push_back(t.o);
    }
    return out;
}

inline bool has(const std::vector<schema::Triple>& triples, const std::string& s,
                std::string_view p, const schema::Term& o) {
    for (const auto& found : objects(triples, s, p)) {
        if (found == o) return true;
    }
    return false;
}

// The stream's FINAL body (a failure is reported, and the last reply's body returned).
inline const nlohmann::json& final_of(const std::vector<rag::testing::StreamReply>& replies) {
    EXPECT_EQ(replies.back().kind, bus::ReplyKind::kFinal)
        << (replies.back().error ? replies.back().error->describe() : replies.back().body.dump());
    return replies.back().body;
}

}  // namespace glassbox::query::testing
