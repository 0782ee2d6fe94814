// Tests for TermBatch: each distinct term of a batch once (equal terms in any position and
// statement share one entry), its key and hash as the dictionary computes them, statements as
// indexes; quoted triples left to the statement-by-statement path; invalid triples refused; a
// dictionary-encoded batch read from its texts as from its parsed terms.
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "schema/indexed_quads.hpp"
#include "schema/nquads.hpp"
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

// build(terms, statements) against build(parse_indexed_quads(terms, statements)): the same
// result, or the same error. Returns how many of the batch's terms are views into `terms` (read
// where they stand, not parsed into terms first).
std::size_t expect_read_as_parsed(const std::string& terms, const std::string& statements) {
    SCOPED_TRACE("terms:\n" + terms + "statements:\n" + statements);
    auto read = TermBatch::build(terms, statements);
    auto quads = schema::parse_indexed_quads(terms, statements);
    auto parsed =
        quads ? TermBatch::build(std::move(quads).value()) : base::Result<TermBatch>(quads.error());
    EXPECT_EQ(bool(read), bool(parsed));
    if (!read || !parsed) {
        if (!read && !parsed) {
            EXPECT_EQ(read.error().message, parsed.error().message);
            EXPECT_EQ(read.error().type, parsed.error().type);
        }
        return 0;
    }
    // Moved, as the store moves it: the views stay where they point.
    TermBatch batch = std::move(read).value();
    EXPECT_EQ(batch.size(), parsed->size());
    EXPECT_FALSE(batch.by_statement());
    EXPECT_EQ(batch.statements(), parsed->statements());
    EXPECT_EQ(batch.terms().size(), parsed->terms().size());
    std::size_t in_text = 0;
    for (std::size_t k = 0; k < std::min(batch.terms().size(), parsed->terms().size()); ++k) {
        const auto& a = batch.terms()[k];
        const auto& b = parsed->terms()[k];
        EXPECT_EQ(batch.key(a), parsed->key(b)) << k;
        EXPECT_EQ(a.hash, b.hash) << k;
        EXPECT_EQ(a.kind, b.kind) << k;
        EXPECT_EQ(a.value, b.value) << k;
        EXPECT_EQ(a.qualifier, b.qualifier) << k;
        if (a.value.data() >= terms.data() && a.value.data() < terms.data() + terms.size())
            ++in_text;
    }
    return in_text;
}

TEST(TermBatchTest, ReadFromItsTextsAsFromItsParsedTerms) {
    const std::vector<Triple> triples = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("a"), ex("p"), literal("plain")),
        make_triple(ex("a"), ex("q"), lang_literal("chat", "fr-CA"), "http://example.org/g"),
        make_triple(ex("b"), ex("q"), schema::xsd_integer(5), "http://example.org/g"),
        make_triple(schema::blank("n1"), ex("p"), literal("tab\tquote\" back\\ \u00e9")),
        make_triple(ex("c"), ex("p"),
                    Term{schema::Literal{"s", std::string(schema::kXsdString), ""}}),
        make_triple(ex("c"), iri("http://example.org/caf\u00e9"), schema::blank("n1")),
        make_triple(ex("b"), ex("p"), ex("a")),
    };
    schema::IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    ASSERT_TRUE(writer.write(triples, terms, statements));
    // All but the blank node and the escaped literal (11 distinct terms of 13) where they stand.
    EXPECT_EQ(expect_read_as_parsed(terms, statements), 11U);
    // Escaped forms, repeats, a term no statement uses, an explicit xsd:string, a datatype.
    EXPECT_EQ(
        expect_read_as_parsed(
            "<http://example.org/s>\n<http://example.org/p>\n\"a\\u00E9\"\n<http://example.org/s>\n"
            "\"x\"^^<http://www.w3.org/2001/XMLSchema#string>\n<http://example.org/unused>\n"
            "\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>\n<http://ex\\u0061mple.org/s>\n"
            "\"x\"@en\n_:b0\n",
            "0 1 2\n3 1 4\n0 1 6 7\n9 1 8\n7 1 4\n"),
        5U);
    EXPECT_EQ(expect_read_as_parsed("", ""), 0U);
}

TEST(TermBatchTest, TextsItRefusesGiveTheParsersErrors) {
    const std::string s = "<http://example.org/s>\n";
    const std::string p = "<http://example.org/p>\n";
    for (const auto& [terms, statements] : std::vector<std::pair<std::string, std::string>>{
             {s + p + "<relative>\n", "0 1 2\n"},                          // not absolute
             {s + p + "\"x\"\n", "2 1 0\n"},                               // a literal subject
             {s + p + "\"x\"\n", "0 2 0\n"},                               // a literal predicate
             {s + p + "_:b\n", "0 2 1\n"},                                 // a blank predicate
             {s + p + "\"x\"\n", "0 1 0 2\n"},                             // a literal graph
             {s + p + "\"x\"@\n", "0 1 2\n"},                              // an empty language
             {s + p + "\"x\"@en-\n", "0 1 2\n"},                           // an empty subtag
             {s + p + "\"x\"^^<rel>\n", "0 1 2\n"},                        // a relative datatype
             {s + p + "\"x\" \n", "0 1 2\n"},                              // a space after it
             {s + p + "<http://a b>\n", "0 1 2\n"},                        // a space in an IRI
             {s + p + "<<http://a>\n", "0 1 2\n"},                         // not an IRI
             {s + p + "\"x\\q\"\n", "0 1 2\n"},                            // a bad escape
             {s + p + "\n", "0 1 1\n"},                                    // an empty line
             {s + p, "0 1 2\n"},                                           // no such term
             {s + p, "0 1\n"},                                             // two indexes
             {s + p, "0 1 1 1 1\n"},                                       // five
             {s + p, "0 1  1\n"},                                          // two spaces
             {s + p, "0 1 x\n"},                                           // not a number
             {s + p + std::string("\"a\0b\"\n", 6), "0 1 2\n"},            // a NUL byte
             {s + p + "\"\xff\"\n", "0 1 2\n"},                            // invalid UTF-8
             {s + p + "<http://example.org/unused\\u0020>\n", "0 1 1\n"},  // unused, refused
         }) {
        expect_read_as_parsed(terms, statements);
    }
    EXPECT_FALSE(TermBatch::build(s + p + "<relative>\n", "0 1 2\n"));
}

}  // namespace
}  // namespace glassbox::store
