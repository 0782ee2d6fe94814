// Running the agent's tool calls over the bus: graph-rag and document-rag sub-requests (sub-traces
// of the calling Analysis), store lookups around one entity, llm completions. Calls of one
// iteration are sent together; each call's failure becomes its own error observation.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "workers/agent/agent_config.hpp"
#include "workers/agent/react_reply.hpp"
#include "workers/agent/tool_catalog.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::agent {

// A fact a triples-query observation showed: the stored triple, the looked-up entity (IRI) and
// the fact's other end (its IRI, "" for a literal, and its label), for tracing an answer back.
struct ObservedFact {
    schema::Triple triple;
    std::string entity;
    std::string other;
    std::string other_label;
    std::string text;             // "s p o" in labels, as the observation showed it
    bool query = false;           // a graph-query row's fact: it backs the rows, not a chain's end
    std::string subject_label{};  // the triple's subject and predicate in words
    std::string predicate_label{};
};

// What one tool call gave.
struct ToolOutcome {
    std::string tool;
    nlohmann::json args;
    std::string observation;  // as the model and the trace see it (JSON text or an error)
    bool error = false;
    std::optional<std::string> answer;           // a RAG tool's short answer
    std::vector<std::string> answer_selections;  // the selections the short answer came from
    std::string response;                        // a RAG tool's answer text
    std::vector<std::string> sources;            // what a RAG tool's answer drew on
    std::vector<schema::RagCitation> citations;  // a RAG tool's cited sources, with their tier
    // A RAG tool's calibrated confidence, if any, before its own conflicts lowered it: the agent
    // carries those conflicts over and lowers its own confidence for them once.
    std::optional<double> confidence;
    std::vector<schema::explain::AnswerConflict> conflicts;  // a RAG tool's reported conflicts
    std::vector<ObservedFact> facts;                         // a triples-query's facts, as shown
    // graph-rag's short answer is one fact's value for a question asking for one thing (the
    // observation says so, "single_value", when the collection has documents to check it with).
    bool single_value = false;
    std::string sub_run_last_step;        // a RAG tool's sub-run: the URI of its last step
    std::vector<nlohmann::json> explain;  // a RAG tool's sub-run explain messages, in order
};

class ToolRunner {
public:
    ToolRunner(runtime::RequestContext& context, const AgentConfig& config, std::string collection);

    // Runs `calls` (each naming one of `tools`; unknown names and bad arguments become error
    // observations without a call). RAG and completion calls go out together, then the store
    // lookups together (one request per stage for all of them). `parent_uri` is the calling
    // Analysis: the RAG sub-runs' parent. Outcomes in the order of `calls`.
    std::vector<ToolOutcome> run(const std::vector<ToolCall>& calls, const std::vector<Tool>& tools,
                                 const std::string& parent_uri);

    // The sources (file or chunk, with tier) of each fact, as the store recorded them at load:
    // one `fact-sources` request.
    base::Result<std::vector<std::vector<schema::FactSource>>> fact_sources(
        const std::vector<schema::Triple>& triples);

private:
    std::optional<runtime::CallSpec> bus_call(const Tool& tool, const nlohmann::json& args,
                                              const std::string& parent_uri) const;
    // A graph-rag or document-rag sub-request (`Query` its message) for `question`.
    template <typename Query>
    runtime::CallSpec rag_call(const std::string& service, const std::string& question,
                               const std::string& parent_uri) const;
    void read_reply(const Tool& tool, const runtime::CallResult& result, ToolOutcome& out) const;
    // Marks the observations of graph-rag answers that are one fact's value "single_value" when
    // a document tool is offered and the collection has a chunk with the question's words (one
    // `chunks-keyword` of at most one chunk): the planner then checks the name against the
    // documents (docs/agent.md §3). No documents, no check (document RAG would fail NotFound).
    void mark_single_values(std::vector<ToolOutcome>& outcomes, const std::vector<Tool>& tools);
    // The store lookups of one iteration, all at once.
    void run_triples(std::vector<ToolOutcome*> outcomes);
    // One graph-query call (workers/agent/graph_query_tool.cpp): its names resolved to IRIs, its
    // relation words to the store's predicates, then the store's `aggregate` op.
    void run_graph_query(ToolOutcome& out);
    // Names to IRIs ("" when nothing matches); `exact`, when given, says per name whether a
    // candidate's label is the name itself (not only the nearest).
    base::Result<std::vector<std::string>> resolve(const std::vector<std::string>& names,
                                                   std::vector<bool>* exact = nullptr);
    // The store's labels of `terms`, in their order (no request for none).
    base::Result<std::vector<std::string>> labels_of(const std::vector<schema::Term>& terms);
    // Per IRI that is not "", the triples out of it and those into it (one store request).
    base::Result<std::vector<std::vector<schema::Triple>>> triples_around(
        const std::vector<std::string>& iris);
    base::Result<runtime::CallResult> store(std::string_view op, nlohmann::json body);
    std::string cut(std::string text) const;

    runtime::RequestContext& context_;
    const AgentConfig& config_;
    std::string collection_;
};

// Lower-case, underscores and runs of spaces as single spaces: how a name is compared with a
// label when resolving it ("Cruz_Azul_FC" = "Cruz Azul FC").
std::string normalise_name(std::string_view name);

}  // namespace glassbox::agent
