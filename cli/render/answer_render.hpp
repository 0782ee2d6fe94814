// How `glassbox invoke` shows a RAG answer to a reader: the short answer, the answer text with
// `[1]`-style markers at the cited spans, and the numbered sources (title or fact, document,
// chunk and character offsets, data tier, the cited sentence or fact).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schema/messages.hpp"

namespace glassbox::cli::render {

// `answer` with " [n]" inserted at the end of every span a citation names (several at one
// place in order of n: "Mexico [1][2]."). Spans are code points; one past the end is ignored.
std::string mark_citations(std::string_view answer,
                           const std::vector<schema::RagCitation>& citations);

// The lines of the Sources list, one entry per citation in order of n:
//   [1] Brenn and Daughters Shipyard founded by Oskar Brenn
//       fact from file:///…/orrin.ttl, tier 1
//   [2] Saltspire Light (document urn:…:saltspire, chunk urn:…#chunk-0, characters 120–188, tier 2)
//       "The lamp was lit again after the Great Gale."
// A chunk the answer cites at several places shows each cited sentence of `answer` (the
// spans' text), not only the first. Every text is escaped for the terminal.
std::string render_sources(const std::vector<schema::RagCitation>& citations,
                           std::string_view answer = {});

// The line under an answer that says how far to trust it, from a FINAL body's "confidence",
// "confidence_words", "abstained" and "evidence" (docs/confidence.md):
//   confidence: 94 % (very likely); raised most by margin, lowered most by hop_excess
// "" when the body carries no confidence. Escaped for the terminal.
std::string confidence_line(const nlohmann::json& final);

}  // namespace glassbox::cli::render
