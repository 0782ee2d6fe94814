// Conflicts between a looked-up fact and a document's answer (workers/agent/answer_conflicts.hpp):
// typed comparison of values, conservative where unsure, and which side the answer states.
#include "workers/agent/answer_conflicts.hpp"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace glassbox::agent {
namespace {

TEST(ValuesDisagreeTest, NumbersDisagreeWhenTheyShareNone) {
    EXPECT_TRUE(values_disagree("1879", "1881"));
    EXPECT_TRUE(values_disagree("1879", "in 1881"));
    EXPECT_TRUE(values_disagree("28 metres", "31 metres"));
    EXPECT_TRUE(values_disagree("1,200", "1,300"));
    EXPECT_FALSE(values_disagree("1879", "in 1879"));
    EXPECT_FALSE(values_disagree("1879-05-03", "3 May 1879")) << "the same date written twice";
    EXPECT_FALSE(values_disagree("1,200", "1200")) << "a thousands comma";
    EXPECT_FALSE(values_disagree("28.5", "28.50"));
    EXPECT_FALSE(values_disagree("1879", "Ilse Varrow")) << "a number against a name: unsure";
}

TEST(ValuesDisagreeTest, NamesDisagreeOnlyWhenTheyShareNoWord) {
    EXPECT_TRUE(values_disagree("Ilse Varrow", "Tomas Heddle"));
    EXPECT_TRUE(values_disagree("Mexico", "Germany"));
    EXPECT_FALSE(values_disagree("Ilse_Varrow", "ilse varrow")) << "one name, two spellings";
    EXPECT_FALSE(values_disagree("Varrow", "Ilse Varrow")) << "one inside the other";
    EXPECT_FALSE(values_disagree("Ilse Varrow", "Ilse Heddle")) << "a partial overlap: unsure";
    EXPECT_FALSE(values_disagree("", "Mexico"));
    EXPECT_FALSE(values_disagree("Mexico",
                                 "the team moved several times between cities in the "
                                 "north of the country over the years"))
        << "a sentence is not a value";
}

TEST(ValuesDisagreeTest, YesAndNoDisagreeButNotWithAName) {
    EXPECT_TRUE(values_disagree("yes", "No"));
    EXPECT_FALSE(values_disagree("yes", "Yes"));
    EXPECT_FALSE(values_disagree("yes", "Mexico"));
}

EvidenceValue fact_value(std::string value) {
    return {"Saltspire Light",       "year built",          std::move(value),
            "urn:run:observation:0", {"file:///orrin.ttl"}, 1};
}

EvidenceValue passage_value(std::string value) {
    return {{}, {}, std::move(value), "urn:sub:focus:chunk:0", {"urn:chunk:register#0"}, 2};
}

TEST(FactPassageConflictsTest, TheAnswerStatesTheFactAndTheDocumentIsTheRival) {
    const auto found =
        fact_passage_conflicts("1879", {fact_value("1879")}, {passage_value("1881")});
    ASSERT_EQ(found.size(), 1u);
    const auto& c = found[0];
    EXPECT_EQ(c.subject, "Saltspire Light");
    EXPECT_EQ(c.predicate, "year built");
    EXPECT_EQ(c.stated, "1879");
    EXPECT_EQ(c.rival, "1881");
    EXPECT_EQ(c.stated_selection, "urn:run:observation:0");
    EXPECT_EQ(c.rival_selection, "urn:sub:focus:chunk:0");
    EXPECT_EQ(c.stated_sources, std::vector<std::string>{"file:///orrin.ttl"});
    EXPECT_EQ(c.rival_sources, std::vector<std::string>{"urn:chunk:register#0"});
    EXPECT_EQ(c.stated_citation, 1u);
    EXPECT_EQ(c.rival_citation, 2u);
}

TEST(FactPassageConflictsTest, AnAnswerFromTheDocumentMakesTheFactTheRival) {
    const auto found =
        fact_passage_conflicts("1881", {fact_value("1879")}, {passage_value("1881")});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].stated, "1881");
    EXPECT_EQ(found[0].rival, "1879");
    EXPECT_EQ(found[0].stated_citation, 2u);
    EXPECT_EQ(found[0].subject, "Saltspire Light") << "the fact names what is disputed";
}

