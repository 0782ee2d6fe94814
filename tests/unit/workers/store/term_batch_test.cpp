// Tests for TermBatch: each distinct term of a batch once (equal terms in any position and
// statement share one entry), its key and hash as the dictionary computes them, statements as
// indexes; quoted triples left to the statement-by-statement path; invalid triples refused.
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "schema/indexed_quads.hpp"
#include "tests/unit/workers/store/graph_terms.hpp"
#include "workers/store/term_batch.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {
namespace {

using namespace graph_terms;

TEST(TermBatchTest, EachDistinctTermOnceWithTheDictionarysKeyAndHash) {
    const std::vector<Triple> triples = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("a"), ex("p"), literal("b")),  // same subject and predicate as before
        make_triple(ex("b"), ex("q"), ex("a"), "http://example.org/g"),  // b and a again
        make_triple(ex("c"), ex("p"), lang_literal("b", "en"), "http://example.org/g"),
        make_triple(ex("c"), ex("p"), schema::xsd_integer(5)),
        make_triple(ex("g"), ex("p"), ex("b")),  // the graph's IRI as a subject: one term
    };
    auto batch = TermBatch::build(triples);
    ASSERT_TRUE(batch) << batch.error().message;
    ASSERT_FALSE(batch->by_statement());
    // a p b "b" q g c "b"@en 5
    ASSERT_EQ(batch->terms().size(), 9u);
    std::set<std::string> keys;
    for (const auto& term : batch->terms()) {
        const auto key = batch->key(term);
        keys.insert(std::string(key));
        EXPECT_EQ(term.hash, static_cast<std::uint64_t>(detail::key_hash(key)));
    }
    EXPECT_EQ(keys.size(), 9u) << "keys are distinct";
    ASSERT_EQ(batch->statements().size(), triples.size());
    // Every statement's indexes give back its terms' keys.
    std::string key;
    for (std::size_t i = 0; i < triples.size(); ++i) {
        const auto& at = batch->statements()[i];
        const Term* parts[3] = {&triples[i].s, &triples[i].p, &triples[i].o};
        for (int k = 0; k < 3; ++k) {
            const auto encoded = detail::encode_simple(*parts[k], key);
            const auto& term = batch->terms()[at[static_cast<std::size_t>(k)]];
            EXPECT_EQ(batch->key(term), key) << "statement " << i << " position " << k;
            EXPECT_EQ(term.kind, encoded.kind);
            EXPECT_EQ(term.value, encoded.value);
            EXPECT_EQ(term.qualifier, encoded.qualifier);
        }
        if (triples[i].graph) {
            EXPECT_EQ(batch->key(batch->terms()[at[3]]), "Ihttp://example.org/g");
        } else {
            EXPECT_EQ(at[3], TermBatch::kDefaultGraph);
        }
    }
    EXPECT_EQ(batch->statements()[0][0], batch->statements()[2][2]) << "a";
    EXPECT_EQ(batch->statements()[0][2], batch->statements()[2][0]) << "b";
    EXPECT_EQ(batch->statements()[2][3], batch->statements()[5][0]) << "g";
    EXPECT_NE(batch->statements()[0][2], batch->statements()[1][2]) << "<b> is not \"b\"";
}

TEST(TermBatchTest, QuotedTriplesGoStatementByStatementAndInvalidTriplesAreRefused) {
    const std::vector<Triple> quoted = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("s"), ex("says"), schema::quoted(make_triple(ex("a"), ex("p"), ex("b")))),
    };
    auto batch = TermBatch::build(quoted);
    ASSERT_TRUE(batch) << batch.error().message;
    EXPECT_TRUE(batch->by_statement());
    EXPECT_EQ(batch->triples().size(), 2u);

    const std::vector<Triple> invalid = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(literal("x"), ex("p"), ex("b")),
    };
    auto refused = TermBatch::build(invalid);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(refused.error().message.find("triple 1"), std::string::npos)
        << refused.error().message;
}

// A dictionary-encoded batch of tens of thousands of terms, each sent twice under two indexes
// (the format allows a repeat; the client sends one when its cache of recent terms lost it),
// and some no statement uses: one entry per distinct term, in the order of first use, every
// statement's indexes giving back its own terms. Enough terms that the table of distinct keys
// is probed with many collisions of its hashes' low bits; the triples path grows its table
// from the smallest size over as many.
TEST(TermBatchTest, LargeBatchesMergeEveryRepeatAndKeepEachStatementsTerms) {
    constexpr std::uint32_t kDistinct = 30'000;
    schema::IndexedQuads quads;
    for (std::uint32_t i = 0; i < kDistinct; ++i) {
        quads.terms.push_back(i % 3 == 2 ? literal("v" + std::to_string(i))
                                         : ex("t" + std::to_string(i)));
    }
    for (std::uint32_t i = 0; i < kDistinct; ++i) quads.terms.push_back(quads.terms[i]);  // repeats
    quads.terms.push_back(ex("unused"));
    const std::uint32_t predicate = 0;  // ex("t0")
    std::vector<Triple> triples;
    for (std::uint32_t i = 1; i + 1 < kDistinct; i += 3) {
        // Subject i (first copy), object i + 1 from the second copy; every other statement
        // names its subject by the second copy.
        const std::uint32_t s = (i % 2 == 0) ? i : kDistinct + i;
        quads.statements.push_back({s, predicate, kDistinct + i + 1, schema::kDefaultGraphIndex});
        triples.push_back(make_triple(quads.terms[i], quads.terms[0], quads.terms[i + 1]));
    }
    auto batch = TermBatch::build(std::move(quads));
    ASSERT_TRUE(batch) << batch.error().message;
    auto from_triples = TermBatch::build(triples);
    ASSERT_TRUE(from_triples) << from_triples.error().message;
    for (const TermBatch* built : {&*batch, &*from_triples}) {
        ASSERT_EQ(built->statements().size(), triples.size());
        // Used: t0 and, per statement, its subject and object.
        ASSERT_EQ(built->terms().size(), 1 + 2 * triples.size());
        std::unordered_map<std::string, std::uint32_t> index_of;
        for (std::uint32_t k = 0; k < built->terms().size(); ++k) {
            const auto& term = built->terms()[k];
            const std::string key(built->key(term));
            EXPECT_TRUE(index_of.emplace(key, k).second) << "twice: " << key;
            EXPECT_EQ(term.hash, static_cast<std::uint64_t>(detail::key_hash(key)));
        }
        std::string key;
        for (std::size_t i = 0; i < triples.size(); ++i) {
            const auto& at = built->statements()[i];
            const Term* parts[3] = {&triples[i].s, &triples[i].p, &triples[i].o};
            for (std::size_t k = 0; k < 3; ++k) {
                detail::encode_simple(*parts[k], key);
                EXPECT_EQ(built->key(built->terms()[at[k]]), key) << "statement " << i;
            }
        }
        // The order of first use: t1 (the first subject) after t0, its object after it.
        EXPECT_EQ(built->key(built->terms()[0]), "Ihttp://example.org/t1");
        EXPECT_EQ(built->key(built->terms()[1]), "Ihttp://example.org/t0");
    }
}

}  // namespace
}  // namespace glassbox::store
