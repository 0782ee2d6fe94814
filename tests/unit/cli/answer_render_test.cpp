// The answer as `glassbox invoke` shows it: markers at the cited spans, the Sources list.
#include "cli/render/answer_render.hpp"

#include <gtest/gtest.h>

namespace glassbox::cli::render {
namespace {

schema::RagCitation cited(std::uint32_t n, std::vector<schema::AnswerSpan> spans) {
    schema::RagCitation c;
    c.n = n;
    c.spans = std::move(spans);
    return c;
}

TEST(AnswerRender, MarkersGoAtTheEndOfEachCitedSpan) {
    const std::string answer = "Mara Quill founded the mill. It stands on the river.";
    // Spans end before the full stop, as the RAG workers record them.
    const auto marked =
        mark_citations(answer, {cited(1, {{0, 27}}), cited(2, {{29, 51}, {0, 27}})});
    EXPECT_EQ(marked, "Mara Quill founded the mill [1][2]. It stands on the river [2].");
    // A span that takes in its full stop (the marker was written after it) is marked before it.
    EXPECT_EQ(mark_citations(answer, {cited(1, {{0, 28}}), cited(2, {{29, 52}})}),
              "Mara Quill founded the mill [1]. It stands on the river [2].");
    // Nothing cited: the answer as it is; a span past the end is ignored.
    EXPECT_EQ(mark_citations(answer, {}), answer);
    EXPECT_EQ(mark_citations(answer, {cited(1, {{0, 999}})}), answer);
}

TEST(AnswerRender, SpansCountCodePointsNotBytes) {
    const std::string answer = "Zoë built Ærø Bridge. Done.";
    EXPECT_EQ(mark_citations(answer, {cited(1, {{0, 20}})}), "Zoë built Ærø Bridge [1]. Done.");
}

TEST(AnswerRender, SourcesSayWhereEachCitationComesFrom) {
    schema::RagCitation chunk;
    chunk.n = 1;
    chunk.kind = "chunk";
    chunk.title = "Mill Road";
    chunk.document = "urn:doc:mill";
    chunk.chunk = "urn:doc:mill#chunk-2";
    chunk.char_offset = 120;
    chunk.char_end = 148;
    chunk.tier = 2;
    chunk.text = "Mara Quill founded the mill.";
    schema::RagCitation fact;
    fact.n = 2;
    fact.kind = "edge";
    fact.text = "Mill founded by Mara Quill";
    fact.document = "file:///kb/mills.ttl";
    fact.tier = 1;
    schema::RagCitation unknown;
    unknown.n = 3;
    unknown.kind = "edge";
    unknown.text = "a fact\x1b[31m with a control";
    const auto shown = render_sources({chunk, fact, unknown});
    EXPECT_EQ(shown,
              "  [1] Mill Road (document urn:doc:mill, chunk urn:doc:mill#chunk-2, characters "
              "120–148, tier 2)\n"
              "      \"Mara Quill founded the mill.\"\n"
              "  [2] Mill founded by Mara Quill\n"
              "      fact from file:///kb/mills.ttl, tier 1\n"
              "  [3] a fact\\x1B[31m with a control\n"
              "      fact (source not recorded)\n");
}

TEST(AnswerRenderTest, AChunkCitedTwiceShowsBothSentences) {
    const std::string answer = "The mill opened in 1871. It ground oats. Mara Quill founded it.";
    schema::RagCitation chunk;
    chunk.n = 1;
    chunk.kind = "chunk";
    chunk.title = "Mill Road";
    chunk.text = "The mill opened in 1871.";
    chunk.spans = {{0, 24}, {41, 63}};
    const auto shown = render_sources({chunk}, answer);
    EXPECT_EQ(shown,
              "  [1] Mill Road\n"
              "      \"The mill opened in 1871.\"\n"
              "      \"Mara Quill founded it.\"\n");
    // Without the answer, or cited once: the citation's own text.
    EXPECT_EQ(render_sources({chunk}), "  [1] Mill Road\n      \"The mill opened in 1871.\"\n");
}

}  // namespace
}  // namespace glassbox::cli::render