TEST(FactPassageConflictsTest, AgreementOrAnAnswerOfNeitherSideIsNoConflict) {
    EXPECT_TRUE(
        fact_passage_conflicts("1879", {fact_value("1879")}, {passage_value("in 1879")}).empty());
    EXPECT_TRUE(
        fact_passage_conflicts("1890", {fact_value("1879")}, {passage_value("1881")}).empty());
    EXPECT_TRUE(fact_passage_conflicts("", {fact_value("1879")}, {passage_value("1881")}).empty());
    EXPECT_TRUE(fact_passage_conflicts("1879", {fact_value("1879")}, {}).empty());
}

// Issue 35: graph-rag's short answer (through knowledge-query) is compared as a fact's value only
// when the edge it came from ends with it; the subject is the fact's text before the value.
schema::RagCitation edge_citation(std::string text) {
    schema::RagCitation c;
    c.kind = "edge";
    c.text = std::move(text);
    c.selection = "urn:sub:focus:edge:0";
    c.document = "file:///register.ttl";
    return c;
}

TEST(EdgeAnswerValueTest, AnAnswerThatEndsItsEdgeIsAFactsValue) {
    const auto v =
        edge_answer_value("1879", edge_citation("Saltspire Light was built in year 1879"));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->subject, "Saltspire Light was built in year");
    EXPECT_EQ(v->predicate, "");
    EXPECT_EQ(v->value, "1879");
    EXPECT_EQ(v->selection, "urn:sub:focus:edge:0");
    EXPECT_EQ(v->sources, std::vector<std::string>{"file:///register.ttl"});
    EXPECT_EQ(v->citation, 0u);
    const auto words =
        edge_answer_value("3 May 1879", edge_citation("Saltspire Light lit 3 May 1879"));
    ASSERT_TRUE(words.has_value());
    EXPECT_EQ(words->subject, "Saltspire Light lit");
    const auto spelled =
        edge_answer_value("ilse varrow", edge_citation("Saltspire Light designed by Ilse_Varrow"));
    ASSERT_TRUE(spelled.has_value()) << "compared as normalised names";
    EXPECT_EQ(spelled->subject, "Saltspire Light designed by");
}

TEST(EdgeAnswerValueTest, AListAChunkOrAValueInsideTheEdgeIsNot) {
    EXPECT_FALSE(edge_answer_value("Cobble Quay and Saltspire Light",
                                   edge_citation("Great Gale of 1887 damaged Cobble Quay")));
    EXPECT_FALSE(edge_answer_value("1887", edge_citation("Great Gale of 1887 damaged Cobble Quay")))
        << "the value is not the fact's end";
    EXPECT_FALSE(edge_answer_value("1879", edge_citation("1879")))
        << "a fact with nothing before its value";
    EXPECT_FALSE(edge_answer_value("", edge_citation("Saltspire Light was built in year 1879")));
    auto chunk = edge_citation("Saltspire Light was built in 1881");
    chunk.kind = "chunk";
    EXPECT_FALSE(edge_answer_value("1881", chunk)) << "a passage is not a fact";
}

TEST(EdgeAnswerValueTest, AGraphAnswerAndADocumentThatDisagreeConflict) {
    auto fact = *edge_answer_value("1879", edge_citation("Saltspire Light was built in year 1879"));
    fact.citation = 1;
    const auto found = fact_passage_conflicts("1879", {fact}, {passage_value("1881")});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].subject, "Saltspire Light was built in year");
    EXPECT_EQ(found[0].stated_selection, "urn:sub:focus:edge:0");
    EXPECT_EQ(found[0].rival_selection, "urn:sub:focus:chunk:0");
    EXPECT_EQ(found[0].stated_citation, 1u);
    EXPECT_EQ(found[0].rival_citation, 2u);
}

