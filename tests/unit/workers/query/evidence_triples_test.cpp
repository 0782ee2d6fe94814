// The router's scan of an explain message's text gives what its tree gives, or declines.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/explain_terms.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "workers/query/evidence_triples.hpp"
#include "workers/query/relevance.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace v = schema::vocab;
using Spo = std::tuple<std::string, std::string, std::string>;

std::vector<Spo> owned(const EvidenceTriples& triples) {
    std::vector<Spo> out;
    for (const auto& t : triples.triples()) out.emplace_back(t.s, t.p, t.o);
    return out;
}

// A Focus step keeping two edges and a chunk: the evidence predicates, and others the scan drops
// (labels, texts with escapes, a blank node, a typed and a language literal).
schema::ExplainMessage focus_message() {
    schema::ExplainMessage m;
    m.session = "urn:glassbox:00000000-0000-4000-8000-000000000001";
    m.seq = 3;
    m.service = "graph-rag";
    m.worker = "graph-rag-test";
    m.explain_id = m.session + ":focus";
    const std::string edge = m.session + ":focus:edge:";
    for (int i = 0; i < 2; ++i) {
        const std::string uri = edge + std::to_string(i);
        const auto s = schema::iri(uri);
        m.explain_triples.push_back(
            schema::make_triple(s, schema::iri(v::kRdfType), schema::iri(v::kEdgeSelection)));
        m.explain_triples.push_back(schema::make_triple(s, schema::iri(v::kRdfSubject),
                                                        schema::iri("http://x/e/A_\"quoted\"")));
        m.explain_triples.push_back(
            schema::make_triple(s, schema::iri(v::kScore), schema::xsd_double(0.5 + i)));
        m.explain_triples.push_back(schema::make_triple(
            s, schema::iri(v::kRdfsLabel), schema::literal("a \"label\"\nwith a line")));
        m.explain_triples.push_back(schema::make_triple(s, schema::iri(v::kProvWasDerivedFrom),
                                                        schema::blank("b" + std::to_string(i))));
    }
    m.explain_triples.push_back(
        schema::make_triple(schema::iri(edge + "0"), schema::iri(v::kSourceDocument),
                            schema::lang_literal("Dokument \\ eins", "de")));
    return m;
}

std::vector<Spo> from_tree(std::string_view text, ExplainHead& head) {
    EvidenceTriples triples;
    const json tree = json::parse(text);
    triples.add(tree);
    head.session = tree.value("session", "");
    head.explain_id = tree.value("explain_id", "");
    return owned(triples);
}

TEST(EvidenceTriples, TheTextScanReadsWhatTheTreeReadsInEitherForm) {
    const auto m = focus_message();
    for (const auto form : {schema::TripleForm::kPlain, schema::TripleForm::kDictionary}) {
        const std::string text = schema::encode_text(m, m.explain_triples, form);
        ExplainHead tree_head, text_head;
        const auto expected = from_tree(text, tree_head);
        EvidenceTriples scanned;
        ASSERT_TRUE(scanned.add_text(text, text_head)) << text;
        EXPECT_EQ(owned(scanned), expected) << text;
        // Type, subject, score and derivation of two edges, and the source: the label dropped.
        EXPECT_EQ(expected.size(), 9u);
        EXPECT_EQ(std::get<2>(expected[1]), "http://x/e/A_\"quoted\"");
        EXPECT_EQ(std::get<2>(expected.back()), "Dokument \\ eins");
        EXPECT_EQ(text_head.session, m.session);
        EXPECT_EQ(text_head.explain_id, m.explain_id);
    }
}

TEST(EvidenceTriples, TheEvidenceReadFromTextIsTheTreesEvidence) {
    const auto m = focus_message();
    const std::string text =
        schema::encode_text(m, m.explain_triples, schema::TripleForm::kDictionary);
    const json final{{"response", "A."}, {"answer", "A"}};
    EvidenceTriples scanned;
    ExplainHead head;
    ASSERT_TRUE(scanned.add_text(text, head));
    const auto from_text = read_gathered_evidence(scanned, final);
    const auto from_tree = read_evidence({json::parse(text)}, final);
    ASSERT_EQ(from_text.kept.size(), 2u);
    ASSERT_EQ(from_text.kept.size(), from_tree.kept.size());
    for (std::size_t i = 0; i < from_tree.kept.size(); ++i) {
        EXPECT_EQ(from_text.kept[i].selection, from_tree.kept[i].selection);
        EXPECT_EQ(from_text.kept[i].score, from_tree.kept[i].score);
        EXPECT_EQ(from_text.kept[i].source, from_tree.kept[i].source);
        EXPECT_EQ(from_text.kept[i].text, from_tree.kept[i].text);
    }
    EXPECT_EQ(from_text.kept[1].score, 1.5);
}

// What the scan does not take it declines whole, adding nothing: the caller then parses.
TEST(EvidenceTriples, AnUnusualOrBrokenBodyIsLeftToTheTree) {
    const auto m = focus_message();
    const std::string plain = schema::encode_text(m, m.explain_triples, schema::TripleForm::kPlain);
    const std::string dictionary =
        schema::encode_text(m, m.explain_triples, schema::TripleForm::kDictionary);
    const std::vector<std::string> declined = {
        plain.substr(0, plain.size() - 1),        // cut short
        plain + " x",                             // something after it
        "{\"session\":\"a\",\"session\":\"b\"}",  // a repeated key
        "{\"session\":1}",                        // not a string
        "[" + plain + "]",                        // not an object
        "{\"explain_triples\":[[0,1,2]],\"explain_terms\":[{\"t\":\"i\",\"i\":\"x\"}]}",  // range
        "{\"explain_triples\":[[0,0,0]]}",                            // indexes without terms
        "{\"explain_triples\":[{\"s\":{\"t\":\"i\",\"i\":\"x\"}}]}",  // a triple without p, o
        "{\"session\":\"a\xff\"}",                                    // invalid UTF-8
    };
    EvidenceTriples triples;
    ExplainHead head;
    ASSERT_TRUE(triples.add_text(dictionary, head));
    const std::size_t kept = triples.triples().size();
    for (const auto& text : declined) {
        EXPECT_FALSE(triples.add_text(text, head)) << text;
        EXPECT_EQ(triples.triples().size(), kept) << text;
    }
    // Unknown keys, a null explain_terms (the plain form) and terms of other kinds are read. The
    // views point into the text: it must outlive `triples`, as the relay's messages do.
    ExplainHead other;
    const std::string unusual =
        "{\"x\":[1,{\"y\":null}],\"explain_terms\":null,\"explain_triples\":[{\"s\":{\"t\":\"b\","
        "\"d\":\"n1\"},\"p\":{\"t\":\"i\",\"i\":\"" +
        std::string(v::kScore) +
        "\"},\"o\":{\"t\":\"l\",\"v\":\"0.7\",\"dt\":\"d\"},\"g\":\"g\"}]}";
    EXPECT_TRUE(triples.add_text(unusual, other));
    ASSERT_EQ(triples.triples().size(), kept + 1);
    EXPECT_EQ(triples.triples().back().s, "n1");
    EXPECT_EQ(triples.triples().back().o, "0.7");
}

}  // namespace
}  // namespace glassbox::query
