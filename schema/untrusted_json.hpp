// The one reader of JSON text that comes from outside the process (HTTP bodies, bus frames, model
// answers, stored text): it bounds the text's nesting before nlohmann builds a tree of it.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::schema {

// Text nested deeper than this is refused before it is parsed. nlohmann's parser and destructor
// are iterative, but copying a tree, comparing and dump() recurse once per level, and so do the
// decoders and JSON Schema checks: 500,000 nested brackets (a 1 MB body) overflowed the gateway's
// stack (issue 30). The bound is the deepest message glassbox defines, with room to spare: the
// trace service's show reply nests sub-traces kMaxTraceDepth (64) deep at two levels each, and
// under the deepest one events, an event, its triples and a triple whose terms quote triples
// kMaxQuotedTripleDepth (32) deep at two levels each: 129 + 3 + 1 + 64 + 1 = 198 levels
// (messages_trace.hpp asserts it). A recursive walk of 256 levels needs some tens of KB of stack.
inline constexpr std::size_t kMaxJsonDepth = 256;

// `text` as JSON, never throwing. kInvalidJson "the JSON nests deeper than <max_depth> levels"
// when an array or object opens below that depth (found by one pass counting [ and { outside
// strings, before anything is parsed); kInvalidJson "not valid JSON (or not valid UTF-8)" for
// text RFC 8259 refuses, ill-formed UTF-8 included.
base::Result<nlohmann::json> parse_untrusted_json(std::string_view text,
                                                  std::size_t max_depth = kMaxJsonDepth);

}  // namespace glassbox::schema
