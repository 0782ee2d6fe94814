// Compact JSON term encoding: round trips and typed decode errors.
#include "schema/term_json.hpp"

#include <gtest/gtest.h>

#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::schema {
namespace {

using nlohmann::json;

Term round_trip(const Term& t) {
    // Through text as well, so the UTF-8 path is exercised.
    auto parsed = parse_untrusted_json(dump(encode(t)));
    EXPECT_TRUE(parsed.ok());
    auto back = decode_term(parsed.value());
    EXPECT_TRUE(back.ok()) << back.error().describe();
    return back.value();
}

TEST(TermJson, WireShapes) {
    EXPECT_EQ(encode(iri("urn:x")), json::parse(R"({"t":"i","i":"urn:x"})"));
    EXPECT_EQ(encode(blank("b1")), json::parse(R"({"t":"b","d":"b1"})"));
    EXPECT_EQ(encode(literal("v")), json::parse(R"({"t":"l","v":"v"})"));
    EXPECT_EQ(encode(lang_literal("v", "de")), json::parse(R"({"t":"l","v":"v","ln":"de"})"));
    EXPECT_EQ(encode(xsd_integer(3)),
              json::parse(R"({"t":"l","v":"3","dt":"http://www.w3.org/2001/XMLSchema#integer"})"));
    const auto t = make_triple(iri("urn:s"), iri("urn:p"), iri("urn:o"), "urn:graph:retrieval");
    EXPECT_EQ(encode(t)["g"], "urn:graph:retrieval");
    EXPECT_FALSE(encode(make_triple(iri("urn:s"), iri("urn:p"), iri("urn:o"))).contains("g"));
    EXPECT_EQ(encode(quoted(t))["tr"].contains("g"), false);
}

TEST(TermJson, RoundTripsEveryKind) {
    for (const auto& t :
         {iri("urn:x"), blank("b7"), literal(""), literal("plain"), xsd_integer(-5),
          xsd_double(2.5), xsd_datetime("2025-01-01T00:00:00.000Z"),
          lang_literal("bonjour", "fr-CA"), literal("日本語 — Ünïcödé 🚀 \"quoted\" \\ \n")}) {
        EXPECT_EQ(round_trip(t), t) << to_ntriples(t);
    }
}

TEST(TermJson, RoundTripsNestedQuotedTriples) {
    Term t = literal("leaf");
    for (int i = 0; i < kMaxQuotedTripleDepth; ++i) {
        t = quoted(make_triple(iri("urn:s"), iri("urn:p"), t));
    }
    EXPECT_EQ(round_trip(t), t);
    const auto triple =
        make_triple(quoted(make_triple(blank("x"), iri("urn:p"), lang_literal("ça", "fr"))),
                    iri("urn:q"), xsd_integer(1), "urn:g");
    auto back = decode_triple(encode(triple));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value(), triple);
}

TEST(TermJson, DepthLimit) {
    Term t = literal("leaf");
    for (int i = 0; i <= kMaxQuotedTripleDepth; ++i) {
        t = quoted(make_triple(iri("urn:s"), iri("urn:p"), t));
    }
    auto back = decode_term(encode(t));
    ASSERT_FALSE(back.ok());
    EXPECT_EQ(back.error().type, base::ErrorType::kDecodeError);
    EXPECT_NE(back.error().message.find("deeper than 32"), std::string::npos);
}

TEST(TermJson, NormalisesLiteralSpelling) {
    auto a = decode_term(
        json::parse(R"({"t":"l","v":"x","dt":"http://www.w3.org/2001/XMLSchema#string"})"));
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a.value(), literal("x"));
    auto b = decode_term(json::parse(
        R"({"t":"l","v":"x","ln":"en","dt":"http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"})"));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.value(), lang_literal("x", "en"));
    auto c = decode_term(json::parse(
        R"({"t":"l","v":"x","ln":"en","dt":"http://www.w3.org/2001/XMLSchema#integer"})"));
    EXPECT_FALSE(c.ok());
}

TEST(TermJson, InfersKindWithoutT) {
    auto a = decode_term(json::parse(R"({"i":"urn:x"})"));
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a.value(), iri("urn:x"));
    auto b = decode_term(json::parse(R"({"v":"x","extra":1})"));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.value(), literal("x"));
}

TEST(TermJson, ErrorsNameTheNestedPath) {
    auto r = decode_triple(
        json::parse(
            R"({"s":{"t":"t","tr":{"s":{"t":"i","i":"urn:a"},"p":{"t":"i","i":"urn:b"},"o":{"t":"t","tr":{"s":5}}}},
            "p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"x"}})"),
        "explain_triples[3]");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().type, base::ErrorType::kDecodeError);
    EXPECT_EQ(r.error().message, "explain_triples[3].s.tr.o.tr.s: expected object, got number");
}

TEST(TermJson, WrongShapesAreDecodeErrors) {
    struct Case {
        const char* json;
        const char* message;
    };
    for (const auto& c : {
             Case{R"([1])", "$: expected object, got array"},
             Case{R"({"t":"i","i":7})", "i: expected string, got number"},
             Case{R"({"t":"i"})", "i: missing"},
             Case{R"({"t":"i","i":""})", "i: empty IRI"},
             Case{R"({"t":"q","i":"urn:x"})", "t: unknown term type \"q\""},
             Case{R"({"t":"l","v":"x","ln":3})", "ln: expected string, got number"},
             Case{R"({"t":"t","tr":[]})", "tr: expected object, got array"},
             Case{R"({})", "$: not a term (no \"t\" and no term keys)"},
         }) {
        auto r = decode_term(json::parse(c.json));
        ASSERT_FALSE(r.ok()) << c.json;
        EXPECT_EQ(r.error().type, base::ErrorType::kDecodeError);
        EXPECT_EQ(r.error().message, c.message) << c.json;
    }
    auto missing_o = decode_triple(json::parse(R"({"s":{"i":"urn:s"},"p":{"i":"urn:p"}})"));
    ASSERT_FALSE(missing_o.ok());
    EXPECT_EQ(missing_o.error().message, "o: missing");
    auto bad_graph = decode_triple(
        json::parse(R"({"s":{"i":"urn:s"},"p":{"i":"urn:p"},"o":{"i":"urn:o"},"g":1})"));
    ASSERT_FALSE(bad_graph.ok());
    EXPECT_EQ(bad_graph.error().message, "g: expected string, got number");
}

}  // namespace
}  // namespace glassbox::schema
