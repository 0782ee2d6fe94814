// Relevance reflection by the llm service, and the rephrased question of an escalation
// (docs/query.md §3): the model's judgement when it gives one, the model-free score otherwise,
// with why recorded.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"
#include "schema/explain_builder.hpp"
#include "workers/query/engine_run.hpp"
#include "workers/query/query_config.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::query {

struct JudgeReply {
    double score = 0.0;  // 0..1
    std::string reason;  // one line ("" when the model gave none)
};

// The relevance-judge reply: a JSON object {"score", "reason"} (alone, fenced, or inside prose),
// else "score: 0.7" / "reason: …" lines. A score outside 0..1, or none, is an error: a
// percentage or a 1–10 rating would be misread.
base::Result<JudgeReply> parse_judge_reply(std::string_view text);

// What the judge reads of a run's evidence: its kept selections (best first, each cut short)
// and the cited text, at most a few thousand bytes.
std::string evidence_summary(const Evidence& evidence);

// The model-free reflection of `run` as a trace record.
schema::explain::ReflectionInfo model_free_reflection(const Relevance& relevance,
                                                      std::string fallback = {});

// Asks the llm service's relevance-judge about `run` (answered by its engine, not failed) and
// replaces its relevance score and reason with the model's; on any failure keeps the model-free
// ones. Either way run.reflection says which and why.
void judge_with_llm(runtime::RequestContext& context, const QueryConfig& config,
                    const std::string& question, EngineRun& run);

struct Rephrasing {
    std::string question;  // what the next engine is asked
    bool rephrased = false;
    std::string fallback;  // why the original question is asked ("" when rephrased)
};

// The rephrase-query reply's question: its first non-empty line, without a "Question:" label
// or quotes; "" when there is none.
std::string clean_rephrasing(std::string_view reply);

// Asks the llm service's rephrase-query for a better question for the next engine, given the
// engine escalated from and why; the original question when the model fails, cannot or
// answers nothing useful.
Rephrasing rephrase_for_escalation(runtime::RequestContext& context, const QueryConfig& config,
                                   const std::string& question, const std::string& from_engine,
                                   const std::string& why);

}  // namespace glassbox::query
