// The router: entity spans, relation chains, the rule file, the classifier and the cascade (its
// speed is measured by bench/bench_router.cpp, not asserted here).
#include <gtest/gtest.h>

#include "workers/query/router.hpp"

namespace glassbox::query {
namespace {

std::vector<std::string> span_texts(std::string_view question) {
    std::vector<std::string> out;
    for (const auto& s : entity_spans(question)) out.push_back(s.text);
    return out;
}

TEST(EntitySpans, UnderscoresCapitalisedRunsAndSingleWordsWeighted) {
    const auto spans = entity_spans(
        "which country is the soccer team Cruz_Azul_FC based in near Lake Tana and Paris ?");
    ASSERT_EQ(spans.size(), 3u);
    EXPECT_EQ(spans[0].text, "Cruz Azul FC");
    EXPECT_DOUBLE_EQ(spans[0].weight, 1.0);
    EXPECT_EQ(spans[1].text, "Lake Tana");
    EXPECT_DOUBLE_EQ(spans[1].weight, 0.8);
    EXPECT_EQ(spans[2].text, "Paris");
    EXPECT_DOUBLE_EQ(spans[2].weight, 0.4);
}

TEST(EntitySpans, AQuestionWordOpeningTheSentenceIsNoName) {
    EXPECT_EQ(span_texts("Which singer is older?"), std::vector<std::string>{});
    EXPECT_EQ(span_texts("Who founded Brenn Yard?"), std::vector<std::string>{"Brenn Yard"});
    EXPECT_EQ(span_texts("what is lower_case_name 's job ?"),
              std::vector<std::string>{"lower case name"});
}

TEST(RelationChain, PossessivesAndOfLinksChainAcrossShortLowerCaseGaps) {
    EXPECT_EQ(relation_chain("the gender of ann_of_york 's kid 's mom ?"), 3u);
    EXPECT_EQ(relation_chain("the nationality of child of some_person ?"), 2u);
    EXPECT_EQ(relation_chain("who is the spouse of the son 's mother ?"), 2u);
    EXPECT_EQ(relation_chain("which country is the club Some_Club based in ?"), 0u);
    // A capitalised name between two links is one name, not a relation.
    EXPECT_EQ(relation_chain("the late President of the Republic of Nowhere died when?"), 1u);
    // Too far apart to chain.
    EXPECT_EQ(relation_chain("the mayor of the town where the old famous school of music stands"),
              1u);
}

TEST(RoutingRules, TheBuiltInFileParses) {
    const RuleSet rules = default_rules();
    EXPECT_GE(rules.rules.size(), 4u);
    EXPECT_EQ(rules.default_engine, "document-rag");
    EXPECT_EQ(rules.examples.size(), 3u);
}

TEST(RoutingRules, BadFilesAreTypedErrorsNamingTheRuleAndKey) {
    const auto check = [](std::string_view text, std::string_view expected) {
        auto parsed = parse_rules(text);
        ASSERT_FALSE(parsed.ok()) << text;
        EXPECT_NE(parsed.error().message.find(expected), std::string::npos)
            << parsed.error().message;
    };
    check(R"({"rules":[{"name":"x","engine":"graph-rag","when":{"max_wordz":3}}]})",
          "rules[0] (x): unknown condition \"max_wordz\"");
    check(R"({"rules":[{"name":"x","engine":"search"}]})",
          "rules[0] (x): bad or unknown key \"engine\"");
    check(R"({"rules":[{"name":"y","engine":"agent","when":{"pattern":"(unclosed"}}]})",
          "not a valid regular expression");
    check(R"({"rules":[{"engine":"agent"}]})", "\"name\" is required");
    check(R"({"rules":[{"name":"z"}]})", "\"engine\" is required");
    check(R"({"default_engine":"oracle"})", "default_engine");
    check(R"({"classifier":{"examples":{"web":["q"]}}})", "unknown engine \"web\"");
    check(R"({"colour":"red"})", "unknown key \"colour\"");
    check(R"([1,2])", "JSON object");
    EXPECT_FALSE(parse_rules("{not json").ok());
}

TEST(RoutingRules, EveryRuleThatHoldsFiresAndSignalsMustBeKnown) {
    auto rules = parse_rules(R"({"rules":[
        {"name":"long","engine":"document-rag","confidence":0.4,"when":{"min_words":6}},
        {"name":"who","engine":"graph-rag","confidence":0.6,"when":{"pattern":"^who\\b"}},
        {"name":"graph","engine":"graph-rag","confidence":0.9,"when":{"graph_entities_min":0.5}}]})");
    ASSERT_TRUE(rules.ok()) << rules.error().message;
    auto features = question_features("Who built the lighthouse on the northern cape?");
    auto fired = fire_rules(*rules, features);
    ASSERT_EQ(fired.size(), 2u);
    EXPECT_EQ(fired[0].name, "long");
    EXPECT_EQ(fired[1].name, "who");
    features.signals_known = true;
    features.graph_entities = 1.0;
    fired = fire_rules(*rules, features);
    ASSERT_EQ(fired.size(), 3u);
    EXPECT_EQ(fired[2].name, "graph");
}

TEST(Router, TheMostConfidentRuleWinsAndAllFiredAreRecorded) {
    auto rules = parse_rules(R"({"rules":[
        {"name":"a","engine":"document-rag","confidence":0.5,"when":{"min_words":1}},
        {"name":"b","engine":"agent","question_type":"multi-hop","confidence":0.7,"when":{"relation_chain_min":2}}]})");
    ASSERT_TRUE(rules.ok());
    const Router router(*rules);
    const auto d = router.route(question_features("the wife of the heir 's father ?"));
    EXPECT_EQ(d.method, "rules");
    EXPECT_EQ(d.engine, "agent");
    EXPECT_EQ(d.question_type, "multi-hop");
    EXPECT_DOUBLE_EQ(d.confidence, 0.7);
    ASSERT_EQ(d.fired.size(), 2u);
}

