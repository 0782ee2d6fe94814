// Term equality, helpers and N-Triples rendering.
#include "schema/term.hpp"

#include <gtest/gtest.h>

namespace glassbox::schema {
namespace {

TEST(Term, XsdStringIsTheSimpleLiteral) {
    EXPECT_EQ(typed_literal("a", kXsdString), literal("a"));
    EXPECT_NE(typed_literal("1", kXsdInteger), literal("1"));
    EXPECT_NE(lang_literal("chat", "fr"), lang_literal("chat", "en"));
}

TEST(Term, QuotedTriplesCompareByValueNotPointer) {
    const auto a = quoted(make_triple(iri("urn:s"), iri("urn:p"), literal("o")));
    const auto b = quoted(make_triple(iri("urn:s"), iri("urn:p"), literal("o")));
    const auto c = quoted(make_triple(iri("urn:s"), iri("urn:p"), literal("x")));
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_NE(a, iri("urn:s"));
}

TEST(Term, KindAccessors) {
    EXPECT_TRUE(iri("urn:x").is_iri());
    EXPECT_TRUE(blank("b0").is_blank());
    EXPECT_TRUE(literal("x").is_literal());
    EXPECT_TRUE(quoted(make_triple(iri("urn:s"), iri("urn:p"), iri("urn:o"))).is_triple());
    EXPECT_THROW((void)iri("urn:x").as_literal(), std::bad_variant_access);
}

TEST(NTriples, EscapesLiterals) {
    EXPECT_EQ(to_ntriples(literal("a\"b\\c\nd\re\tf")), R"("a\"b\\c\nd\re\tf")");
    EXPECT_EQ(to_ntriples(literal(std::string("x\x01y", 3))), R"("x\u0001y")");
    EXPECT_EQ(to_ntriples(literal("Zürich ☃")), "\"Zürich ☃\"");
}

TEST(NTriples, TypedAndTaggedLiterals) {
    EXPECT_EQ(to_ntriples(xsd_integer(-42)), "\"-42\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    EXPECT_EQ(to_ntriples(lang_literal("chat", "fr")), "\"chat\"@fr");
    EXPECT_EQ(to_ntriples(xsd_boolean(true)),
              "\"true\"^^<http://www.w3.org/2001/XMLSchema#boolean>");
    EXPECT_EQ(to_ntriples(xsd_double(0.85)), "\"0.85\"^^<http://www.w3.org/2001/XMLSchema#double>");
    EXPECT_EQ(xsd_double(1.0 / 0.0).as_literal().value, "INF");
    EXPECT_EQ(xsd_decimal("12.50").as_literal().datatype, kXsdDecimal);
}

TEST(NTriples, EscapesIrisAndBlankLabels) {
    EXPECT_EQ(to_ntriples(iri("urn:a b<c>")), "<urn:a\\u0020b\\u003Cc\\u003E>");
    EXPECT_EQ(to_ntriples(blank("n1")), "_:n1");
    EXPECT_EQ(to_ntriples(blank("a b")), "_:ax20b");
    EXPECT_EQ(to_ntriples(blank("-x")), "_:b-x");
}

TEST(NTriples, NestedQuotedTriples) {
    const auto inner = make_triple(iri("urn:s"), iri("urn:p"), literal("o"));
    const auto outer = make_triple(quoted(inner), iri("urn:q"), xsd_integer(1));
    const auto t = make_triple(iri("urn:x"), iri("urn:says"), quoted(outer), "urn:g");
    EXPECT_EQ(to_ntriples(t),
              "<urn:x> <urn:says> << << <urn:s> <urn:p> \"o\" >> <urn:q> "
              "\"1\"^^<http://www.w3.org/2001/XMLSchema#integer> >> .");
    EXPECT_TRUE(to_nquads(t).ends_with(">> <urn:g> .")) << to_nquads(t);
    EXPECT_EQ(to_nquads(inner), to_ntriples(inner));
}

}  // namespace
}  // namespace glassbox::schema
