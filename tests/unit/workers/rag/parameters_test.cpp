// Both RAG services' request parameters and question checks, and graph-rag's edges text.
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "schema/messages.hpp"
#include "workers/rag/document_rag_service.hpp"
#include "workers/rag/graph_rag_service.hpp"
#include "workers/rag/rag_trace.hpp"

namespace glassbox::rag {
namespace {

schema::GraphRagQuery graph_query(std::string question = "Who wrote Dune?") {
    schema::GraphRagQuery q;
    q.query = std::move(question);
    return q;
}

TEST(GraphRagParameters, ZeroMeansTheDesignDefaults) {
    const auto q = resolve_graph_query(graph_query(), RagConfig{});
    ASSERT_TRUE(q.ok()) << q.error().message;
    EXPECT_EQ(q->entity_limit, 50u);
    EXPECT_EQ(q->triple_limit, 30u);
    EXPECT_EQ(q->max_subgraph_size, 150u);
    EXPECT_EQ(q->max_path_length, 3u);
    EXPECT_EQ(q->edge_score_limit, 30u);
    EXPECT_EQ(q->edge_limit, 25u);
}

TEST(GraphRagParameters, GivenValuesAreKeptAndAScoreLimitBelowTheEdgeDefaultLowersIt) {
    auto in = graph_query();
    in.entity_limit = 5;
    in.max_path_length = 3;
    in.edge_score_limit = 10;
    const auto q = resolve_graph_query(in, RagConfig{});
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->entity_limit, 5u);
    EXPECT_EQ(q->max_path_length, 3u);
    EXPECT_EQ(q->edge_score_limit, 10u);
    EXPECT_EQ(q->edge_limit, 10u);
}

TEST(GraphRagParameters, OutOfBoundsValuesNameTheField) {
    const RagConfig config;
    auto in = graph_query();
    in.max_path_length = 6;
    auto q = resolve_graph_query(in, config);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(q.error().message.find("max_path_length"), std::string::npos);

    in = graph_query();
    in.edge_limit = 31;
    q = resolve_graph_query(in, config);
    ASSERT_FALSE(q.ok());
    EXPECT_NE(q.error().message.find("edge_score_limit"), std::string::npos);

    in = graph_query();
    in.entity_limit = 1001;
    EXPECT_FALSE(resolve_graph_query(in, config).ok());
}

TEST(GraphRagParameters, TheQuestionMustBeThereAndFit) {
    const RagConfig config;
    EXPECT_FALSE(resolve_graph_query(graph_query(""), config).ok());
    EXPECT_FALSE(resolve_graph_query(graph_query(" \n"), config).ok());
    EXPECT_TRUE(resolve_graph_query(graph_query(std::string(16 * 1024, 'q')), config).ok());
    const auto big = resolve_graph_query(graph_query(std::string(16 * 1024 + 1, 'q')), config);
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.error().type, base::ErrorType::kInvalidRequest);
    auto with_parent = graph_query();
    with_parent.parent_uri = "";
    EXPECT_FALSE(resolve_graph_query(with_parent, config).ok());
}

TEST(DocumentRagParameters, FetchLimitFollowsDocLimitUnlessGiven) {
    const RagConfig config;
    schema::DocumentRagQuery in;
    in.query = "Who is Lilu?";
    auto q = resolve_document_query(in, config);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->doc_limit, 20u);
    EXPECT_EQ(q->fetch_limit, 20u);
    in.doc_limit = 50;
    q = resolve_document_query(in, config);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->fetch_limit, 50u);
    in.doc_limit = 5;
    in.fetch_limit = 4;
    q = resolve_document_query(in, config);
    ASSERT_FALSE(q.ok());
    EXPECT_NE(q.error().message.find("fetch_limit"), std::string::npos);
    in.fetch_limit = 0;
    q = resolve_document_query(in, config);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->fetch_limit, 20u);
}

TEST(TraceQuestion, IsCutAtACharacterBoundary) {
    // The text, the most characters kept, and what is kept.
    const std::tuple<std::string_view, std::size_t, std::string_view> cases[] = {
        {"abc", 5, "abc"}, {"abcdef", 3, "abc"}, {"äöü", 2, "äö"}, {"", 2, ""}};
    for (const auto& [text, max_chars, kept] : cases)
        EXPECT_EQ(cut_to_chars(text, max_chars), kept) << text;
}

// The edges text goes into the llm's prompt (its token counts are traced): written directly, it
// must be the bytes the JSON tree writer gives, escapes and ill-formed UTF-8 included.
TEST(EdgesJson, IsWhatTheTreeWriterWrites) {
    const std::vector<LabelledEdge> edges{
        {"e1", "Cruz Azul FC", "is in country", "Mexico"},
        {"e2", "S\xc3\xa3o \"Paulo\"", "back\\slash\ttab", "ctl\x01\x7f"},
        {"e3", "bad \xff utf-8", "", "\xe2\x82"}};
    for (std::size_t n = 0; n <= edges.size(); ++n) {
        const std::vector<LabelledEdge> some(edges.begin(),
                                             edges.begin() + static_cast<std::ptrdiff_t>(n));
        nlohmann::json list = nlohmann::json::array();
        for (const auto& e : some)
            list.push_back({{"id", e.id}, {"s", e.s}, {"p", e.p}, {"o", e.o}});
        EXPECT_EQ(edges_json(some), schema::dump(list)) << n;
    }
}

}  // namespace
}  // namespace glassbox::rag
