// The evidence features of an answer (workers/rag/answer_evidence.hpp): a path from the question's
// entity to the answer, its hops against the question's relations, rivals, sources and tiers;
// for documents, support, rank and coverage; and the confidence the trace and FINAL carry.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "workers/rag/answer_evidence.hpp"

namespace glassbox::rag {
namespace {

std::map<std::string, double> by_name(const reasoner::EvidenceFeatures& features) {
    std::map<std::string, double> out;
    for (const auto& f : features) out[f.name] = f.value;
    return out;
}

// MV Curlew (1) -built by-> Brenn Shipyard (2) -founded by-> Oskar Brenn (3); a rival
// Brenn Shipyard -located in-> Cobble Quay (4); Brenn Shipyard -type-> shipyard (5).
GraphEvidence curlew(std::string answer) {
    GraphEvidence ev;
    ev.question = "Who founded the shipyard that built the MV Curlew?";
    ev.kept = {
        {1, 2, "MV Curlew", "built by", "Brenn Shipyard", 0.9, {"doc:a"}, 1},
        {2, 3, "Brenn Shipyard", "founded by", "Oskar Brenn", 0.8, {"doc:a", "doc:b"}, 2},
        {2, 4, "Brenn Shipyard", "located in", "Cobble Quay", 0.5, {"doc:c"}, 3},
        {2, 5, "Brenn Shipyard", "type", "shipyard", 0.3, {}, 0},
    };
    ev.seeds = {1};
    ev.seed_match = 0.97;
    ev.short_answer = std::move(answer);
    return ev;
}

TEST(AnswerEvidenceTest, APathFromTheSeedToTheAnswer) {
    auto ev = curlew("Oskar Brenn");
    ev.answer_edges = {1};
    const auto f = by_name(graph_features(ev));
    EXPECT_EQ(f.at("answered"), 1.0);
    EXPECT_EQ(f.at("answer_found"), 1.0);
    EXPECT_EQ(f.at("path_linked"), 1.0);
    EXPECT_EQ(f.at("path_hops"), 2.0);
    EXPECT_EQ(f.at("hop_excess"), 0.0);  // founded, shipyard, built: three relation words
    EXPECT_EQ(f.at("answer_via_type"), 0.0);
    // Rivals two hops out: Cobble Quay (0.5) and shipyard (0.3); the answer's edge 0.8.
    EXPECT_NEAR(f.at("margin"), 0.3, 1e-12);
    EXPECT_NEAR(f.at("competitors"), std::log1p(2.0), 1e-12);
    EXPECT_NEAR(f.at("path_sources"), std::log1p(2.0), 1e-12);  // doc:a, doc:b
    EXPECT_EQ(f.at("weakest_tier"), 2.0);
    EXPECT_GT(f.at("question_coverage"), 0.5);
    EXPECT_DOUBLE_EQ(f.at("seed_match"), 0.97);
}

TEST(AnswerEvidenceTest, AClassOrTheSeedItselfIsNotALinkedAnswer) {
    auto type = by_name(graph_features(curlew("shipyard")));
    EXPECT_EQ(type.at("answer_via_type"), 1.0);
    EXPECT_LT(type.at("margin"), 0.0);
    auto seed = by_name(graph_features(curlew("MV Curlew")));
    EXPECT_EQ(seed.at("answer_is_seed"), 1.0);
    EXPECT_EQ(seed.at("path_linked"), 0.0);
    auto none = by_name(graph_features(curlew("")));
    EXPECT_EQ(none.at("answered"), 0.0);
    EXPECT_EQ(none.at("answer_found"), 0.0);
    auto elsewhere = by_name(graph_features(curlew("Somebody Else")));
    EXPECT_EQ(elsewhere.at("answered"), 1.0);
    EXPECT_EQ(elsewhere.at("answer_found"), 0.0);
}

TEST(AnswerEvidenceTest, TooManyHopsForTheQuestion) {
    auto ev = curlew("Oskar Brenn");
    ev.question = "Who built the MV Curlew?";
    EXPECT_EQ(by_name(graph_features(ev)).at("hop_excess"), 1.0);
}

TEST(AnswerEvidenceTest, CompletenessOfAListAnswer) {
    GraphEvidence ev;
    ev.question = "Who are the children of Ada Moor?";
    ev.kept = {
        {1, 2, "Ada Moor", "children", "Bo Moor", 0.9, {"doc:a"}, 3},
        {1, 3, "Ada Moor", "children", "Cy Moor", 0.9, {"doc:a"}, 3},
        {1, 4, "Ada Moor", "children", "Di Moor", 0.8, {"doc:b"}, 3},
        {1, 5, "Ada Moor", "born in", "Tarnwick", 0.4, {"doc:a"}, 3},
    };
    ev.seeds = {1};
    ev.short_answer = "Bo Moor and Cy Moor";
    ev.answer_edges = {0, 1};
    const auto c = graph_completeness(ev, "2 children, Bo Moor and Cy Moor, are children of Ada.");
    EXPECT_TRUE(c.list);
    EXPECT_EQ(c.asked, std::vector<std::string>{"children"});
    EXPECT_EQ(c.covered, std::vector<std::string>{"children"});
    // The star of the answer edges has three children; the answer names two.
    EXPECT_EQ(c.answers_found, 3u);
    EXPECT_EQ(c.answers_named, 2u);
    EXPECT_EQ(completeness_note(c), "The facts found have 3 answers; 1 are not named above.");
    const auto all = graph_completeness(ev, "3 children: Bo Moor, Cy Moor and Di Moor.");
    EXPECT_EQ(all.answers_named, 3u);
    EXPECT_EQ(completeness_note(all), "");
}

TEST(AnswerEvidenceTest, APartNoEvidenceStatesIsNamed) {
    GraphEvidence ev;
    ev.question = "When and where was Rosa Lind born?";
    ev.kept = {{1, 2, "Rosa Lind", "born in", "Westfall", 0.9, {"doc:a"}, 3}};
    ev.seeds = {1};
    ev.short_answer = "Westfall";
    ev.answer_edges = {0};
    const auto c = graph_completeness(ev, "Rosa Lind was born in Westfall [1].");
    EXPECT_FALSE(c.list);
    ASSERT_GE(c.asked.size(), 2u);
    ASSERT_GE(c.covered.size(), 1u);
    EXPECT_LT(c.covered.size(), c.asked.size());
    const std::string note = completeness_note(c);
    EXPECT_TRUE(note.starts_with("Nothing found says ")) << note;
    EXPECT_NE(note.find("when"), std::string::npos) << note;
    // A part named by a node of the path is covered: "the shipyard that built X".
    auto curlew_ev = curlew("Oskar Brenn");
    curlew_ev.answer_edges = {0, 1};
    const auto path = graph_completeness(curlew_ev, "Oskar Brenn founded Brenn Shipyard [1][2].");
    EXPECT_EQ(path.covered.size(), path.asked.size()) << completeness_note(path);
    EXPECT_EQ(completeness_note(path), "");
    // Nothing stated at all: no note (the confidence says it instead).
    ev.answer_edges = {};
    EXPECT_EQ(completeness_note(graph_completeness(ev, "")), "");
}

TEST(AnswerEvidenceTest, TwoSourcesGivingDifferentValuesConflict) {
    GraphEvidence ev;
    ev.question = "Who designed Skel Light?";
    ev.kept = {
        {1, 2, "Skel Light", "designed by", "Ada Moor", 0.9, {"file:a"}, 3},
        {1, 3, "Skel Light", "designed by", "Bo Lind", 0.9, {"file:b"}, 3},
        {1, 4, "Skel Light", "located on", "Solen Island", 0.4, {"file:a"}, 3},
    };
    ev.seeds = {1};
    ev.short_answer = "Ada Moor";
    ev.answer_edges = {0};
    const auto conflicts = graph_conflicts(ev);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(conflicts[0].stated, 0u);
    EXPECT_EQ(conflicts[0].rival, 1u);
    // One source giving both values: a list, not a dispute.
    auto listed = ev;
    listed.kept[1].sources = {"file:a"};
    EXPECT_TRUE(graph_conflicts(listed).empty());
    // A question asking for a list has no single value to dispute.
    auto asked = ev;
    asked.question = "Who are all the designers of Skel Light?";
    EXPECT_TRUE(graph_conflicts(asked).empty());
}

// Issue 35: Saltspire Light built in 1879 by two sources (one of tier 1) and in 1881 by one; the
// synthesis named every end it found, "1881 and 1879".
GraphEvidence disputed_years() {
    GraphEvidence ev;
    ev.question = "When was Saltspire Light built?";
    ev.kept = {
        {1, 3, "Saltspire Light", "was built in year", "1881", 0.9, {"file:later"}, 3},
        {1, 2, "Saltspire Light", "was built in year", "1879", 0.9, {"file:register"}, 1},
        {1, 4, "Saltspire Light", "located on", "Solen Island", 0.4, {"file:register"}, 1},
        {1, 2, "Saltspire Light", "was built in year", "1879", 0.8, {"file:survey"}, 2},
    };
    ev.seeds = {1};
    ev.short_answer = "1881 and 1879";
    ev.answer_edges = {0, 1, 3};
    return ev;
}

TEST(AnswerEvidenceTest, ValuesOfADisputedFactListedTogetherStateTheBetterSupported) {
    const auto ev = disputed_years();
    const auto disputed = listed_disputed_values(ev);
    ASSERT_TRUE(disputed.has_value());
    EXPECT_EQ(disputed->stated.value, "1879") << "two sources against one, though ranked second";
    EXPECT_EQ(disputed->stated.edges, (std::vector<std::size_t>{1, 3}));
    ASSERT_EQ(disputed->rivals.size(), 1u);
    EXPECT_EQ(disputed->rivals[0].value, "1881");
    EXPECT_EQ(disputed->rivals[0].edges, std::vector<std::size_t>{0});
    // One source each: the better tier is stated (file:register is tier 1), then the better kept.
    auto tied = ev;
    tied.kept.pop_back();
    tied.answer_edges = {0, 1};
    EXPECT_EQ(listed_disputed_values(tied)->stated.value, "1879");
    tied.kept[1].tier = 3;
    EXPECT_EQ(listed_disputed_values(tied)->stated.value, "1881") << "a tie: the best kept";
    // The answer stating one value only lists nothing: graph_conflicts says the dispute.
    auto one = ev;
    one.short_answer = "1879";
    one.answer_edges = {1};
    EXPECT_FALSE(listed_disputed_values(one).has_value());
    // A list question, or one source giving both values, is no dispute.
    auto asked = ev;
    asked.question = "In which years was Saltspire Light built?";
    EXPECT_FALSE(listed_disputed_values(asked).has_value());
    auto listed = ev;
    listed.kept[0].sources = {"file:register"};
    EXPECT_FALSE(listed_disputed_values(listed).has_value());
}

TEST(AnswerEvidenceTest, ADisputedListingIsRestatedAsOneValueWithTheRivalCited) {
    const auto disputed = *listed_disputed_values(disputed_years());
    const auto id_of = [](std::size_t k) { return "e" + std::to_string(k + 1); };
    EXPECT_EQ(restate_disputed("Saltspire Light was built in 1881 and 1879 [e1][e2][e4].",
                               "1881 and 1879", disputed, id_of),
              std::optional<std::string>(
                  "Saltspire Light was built in 1879 [e2][e4]; another source gives 1881 [e1]."));
    EXPECT_EQ(restate_disputed("Saltspire Light was built in 1881 and 1879 [e1] [e2]. It stands "
                               "on Solen Island [e3].",
                               "1881 and 1879", disputed, id_of),
              std::optional<std::string>("Saltspire Light was built in 1879 [e2]; another source "
                                         "gives 1881 [e1]. It stands on Solen Island [e3]."));
    EXPECT_FALSE(restate_disputed("Saltspire Light was built in 1881 [e1].", "1881 and 1879",
                                  disputed, id_of))
        << "a text that does not hold the listing (a model's own words) is left as it is";
    EXPECT_FALSE(restate_disputed("Built in 1881, 1879 and 1890 [e1][e2].", "1881, 1879 and 1890",
                                  disputed, id_of))
        << "the listing names a value that is not disputed";
}

TEST(AnswerEvidenceTest, AConflictLowersTheConfidenceAndIsSaid) {
    schema::explain::AnswerConfidence confidence;
    confidence.probability = 0.9;
    confidence.conflicts.push_back({"Skel Light",
                                    "designed by",
                                    "Ada Moor",
                                    "Bo Lind",
                                    "urn:sel:1",
                                    "urn:sel:2",
                                    {"file:a"},
                                    {"file:b"}});
    lower_for_conflicts(confidence);
    EXPECT_NEAR(*confidence.probability, 0.45, 1e-12);  // half the sources give the value stated
    ASSERT_FALSE(confidence.features.empty());
    EXPECT_EQ(confidence.features.back().name, "conflict");
    EXPECT_LT(*confidence.features.back().effect, 0.0);
    schema::RagCitation cited;
    cited.n = 1;
    cited.selection = "urn:sel:1";
    EXPECT_EQ(conflicts_note(confidence.conflicts, {cited}),
              "Sources disagree on this: [1] gives Ada Moor; file:b gives Bo Lind.");
    nlohmann::json final = nlohmann::json::object();
    add_confidence(final, confidence);
    EXPECT_EQ(final.at("conflicts").at(0).at("rival"), "Bo Lind");
}

TEST(AnswerEvidenceTest, DocumentSupportRankAndCoverage) {
    DocumentEvidence ev;
    ev.question = "Which shipyard built the Curlew ferry?";
    ev.kept = {{"The Curlew ferry sails daily.", "d1", "Curlew", 1.0},
               {"Brenn Shipyard built the Curlew ferry in 1931.", "d2", "Brenn", 0.9},
               {"Brenn Shipyard also built the Gannet.", "d3", "Gannet", 0.8}};
    ev.short_answer = "Brenn Shipyard";
    ev.answer_chunks = {1};
    ev.cited_chunks = {1};
    const auto f = by_name(document_features(ev));
    EXPECT_EQ(f.at("answered"), 1.0);
    EXPECT_EQ(f.at("yes_no"), 0.0);
    EXPECT_EQ(f.at("answer_words"), 2.0);
    EXPECT_NEAR(f.at("answer_documents"), std::log1p(2.0), 1e-12);  // d2 and d3
    EXPECT_DOUBLE_EQ(f.at("answer_rank"), 0.5);                     // first in the second chunk
    EXPECT_DOUBLE_EQ(f.at("question_coverage"), 1.0);  // shipyard, built, curlew, ferry
    EXPECT_EQ(f.at("cited_documents"), 1.0);
    EXPECT_EQ(f.at("answer_in_question"), 0.0);
    ev.short_answer = "no";
    EXPECT_EQ(by_name(document_features(ev)).at("yes_no"), 1.0);
}

TEST(AnswerEvidenceTest, TheSentenceStatingTheAnswerTheMarginAndTheTitles) {
    DocumentEvidence ev;
    ev.question = "Which shipyard built the Curlew ferry?";
    ev.kept = {{"The Curlew ferry sails daily. It was built in 1931.", "d1", "Curlew", 2.0},
               {"Brenn Shipyard was founded in 1890. It built the Curlew ferry.", "d2",
                "Brenn Shipyard", 1.5},
               {"The Gannet sails weekly.", "d3", "Gannet", 0.5}};
    ev.short_answer = "Brenn Shipyard";
    ev.answer_chunks = {1};
    auto f = by_name(document_features(ev));
    // "Brenn Shipyard was founded in 1890.": shipyard of shipyard, built, curlew, ferry.
    EXPECT_DOUBLE_EQ(f.at("sentence_coverage"), 0.25);
    EXPECT_DOUBLE_EQ(f.at("retrieval_margin"), 0.25);  // (2.0 - 1.5) / 2.0
    EXPECT_EQ(f.at("answer_titled"), 1.0);
    EXPECT_EQ(f.at("who_not_name"), 0.0);  // the question does not ask who
    ev.short_answer = "Gannet Ferries";
    ev.answer_chunks.clear();
    f = by_name(document_features(ev));
    EXPECT_EQ(f.at("sentence_coverage"), 0.0);  // no sentence states it
    EXPECT_EQ(f.at("answer_titled"), 1.0);      // it names the title "Gannet"
    ev.kept.resize(1);
    EXPECT_EQ(by_name(document_features(ev)).at("retrieval_margin"), 0.0);  // no runner-up
}

TEST(AnswerEvidenceTest, WhereInTheRetrievalTheShortAnswerIsRead) {
    DocumentEvidence ev;
    ev.question = "Who founded the shipyard that built the Curlew ferry?";
    for (int k = 0; k < 8; ++k) {
        ev.kept.push_back({"Chunk " + std::to_string(k) + " of Oskar Brenn and the TV shipyard.",
                           "d" + std::to_string(k), "Doc " + std::to_string(k), 2.0 - 0.2 * k});
    }
    ev.short_answer = "Oskar Brenn";
    ev.answer_chunks = {1, 0};  // the first chunk it cites decides
    auto f = by_name(document_features(ev));
    EXPECT_EQ(f.at("answer_top_chunk"), 0.0);
    EXPECT_EQ(f.at("answer_far_chunk"), 0.0);
    EXPECT_DOUBLE_EQ(f.at("answer_chunk_share"), 0.9);  // 1.8 / 2.0
    ev.answer_chunks = {0};
    f = by_name(document_features(ev));
    EXPECT_EQ(f.at("answer_top_chunk"), 1.0);  // the question's own entity, a hop short
    EXPECT_DOUBLE_EQ(f.at("answer_chunk_share"), 1.0);
    ev.answer_chunks = {5};  // past the five best
    f = by_name(document_features(ev));
    EXPECT_EQ(f.at("answer_top_chunk"), 0.0);
    EXPECT_EQ(f.at("answer_far_chunk"), 1.0);
    EXPECT_DOUBLE_EQ(f.at("answer_chunk_share"), 0.5);
    ev.answer_chunks = {4};
    EXPECT_EQ(by_name(document_features(ev)).at("answer_far_chunk"), 0.0);
    // No chunk cited, a citation past the kept chunks, yes or no: read from nowhere.
    for (const auto& [cited, answer] :
         std::vector<std::pair<std::vector<std::size_t>, std::string>>{
             {{}, "Oskar Brenn"}, {{12}, "Oskar Brenn"}, {{0}, "no"}, {{0}, ""}}) {
        ev.answer_chunks = cited;
        ev.short_answer = answer;
        f = by_name(document_features(ev));
        EXPECT_EQ(f.at("answer_top_chunk"), 0.0) << answer;
        EXPECT_EQ(f.at("answer_far_chunk"), 0.0) << answer;
        EXPECT_EQ(f.at("answer_chunk_share"), 0.0) << answer;
    }
}

TEST(AnswerEvidenceTest, TheBestChunkCountsAgainstAnAnswerOnlyWhenTheQuestionChains) {
    DocumentEvidence ev;
    for (int k = 0; k < 3; ++k) {
        ev.kept.push_back({"Chunk " + std::to_string(k) + " of Oskar Brenn and the MV Curlew.",
                           "d" + std::to_string(k), "Doc " + std::to_string(k), 2.0 - 0.2 * k});
    }
    ev.short_answer = "Oskar Brenn";
    ev.answer_chunks = {0};
    // Two hops (founded, shipyard, built): the best chunk is the ship's, a hop short.
    for (const auto* question : {"Who founded the shipyard that built the MV Curlew?",
                                 "Where was the designer of Saltspire Light born?"}) {
        ev.question = question;
        const auto f = by_name(document_features(ev));
        EXPECT_EQ(f.at("answer_top_chunk"), 1.0) << question;
        EXPECT_EQ(f.at("answer_top_chunk_chained"), 1.0) << question;
    }
    // One hop: the best chunk is where the answer usually stands.
    for (const auto* question :
         {"Who designed Greyhollow Light?", "What is the population of Brinehaven?"}) {
        ev.question = question;
        const auto f = by_name(document_features(ev));
        EXPECT_EQ(f.at("answer_top_chunk"), 1.0) << question;
        EXPECT_EQ(f.at("answer_top_chunk_chained"), 0.0) << question;
    }
    // A chained question answered from another chunk.
    ev.question = "Who founded the shipyard that built the MV Curlew?";
    ev.answer_chunks = {1};
    EXPECT_EQ(by_name(document_features(ev)).at("answer_top_chunk_chained"), 0.0);
}

TEST(AnswerEvidenceTest, AWhoQuestionAnsweredByWhatIsNotAName) {
    DocumentEvidence ev;
    ev.question = "Who founded the shipyard that built the Curlew ferry?";
    ev.kept = {{"Oskar Brenn founded Brenn Shipyard on TV in Cobble Quay.", "d1", "Brenn", 1.0}};
    for (const std::string name : {"Oskar Brenn", "Ludwig van Beethoven", "Jean-Luc Brenn"}) {
        ev.short_answer = name;
        EXPECT_EQ(by_name(document_features(ev)).at("who_not_name"), 0.0) << name;
    }
    for (const std::string not_name : {"Cobble", "TV", "MBC FM", "the shipyard", "Brenn 1931"}) {
        ev.short_answer = not_name;
        EXPECT_EQ(by_name(document_features(ev)).at("who_not_name"), 1.0) << not_name;
    }
    ev.question = "The Curlew ferry was built by a shipyard founded by who?";
    EXPECT_EQ(by_name(document_features(ev)).at("who_not_name"), 1.0);
    // A relative "who" does not ask who.
    ev.question = "Oskar Brenn founded a shipyard, who founded it on which date?";
    ev.short_answer = "1890";
    EXPECT_EQ(by_name(document_features(ev)).at("who_not_name"), 0.0);
}

DocumentEvidence launched(std::string rival_text, std::string rival_document = "d2") {
    DocumentEvidence ev;
    ev.question = "When was the Curlew ferry launched?";
    ev.kept = {{"The Curlew ferry was launched in 1931 at Brenn Shipyard.", "d1", "Curlew", 1.0},
               {"The Gannet sails weekly.", "d3", "Gannet", 0.9},
               {std::move(rival_text), std::move(rival_document), "Ferries", 0.8}};
    ev.short_answer = "1931";
    ev.answer_chunks = {0};
    return ev;
}

TEST(AnswerEvidenceTest, TwoDocumentsGivingDifferentYearsForTheAskedSlotConflict) {
    const auto found =
        document_conflicts(launched("Records say the Curlew ferry was launched in 1932."));
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].stated, 0u);
    EXPECT_EQ(found[0].rival, 2u);
    EXPECT_EQ(found[0].stated_value, "1931");
    EXPECT_EQ(found[0].rival_value, "1932");
    EXPECT_NE(found[0].slot.find("curlew"), std::string::npos);
}

