// The answer to a question as HTTP and MCP clients read it (docs/http.md §3, "The answer"): the
// query router's FINAL in one documented schema, without the bus's own fields, and the one rule
// for naming the question in a request.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace glassbox::gateway {

// What the gateway knows of a question besides the router's FINAL.
struct AnswerContext {
    std::string question;
    std::string collection;
    std::string request_id;  // the X-Request-ID; empty: none (an MCP call), left out
    std::chrono::milliseconds duration{0};
};

// Every member of an answer, in the order written: those always present, then those present
// only when they apply (docs/http.md §3 lists both; the tests check an answer against them).
inline constexpr std::string_view kAnswerFields[] = {"trace_id",     "question",
                                                     "collection",   "answer",
                                                     "short_answer", "citations",
                                                     "sources",      "answered_by",
                                                     "route",        "escalations",
                                                     "runs",         "relevance",
                                                     "confidence",   "confidence_words",
                                                     "calibrator",   "abstained",
                                                     "evidence",     "conflicts",
                                                     "completeness", "provenance",
                                                     "model",        "usage",
                                                     "duration_ms",  "termination_reason"};
inline constexpr std::string_view kOptionalAnswerFields[] = {"request_id", "resolved_question",
                                                             "resolved_reference", "iterations"};

// The router's FINAL (docs/query.md §1) as the answer: `answer` the whole text (the citations'
// spans count its code points), `short_answer`, numbered `citations`, `sources` (each distinct
// source with its data tier), `answered_by`, the route, escalations and runs, provenance, model,
// `usage {input_tokens, output_tokens}`, `trace_id` and the context. Free texts that a worker
// wrote (an escalation's reason, a run's error) pass the server-path guard.
nlohmann::json query_answer(const nlohmann::json& final, const AnswerContext& context);

// The name of the question in a request body or a tool's arguments: `question`, as the CLI's
// --question, and `query`, the older name, as its alias. The alias is moved to the name; both
// given and different is InvalidRequest. Nothing else is checked here.
base::Result<void> take_question_alias(nlohmann::json& body);

inline constexpr std::string_view kQuestionField = "question";
inline constexpr std::string_view kQuestionAlias = "query";

}  // namespace glassbox::gateway