// Issue 35: a name fact against a document sentence about the same subject and relation.
TEST(SentenceRivalNameTest, ASentenceGivingTheSameRelationAnotherNameIsADispute) {
    EXPECT_EQ(sentence_rival_name("Greyhollow Light was designed by Tomas Heddle in 1890",
                                  "Greyhollow Light", "designed by", "Ilse Varrow"),
              std::optional<std::string>("Tomas Heddle"));
    EXPECT_EQ(sentence_rival_name("The Greyhollow Light was first designed by the engineer "
                                  "Tomas Heddle",
                                  "Greyhollow Light", "designed by", "Ilse Varrow"),
              std::nullopt)
        << "'engineer' is a lower-case word before the name: no name right after the relation";
    EXPECT_EQ(sentence_rival_name("Greyhollow Light, designed by Tomas Heddle, stands on the cape",
                                  "Greyhollow Light", "designed by", "Ilse Varrow"),
              std::nullopt)
        << "a comma between the subject and the relation: a clause this check does not read";
}

TEST(SentenceRivalNameTest, ACompatibleNameInAnotherRoleIsNoDispute) {
    EXPECT_EQ(sentence_rival_name("Greyhollow Light was built by Tomas Heddle", "Greyhollow Light",
                                  "designed by", "Ilse Varrow"),
              std::nullopt)
        << "another relation: the builder, not the designer";
    EXPECT_EQ(sentence_rival_name("Greyhollow Light was designed by Ilse Varrow and built by Tomas "
                                  "Heddle",
                                  "Greyhollow Light", "designed by", "Ilse Varrow"),
              std::nullopt)
        << "the sentence names the fact's value: the second name has another role";
    EXPECT_EQ(sentence_rival_name("Greyhollow Light stands near Marrow Hall which was designed by "
                                  "Tomas Heddle",
                                  "Greyhollow Light", "designed by", "Ilse Varrow"),
              std::nullopt)
        << "the relation belongs to another thing";
    EXPECT_EQ(sentence_rival_name("Tomas Heddle designed Greyhollow Light", "Greyhollow Light",
                                  "designed by", "Ilse Varrow"),
              std::nullopt)
        << "the subject after the relation: not read (conservative)";
    EXPECT_EQ(sentence_rival_name("Marrow Hall was designed by Tomas Heddle", "Greyhollow Light",
                                  "designed by", "Ilse Varrow"),
              std::nullopt)
        << "another subject";
    EXPECT_EQ(sentence_rival_name("Greyhollow Light was designed by Ilse Varrow's pupil Tomas",
                                  "Greyhollow Light", "designed by", "Varrow"),
              std::nullopt)
        << "one name inside the other";
}

schema::RagCitation chunk_citation(std::string text, const std::string& selection) {
    schema::RagCitation c;
    c.kind = "chunk";
    c.text = std::move(text);
    c.chunk = "urn:chunk:" + selection;
    c.selection = "urn:sub:focus:chunk:" + selection;
    return c;
}

TEST(DisputingSentencesTest, OnlyThePassageThatDisputesTheNameIsARival) {
    const EvidenceValue fact{"Greyhollow Light",      "designed by",         "Ilse Varrow",
                             "urn:run:observation:1", {"file:///orrin.ttl"}, 1};
    const auto found = disputing_sentences(
        fact, {chunk_citation("Greyhollow Light was built by Tomas Heddle. It is white.", "0"),
               chunk_citation("A storm came. Greyhollow Light was designed by Oskar Brenn.", "1")});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].value, "Oskar Brenn");
    EXPECT_EQ(found[0].selection, "urn:sub:focus:chunk:1");
    EXPECT_EQ(found[0].sources, std::vector<std::string>{"urn:chunk:1"});
    const auto conflicts = fact_passage_conflicts("Ilse Varrow", {fact}, found);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(conflicts[0].stated, "Ilse Varrow");
    EXPECT_EQ(conflicts[0].rival, "Oskar Brenn");

    const EvidenceValue year{"Greyhollow Light",      "built in", "1879",
                             "urn:run:observation:1", {},         1};
    EXPECT_TRUE(
        disputing_sentences(year, {chunk_citation("Greyhollow Light was built in Orrin.", "0")})
            .empty())
        << "a number is compared as a number, not against a sentence's name";
}