TEST(AnswerEvidenceTest, OnlyTheSameSlotInAnotherDocumentWithAnotherValueConflicts) {
    // The same document restating it; a value that agrees (or holds the answer); a sentence
    // about another thing; two values (which one is the slot's is not clear).
    for (const auto& [text, document] : std::vector<std::pair<std::string, std::string>>{
             {"The Curlew ferry was launched in 1932.", "d1"},
             {"The Curlew ferry was launched on April 5, 1931.", "d2"},
             {"The Gannet ferry was launched in 1932.", "d2"},
             {"The Curlew ferry was launched in 1932 and refitted in 1950.", "d2"}}) {
        EXPECT_TRUE(document_conflicts(launched(text, document)).empty()) << text;
    }
    auto who = launched("Records say the Curlew ferry was launched in 1932.");
    who.question = "Who launched the Curlew ferry?";
    EXPECT_TRUE(document_conflicts(who).empty());  // not a value question
}

TEST(AnswerEvidenceTest, TheFinalCarriesTheFeaturesAndTheCalibratedConfidence) {
    const auto uncalibrated = answer_confidence({{"margin", 0.3}}, "no-such-engine");
    EXPECT_FALSE(uncalibrated.probability);
    ASSERT_EQ(uncalibrated.features.size(), 1u);
    EXPECT_FALSE(uncalibrated.features[0].effect);
    nlohmann::json final = nlohmann::json::object();
    add_confidence(final, uncalibrated);
    EXPECT_FALSE(final.contains("confidence"));
    EXPECT_EQ(final["evidence"][0]["name"], "margin");

    if (reasoner::shipped_calibrator("graph-rag") == nullptr) GTEST_SKIP() << "no calibrator";
    const auto scored = answer_confidence(graph_features(curlew("Oskar Brenn")), "graph-rag");
    ASSERT_TRUE(scored.probability);
    EXPECT_GE(*scored.probability, 0.0);
    EXPECT_LE(*scored.probability, 1.0);
    add_confidence(final, scored);
    EXPECT_DOUBLE_EQ(final["confidence"].get<double>(), *scored.probability);
    EXPECT_EQ(final["calibrator"], scored.calibrator);
    EXPECT_TRUE(final["confidence_words"].is_string());
}

