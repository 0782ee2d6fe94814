// Checks of RAG explain traces shared by the RAG end-to-end tests: one run's replies as received
// from the broker, the triples of its explain messages by subject, and the rules every trace
// follows (docs/vocabulary.md §2, docs/rag.md §5).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "tests/support/bus_peers.hpp"

namespace glassbox::integration::rag {

// Everything one graph-rag / document-rag request sent back, decoded.
struct RagRun {
    std::vector<GbcMessage> messages;
    std::vector<schema::ExplainMessage> explains;  // PARTIAL explain bodies, in order
    std::string streamed;                          // PARTIAL data `response` pieces joined
    int data_partials = 0;
    std::optional<nlohmann::json> final;  // the FINAL body
    std::string error_type;               // the ERROR terminal, if any
    std::string error_message;
    std::vector<std::string> decode_failures;  // bodies that did not decode

    bool ok() const { return final.has_value(); }
    std::string describe() const;
};

RagRun decode_run(std::vector<GbcMessage> messages);

// The triples of a set of explain messages, by subject.
class TraceGraph {
public:
    explicit TraceGraph(const std::vector<schema::ExplainMessage>& explains);
    std::vector<schema::Term> values(const schema::Term& node, std::string_view predicate) const;
    std::optional<schema::Term> one(const schema::Term& node, std::string_view predicate) const;
    std::optional<std::string> text(const schema::Term& node, std::string_view predicate) const;
    bool has_type(const schema::Term& node, std::string_view type) const;
    const std::vector<schema::Triple>& all() const { return all_; }

private:
    std::vector<schema::Triple> all_;
    std::map<std::string, std::vector<const schema::Triple*>> by_subject_;
};

// "urn:glassbox:<uuid>:question" -> "<uuid>"; empty when the URI has no run UUID.
std::string run_uuid(const std::string& uri);

// Unicode code points of UTF-8 text.
std::size_t code_points(const std::string& text);

struct ChainExpectation {
    std::vector<std::string> steps;         // gb: classes of the steps, in order ("Question", ...)
    std::string status = "complete";        // the trace's gb:status
    std::string error_type;                 // with status error: the typed error
    std::optional<std::string> parent_uri;  // a sub-trace's calling step
    std::string service;                    // the worker agent's service
};

// The rules of every trace (use with ASSERT_NO_FATAL_FAILURE): exact steps and order, seq
// 0..n-1, one session and one UUID, explain_id = each step's subject, every triple in
// urn:graph:retrieval, derivation links, typed literals, non-decreasing times, the end of the
// trace (status), parent_uri linking.
void check_chain(const RagRun& run, const ChainExpectation& expected);

// Step URIs of the run in message order (the error end, whose explain_id is the session, left out).
std::vector<std::string> step_uris(const RagRun& run);

}  // namespace glassbox::integration::rag
