// The extractive provider's answer to the agent-react template: a deterministic planner that
// turns a multi-hop question into a chain of single-relation lookups (resolve the named entity,
// follow one relation per step, feed each step's answers into the next) and stops when the
// chain is complete or a lookup comes back empty.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace glassbox::llm {

// Bounds of the planner, documented in docs/agent.md.
struct PlannerLimits {
    // Entities carried from one hop to the next (each is one triples-query call, sent together).
    std::size_t frontier = 4;
    // A predicate must match the hop's relation at least this well (relation_cues scale: 1 same
    // stem, 0.8 a shared cue) to be followed.
    double min_match = 0.45;
};

// One step of the plan, in the agent-react reply form (Thought / Action / Args / Final Answer).
struct PlannerStep {
    std::string thought;
    struct Call {
        std::string tool;
        nlohmann::json args;
    };
    std::vector<Call> calls;     // empty: the step gives the final answer
    std::string final_answer;    // the short answer ("" when the lookups did not decide)
    std::string response;        // the sentence(s) after the Final Answer line
};

// The next step for `question` given the `tools` offered (the template's JSON list of
// {"name", ...}) and the `steps` so far (the template's JSON list of {"thought", "calls":
// [{"tool", "args", "observation", "error"}]}). Deterministic: the same input, the same step.
// `exclude`: labels a follow-up's "else" leaves out (text::already_answered); a chain that ends
// at several entities answers with one of the others.
PlannerStep plan_agent_step(std::string_view question, const nlohmann::json& tools,
                            const nlohmann::json& steps, const PlannerLimits& limits = {},
                            const std::vector<std::string>& exclude = {});

// The next step for a question asked in a conversation: `history` is the template's JSON list of
// earlier turns ({"question", "answer", "short_answer"}, oldest first). A reference of the
// question to the previous turn ("Who founded it?") is resolved first (text/reference_resolution,
// docs/agent.md §5), the plan made for the rewritten question, and the first step's thought says
// how the reference was read; "else" leaves out what the previous turn was about.
PlannerStep plan_agent_turn(std::string_view question, const nlohmann::json& tools, const nlohmann::json& steps,
                            const nlohmann::json& history, const PlannerLimits& limits = {});

// The step as the agent-react template asks for it.
std::string render_react(const PlannerStep& step);

}  // namespace glassbox::llm