TEST(AnswerEvidenceTest, AShortAnswerBelowTheShippedThresholdIsWithheldAndTheTextStays) {
    const auto* calibrator = reasoner::shipped_calibrator("document-rag");
    ASSERT_NE(calibrator, nullptr);
    if (!calibrator->withhold_below) GTEST_SKIP() << "the shipped fit withholds nothing";
    // A who question answered by what is not a name: the weakest short answer document RAG has.
    DocumentEvidence ev;
    ev.question = "Who founded the shipyard that built the Curlew ferry?";
    ev.kept = {{"The shipyard was founded on TV by Oskar Brenn.", "d1", "Brenn Shipyard", 1.0}};
    ev.short_answer = "TV";
    ev.answer_chunks = {0};
    SynthesisResult given;
    given.answer = "The shipyard was founded on TV by Oskar Brenn.";
    given.short_answer = "TV";
    given.short_answer_ids = {"c1"};
    given.citations = {CitedSpan{0, 46, {"c1"}}};
    const auto features = document_features(ev);
    const bool weak =
        reasoner::calibrate(*calibrator, features).probability < *calibrator->withhold_below;

    auto synthesised = given;
    auto measured = features;
    EXPECT_FALSE(withhold_weak_short_answer(synthesised, measured, "document-rag", 0.0))
        << "a request that never abstains sees every short answer";
    EXPECT_EQ(synthesised.short_answer, given.short_answer);

    EXPECT_EQ(withhold_weak_short_answer(synthesised, measured, "document-rag", 0.25), weak);
    if (weak) {
        EXPECT_FALSE(synthesised.short_answer);
        EXPECT_TRUE(synthesised.short_answer_ids.empty());
        EXPECT_EQ(synthesised.answer, given.answer);  // the passage answers, cited as before
        EXPECT_EQ(synthesised.citations.size(), 1u);
        const auto f = by_name(measured);
        EXPECT_EQ(f.at("answered"), 0.0);
        EXPECT_EQ(f.at("withheld"), 1.0);
        // Its confidence is then that of a withheld answer (else of one without a short answer).
        if (const auto rate =
                calibrator->withheld ? calibrator->withheld : calibrator->unanswered) {
            EXPECT_DOUBLE_EQ(reasoner::calibrate(*calibrator, measured).probability, *rate);
        }
    }
    // A yes/no answer is never withheld.
    auto yes_no = given;
    yes_no.short_answer = "no";
    auto yes_no_features = features;
    EXPECT_FALSE(withhold_weak_short_answer(yes_no, yes_no_features, "document-rag", 0.25));
}

