// The store's per-question reads besides the vector query (triples-batch, fact-sources, labels)
// read from their body's text into the request structs, without a JSON tree: graph RAG sends ~7
// per question, and parsing each into a tree and decoding that cost the store more than the match.
#pragma once

#include <string_view>

#include "schema/messages.hpp"

namespace glassbox::schema {

// Each reads `text` into `out` (reset first). True: `text` is a JSON object whose "op" is a string
// naming the reader's op ("triples-batch", "fact-sources", "labels") and that decode<T> of its
// parsed tree reads as the same request (keys in any order, unknown keys skipped). False for
// anything else: another op, a null or a type the tree decoder would refuse or convert, a
// duplicate or escaped key, a term or number the readers leave to the tree (schema/term_text.hpp,
// JsonCursor::uint), text that is not JSON. The caller then parses the text as a tree, which gives
// the result or the error.
bool read_triples_batch(std::string_view text, TriplesQueryBatch& out);
bool read_fact_sources(std::string_view text, FactSourcesRequest& out);
bool read_labels_request(std::string_view text, LabelsRequest& out);

}  // namespace glassbox::schema
