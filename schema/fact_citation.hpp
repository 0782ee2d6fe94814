// A cited fact's source as a citation shows it: the best recorded source of an edge (the first
// of a `fact-sources` answer, best tier first) gives the citation its chunk and document, or
// its file, and its tier. Shared by graph-rag's kept edges and the agent's looked-up facts.
#pragma once

#include "schema/messages.hpp"

namespace glassbox::schema {

inline void cite_fact_source(RagCitation& citation, const FactSource& best) {
    if (best.kind == "chunk") {
        citation.chunk = best.source;
        citation.document = best.document.value_or("");
    } else {
        citation.document = best.source;
    }
    citation.tier = best.tier;
}

}  // namespace glassbox::schema
