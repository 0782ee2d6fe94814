// A cited fact's source as a citation shows it: the best recorded source of an edge (the first
// of a `fact-sources` answer, best tier first) gives the citation its chunk and document, or
// its file, its tier and its freshness. Shared by graph-rag's kept edges and the agent's
// looked-up facts; a cited chunk's freshness comes from its fetched Chunk the same way.
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
    if (!best.loaded_at.empty()) citation.loaded_at = best.loaded_at;
    citation.date = best.date;
    citation.max_age = best.max_age;
    citation.stale = best.stale;
}

inline void cite_chunk_freshness(RagCitation& citation, const Chunk& chunk) {
    citation.loaded_at = chunk.loaded_at;
    citation.date = chunk.date;
    citation.max_age = chunk.max_age;
    citation.stale = chunk.stale;
}

}  // namespace glassbox::schema
