// What the explain writers remember between triples (the IRIs last found writable, the last
// subject's and the recent predicates' dictionary indexes) never changes a triple: an IRI that
// looks like a remembered one, or text written again at the same address, is looked at anew.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "schema/explain_builder.hpp"
#include "schema/explain_terms.hpp"
#include "schema/json_fast.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema {
namespace {

namespace v = vocab;

ExplainMessage header() {
    ExplainMessage m;
    m.session = "urn:glassbox:run:1:question";
    m.seq = 1;
    m.service = "graph-rag";
    m.worker = "graph-rag/1";
    m.explain_id = "urn:glassbox:run:1:exploration";
    return m;
}

// The triples `build` writes, read back from the dictionary form, which must give the plain
// form's triples (TripleJson remembers nothing).
std::vector<Triple> written(const std::function<void(TripleSink&)>& build) {
    const ExplainMessage m = header();
    auto dictionary = decode_body<ExplainMessage>(encode_text(m, build, TripleForm::kDictionary));
    auto plain = decode_body<ExplainMessage>(encode_text(m, build, TripleForm::kPlain));
    EXPECT_TRUE(dictionary && plain);
    if (!dictionary || !plain) return {};
    EXPECT_EQ(dictionary->explain_triples, plain->explain_triples);
    return dictionary->explain_triples;
}

TEST(ExplainRepeats, IrisAroundOnesFoundWritableAreStillChecked) {
    const auto run = *explain::RunUris::from_uuid("11111111-2222-4333-8444-555555555555");
    // Alike pairs: the same length and last 8 bytes, one writable, one not.
    const std::vector<std::string> nodes{
        "urn:kg:a",        "bad iri <x>",    "urn:kg:a",  "",
        "urn:kg:a b",      "urn:kg:a",       "no-scheme", "urn:kg:entity_1",
        "urn kg:entity_1", "urn:kg:entity_1"};
    std::vector<explain::ExploredEdge> explored;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        explored.push_back({make_triple(iri(nodes[i]), iri(nodes[(i + 1) % nodes.size()]),
                                        iri(nodes[(i + 3) % nodes.size()])),
                            1});
    }
    const auto triples = written([&](TripleSink& out) {
        explain::graph_exploration(out, run, explain::StepInfo{}, nodes, explored.size(), explored);
    });
    for (const auto& t : triples) {
        for (const Term* term : {&t.s, &t.p, &t.o}) {
            if (term->is_iri()) {
                EXPECT_TRUE(explain::is_writable_iri(term->as_iri().value));
            }
        }
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const Triple expected{iri(run.explored_edge(i)), iri(v::kRdfSubject),
                              iri(explain::writable_iri(nodes[i])),
                              std::string(v::kRetrievalGraph)};
        EXPECT_NE(std::find(triples.begin(), triples.end(), expected), triples.end()) << i;
        const Triple seed{iri(run.exploration()), iri(v::kSeedEntity),
                          iri(explain::writable_iri(nodes[i])), std::string(v::kRetrievalGraph)};
        EXPECT_NE(std::find(triples.begin(), triples.end(), seed), triples.end()) << i;
    }
}

TEST(ExplainRepeats, TextRewrittenAtTheSameAddressIsANewTerm) {
    std::string subject = "urn:s:1";
    std::string predicate = "urn:p:1";
    const auto triples = written([&](TripleSink& out) {
        subject = "urn:s:1";
        predicate = "urn:p:1";
        out.iri(subject, predicate, "urn:o");
        subject[6] = '2';  // the same buffer, other text
        predicate[6] = '2';
        out.iri(subject, predicate, "urn:o");
        out.literal(subject, predicate, "x");
        subject[6] = '1';
        out.term(subject, predicate, iri("urn:o"));
    });
    ASSERT_EQ(triples.size(), 4U);
    EXPECT_EQ(triples[0].s, iri("urn:s:1"));
    EXPECT_EQ(triples[0].p, iri("urn:p:1"));
    EXPECT_EQ(triples[1].s, iri("urn:s:2"));
    EXPECT_EQ(triples[1].p, iri("urn:p:2"));
    EXPECT_EQ(triples[2].s, iri("urn:s:2"));
    EXPECT_EQ(triples[2].o, literal("x"));
    EXPECT_EQ(triples[3].s, iri("urn:s:1"));
    EXPECT_EQ(triples[3].p, iri("urn:p:2"));
}

}  // namespace
}  // namespace glassbox::schema