// Issue 35: graph-rag's edge citation gives its fact in parts; a name answer then has a subject
// and predicate, and is checked against the documents' sentences as a looked-up fact is.
schema::RagCitation edge_in_parts(std::string subject, std::string predicate, std::string object) {
    auto c = edge_citation(subject + " " + predicate + " " + object);
    c.subject = std::move(subject);
    c.predicate = std::move(predicate);
    c.object = std::move(object);
    return c;
}

TEST(EdgeAnswerValueTest, AnEdgeInPartsGivesItsSubjectAndPredicate) {
    const auto v = edge_answer_value(
        "Ilse Varrow", edge_in_parts("Greyhollow Light", "was designed by", "Ilse Varrow"));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->subject, "Greyhollow Light");
    EXPECT_EQ(v->predicate, "was designed by");
    EXPECT_EQ(v->value, "Ilse Varrow");
    EXPECT_EQ(v->selection, "urn:sub:focus:edge:0");
    EXPECT_TRUE(edge_answer_value("ilse_varrow", edge_in_parts("Greyhollow Light",
                                                               "was designed by", "Ilse Varrow"))
                    .has_value())
        << "compared as normalised names";
    EXPECT_FALSE(edge_answer_value(
        "Varrow", edge_in_parts("Greyhollow Light", "was designed by", "Ilse Varrow")))
        << "the answer must be the fact's object, not a tail of it";
    EXPECT_FALSE(edge_answer_value(
        "Greyhollow Light", edge_in_parts("Greyhollow Light", "was designed by", "Ilse Varrow")))
        << "the subject is not the fact's value";
    EXPECT_FALSE(
        edge_answer_value("Ilse Varrow", edge_in_parts("", "was designed by", "Ilse Varrow")));
}

TEST(EdgeAnswerValueTest, AGraphNameFactIsDisputedByADocumentSentence) {
    auto fact = *edge_answer_value(
        "Ilse Varrow", edge_in_parts("Greyhollow Light", "was designed by", "Ilse Varrow"));
    fact.citation = 1;
    const auto rivals = disputing_sentences(
        fact, {chunk_citation("Greyhollow Light was designed by Tomas Heddle in 1890.", "3")});
    ASSERT_EQ(rivals.size(), 1u);
    EXPECT_EQ(rivals[0].value, "Tomas Heddle");
    const auto found = fact_passage_conflicts("Ilse Varrow", {fact}, rivals);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].subject, "Greyhollow Light");
    EXPECT_EQ(found[0].predicate, "was designed by");
    EXPECT_EQ(found[0].stated, "Ilse Varrow");
    EXPECT_EQ(found[0].rival, "Tomas Heddle");
    EXPECT_EQ(found[0].stated_selection, "urn:sub:focus:edge:0");
    EXPECT_EQ(found[0].rival_selection, "urn:sub:focus:chunk:3");
    // The same fact without its parts (an older graph-rag) has no predicate: no sentence check.
    auto older = *edge_answer_value("Ilse Varrow",
                                    edge_citation("Greyhollow Light was designed by Ilse Varrow"));
    EXPECT_TRUE(older.predicate.empty());
    EXPECT_TRUE(disputing_sentences(
                    older, {chunk_citation("Greyhollow Light was designed by Tomas Heddle.", "3")})
                    .empty());
}

}  // namespace
}  // namespace glassbox::agent
