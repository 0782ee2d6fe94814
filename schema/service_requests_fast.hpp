// The requests a graph-RAG question sends to the store and the embeddings service, written as
// JSON text without a nlohmann tree (issue 33: building and dumping those trees cost graph-rag
// ~1.1M instructions a question).
//
// Each writer gives byte for byte what the tree encoder's body dumps (keys in nlohmann's sorted
// order, its escapes, ill-formed UTF-8 replaced, doubles in its shortest round-trip digits and
// non-finite ones as null): the wire bytes are those of the tree path.
#pragma once

#include <string>
#include <string_view>

#include "schema/messages.hpp"

namespace glassbox::schema {

// A store request (docs/knowledge.md §8): dump(encode(m)) with the key "op" set to `op`.
std::string encode_store_request(std::string_view op, const GraphEmbeddingsQuery& m);
std::string encode_store_request(std::string_view op, const TriplesQueryBatch& m);
std::string encode_store_request(std::string_view op, const FactSourcesRequest& m);
std::string encode_store_request(std::string_view op, const LabelsRequest& m);

// dump(encode(m)).
std::string encode_text(const EmbeddingsRequest& m);

}  // namespace glassbox::schema
