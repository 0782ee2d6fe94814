// A GoogleTest suite sharing one RagCluster: started in the suite's SetUpTestSuite, stopped after
// its last test.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "tests/support/rag_cluster.hpp"

namespace glassbox::rag::testing {

// `Suite` is the derived fixture, so that each suite has a cluster of its own. The derived
// SetUpTestSuite calls start_cluster() and loads what its tests ask about.
template <typename Suite>
class RagClusterSuite : public ::testing::Test {
protected:
    static RagCluster& start_cluster() {
        cluster_ = std::make_unique<RagCluster>();
        return *cluster_;
    }
    static void TearDownTestSuite() { cluster_.reset(); }

    static inline std::unique_ptr<RagCluster> cluster_;
};

}  // namespace glassbox::rag::testing
