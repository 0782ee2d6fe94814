// The `query` worker's settings, each with its documented default (docs/query.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "workers/query/routing_rules.hpp"

namespace glassbox::query {

struct QueryConfig {
    // The services the router hands a question to, and the store it asks about the collection.
    std::string graph_rag_service = "graph-rag";
    std::string document_rag_service = "document-rag";
    std::string agent_service = "agent";
    std::string store_service = "store";
    // With a session_id, the conversation's last turn is read from here (a follow-up's "it" is
    // resolved against it), waiting at most history_timeout (a trace service that is down must
    // not hold the question up).
    std::string trace_service = "trace";
    std::chrono::milliseconds history_timeout{2'000};
    // Deadline of each engine call (0: the request's remaining time).
    std::chrono::milliseconds call_timeout{0};
    // Deadline of the collection look-ups that inform routing; a slower store is routed
    // without them (recorded), never waited on for long.
    std::chrono::milliseconds signal_timeout{2'000};
    // Ask the store what the collection holds (graph labels, document keywords) before routing.
    bool collection_signals = true;
    // How an engine's answer is judged (docs/query.md §3): "model-free" (evidence coverage) or
    // "llm" (the llm service's relevance-judge template, falling back to model-free when the
    // model fails or cannot; escalations then also ask rephrase-query for the next engine's
    // question). Asked of llm_service, each call within reflection_timeout.
    std::string reflection = "model-free";
    std::string llm_service = "llm";
    std::chrono::milliseconds reflection_timeout{30'000};
    // An answer whose calibrated confidence is below this is escalated to the next engine; an
    // answer without one (an engine with no shipped calibrator, or a model judged it) is judged
    // by relevance_threshold instead.
    double confidence_threshold = 0.2;
    // An answer whose relevance is below this is escalated to the next engine.
    double relevance_threshold = 0.4;
    // Below this calibrated confidence the router's answer says it does not know, what it found
    // and why it is unsure (docs/confidence.md, abstention); a request's min_confidence
    // overrides it. The router applies it; its engines are asked with 0. 0: never.
    double min_confidence = 0.25;
    // At most this many escalations per question (the bound: 2).
    std::size_t max_escalations = 2;
    // The rule file (default: the built-in one) with the classifier's examples.
    RuleSet rules = default_rules();
    // Longest question accepted, in bytes (as the RAG workers).
    std::size_t max_question_bytes = std::size_t{16} * 1024;
    // Build and send explain messages (off only for benchmarks).
    bool explain = true;
};

}  // namespace glassbox::query
