// A GraphStore on a fresh knowledge base per test, on each backend (store_testing::KnowledgeTest):
// the connection and the store the graph tests share.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "storage/sql.hpp"
#include "tests/support/knowledge_site.hpp"
#include "workers/store/graph_store.hpp"

namespace glassbox::store::testing {

class GraphStoreFixture : public store_testing::KnowledgeTest {
protected:
    void SetUp() override {
        KnowledgeTest::SetUp();
        if (IsSkipped()) return;
        auto db = site_->connect();
        ASSERT_TRUE(db) << db.error().message;
        db_ = std::move(*db);
        auto store = GraphStore::open(*db_);
        ASSERT_TRUE(store) << store.error().message;
        store_ = std::move(*store);
    }
    void TearDown() override {
        store_.reset();
        db_.reset();
        KnowledgeTest::TearDown();
    }

    std::unique_ptr<storage::sql::Connection> db_;
    std::unique_ptr<GraphStore> store_;
};

}  // namespace glassbox::store::testing
