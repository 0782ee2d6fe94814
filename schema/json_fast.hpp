// Tree-free JSON for the messages that carry many triples (store replies, explain messages),
// many numbers (embedding vectors), or sit on every step of a question (the llm worker's reply).
//
// The explain message has one encoder, encode_text here (encode(ExplainMessage) is its text
// parsed), and one decoder, decode<ExplainMessage> in messages.cpp. The collector's DOM-free
// scan (workers/trace_collector/explain_scan.hpp) only accelerates that decoder and is tested
// to agree with it.
//
// Building and walking a nlohmann::json tree costs an allocation per key and per value; for a
// triples reply or an explain message of hundreds of triples that was the largest cost on the
// query path. The writers here append the wire text directly; the readers decode it in one
// pass into the message structs, through schema/json_cursor.hpp (the one reader of JSON text
// besides nlohmann's parser, which the collector's scan uses too).
//
// Both sides are defined by the tree-based codecs in messages.hpp, not beside them:
//  - encode_text(m) is byte for byte dump(encode(m)) (keys in the same sorted order, the same
//    escapes, invalid UTF-8 replaced the same way);
//  - decode_text<T>(text) gives exactly decode_body<T>(text): its single pass handles the
//    well-formed shape the encoders write (keys in any order, unknown keys skipped), and any
//    other input — a type mismatch, a duplicate key, a null, an escape it does not expect,
//    invalid UTF-8 — is handed to decode_body<T>, so results and error messages are the slow
//    path's own.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/explain_terms.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// Exactly parse_untrusted_json(text): the same tree or the same error. Text of strings, objects,
// arrays, literals, unsigned integers and non-negative numbers with a fraction or exponent (the
// llm worker's variables and its JSON answers: edges, concepts, scores, reasons) is built in one
// pass of the cursor, which skips the parser's per-character token copies; anything else (a
// negative number, an escaped or repeated key, nesting past kMaxJsonSkipDepth, invalid text)
// goes to the parser.
base::Result<nlohmann::json> parse_json_tree(std::string_view text);

// A JSON string token, quotes included, escaped as nlohmann's dump() does (ensure_ascii off).
void append_json_string(std::string& out, std::string_view value);
// What append_json(term) writes for an IRI, and for a literal of `datatype` (empty: a simple
// literal) and `language` (empty: none), from the parts: no Term needed. Inline: TripleJson
// writes three of these per triple of every explain message.
inline void append_json_iri(std::string& out, std::string_view iri) {
    out += "{\"i\":";
    append_json_string(out, iri);
    out += ",\"t\":\"i\"}";
}

inline void append_json_literal(std::string& out, std::string_view value,
                                std::string_view datatype = {}, std::string_view language = {}) {
    out += '{';
    if (!datatype.empty()) {
        out += "\"dt\":";
        append_json_string(out, datatype);
        out += ',';
    }
    if (!language.empty()) {
        out += "\"ln\":";
        append_json_string(out, language);
        out += ',';
    }
    out += "\"t\":\"l\",\"v\":";
    append_json_string(out, value);
    out += '}';
}

// A double as dump() writes it: nlohmann's shortest round-trip digits, null when not finite.
void append_json_number(std::string& out, double value);

void append_json(std::string& out, const Term& term);
void append_json(std::string& out, const Triple& triple);
void append_json(std::string& out, std::span<const Triple> triples);

std::string encode_text(const TriplesResponse& m);
std::string encode_text(const TriplesBatchResponse& m);
std::string encode_text(const ExplainMessage& m);
// encode_text(m) with `triples` written as its explain_triples (m's own are not read): the
// message's header and a step's triples encoded without copying the triples into it.
std::string encode_text(const ExplainMessage& m, std::span<const Triple> triples);
// encode_text(m) with its explain_triples array appended by `write_triples` (for instance
// through a TripleSink's TripleJson, which writes the same bytes as append_json(triples)).
std::string encode_text(const ExplainMessage& m,
                        const std::function<void(std::string&)>& write_triples,
                        std::size_t reserve = 4096);
// encode_text(m) with the triples `build` writes to a sink (not m's own), in `form`: kPlain gives
// the bytes of the overload above with a TripleJson; kDictionary writes "explain_terms" and the
// index triples (docs/protocol.md §8.1) instead.
std::string encode_text(const ExplainMessage& m, const std::function<void(TripleSink&)>& build,
                        TripleForm form, std::size_t reserve = 4096);
// encode_text(m, triples) in `form`.
std::string encode_text(const ExplainMessage& m, std::span<const Triple> triples, TripleForm form);
std::string encode_text(const RagResponse& m);
// The llm worker's FINAL: its `json` answer is dumped once, not copied into a tree first.
std::string encode_text(const LlmResponse& m);
// encode_text(m) for a response whose `text` is its `json` as nlohmann's dump() wrote it (the
// extractive provider's answers): that text is written as the `json` member, not the tree dumped
// a second time. Only when `text_is_json_dump`; false is encode_text(m).
std::string encode_text(const LlmResponse& m, bool text_is_json_dump);
// What graph-rag sends the llm worker on every step: its variables (the edges as JSON text, tens
// of kilobytes) written once, not copied into a tree and dumped from it.
std::string encode_text(const LlmRequest& m);
std::string encode_text(const EmbeddingsResponse& m);
// The store's replies on every graph-RAG question besides triples-batch.
std::string encode_text(const GraphEmbeddingsResponse& m);
std::string encode_text(const GraphEmbeddingsBatchResponse& m);
std::string encode_text(const FactSourcesResponse& m);
std::string encode_text(const LabelsResponse& m);

// Specialised for the message types below; other T do not link.
template <typename T>
base::Result<T> decode_text(std::string_view text);
template <>
base::Result<TriplesResponse> decode_text<TriplesResponse>(std::string_view text);
template <>
base::Result<TriplesBatchResponse> decode_text<TriplesBatchResponse>(std::string_view text);
template <>
base::Result<RagResponse> decode_text<RagResponse>(std::string_view text);
template <>
base::Result<EmbeddingsResponse> decode_text<EmbeddingsResponse>(std::string_view text);
template <>
base::Result<LlmResponse> decode_text<LlmResponse>(std::string_view text);
// The store's entities-batch, fact-sources and labels replies, read by graph RAG each question.
template <>
base::Result<GraphEmbeddingsBatchResponse> decode_text<GraphEmbeddingsBatchResponse>(
    std::string_view text);
template <>
base::Result<FactSourcesResponse> decode_text<FactSourcesResponse>(std::string_view text);
template <>
base::Result<LabelsResponse> decode_text<LabelsResponse>(std::string_view text);

}  // namespace glassbox::schema
