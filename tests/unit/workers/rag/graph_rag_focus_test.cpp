// graph-rag's focus step on an in-process bus (tests/support/rag_cluster): which explored edges
// it keeps for the answer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/rag_cluster.hpp"

namespace glassbox::rag::testing {
namespace {

namespace vocab = schema::vocab;

// Two clubs in one country, each fact stored twice: as the edge and as its inverse.
const std::string kTwinGraph = R"(
<urn:kg:harbour_fc> <urn:kg:is_in_country> <urn:kg:norland> .
<urn:kg:norland> <urn:kg:is_in_country_inverse> <urn:kg:harbour_fc> .
<urn:kg:quay_united> <urn:kg:is_in_country> <urn:kg:norland> .
<urn:kg:norland> <urn:kg:is_in_country_inverse> <urn:kg:quay_united> .
<urn:kg:harbour_fc> <http://www.w3.org/2000/01/rdf-schema#label> "Harbour FC" .
<urn:kg:quay_united> <http://www.w3.org/2000/01/rdf-schema#label> "Quay United" .
<urn:kg:norland> <http://www.w3.org/2000/01/rdf-schema#label> "Norland" .
<urn:kg:is_in_country> <http://www.w3.org/2000/01/rdf-schema#label> "is in country" .
<urn:kg:is_in_country_inverse> <http://www.w3.org/2000/01/rdf-schema#label> "is in country inverse" .
)";

// An edge and its inverse state one fact: the focus keeps one of them, so the kept slots hold
// as many facts as they can.
TEST(GraphRagFocus, AnEdgeAndItsInverseTakeOneKeptSlot) {
    RagCluster cluster;
    cluster.load_triples("kg", "file:///test/twins.nt", kTwinGraph);
    const auto replies = cluster.request(
        "graph-rag", {{"query", "Which clubs are in Norland?"}, {"collection", "kg"}});
    ASSERT_FALSE(replies.empty());
    ASSERT_EQ(replies.back().kind, bus::ReplyKind::kFinal);
    std::vector<schema::Triple> triples;
    std::string session;
    for (const auto& r : replies) {
        if (r.kind != bus::ReplyKind::kExplain) continue;
        auto m = schema::decode<schema::ExplainMessage>(r.body);
        ASSERT_TRUE(m.ok()) << r.body.dump();
        if (session.empty()) session = m->session;
        triples.insert(triples.end(), m->explain_triples.begin(), m->explain_triples.end());
    }
    const auto run = schema::explain::RunUris::from_uri(session);
    ASSERT_TRUE(run.has_value());
    std::size_t selected = 0;
    for (const auto& t : triples)
        if (t.s == schema::iri(run->focus()) && t.p == schema::iri(vocab::kSelectedEdge))
            ++selected;
    EXPECT_EQ(selected, 2u);
}

}  // namespace
}  // namespace glassbox::rag::testing