TEST(Router, TheClassifierDecidesWhenNoRuleFiresWithScoresRecorded) {
    auto rules = parse_rules(R"({"rules":[],"classifier":{"examples":{
        "graph-rag":["which club does the player play for","what position does the player play"],
        "document-rag":["why did the expedition turn back before the summit","what did the critics write about the novel"]}}})");
    ASSERT_TRUE(rules.ok());
    const Router router(*rules);
    const auto d = router.route(question_features("which club does the goalkeeper play for ?"));
    EXPECT_EQ(d.method, "classifier");
    EXPECT_EQ(d.engine, "graph-rag");
    ASSERT_EQ(d.scores.size(), 2u);
    EXPECT_EQ(d.scores[0].first, "graph-rag");
    EXPECT_GT(d.scores[0].second, d.scores[1].second);
    EXPECT_GT(d.confidence, 0.0);
    const auto e =
        router.route(question_features("why did the critics dislike the expedition novel ?"));
    EXPECT_EQ(e.engine, "document-rag");
}

TEST(Router, TheDefaultWhenNothingDecides) {
    auto rules = parse_rules(R"({"default_engine":"graph-rag","rules":[]})");
    ASSERT_TRUE(rules.ok());
    const Router router(*rules);
    const auto d = router.route(question_features("anything at all"));
    EXPECT_EQ(d.method, "default");
    EXPECT_EQ(d.engine, "graph-rag");
    // A classifier that cannot tell routes apart (confidence below the minimum) defers too.
    auto tied = parse_rules(R"({"default_engine":"agent","classifier":{"min_confidence":0.5,
        "examples":{"graph-rag":["alpha beta"],"document-rag":["alpha beta"]}}})");
    ASSERT_TRUE(tied.ok());
    EXPECT_EQ(Router(*tied).route(question_features("alpha beta")).method, "default");
}

TEST(Router, BuiltInRulesUseTheCollectionSignals) {
    const Router router(default_rules());
    auto graph = question_features("which position does Some_Player play ?");
    graph.signals_known = true;
    graph.graph_entities = 1.0;
    auto d = router.route(graph);
    EXPECT_EQ(d.engine, "graph-rag");
    EXPECT_NE(std::find_if(d.fired.begin(), d.fired.end(),
                           [](const FiredRule& r) { return r.name == "graph-entity"; }),
              d.fired.end());
    auto docs = question_features(
        "What did the newspaper write about the harbour strike in the spring of that year?");
    docs.signals_known = true;
    docs.document_keyword = 6.5;
    d = router.route(docs);
    EXPECT_EQ(d.engine, "document-rag");
    EXPECT_EQ(d.fired.front().name, "document-words");
    // An event question naming a graph entity: the documents tell what happened.
    auto event = question_features("What happened to Skel Light in the Long Storm?");
    event.signals_known = true;
    event.graph_entities = 1.0;
    event.document_keyword = 4.0;
    d = router.route(event);
    EXPECT_EQ(d.engine, "document-rag");
    EXPECT_EQ(d.question_type, "descriptive");
    auto chain = question_features("the gender of some_king 's wife 's father ?");
    chain.signals_known = true;
    chain.graph_entities = 1.0;
    EXPECT_EQ(router.route(chain).engine, "agent");
}

TEST(Router, TheSignalsAreAskedForOnlyWhenTheyCanChangeTheDecision) {
    const Router router(default_rules());
    // relation-chain (0.85) outranks every rule on a signal: the agent whatever the store says.
    const auto chain = question_features("the gender of some_king 's wife 's father ?");
    EXPECT_FALSE(router.signals_can_decide(chain));
    auto known = chain;
    known.signals_known = true;
    known.graph_entities = 1.0;
    known.document_keyword = 9.0;
    EXPECT_EQ(router.route(known).engine, router.route(chain).engine);
    // underscore-entity (0.55) fires on the text alone, but graph-entity (0.8) or
    // document-words (0.7) could outrank it; nothing fires without signals on plain words.
    EXPECT_TRUE(router.signals_can_decide(question_features("who plays Forward_X ?")));
    EXPECT_TRUE(router.signals_can_decide(question_features("Why did the harbour close?")));
    // A tie: a rule on a signal earlier in the file, as confident as the best that fired,
    // would win; one after it would not.
    const auto rules = [](std::string_view first, std::string_view second) {
        return parse_rules(std::string(R"({"rules":[)") + std::string(first) + "," +
                           std::string(second) + "]}");
    };
    const std::string plain =
        R"({"name":"plain","engine":"agent","confidence":0.6,"when":{"pattern":"x"}})";
    const std::string signal =
        R"({"name":"signal","engine":"graph-rag","confidence":0.6,"when":{"graph_entities_min":1}})";
    const auto signal_first = rules(signal, plain);
    const auto plain_first = rules(plain, signal);
    ASSERT_TRUE(signal_first.ok() && plain_first.ok());
    EXPECT_TRUE(Router(*signal_first).signals_can_decide(question_features("x")));
    EXPECT_FALSE(Router(*plain_first).signals_can_decide(question_features("x")));
}

}  // namespace
}  // namespace glassbox::query
