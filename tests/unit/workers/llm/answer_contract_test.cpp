// The synthesis templates' answer contract: the Answer line parsed, markers checked, and the
// streamed text held until the Answer line is past.
#include "workers/llm/answer_contract.hpp"

#include <gtest/gtest.h>

namespace glassbox::llm {
namespace {

using Ids = std::set<std::string, std::less<>>;

const Ids kEdges{"e1", "e2", "e3", "e4"};

ContractReply checked(std::string_view reply, const Ids* known = &kEdges) {
    ContractReply out;
    const auto why = check_reply(AnswerForm::kFirstLine, known, reply, out);
    EXPECT_FALSE(why) << *why;
    return out;
}

std::string problem(std::string_view reply, AnswerForm form = AnswerForm::kFirstLine) {
    ContractReply out;
    const auto why = check_reply(form, &kEdges, reply, out);
    return why ? *why : std::string("(no problem)");
}

TEST(AnswerContract, SplitsTheAnswerLineFromTheText) {
    const auto r = checked(
        "Answer: Mara Quill [e2][e4]\nMara Quill founded the mill [e2]. It stands on the river "
        "[e4].");
    ASSERT_TRUE(r.answer);
    EXPECT_EQ(*r.answer, "Mara Quill");
    EXPECT_EQ(r.answer_ids, (std::vector<std::string>{"e2", "e4"}));
    EXPECT_EQ(r.text, "Mara Quill founded the mill [e2]. It stands on the river [e4].");
}

TEST(AnswerContract, ReadsTheLineLeniently) {
    // Leading blank lines, lower case, a comma group, a trailing period, a repeated id.
    auto r = checked("\n\n  answer: 1902 [e3, e1].\n\n  The bridge opened in 1902 [e3][e1].");
    EXPECT_EQ(*r.answer, "1902");
    EXPECT_EQ(r.answer_ids, (std::vector<std::string>{"e3", "e1"}));
    EXPECT_EQ(r.text, "The bridge opened in 1902 [e3][e1].");
    r = checked("Answer: Tomas Vel. [e1][e1]\nTomas Vel wrote it [e1].");
    EXPECT_EQ(*r.answer, "Tomas Vel");
    EXPECT_EQ(r.answer_ids, (std::vector<std::string>{"e1"}));
    // An abbreviation keeps its period; brackets that are not markers stay in the answer.
    EXPECT_EQ(*checked("Answer: Dolan Bros. Inc. [e2]\nx [e2].").answer, "Dolan Bros. Inc");
    EXPECT_EQ(*checked("Answer: the U.S. [e2]\nx [e2].").answer, "the U.S.");
    EXPECT_EQ(*checked("Answer: Opus [sic] [e2]\nx [e2].").answer, "Opus [sic]");
}

TEST(AnswerContract, AnEmptyAnswerLineMeansUndecided) {
    auto r = checked("Answer:\nThe facts name two mills [e1][e2].");
    ASSERT_TRUE(r.answer);
    EXPECT_EQ(*r.answer, "");
    EXPECT_TRUE(r.answer_ids.empty());
    r = checked("Answer:");
    EXPECT_EQ(*r.answer, "");
    EXPECT_EQ(r.text, "");
}

TEST(AnswerContract, AMissingAnswerLineIsAProblem) {
    EXPECT_NE(problem("Mara Quill founded the mill [e2].").find("\"Answer:\" line"),
              std::string::npos);
    EXPECT_NE(problem("").find("\"Answer:\" line"), std::string::npos);
    // "Answer" further down is not the first line.
    EXPECT_NE(problem("The mill [e2].\nAnswer: Mara Quill [e2]").find("\"Answer:\" line"),
              std::string::npos);
}

TEST(AnswerContract, InventedMarkersAreAProblemWhereverTheyAre) {
    EXPECT_NE(problem("Answer: Mara Quill [e9]\nShe founded it [e2].").find("marker [e9]"),
              std::string::npos);
    const auto in_text = problem("Answer: Mara Quill [e2]\nShe founded it [e2][e17].");
    EXPECT_NE(in_text.find("marker [e17] in the text"), std::string::npos) << in_text;
    EXPECT_NE(in_text.find("e1, e2, e3, e4"), std::string::npos) << "lists the given ids";
    // Brackets that do not read like this list's ids are text, not markers.
    EXPECT_EQ(problem("Answer: Mara Quill [e2]\nShe wrote [sic] it in [1902] [e2]."),
              "(no problem)");
}

TEST(AnswerContract, FreeTextTemplatesCheckOnlyTheMarkers) {
    ContractReply out;
    EXPECT_FALSE(check_reply(AnswerForm::kNone, &kEdges, "It is [e1].", out));
    EXPECT_FALSE(out.answer);
    EXPECT_EQ(out.text, "It is [e1].");
    EXPECT_NE(problem("It is [e5].", AnswerForm::kNone).find("marker [e5]"), std::string::npos);
    // Without known ids nothing is invented.
    EXPECT_FALSE(check_reply(AnswerForm::kFirstLine, nullptr, "Answer: x [q77]\ny [z1].", out));
    EXPECT_EQ(out.answer_ids, (std::vector<std::string>{"q77"}));
}

TEST(AnswerContract, TheHoldStreamsExactlyTheTextAfterTheAnswerLine) {
    const std::string reply =
        "\n Answer: Mara Quill [e2]\n\n Mara Quill founded it [e2]. More [e1].";
    const std::string expected = checked(reply).text;
    // Every way of cutting the reply into two or three pieces streams the same text.
    for (std::size_t a = 0; a <= reply.size(); ++a) {
        for (std::size_t b = a; b <= reply.size(); b += 7) {
            AnswerLineHold hold;
            std::string streamed = hold.feed(reply.substr(0, a));
            streamed += hold.feed(reply.substr(a, b - a));
            streamed += hold.feed(reply.substr(b));
            ASSERT_EQ(streamed, expected) << "cut at " << a << ", " << b;
        }
    }
}

TEST(AnswerContract, TemplatesDeclareTheContractInTheirHeader) {
    auto t = PromptTemplate::parse("t",
                                   "output: text\nanswer: first-line\ncite: facts\n"
                                   "variable facts: json\n---\n{{facts}}",
                                   "test");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->answer, AnswerForm::kFirstLine);
    EXPECT_EQ(t->cite, "facts");
    EXPECT_TRUE(has_contract(*t));
    auto rendered = t->render({{"facts", R"([{"id": "f1"}, {"id": "f2"}, {"x": 1}])"}});
    ASSERT_TRUE(rendered);
    const auto ids = citable_ids(*t, *rendered);
    ASSERT_TRUE(ids);
    EXPECT_EQ(*ids, (Ids{"f1", "f2"}));

    for (const char* bad : {"output: text\nanswer: last-line\n---\nx",
                            "output: json\nschema: {}\nanswer: first-line\n---\nx",
                            "output: text\ncite: facts\n---\n{{facts}}",
                            "output: text\ncite: nothing\nvariable q: text\n---\n{{q}}"}) {
        auto parsed = PromptTemplate::parse("bad", bad, "test");
        EXPECT_FALSE(parsed) << bad;
    }
    // The built-in synthesis templates carry the contract.
    auto set = TemplateSet::builtin();
    ASSERT_TRUE(set);
    for (const char* name : {"kg-synthesis", "document-synthesis"}) {
        EXPECT_EQ(set->find(name)->answer, AnswerForm::kFirstLine) << name;
        EXPECT_FALSE(set->find(name)->cite.empty()) << name;
    }
}

}  // namespace
}  // namespace glassbox::llm
