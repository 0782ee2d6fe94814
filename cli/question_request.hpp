// The request body that asks one question of a target (the query router, graph RAG, document
// RAG or the agent): shared by `glassbox invoke` and `glassbox eval`, so both ask alike.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "schema/messages.hpp"

namespace glassbox::cli {

// One question and the fields every target shares.
struct QuestionRequest {
    std::string service;  // query, graph-rag, document-rag or agent
    std::string question;
    std::string collection;
    bool streaming = true;
    std::string session;                    // the conversation this question is a turn of
    std::optional<std::string> parent_uri;  // the calling step: the run becomes its sub-trace
    // The Question IRI of the run this one asks again (`traces replay`): prov:wasRevisionOf.
    std::optional<std::string> revision_of;
};

// Each target's own parameters (0: the worker's default); the query router's mode and floor.
struct TargetParameters {
    schema::GraphRagQuery graph_rag;
    schema::DocumentRagQuery document_rag;
    schema::AgentRequest agent;
    std::string mode = "auto";
    std::optional<double> query_min_confidence;  // absent: the worker's query.min_confidence
};

// The encoded request body for `request.service`.
nlohmann::json question_body(const QuestionRequest& request, const TargetParameters& targets);

}  // namespace glassbox::cli
