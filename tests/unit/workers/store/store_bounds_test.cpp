// Tests for the store service's per-request bounds (issue 16): every bounded op refuses a
// request above its bound with InvalidRequest naming the bound and the values, and accepts one
// at the bound.
#include "workers/store/store_bounds.hpp"

#include <string>

#include <gtest/gtest.h>

#include "workers/store/graph_store.hpp"

namespace glassbox::store {
namespace {

using base::ErrorType;

// The error of `checked`, which must be an InvalidRequest whose message holds every one of `parts`.
void expect_refused(const base::Result<void>& checked, std::initializer_list<std::string> parts) {
    ASSERT_FALSE(checked) << "accepted, expected a refusal naming " << *parts.begin();
    EXPECT_EQ(checked.error().type, ErrorType::kInvalidRequest);
    for (const auto& part : parts)
        EXPECT_NE(checked.error().message.find(part), std::string::npos)
            << "'" << part << "' not in: " << checked.error().message;
}

TEST(StoreBounds, TriplesBatchBoundsPatternsAndPatternsTimesLimit) {
    const StoreBounds bounds;
    // The two requests: 300 empty patterns with limit 1000; 50,000 patterns.
    schema::TriplesQueryBatch wide{std::vector<schema::TriplePattern>(300), 1'000, ""};
    expect_refused(check_request(wide, bounds), {"triples-batch", "300 patterns", "limit 1,000",
                                                 "300,000", "200,000", "max_rows"});
    schema::TriplesQueryBatch many{std::vector<schema::TriplePattern>(50'000), 1, ""};
    expect_refused(check_request(many, bounds), {"50,000 patterns", "20,000", "max_patterns"});
    // Limit 0 means the graph's cap per pattern, and is counted as such.
    schema::TriplesQueryBatch unlimited{std::vector<schema::TriplePattern>(21), 0, ""};
    expect_refused(check_request(unlimited, bounds), {"limit 10,000 (asked 0)", "210,000"});
    // At the bounds: accepted (graph RAG's defaults are far below).
    schema::TriplesQueryBatch at_rows{std::vector<schema::TriplePattern>(200), 1'000, ""};
    EXPECT_TRUE(check_request(at_rows, bounds));
    schema::TriplesQueryBatch at_patterns{std::vector<schema::TriplePattern>(20'000), 10, ""};
    EXPECT_TRUE(check_request(at_patterns, bounds));
    StoreBounds tight;
    tight.max_rows = 10;
    expect_refused(
        check_request(schema::TriplesQueryBatch{std::vector<schema::TriplePattern>(2), 6, ""},
                      tight),
        {"12 rows", "bound of 10"});
}

TEST(StoreBounds, VectorOpsBoundTheirVectorsAndEntitiesBatchItsRows) {
    StoreBounds bounds;
    bounds.max_vectors = 4;
    bounds.max_rows = 100;
    schema::GraphEmbeddingsQuery q{std::vector<std::vector<double>>(5, std::vector<double>{1.0}),
                                   10, ""};
    expect_refused(check_request(q, "entities", false, bounds),
                   {"entities", "5 vectors", "max_vectors"});
    expect_refused(check_request(q, "entities-batch", true, bounds),
                   {"entities-batch", "5 vectors"});
    q.vectors.resize(4);
    EXPECT_TRUE(check_request(q, "entities", false, bounds));
    q.limit = 30;  // 4 × 30 = 120 lists' entries
    expect_refused(check_request(q, "entities-batch", true, bounds),
                   {"4 vectors", "limit 30", "120", "max_rows"});
    EXPECT_TRUE(check_request(q, "entities", false, bounds))
        << "entities merges its vectors into one list";
    q.limit = 5'000;  // asked above the retrieval cap: counted at the cap
    expect_refused(check_request(q, "entities-batch", true, bounds), {"limit 1,000 (asked 5,000)"});

    schema::DocumentEmbeddingsQuery chunks{
        std::vector<std::vector<double>>(5, std::vector<double>{1.0}), 10, ""};
    expect_refused(check_request(chunks, bounds), {"chunks-vector", "5 vectors"});
    schema::HybridChunkQuery hybrid{
        "q", std::vector<std::vector<double>>(5, std::vector<double>{1.0}), 10, ""};
    expect_refused(check_request(hybrid, bounds), {"chunks-hybrid", "5 vectors"});
}

TEST(StoreBounds, ItemListsAndQueryTextAreBounded) {
    StoreBounds bounds;
    bounds.max_terms = 3;
    bounds.max_facts = 3;
    bounds.max_chunk_ids = 3;
    bounds.max_documents = 3;
    bounds.max_query_bytes = 8;
    expect_refused(
        check_request(schema::LabelsRequest{"", std::vector<schema::Term>(4, schema::iri("urn:a"))},
                      bounds),
        {"labels", "4 terms", "max_terms"});
    EXPECT_TRUE(check_request(
        schema::LabelsRequest{"", std::vector<schema::Term>(3, schema::iri("urn:a"))}, bounds));
    const auto fact =
        schema::make_triple(schema::iri("urn:a"), schema::iri("urn:p"), schema::iri("urn:b"));
    expect_refused(
        check_request(schema::FactSourcesRequest{"", std::vector<schema::Triple>(4, fact)}, bounds),
        {"fact-sources", "4 triples", "max_facts"});
    expect_refused(
        check_request(schema::ChunkFetchRequest{std::vector<std::string>(4, "urn:c"), ""}, bounds),
        {"chunks-fetch", "4 chunk ids", "max_chunk_ids"});
    schema::LoadDocumentsRequest docs;
    docs.documents.resize(4);
    expect_refused(check_request(docs, bounds), {"load-documents", "4 documents", "max_documents"});
    expect_refused(check_request(schema::ChunkKeywordQuery{"123456789", 5, ""}, bounds),
                   {"chunks-keyword", "9 bytes of query", "max_query_bytes"});
    EXPECT_TRUE(check_request(schema::ChunkKeywordQuery{"12345678", 5, ""}, bounds));
    schema::HybridChunkQuery hybrid{"123456789", {}, 5, ""};
    expect_refused(check_request(hybrid, bounds), {"chunks-hybrid", "bytes of query"});
}

TEST(StoreBounds, TheDefaultReplyBoundStaysWellUnderTheBusMessageLimit) {
    const StoreBounds bounds;
    constexpr std::size_t kBusMaxMessageBytes = 16u << 20;  // docs/protocol.md §1.1
    EXPECT_LE(bounds.max_reply_bytes + bounds.max_reply_bytes / 2, kBusMaxMessageBytes * 3 / 4);
    const auto error = reply_too_large("triples-batch", bounds.max_reply_bytes, "max_reply_bytes",
                                       "reached at pattern 3 of 300", "ask for less");
    EXPECT_EQ(error.type, ErrorType::kInvalidRequest);
    EXPECT_NE(error.message.find("8,388,608 bytes (max_reply_bytes)"), std::string::npos)
        << error.message;
    EXPECT_NE(error.message.find("pattern 3 of 300"), std::string::npos) << error.message;
}

}  // namespace
}  // namespace glassbox::store
