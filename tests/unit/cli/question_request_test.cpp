// The request body `glassbox invoke` and `glassbox eval` send (cli/question_request.hpp): the
// query router's floor (--min-confidence) is its request's min_confidence.
#include "cli/question_request.hpp"

#include <gtest/gtest.h>

namespace glassbox::cli {
namespace {

TEST(QuestionRequestTest, TheRoutersFloorIsItsRequestsMinConfidence) {
    QuestionRequest request;
    request.service = "query";
    request.question = "When was Saltspire Light built?";
    TargetParameters targets;
    targets.mode = "graph-rag";
    const auto unset = question_body(request, targets);
    EXPECT_EQ(unset["query"], request.question);
    EXPECT_EQ(unset["mode"], "graph-rag");
    EXPECT_FALSE(unset.contains("min_confidence")) << "the worker's query.min_confidence";
    targets.query_min_confidence = 0.5;
    EXPECT_EQ(question_body(request, targets)["min_confidence"], 0.5);
    // Another target's floor is its own parameter, not the router's.
    request.service = "graph-rag";
    EXPECT_FALSE(question_body(request, targets).contains("min_confidence"));
    targets.graph_rag.min_confidence = 0.3;
    EXPECT_EQ(question_body(request, targets)["min_confidence"], 0.3);
}

}  // namespace
}  // namespace glassbox::cli
