// The deterministic agent planner on invented families: one relation per step, answers fed
// into the next lookup, a stop when a lookup comes back empty, the fallback to knowledge-query.
#include <gtest/gtest.h>

#include "reasoner/reasoner.hpp"

namespace glassbox::reasoner {
namespace {

using nlohmann::json;

const json kTools = json::array({{{"name", "knowledge-query"}}, {{"name", "triples-query"}}});
const std::string kBase = "http://example.org/e/";

// A triples-query observation of `entity` with outgoing facts (predicate, object).
json lookup(const std::string& entity,
            const std::vector<std::pair<std::string, std::string>>& out) {
    json facts = json::array();
    for (const auto& [p, o] : out)
        facts.push_back({{"s", entity}, {"p", p}, {"o", o}, {"dir", "out"}, {"other", kBase + o}});
    json obs = {{"entity", entity}, {"iri", kBase + entity}, {"facts", facts}};
    return {{"tool", "triples-query"},
            {"args", {{"subject", entity}}},
            {"observation", obs.dump()},
            {"error", false}};
}

json step_of(std::vector<json> calls) { return {{"thought", "t"}, {"calls", calls}}; }

TEST(AgentPlannerTest, TheFirstStepResolvesTheNamedEntity) {
    const auto step = plan_agent_step("what is the nationality of marta_vell 's husband ?", kTools,
                                      json::array());
    ASSERT_EQ(step.calls.size(), 1u);
    EXPECT_EQ(step.calls[0].tool, "triples-query");
    EXPECT_EQ(step.calls[0].args["subject"], "marta vell");  // the mention, underscores as spaces
    EXPECT_NE(step.thought.find("marta vell"), std::string::npos);
}

TEST(AgentPlannerTest, EachStepFollowsOneRelationAndFeedsTheAnswerOn) {
    const std::string q = "what is the nationality of marta_vell 's husband ?";
    json steps = json::array({step_of(
        {lookup("marta_vell",
                {{"spouse", "oren_tal"}, {"gender", "female"}, {"nationality", "norway"}})})});
    const auto second = plan_agent_step(q, kTools, steps);
    ASSERT_EQ(second.calls.size(), 1u) << render_react(second);
    EXPECT_EQ(second.calls[0].args["subject"], kBase + "oren_tal");

    steps.push_back(
        step_of({lookup("oren_tal", {{"nationality", "iceland"}, {"spouse", "marta_vell"}})}));
    const auto last = plan_agent_step(q, kTools, steps);
    EXPECT_TRUE(last.calls.empty());
    EXPECT_EQ(last.final_answer, "iceland") << render_react(last);
}

TEST(AgentPlannerTest, SeveralEntitiesOfOneHopAreLookedUpTogether) {
    const std::string q = "the religion of ada_krell 's kid ?";
    json steps = json::array(
        {step_of({lookup("ada_krell", {{"children", "bo_krell"}, {"children", "cy_krell"}})})});
    const auto step = plan_agent_step(q, kTools, steps);
    ASSERT_EQ(step.calls.size(), 2u) << render_react(step);
    EXPECT_EQ(step.calls[0].tool, "triples-query");
    EXPECT_EQ(step.calls[1].tool, "triples-query");
}

TEST(AgentPlannerTest, ASymmetricRelationDoesNotWalkStraightBack) {
    const std::string q = "who is the spouse of the spouse of lia_moor 's spouse ?";
    json steps = json::array({step_of({lookup("lia_moor", {{"spouse", "jon_moor"}})})});
    steps.push_back(
        step_of({lookup("jon_moor", {{"spouse", "lia_moor"}, {"spouse", "eve_dane"}})}));
    const auto step = plan_agent_step(q, kTools, steps);
    ASSERT_EQ(step.calls.size(), 1u) << render_react(step);
    EXPECT_EQ(step.calls[0].args["subject"], kBase + "eve_dane");
}

TEST(AgentPlannerTest, AnEmptyLookupEndsTheChainWithTheWholeQuestionAsked) {
    const std::string q = "what is the nationality of marta_vell 's husband ?";
    json steps = json::array({step_of({lookup("marta_vell", {{"gender", "female"}})})});
    const auto step = plan_agent_step(q, kTools, steps);
    ASSERT_EQ(step.calls.size(), 1u);
    EXPECT_EQ(step.calls[0].tool, "knowledge-query");
    EXPECT_EQ(step.calls[0].args["question"], q);

    const json only_triples = json::array({{{"name", "triples-query"}}});
    const auto stop = plan_agent_step(q, only_triples, steps);
    EXPECT_TRUE(stop.calls.empty());
    EXPECT_EQ(stop.final_answer, "");
}

TEST(AgentPlannerTest, AKnowledgeQueryAnswerBecomesTheFinalAnswer) {
    const std::string q = "Why is the sky blue?";
    const auto first = plan_agent_step(q, kTools, json::array());
    ASSERT_EQ(first.calls.size(), 1u);
    EXPECT_EQ(first.calls[0].tool, "knowledge-query");
    json call = {{"tool", "knowledge-query"},
                 {"args", {{"question", q}}},
                 {"observation",
                  json{{"answer", "scattering"}, {"response", "Rayleigh scattering."}}.dump()},
                 {"error", false}};
    const auto last = plan_agent_step(q, kTools, json::array({step_of({call})}));
    EXPECT_EQ(last.final_answer, "scattering");
    EXPECT_EQ(last.response, "Rayleigh scattering.");
}

TEST(AgentPlannerTest, ANestedQuestionTakesTheTrailingVerbLast) {
    // "born" comes after the entity but belongs to the outermost phrase: designer first.
    const std::string q = "Where was the designer of Vell Light born?";
    json steps = json::array({step_of({lookup(
        "Vell Light", {{"was designed by", "Ada Krell"}, {"is located on", "Solen Island"}})})});
    const auto step = plan_agent_step(q, kTools, steps);
    ASSERT_EQ(step.calls.size(), 1u) << render_react(step);
    EXPECT_EQ(step.calls[0].args["subject"], kBase + "Ada Krell");
    steps.push_back(step_of(
        {lookup("Ada Krell", {{"was born in", "Tarnwick"}, {"has profession", "engineer"}})}));
    const auto last = plan_agent_step(q, kTools, steps);
    EXPECT_EQ(last.final_answer, "Tarnwick") << render_react(last);
}

TEST(AgentPlannerTest, RenderedStepsFollowTheTemplateForm) {
    PlannerStep step;
    step.thought = "look it up";
    step.calls.push_back({"triples-query", json{{"subject", "x"}}});
    EXPECT_EQ(render_react(step),
              "Thought: look it up\nAction: triples-query\nArgs: {\"subject\":\"x\"}\n");
    PlannerStep final_step;
    final_step.thought = "done";
    final_step.final_answer = "42";
    final_step.response = "It is 42.";
    EXPECT_EQ(render_react(final_step), "Thought: done\nFinal Answer: 42\nIt is 42.\n");
}

// A chain that ends at several entities names them all, counted, best reached first.
TEST(AgentPlannerTest, AChainEndingAtSeveralEntitiesNamesThemAllWithACount) {
    const std::string q = "what did ilse_varrow design ?";
    const json steps = json::array({step_of({lookup(
        "ilse_varrow", {{"designed", "greyhollow_light"}, {"designed", "saltspire_light"}})})});
    const auto last = plan_agent_step(q, kTools, steps);
    ASSERT_TRUE(last.calls.empty()) << render_react(last);
    EXPECT_EQ(last.final_answer, "greyhollow_light and saltspire_light");
    EXPECT_NE(last.response.find("leads to 2 things: greyhollow_light and saltspire_light."),
              std::string::npos)
        << last.response;
    EXPECT_EQ(last.response.find("Also reached"), std::string::npos) << last.response;

    // One end: named alone, without a count.
    const json one =
        json::array({step_of({lookup("ilse_varrow", {{"designed", "greyhollow_light"}})})});
    const auto single = plan_agent_step(q, kTools, one);
    EXPECT_EQ(single.final_answer, "greyhollow_light");
    EXPECT_EQ(single.response.find("things"), std::string::npos) << single.response;
}

TEST(AgentPlannerTest, ALongListNamesTheBoundAndCountsTheRest) {
    const std::string q = "what did ilse_varrow design ?";
    std::vector<std::pair<std::string, std::string>> designs;
    designs.reserve(15);
    for (int k = 0; k < 15; ++k) designs.emplace_back("designed", "light_" + std::to_string(k));
    const json steps = json::array({step_of({lookup("ilse_varrow", designs)})});
    // More ends than the frontier carried between hops: the last hop keeps them all (equal
    // matches in the order of their keys).
    const auto last = plan_agent_step(q, kTools, steps);
    ASSERT_TRUE(last.calls.empty()) << render_react(last);
    EXPECT_TRUE(last.final_answer.ends_with(", light_6 and 3 others")) << last.final_answer;
    EXPECT_NE(last.response.find("leads to 15 things: "), std::string::npos) << last.response;
    PlannerLimits three;
    three.listed = 3;
    EXPECT_EQ(plan_agent_step(q, kTools, steps, three).final_answer,
              "light_0, light_1, light_10 and 12 others");
}

// A follow-up's "else": the chain's ends that the conversation already answered are left out,
// and the thought says so; without it, every end is the answer.
TEST(AgentPlannerTest, ElseLeavesOutWhatThePreviousTurnWasAbout) {
    const std::string q = "what did ilse_varrow design ?";
    const json steps = json::array({step_of({lookup(
        "ilse_varrow", {{"designed", "greyhollow_light"}, {"designed", "saltspire_light"}})})});
    const auto plain = plan_agent_step(q, kTools, steps);
    ASSERT_TRUE(plain.calls.empty()) << render_react(plain);
    const auto other = plan_agent_step(q, kTools, steps, {}, {"greyhollow_light"});
    ASSERT_TRUE(other.calls.empty()) << render_react(other);
    EXPECT_EQ(other.final_answer, "saltspire_light") << render_react(other);
    EXPECT_NE(other.thought.find("Leaving out greyhollow_light"), std::string::npos)
        << other.thought;
    // Everything reached was answered before: the answer stays (an answer, not silence).
    EXPECT_EQ(
        plan_agent_step(q, kTools, steps, {}, {"greyhollow_light", "saltspire_light"}).final_answer,
        plain.final_answer);
    const json one =
        json::array({step_of({lookup("ilse_varrow", {{"designed", "greyhollow_light"}})})});
    EXPECT_EQ(plan_agent_step(q, kTools, one, {}, {plan_agent_step(q, kTools, one).final_answer})
                  .final_answer,
              plan_agent_step(q, kTools, one).final_answer);
}

// Issue 35: a chain that ends at one value (a literal: a year) is checked against the documents
// once when document-query is offered; the answer stays the chain's value, whatever the documents
// say (the agent worker compares them). An entity end, or no document tool, is not checked.
TEST(AgentPlannerTest, AChainEndingAtAValueIsCheckedAgainstTheDocumentsOnce) {
    const std::string q = "when was saltspire_light built ?";
    const json tools = json::array(
        {{{"name", "knowledge-query"}}, {{"name", "triples-query"}}, {{"name", "document-query"}}});
    const json fact = {
        {"s", "saltspire_light"}, {"p", "year built"}, {"o", "1879"}, {"dir", "out"}};
    const json obs = {{"entity", "saltspire_light"},
                      {"iri", kBase + "saltspire_light"},
                      {"facts", json::array({fact})}};
    json steps = json::array({step_of({{{"tool", "triples-query"},
                                        {"args", {{"subject", "saltspire_light"}}},
                                        {"observation", obs.dump()},
                                        {"error", false}}})});
    const auto check = plan_agent_step(q, tools, steps);
    ASSERT_EQ(check.calls.size(), 1u) << render_react(check);
    EXPECT_EQ(check.calls[0].tool, "document-query");
    EXPECT_EQ(check.calls[0].args["question"], q);
    EXPECT_NE(check.thought.find("1879"), std::string::npos) << check.thought;

    const json said = {{"answer", "1881"}, {"response", "It was finished in 1881 [1]."}};
    steps.push_back(step_of({{{"tool", "document-query"},
                              {"args", {{"question", q}}},
                              {"observation", said.dump()},
                              {"error", false}}}));
    const auto answered = plan_agent_step(q, tools, steps);
    EXPECT_TRUE(answered.calls.empty()) << render_react(answered);
    EXPECT_EQ(answered.final_answer, "1879") << "the chain's value, not the document's";

    const auto unchecked = plan_agent_step(q, kTools, json::array({steps[0]}));
    EXPECT_TRUE(unchecked.calls.empty()) << "no document tool: " << render_react(unchecked);
    EXPECT_EQ(unchecked.final_answer, "1879");

    const json entity_steps =
        json::array({step_of({lookup("marta_vell", {{"spouse", "oren_tal"}})})});
    const auto entity_end =
        plan_agent_step("who is the spouse of marta_vell ?", tools, entity_steps);
    EXPECT_TRUE(entity_end.calls.empty()) << "an entity end: " << render_react(entity_end);
    EXPECT_EQ(entity_end.final_answer, "oren_tal");
}

// Issue 35: knowledge-query's answer with a number in it (a year) is checked against the documents
// once, when document-query is offered; the answer stays graph RAG's. A name, a yes/no question,
// or no document tool: answered at once.
TEST(AgentPlannerTest, AKnowledgeQueryValueIsCheckedAgainstTheDocumentsOnce) {
    const std::string q = "When was Saltspire Light built?";
    const json tools = json::array({{{"name", "knowledge-query"}}, {{"name", "document-query"}}});
    const auto asked = plan_agent_step(q, tools, json::array());
    ASSERT_EQ(asked.calls.size(), 1u) << render_react(asked);
    EXPECT_EQ(asked.calls[0].tool, "knowledge-query");
    const auto whole = [&](const std::string& tool, const json& said) {
        return step_of({{{"tool", tool},
                         {"args", {{"question", q}}},
                         {"observation", said.dump()},
                         {"error", false}}});
    };
    json steps = json::array({whole(
        "knowledge-query", {{"answer", "1879"}, {"response", "It was built in 1879 [1]."}})});
    const auto check = plan_agent_step(q, tools, steps);
    ASSERT_EQ(check.calls.size(), 1u) << render_react(check);
    EXPECT_EQ(check.calls[0].tool, "document-query");
    EXPECT_EQ(check.calls[0].args["question"], q);
    EXPECT_NE(check.thought.find("1879"), std::string::npos) << check.thought;

    steps.push_back(whole("document-query", {{"answer", "1881"}, {"response", "In 1881 [1]."}}));
    const auto answered = plan_agent_step(q, tools, steps);
    EXPECT_TRUE(answered.calls.empty()) << render_react(answered);
    EXPECT_EQ(answered.final_answer, "1879") << "graph RAG's value, not the document's";
    EXPECT_EQ(answered.response, "It was built in 1879 [1].");

    const json graph_only = json::array({{{"name", "knowledge-query"}}});
    EXPECT_EQ(plan_agent_step(q, graph_only, json::array({steps[0]})).final_answer, "1879")
        << "no document tool: no check";
    const json named = json::array(
        {whole("knowledge-query", {{"answer", "Ilse Varrow"}, {"response", "Ilse Varrow."}})});
    const auto name_answer = plan_agent_step(q, tools, named);
    EXPECT_TRUE(name_answer.calls.empty())
        << "a name the agent did not mark one fact's value is not checked: "
        << render_react(name_answer);
    EXPECT_EQ(name_answer.final_answer, "Ilse Varrow");
}

// Issue 35: a knowledge-query name that is one fact's value (the agent marks it "single_value")
// is checked against the documents once too; the answer stays graph RAG's. A list of names, a
// name not so marked, or no document tool: answered at once.
TEST(AgentPlannerTest, AKnowledgeQueryNameOfOneFactIsCheckedAgainstTheDocumentsOnce) {
    const std::string q = "Who designed Greyhollow Light?";
    const json tools = json::array({{{"name", "knowledge-query"}}, {{"name", "document-query"}}});
    const auto whole = [&](const std::string& tool, const json& said) {
        return step_of({{{"tool", tool},
                         {"args", {{"question", q}}},
                         {"observation", said.dump()},
                         {"error", false}}});
    };
    json steps =
        json::array({whole("knowledge-query", {{"answer", "Ilse Varrow"},
                                               {"response", "Ilse Varrow designed it [1]."},
                                               {"single_value", true}})});
    const auto check = plan_agent_step(q, tools, steps);
    ASSERT_EQ(check.calls.size(), 1u) << render_react(check);
    EXPECT_EQ(check.calls[0].tool, "document-query");
    EXPECT_EQ(check.calls[0].args["question"], q);
    EXPECT_NE(check.thought.find("Ilse Varrow"), std::string::npos) << check.thought;

    steps.push_back(whole("document-query", {{"answer", "Tomas Heddle"}, {"response", "T [1]."}}));
    const auto answered = plan_agent_step(q, tools, steps);
    EXPECT_TRUE(answered.calls.empty()) << render_react(answered);
    EXPECT_EQ(answered.final_answer, "Ilse Varrow") << "graph RAG's name, not the document's";

    EXPECT_EQ(
        plan_agent_step(q, json::array({{{"name", "knowledge-query"}}}), json::array({steps[0]}))
            .final_answer,
        "Ilse Varrow")
        << "no document tool: no check";
    for (const json& said :
         {json{{"answer", "Ilse Varrow and Tomas Heddle"}, {"single_value", false}},
          json{{"answer", "Ilse Varrow"}, {"single_value", "yes"}}}) {
        const auto not_checked =
            plan_agent_step(q, tools, json::array({whole("knowledge-query", said)}));
        EXPECT_TRUE(not_checked.calls.empty()) << said.dump() << ": " << render_react(not_checked);
    }
}

}  // namespace
}  // namespace glassbox::reasoner
