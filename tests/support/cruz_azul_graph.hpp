// The small knowledge graph the RAG and query service tests ask about, as N-Triples.
#pragma once

#include <string>

namespace glassbox::rag::testing {

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

}  // namespace glassbox::rag::testing
