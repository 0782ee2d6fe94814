// Tests for the dictionary-encoded load batch: what the writer writes reads back as the same
// statements (each distinct term once), and malformed texts are typed errors naming the problem.
#include "schema/indexed_quads.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "schema/nquads.hpp"

namespace glassbox::schema {
namespace {

Term ex(const std::string& name) { return iri("http://example.org/" + name); }

// The statements the texts hold, as triples.
std::vector<Triple> triples_of(const IndexedQuads& quads) {
    std::vector<Triple> out;
    for (const auto& at : quads.statements) {
        std::optional<std::string> graph;
        if (at[3] != kDefaultGraphIndex) graph = quads.terms[at[3]].as_iri().value;
        out.push_back(Triple{quads.terms[at[0]], quads.terms[at[1]], quads.terms[at[2]], graph});
    }
    return out;
}

// Writes `batch` with `writer`, reads it back and expects the same statements; the texts are
// left in `terms` and `statements`.
IndexedQuads round_trip(IndexedQuadsWriter& writer, const std::vector<Triple>& batch,
                        std::string& terms, std::string& statements) {
    EXPECT_TRUE(writer.write(batch, terms, statements));
    auto parsed = parse_indexed_quads(terms, statements);
    EXPECT_TRUE(parsed) << parsed.error().message;
    if (!parsed) return {};
    EXPECT_EQ(triples_of(*parsed), batch);
    return std::move(parsed).value();
}

std::string error_of(std::string_view terms, std::string_view statements) {
    auto parsed = parse_indexed_quads(terms, statements);
    EXPECT_FALSE(parsed) << "accepted: " << terms << " / " << statements;
    if (parsed) return {};
    EXPECT_EQ(parsed.error().type, base::ErrorType::kInvalidRequest);
    return parsed.error().message;
}

TEST(IndexedQuadsTest, WhatTheWriterWritesReadsBackAsTheSameStatements) {
    const std::vector<Triple> batch = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("a"), ex("p"), literal("line\nbreak \"quoted\" \\ tab\t")),
        make_triple(ex("a"), ex("q"), lang_literal("hello", "en-GB"), "http://example.org/g"),
        make_triple(blank("b1"), ex("q"), xsd_integer(42), "http://example.org/g"),
        make_triple(ex("b"), ex("p"), ex("a")),  // b and a again, in other places
        make_triple(ex("c"), ex("p"), literal("caf\xC3\xA9 \xF0\x9F\x98\x80")),
        make_triple(ex("c"), ex("p"), literal("")),
        make_triple(ex("g"), ex("p"), ex("b"), "http://example.org/h"),  // a graph name as subject
        make_triple(ex("g"), ex("p"), ex("b"), "http://example.org/g"),
    };
    IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    const auto parsed = round_trip(writer, batch, terms, statements);
    ASSERT_FALSE(HasFailure());
    // a p b "line.." q g "hello"@en-GB b1 42 c "café.." "" g h: the graph name g is looked up
    // apart from the terms, so the IRI g as a subject is a line of its own.
    EXPECT_EQ(parsed.terms.size(), 14u) << terms;
    EXPECT_EQ(parsed.statements[4][0], parsed.statements[0][2]) << "b is one term";
    EXPECT_EQ(parsed.statements[8][3], parsed.statements[2][3]) << "graph g is one term";
    EXPECT_EQ(parsed.statements[0][3], kDefaultGraphIndex);

    // The writer's table is reused: a second batch is written from scratch.
    const std::vector<Triple> second = {make_triple(ex("z"), ex("p"), ex("a"))};
    ASSERT_TRUE(writer.write(second, terms, statements));
    EXPECT_EQ(terms, "<http://example.org/z>\n<http://example.org/p>\n<http://example.org/a>\n");
    EXPECT_EQ(statements, "0 1 2\n");
}

