// The follow-up reference rule: which words are a reference, which entity of the previous turn
// they are read as, and the rewritten question.
#include <gtest/gtest.h>

#include "text/reference_resolution.hpp"

namespace glassbox::text {
namespace {

ResolvedReference after(std::string_view question, EarlierTurn turn) {
    return resolve_reference(question, {turn});
}

TEST(NamedEntity, TheLongestCapitalisedOrUnderscoredRun) {
    EXPECT_EQ(named_entity("What is Saltspire Light?"), "Saltspire Light");
    EXPECT_EQ(named_entity("Who founded the company that built the Meridian Telescope?"),
              "Meridian Telescope");
    EXPECT_EQ(named_entity("where was cruz_azul_fc based"), "cruz azul fc");
    EXPECT_EQ(named_entity("Who founded it?"), "");
}

TEST(ResolveReference, ItIsTheQuestionEntityUnlessTheTurnAskedForAThing) {
    const auto r = after("Who founded it?", {"What is Saltspire Light?",
                                             "Saltspire Light is a lighthouse.", "Lighthouse"});
    EXPECT_EQ(r.question, "Who founded Saltspire Light?");
    EXPECT_EQ(r.reference, "it");
    EXPECT_EQ(r.rule, "question-entity");
    // "which company …": the answer is the thing "it" points at.
    const auto company =
        after("Who founded it?", {"Which company built the Meridian Telescope?",
                                  "Halden Ironworks built it.", "Halden Ironworks"});
    EXPECT_EQ(company.question, "Who founded Halden Ironworks?");
    EXPECT_EQ(company.rule, "answer");
}

TEST(ResolveReference, PeopleAreTheAnswerToWhoAndPossessivesKeepTheRelation) {
    const auto he = after("Where was he born?",
                          {"Who founded Halden Ironworks?", "Harald Halden.", "Harald Halden"});
    EXPECT_EQ(he.question, "Where was Harald Halden born?");
    EXPECT_EQ(he.rule, "answer");
    const auto his =
        after("Who was his father?", {"Who designed Greyhollow Light?", "Ada Voss.", "Ada Voss"});
    EXPECT_EQ(his.question, "Who was Ada Voss 's father?");
    const auto her =
        after("Who married her?", {"Who designed Greyhollow Light?", "Ada Voss.", "Ada Voss"});
    EXPECT_EQ(her.question, "Who married Ada Voss?");
    // Not a "who" question: "she" falls to the named entity.
    const auto she = after("Where was she born?",
                           {"What did Marta Quill discover?", "Quill's Comet.", "Quill's Comet"});
    EXPECT_EQ(she.question, "Where was Marta Quill born?");
}

TEST(ResolveReference, ANounReferencePrefersTheEntityOfThatType) {
    // The turn asked for a company, named a telescope: "that company" is the answer,
    // "that telescope" the question's entity (its name holds the noun).
    const EarlierTurn turn{"Which company built the Meridian Telescope?",
                           "Halden Ironworks built it.", "Halden Ironworks"};
    const auto company = after("Who founded that company?", turn);
    EXPECT_EQ(company.question, "Who founded Halden Ironworks?");
    EXPECT_EQ(company.reference, "that company");
    EXPECT_EQ(company.rule, "type:company");
    const auto telescope = after("When was this telescope built?", turn);
    EXPECT_EQ(telescope.question, "When was Meridian Telescope built?");
    // The answer text says what the entity is.
    const auto film =
        after("Who directed the same film?",
              {"When was Tide Road released?", "Tide Road is a film released in 1951.", "1951"});
    EXPECT_EQ(film.question, "Who directed Tide Road?");
    EXPECT_EQ(film.rule, "type:film");
}

TEST(ResolveReference, NothingToResolveLeavesTheQuestionAlone) {
    const EarlierTurn turn{"What is Saltspire Light?", "A lighthouse.", "Lighthouse"};
    // A relative "that", no reference at all, no earlier turn.
    for (std::string_view q : {"Who founded the company that built the Meridian Telescope?",
                               "Who founded Brenn Yard?"}) {
        const auto r = after(q, turn);
        EXPECT_FALSE(r.resolved()) << q;
        EXPECT_EQ(r.question, q);
    }
    EXPECT_FALSE(resolve_reference("Who founded it?", {}).resolved());
    // A yes/no answer names nothing and the question named nothing.
    EXPECT_FALSE(after("Who built it?", {"Is it old?", "Yes.", "yes"}).resolved());
}

// "else" and its kin ask for something besides what the last turn was about: its question's
// entity and its answer's items, but never the entity the reference was read as.
TEST(AlreadyAnswered, ElseExcludesTheLastTurnsSubjectsButNotTheResolvedEntity) {
    const std::vector<EarlierTurn> turns{{"Who designed Greyhollow Light?",
                                          "Ilse Varrow designed Greyhollow Light.", "Ilse Varrow"}};
    const auto resolved = resolve_reference("What else did she design?", turns);
    ASSERT_EQ(resolved.question, "What else did Ilse Varrow design?");
    const auto excluded = already_answered("What else did she design?", turns, resolved);
    EXPECT_EQ(excluded.marker, "else");
    EXPECT_EQ(excluded.entities, std::vector<std::string>{"Greyhollow Light"});
    // No reference: the answer itself is excluded too ("who else" than Ilse Varrow).
    const auto who = "Who else designed a lighthouse?";
    const auto plain = already_answered(who, turns, resolve_reference(who, turns));
    EXPECT_EQ(plain.entities, (std::vector<std::string>{"Ilse Varrow", "Greyhollow Light"}));
    // A list answer is split into its items.
    const std::vector<EarlierTurn> listed{
        {"What did Ilse Varrow design?", "…", "Saltspire Light and Greyhollow Light"}};
    const auto other = already_answered("Which other lights are there?", listed,
                                        resolve_reference("Which other lights are there?", listed));
    EXPECT_EQ(other.marker, "other");
    EXPECT_EQ(other.entities,
              (std::vector<std::string>{"Saltspire Light", "Greyhollow Light", "Ilse Varrow"}));
}

TEST(AlreadyAnswered, NothingIsExcludedWithoutTheWordOrATurn) {
    const std::vector<EarlierTurn> turns{{"Who designed Greyhollow Light?", "", "Ilse Varrow"}};
    EXPECT_FALSE(already_answered("What did she design?", turns,
                                  resolve_reference("What did she design?", turns))
                     .any());
    EXPECT_FALSE(
        already_answered("What else is there?", {}, resolve_reference("What else is there?", {}))
            .any());
    // "Elsewhere" and "otherwise" are other words.
    EXPECT_FALSE(already_answered("Is it elsewhere, otherwise?", turns, {}).any());
}

}  // namespace
}  // namespace glassbox::text
