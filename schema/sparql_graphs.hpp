// The names of the named graphs glassbox writes into a SPARQL engine (docs/sparql.md): one per
// knowledge collection, mirrored by the store (docs/knowledge.md, "The SPARQL mirror").
#pragma once

#include <string>
#include <string_view>

namespace glassbox::schema {

// The IRI every collection graph name starts with.
inline constexpr std::string_view kCollectionGraphPrefix = "urn:glassbox:collection:";

// urn:glassbox:collection:<name>, the name percent-encoded (RFC 3986: every byte but the
// unreserved A-Z a-z 0-9 - . _ ~ as %XX, upper-case hex), so any name gives a valid IRI and two
// names never give the same one.
std::string collection_graph_iri(std::string_view name);

// The IRI that stands for blank node `label` where a graph is sent in several requests (each
// request scopes its blank nodes): urn:glassbox:bnode:<label, percent-encoded as above>.
std::string skolem_iri(std::string_view label);

}  // namespace glassbox::schema