TEST(IndexedQuadsTest, ManyTermsReadBackAsTheSameStatements) {
    std::vector<Triple> batch;
    batch.reserve(20'000);
    for (int i = 0; i < 20'000; ++i)
        batch.push_back(make_triple(ex("s" + std::to_string(i / 3)),
                                    ex("p" + std::to_string(i % 7)), xsd_integer(i % 5000)));
    IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    const auto parsed = round_trip(writer, batch, terms, statements);
    ASSERT_FALSE(HasFailure());
    // Most repeats are found (a term the writer's cache lost is written again: allowed).
    EXPECT_GE(parsed.terms.size(), 6667u + 7u + 5000u);
    EXPECT_LT(parsed.terms.size(), (6667u + 7u + 5000u) * 3 / 2);
}

// The writer's cache compares a term's kind, whole text and a literal's datatype and language:
// terms alike in all but one of them stay apart; equal ones it still holds are one term.
TEST(IndexedQuadsTest, TermsAlikeButNotEqualStayApart) {
    const std::string head(60, 'x');  // past what a cache slot holds of a text
    const std::vector<Triple> batch = {
        make_triple(ex("s"), ex("p"), literal("x")),
        make_triple(ex("s"), ex("p"), lang_literal("x", "en")),
        make_triple(ex("s"), ex("p"), lang_literal("x", "de")),
        make_triple(ex("s"), ex("p"), typed_literal("x", "http://example.org/t")),
        make_triple(ex("s"), ex("p"), iri("urn:x")),
        make_triple(blank("x"), ex("p"), literal("urn:x")),
        make_triple(ex("s"), ex("p"), ex(head + "1")),
        make_triple(ex("s"), ex("p"), ex(head + "2")),
        make_triple(ex("s"), ex("p"), literal(head + "1")),
        make_triple(ex("t"), ex("p"), ex(head + "1")),
        make_triple(ex("t"), ex("p"), lang_literal("x", "de")),
        make_triple(ex("t"), ex("p"), literal("")),
        make_triple(ex("t"), ex("p"), iri("urn:x")),
        make_triple(ex("t"), ex("p"), literal("")),
    };
    IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    const auto parsed = round_trip(writer, batch, terms, statements);
    ASSERT_FALSE(HasFailure());
    // No two of "x", "x"@en, "x"@de, "x"^^t, <urn:x>, "urn:x", _:x, the long IRIs and literal
    // share an index (the read-back statements above are the same as written, too).
    std::vector<std::uint32_t> apart = {parsed.statements[5][0]};
    for (const std::size_t at : {0, 1, 2, 3, 4, 5, 6, 7, 8})
        apart.push_back(parsed.statements[at][2]);
    std::sort(apart.begin(), apart.end());
    EXPECT_EQ(std::adjacent_find(apart.begin(), apart.end()), apart.end()) << terms;
    // Equal terms still in the cache are one: a long IRI, an IRI, the empty literal.
    EXPECT_EQ(parsed.statements[9][2], parsed.statements[6][2]) << "the long IRI is one term";
    EXPECT_EQ(parsed.statements[12][2], parsed.statements[4][2]) << "<urn:x> is one term";
    EXPECT_EQ(parsed.statements[13][2], parsed.statements[11][2]) << "\"\" is one term";
}

TEST(IndexedQuadsTest, AQuotedTripleCannotBeWrittenInThisForm) {
    const std::vector<Triple> batch = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("a"), ex("p"), quoted(make_triple(ex("x"), ex("y"), ex("z"))))};
    IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    EXPECT_FALSE(writer.write(batch, terms, statements));
}

TEST(IndexedQuadsTest, EmptyTextsAreAnEmptyBatch) {
    auto parsed = parse_indexed_quads("", "");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_TRUE(parsed->terms.empty());
    EXPECT_TRUE(parsed->statements.empty());
}

TEST(IndexedQuadsTest, MalformedTermsAreTypedErrorsNamingTheTermsLine) {
    const std::string statements = "0 0 0\n";
    EXPECT_NE(error_of("<http://a/>\n<no-scheme>\n", statements).find("terms: N-Quads 2:"),
              std::string::npos);
    EXPECT_NE(error_of("<http://a/> <http://b/>\n", statements).find("after the term"),
              std::string::npos);
    EXPECT_NE(error_of("\"unterminated\n", statements).find("terms: N-Quads 1:"),
              std::string::npos);
    EXPECT_NE(
        error_of("<< <http://a/> <http://a/> <http://a/> >>\n", statements).find("quoted triples"),
        std::string::npos);
    EXPECT_NE(error_of("<http://a/>\n\n<http://b/>\n", "0 0 2\n").find("terms: N-Quads 2:"),
              std::string::npos)
        << "an empty line is not a term";
    EXPECT_NE(error_of(std::string("\"a\0b\"\n", 6), statements).find("NUL"), std::string::npos);
    EXPECT_NE(error_of("\"\xFF\"\n", statements).find("invalid UTF-8"), std::string::npos);
}

TEST(IndexedQuadsTest, MalformedStatementsAreTypedErrorsNamingTheLine) {
    const std::string terms = "<http://a/>\n<http://p/>\n\"lit\"\n_:b\n";
    EXPECT_NE(error_of(terms, "0 1 2\n0 1 4\n")
                  .find("statements line 2: expected the index of "
                        "one of the batch's 4 terms"),
              std::string::npos)
        << "an index past the terms";
    EXPECT_NE(error_of(terms, "0 1 x\n").find("line 1: expected the index"), std::string::npos);
    EXPECT_NE(error_of(terms, "0 1 -2\n").find("line 1: expected the index"), std::string::npos);
    EXPECT_NE(error_of(terms, "0 1 99999999999\n").find("expected the index"), std::string::npos);
    EXPECT_NE(error_of(terms, "0 1 2\n0 1").find("line 2: expected 3 or 4 term indexes"),
              std::string::npos)
        << "a truncated last statement";
    EXPECT_NE(error_of(terms, "0 1 2\n\n").find("line 2: expected the index"), std::string::npos);
    EXPECT_NE(error_of(terms, "0 1 2 0 0\n").find("more than 4"), std::string::npos);
    EXPECT_NE(error_of(terms, "0  1 2\n").find("expected the index"), std::string::npos);
    EXPECT_NE(error_of(terms, "0 1 2\r\n").find("a space or the end of the line"),
              std::string::npos);
    EXPECT_NE(error_of(terms, "2 1 0\n").find("subject: term 2 is a literal"), std::string::npos);
    EXPECT_NE(error_of(terms, "0 3 0\n").find("predicate: term 3 is not an IRI"),
              std::string::npos);
    EXPECT_NE(error_of(terms, "0 1 0 2\n").find("graph: term 2 is not an IRI"), std::string::npos);
    EXPECT_NE(error_of("", "0 0 0\n").find("of the batch's 0 terms"), std::string::npos);
    // The same statements well-formed, with and without the last end of line.
    EXPECT_TRUE(parse_indexed_quads(terms, "3 1 2 0\n0 1 3"));
}

}  // namespace
}  // namespace glassbox::schema
