// IRIs entering a trace through a request: a parent_uri N-Triples would reject is refused as
// InvalidRequest naming the field (issue 16, point 12); a valid one is served.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using namespace std::chrono_literals;

class TraceIriTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        start_echo_worker(broker_.endpoint);
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "echo"));
    }
    CommandResult call_echo(const std::string& parent_uri) {
        const nlohmann::json body{{"question", "q"}, {"parent_uri", parent_uri}};
        return run_glassbox({"call", "echo", body.dump(), "--broker", broker_.endpoint});
    }
    RunningBroker broker_;
};

TEST_F(TraceIriTest, AParentUriThatIsNoIriIsRefusedTyped) {
    for (const std::string bad : {"not a uri <>\"\n", "urn:a b", "relative/step"}) {
        const auto r = call_echo(bad);
        EXPECT_EQ(r.status.code, 2) << bad << ": " << r.status.describe() << "\n" << r.out;
        EXPECT_NE(r.err.find("InvalidRequest"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("parent_uri"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("not a valid IRI"), std::string::npos) << r.err;
    }
    const auto good = call_echo("https://example.org/calling-step");
    EXPECT_EQ(good.status.code, 0) << good.err;
    expect_echo_served(broker_.endpoint, "the worker keeps serving");
}

}  // namespace
}  // namespace glassbox::integration
