// Settings of the `agent` worker, with their defaults (docs/agent.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "schema/messages.hpp"
#include "schema/services.hpp"

namespace glassbox::agent {

class SparqlEngine;  // workers/agent/sparql_graph_query.hpp

struct AgentConfig {
    // The services the agent and its tools call.
    std::string llm_service{schema::services::kLlm};
    std::string store_service{schema::services::kStore};
    std::string embeddings_service{schema::services::kEmbeddings};
    std::string graph_rag_service{schema::services::kGraphRag};
    std::string document_rag_service{schema::services::kDocumentRag};
    std::string trace_service{schema::services::kTrace};
    // The template of each reasoning step and of the text-completion tool.
    std::string react_template = "agent-react";
    std::string completion_template = "agent-completion";
    // Deadline of each call (cut to the request's remaining time); 0: the remaining time.
    std::chrono::milliseconds call_timeout{0};
    // Iterations of the loop at most; a request may ask for fewer, never more.
    std::uint32_t max_iterations = schema::kDefaultMaxIterations;
    // A question longer than this (bytes of UTF-8) is refused with InvalidRequest.
    std::size_t max_question_bytes = std::size_t{16} * 1024;
    // The Question records at most this many characters of the question.
    std::size_t trace_question_chars = 1'000;
    // An observation (what a tool returned, as the model and the trace see it) is cut here.
    std::size_t max_observation_chars = 6'000;
    // Tool calls of one iteration at most (more are an error Observation).
    std::size_t max_calls_per_iteration = 8;
    // triples-query: facts per direction of the looked-up entity, and the entity matches a
    // name is resolved among.
    std::uint32_t triples_limit = 100;
    std::uint32_t resolve_candidates = 10;
    // Earlier turns of a conversation given to the model (session_id set), and how long their
    // fetch may take (a trace service that is down must not hold the run up).
    std::uint32_t history_turns = 5;
    std::chrono::milliseconds history_timeout{2'000};
    // Below this calibrated confidence the answer says it does not know (docs/confidence.md);
    // a request's min_confidence overrides it; 0: never.
    double min_confidence = 0.25;
    // The SPARQL engine graph-query runs its queries on (sparql.endpoint set); null: the store's
    // own `aggregate` op.
    std::shared_ptr<SparqlEngine> sparql;
    // Send explain messages (false: the bench-only switch, GLASSBOX_BENCH_NO_EXPLAIN=1).
    bool explain = true;
};

}  // namespace glassbox::agent
