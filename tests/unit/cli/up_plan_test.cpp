// `glassbox up --role/--services`: the list syntax, each role's defaults, the start order.
#include "cli/up_plan.hpp"

#include <gtest/gtest.h>

namespace glassbox::cli {
namespace {

using Counts = std::vector<std::pair<std::string, int>>;

std::vector<std::string> names(const UpPlan& plan) {
    std::vector<std::string> out;
    for (const auto& worker : plan.workers) out.push_back(worker.name);
    return out;
}

TEST(UpPlanTest, RolesParseAndPrint) {
    for (const char* text : {"all", "broker", "workers"}) {
        const auto role = up_role_from_string(text);
        ASSERT_TRUE(role) << text;
        EXPECT_EQ(to_string(*role), text);
    }
    EXPECT_FALSE(up_role_from_string("Broker"));
    EXPECT_FALSE(up_role_from_string(""));
}

TEST(UpPlanTest, AServiceListIsPutInStartOrderWithItsCounts) {
    const auto parsed = parse_up_services(" graph-rag=3, store ,embeddings=1,document-rag=2");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    // Start order (callees first), not the order written.
    EXPECT_EQ(*parsed,
              (Counts{{"embeddings", 1}, {"store", 1}, {"graph-rag", 3}, {"document-rag", 2}}));
    const auto none = parse_up_services("none");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(UpPlanTest, ABadServiceListIsATypedErrorNamingTheItem) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"graph-rag,nope", "unknown service \"nope\""},
        {"graph-rag,,store", "an empty item"},
        {"", "an empty item"},
        {"store,", "an empty item"},
        {"graph-rag=0", "graph-rag=0"},
        {"graph-rag=65", "graph-rag=65"},
        {"graph-rag=x", "graph-rag=x"},
        {"graph-rag=2x", "graph-rag=2x"},
        {"graph-rag=", "graph-rag="},
        {"graph-rag,graph-rag=2", "\"graph-rag\" is named twice"},
        {"none,store", "\"none\" stands alone"},
        {"trace", "unknown service \"trace\""},  // the worker is trace-collector
    };
    for (const auto& [list, expected] : cases) {
        const auto parsed = parse_up_services(list);
        ASSERT_FALSE(parsed) << list;
        EXPECT_EQ(parsed.error().type, base::ErrorType::kInvalidRequest) << list;
        EXPECT_NE(parsed.error().message.find(expected), std::string::npos)
            << list << ": " << parsed.error().message;
    }
}

TEST(UpPlanTest, EachRoleHasItsDefaults) {
    const auto all = plan_up(UpRole::kAll, std::nullopt, false);
    ASSERT_TRUE(all);
    EXPECT_TRUE(all->broker);
    EXPECT_TRUE(all->gateway);
    EXPECT_EQ(names(*all), up_services());

    const auto broker = plan_up(UpRole::kBroker, std::nullopt, false);
    ASSERT_TRUE(broker);
    EXPECT_TRUE(broker->broker);
    EXPECT_TRUE(broker->gateway);
    EXPECT_EQ(names(*broker), std::vector<std::string>{"trace-collector"});

    const auto workers = plan_up(UpRole::kWorkers, std::nullopt, false);
    ASSERT_TRUE(workers);
    EXPECT_FALSE(workers->broker);
    EXPECT_FALSE(workers->gateway) << "the gateway runs with the broker";
    EXPECT_EQ(names(*workers), (std::vector<std::string>{"echo", "embeddings", "llm", "graph-rag",
                                                         "document-rag", "agent", "query"}));
}

TEST(UpPlanTest, InstancesGetTheirOwnNamesAndNoGatewayIsKept) {
    const auto plan = plan_up(UpRole::kWorkers, std::string("document-rag,graph-rag=3"), false);
    ASSERT_TRUE(plan);
    EXPECT_EQ(names(*plan), (std::vector<std::string>{"graph-rag", "graph-rag-2", "graph-rag-3",
                                                      "document-rag"}));
    for (const auto& worker : plan->workers)
        EXPECT_EQ(worker.service, worker.name.substr(0, worker.service.size()));
    EXPECT_EQ(describe_workers(*plan), "graph-rag x3, document-rag");

    const auto bare = plan_up(UpRole::kBroker, std::string("none"), true);
    ASSERT_TRUE(bare);
    EXPECT_TRUE(bare->broker);
    EXPECT_FALSE(bare->gateway);
    EXPECT_TRUE(bare->workers.empty());
    EXPECT_EQ(describe_workers(*bare), "no workers");
}

TEST(UpPlanTest, AWorkersHostWithoutWorkersIsRefused) {
    const auto plan = plan_up(UpRole::kWorkers, std::string("none"), false);
    ASSERT_FALSE(plan);
    EXPECT_EQ(plan.error().type, base::ErrorType::kInvalidRequest);
    const auto unknown = plan_up(UpRole::kAll, std::string("gateway"), false);
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("unknown service \"gateway\""), std::string::npos);
}

}  // namespace
}  // namespace glassbox::cli