TEST(AnswerEvidenceTest, BelowTheFloorTheAnswerSaysItDoesNotKnow) {
    SynthesisResult given;
    given.answer = "The MV Curlew was built by Cobble Quay.";
    given.short_answer = "Cobble Quay";
    given.short_answer_ids = {"e1"};
    given.citations = {CitedSpan{0, 38, {"e1"}}};
    schema::explain::AnswerConfidence confidence;
    confidence.probability = 0.18;
    confidence.features = {
        {"margin", -0.2, -1.5}, {"path_linked", 1.0, 0.4}, {"hop_excess", 1, -0.3}};
    EXPECT_FALSE(abstained_answer(given, confidence, 0.1)) << "above the floor it stands";
    schema::explain::AnswerConfidence unscored = confidence;
    unscored.probability.reset();
    EXPECT_FALSE(abstained_answer(given, unscored, 0.9)) << "no calibrator: no abstention";

    const auto abstained = abstained_answer(given, confidence, 0.25);
    ASSERT_TRUE(abstained);
    EXPECT_EQ(abstained->short_answer, std::string());
    EXPECT_TRUE(abstained->short_answer_ids.empty());
    const std::string& text = abstained->answer;
    EXPECT_EQ(text.rfind("I do not know for sure. The evidence points to Cobble Quay", 0), 0u)
        << text;
    EXPECT_NE(text.find("18 % (unlikely), is below the 25 % asked for"), std::string::npos) << text;
    EXPECT_NE(text.find("another answer is about as well supported"), std::string::npos)
        << "the feature that lowered it most: " << text;
    // The original text follows, its citation moved along with it.
    const auto at = text.find(given.answer);
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(abstained->citations.size(), 1u);
    EXPECT_EQ(abstained->citations[0].start, at);  // ASCII: bytes are code points
    EXPECT_EQ(abstained->citations[0].end, at + 38);
}

}  // namespace
}  // namespace glassbox::rag