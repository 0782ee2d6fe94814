// Tests for the schema N-Quads parser: terms in normal form, escapes, language tags, datatypes,
// blank nodes, graphs, comments and ends of line, and typed errors that name line and column.
#include "schema/nquads.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/utf8.hpp"

namespace glassbox::schema {
namespace {

Triple only(std::string_view text) {
    auto parsed = parse_nquads(text);
    EXPECT_TRUE(parsed) << parsed.error().message;
    if (!parsed || parsed->size() != 1) {
        ADD_FAILURE() << "expected one triple from: " << text;
        return {};
    }
    return parsed->front();
}

std::string error_of(std::string_view text) {
    auto parsed = parse_nquads(text);
    EXPECT_FALSE(parsed) << "accepted: " << text;
    if (parsed) return {};
    EXPECT_EQ(parsed.error().type, base::ErrorType::kInvalidRequest);
    return parsed.error().message;
}

TEST(NQuads, ReadsATripleAndAQuad) {
    auto parsed = parse_nquads(
        "<http://ex/s> <http://ex/p> <http://ex/o> .\n"
        "<http://ex/s> <http://ex/p> <http://ex/o> <http://ex/g> .\n");
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(parsed->size(), 2u);
    EXPECT_EQ((*parsed)[0],
              make_triple(iri("http://ex/s"), iri("http://ex/p"), iri("http://ex/o")));
    EXPECT_EQ((*parsed)[1], make_triple(iri("http://ex/s"), iri("http://ex/p"), iri("http://ex/o"),
                                        "http://ex/g"));
}

TEST(NQuads, DecodesStringEscapes) {
    const Triple t =
        only("<http://ex/s> <http://ex/p> \"a\\tb\\nc\\rd\\\"e\\'f\\\\g\\bh\\fi\" .\n");
    EXPECT_EQ(t.o, literal("a\tb\nc\rd\"e'f\\g\bh\fi"));
}

TEST(NQuads, DecodesSmallAndBigUnicodeEscapesInLiteralsAndIris) {
    const Triple t = only("<http://ex/caf\\u00E9> <http://ex/p> \"\\u00e9\\U0001F600\\u65E5\" .\n");
    EXPECT_EQ(t.s, iri("http://ex/caf\xC3\xA9"));
    EXPECT_EQ(t.o, literal("\xC3\xA9\xF0\x9F\x98\x80\xE6\x97\xA5"));
    // Raw UTF-8 passes through unchanged.
    EXPECT_EQ(only("<http://ex/s> <http://ex/p> \"\xE6\x97\xA5\xE6\x9C\xAC\" .").o,
              literal("\xE6\x97\xA5\xE6\x9C\xAC"));
}

TEST(NQuads, KeepsLanguageTagsAsWritten) {
    EXPECT_EQ(only("<http://ex/s> <http://ex/p> \"chat\"@fr .\n").o, lang_literal("chat", "fr"));
    EXPECT_EQ(only("<http://ex/s> <http://ex/p> \"colour\"@en-GB .\n").o,
              lang_literal("colour", "en-GB"));
    EXPECT_EQ(only("<http://ex/s> <http://ex/p> \"x\"@zh-Hant-TW .\n").o,
              lang_literal("x", "zh-Hant-TW"));
}

TEST(NQuads, ReadsDatatypesAndDropsXsdString) {
    EXPECT_EQ(
        only("<http://ex/s> <http://ex/p> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .").o,
        xsd_integer(1));
    EXPECT_EQ(
        only("<http://ex/s> <http://ex/p> \"s\"^^<http://www.w3.org/2001/XMLSchema#string> .").o,
        literal("s"));
    EXPECT_EQ(only("<http://ex/s> <http://ex/p> \"\" .").o, literal(""));
}

TEST(NQuads, KeepsBlankNodeLabelsAndNamesBlankGraphs) {
    const Triple t = only("_:b1 <http://ex/p> _:a.b-c _:g1 .\n");
    EXPECT_EQ(t.s, blank("b1"));
    EXPECT_EQ(t.o, blank("a.b-c"));
    EXPECT_EQ(t.graph, std::string(kBlankGraphPrefix) + "g1");
    // A label may start with a digit; a trailing dot ends the statement, not the label.
    const Triple digits = only("_:1x <http://ex/p> _:y.\n");
    EXPECT_EQ(digits.s, blank("1x"));
    EXPECT_EQ(digits.o, blank("y"));
}

TEST(NQuads, SkipsCommentsBlankLinesAndReadsEveryEndOfLine) {
    auto parsed = parse_nquads(
        "# a comment\n"
        "\n"
        "  \t<http://ex/s>\t<http://ex/p>   \"x\"  . # after the statement\r\n"
        "<http://ex/s> <http://ex/p> \"y\" .\r"
        "<http://ex/s><http://ex/p><http://ex/o>.");
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(parsed->size(), 3u);
    EXPECT_EQ((*parsed)[0].o, literal("x"));
    EXPECT_EQ((*parsed)[1].o, literal("y"));
    EXPECT_EQ((*parsed)[2].o, iri("http://ex/o"));
    EXPECT_TRUE(parse_nquads("")->empty());
    EXPECT_TRUE(parse_nquads("# only a comment")->empty());
}

TEST(NQuads, AHashInsideAnIriOrStringIsNotAComment) {
    const Triple t = only("<http://ex/s#frag> <http://ex/p> \"# not a comment\" .");
    EXPECT_EQ(t.s, iri("http://ex/s#frag"));
    EXPECT_EQ(t.o, literal("# not a comment"));
}

TEST(NQuads, RoundTripsWhatAppendNquadsWrites) {
    const std::vector<Triple> triples = {
        make_triple(iri("http://ex/s"), iri("http://ex/p"),
                    literal("line\nbreak \"quoted\" \\ tab\t")),
        make_triple(blank("n1"), iri("http://ex/p"), lang_literal("hello", "en-US"), "http://ex/g"),
        make_triple(iri("http://ex/s"), iri("http://ex/p"), xsd_double(0.5)),
        make_triple(iri("http://ex/s"), iri("http://ex/p"), literal("\x01\x7F control")),
    };
    std::string text;
    for (const auto& t : triples) append_nquads(text, t);
    auto parsed = parse_nquads(text);
    ASSERT_TRUE(parsed) << parsed.error().message << "\n" << text;
    EXPECT_EQ(*parsed, triples);
}

TEST(NQuads, ErrorsNameLineAndColumn) {
    EXPECT_EQ(error_of("<http://ex/s> <http://ex/p> \"o\" .\n<http://ex/s> <http://ex/p> .\n"),
              "N-Quads 2:29: expected an object (an IRI, a blank node or a literal)");
    EXPECT_EQ(error_of("<http://ex/s> <http://ex/p> \"x\"\n"),
              "N-Quads 1:32: expected '.' at the end of the statement");
    EXPECT_EQ(error_of("<http://ex/s> <http://ex/p> <http://ex/o> . extra"),
              "N-Quads 1:45: expected the end of the line after '.'");
    EXPECT_EQ(error_of("\n\n<http://ex/s> <http://ex/p> \"unterminated .\n"),
              "N-Quads 3:29: string without its closing quote");
    EXPECT_EQ(error_of("<http://ex/s> <http://ex/p> \"x\"@ ."),
              "N-Quads 1:33: expected a language tag after '@'");
    EXPECT_EQ(error_of("<http://ex/s> <http://ex/p> \"\\q\" ."),
              "N-Quads 1:30: unknown escape '\\q'");
    EXPECT_NE(error_of("<http://ex/s> <http://ex/p> \"\\u00zz\" .").find("N-Quads 1:30: "),
              std::string::npos);
    EXPECT_NE(error_of("<http://ex/s> <http://ex/p> \"\\uD800\" .").find("surrogate"),
              std::string::npos);
    EXPECT_NE(error_of("<http://e x/s> <http://ex/p> \"x\" .").find("N-Quads 1:10: "),
              std::string::npos);
    EXPECT_EQ(error_of("<relative> <http://ex/p> \"x\" ."),
              "N-Quads 1:1: <relative> is not an absolute IRI");
    EXPECT_EQ(error_of("<http://ex/s> _:p \"x\" ."), "N-Quads 1:15: expected a predicate (an IRI)");
    EXPECT_EQ(error_of("\"lit\" <http://ex/p> \"x\" ."),
              "N-Quads 1:1: expected a subject (an IRI or a blank node)");
    EXPECT_NE(error_of("<http://ex/s> <http://ex/p> <http://ex/o> \"g\" .").find("graph name"),
              std::string::npos);
    EXPECT_EQ(error_of("_: <http://ex/p> \"x\" ."),
              "N-Quads 1:3: a blank node label cannot start here");
}

TEST(NQuads, RefusesQuotedTriples) {
    EXPECT_NE(error_of("<< <http://ex/s> <http://ex/p> <http://ex/o> >> <http://ex/p> \"x\" .")
                  .find("quoted triples"),
              std::string::npos);
    EXPECT_NE(
        error_of("<http://ex/s> <http://ex/p> << <http://ex/s> <http://ex/p> <http://ex/o> >> .")
            .find("1:29:"),
        std::string::npos);
}

TEST(NQuads, RefusesNulAndInvalidUtf8BeforeParsing) {
    EXPECT_EQ(error_of(std::string_view("<http://ex/s> <http://ex/p> \"a\0b\" .", 36)),
              "N-Quads: NUL byte at offset 30");
    EXPECT_EQ(error_of("<http://ex/s> <http://ex/p> \"\xC0\xAF\" .\n"),
              "N-Quads 1:30: invalid UTF-8");
}

TEST(NQuads, ParsesOneLine) {
    auto none = parse_nquads_line("   # comment", 7);
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
    auto bad = parse_nquads_line("<http://ex/s> <http://ex/p>", 7);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message.rfind("N-Quads 7:28: ", 0), 0u) << bad.error().message;
}

// Issue 16: an error quoting the line (an IRI, an unknown escape) stays valid UTF-8: the bytes
// that are not are written \xNN. parse_nquads_line does not check UTF-8 first (the CLI parses
// single terms with it).
TEST(NquadsErrors, MessagesQuotingTheLineAreValidUtf8) {
    const auto iri = parse_nquads_line("<ab\xFF> <urn:p> <urn:o> .", 3);
    ASSERT_FALSE(iri);
    EXPECT_EQ(iri.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_FALSE(base::find_invalid_utf8(iri.error().message)) << iri.error().message;
    EXPECT_NE(iri.error().message.find("<ab\\xFF>"), std::string::npos) << iri.error().message;

    const auto escape = parse_nquads("<urn:a> <urn:p> \"\\\xC3\xA9\" .\n");
    ASSERT_FALSE(escape);
    EXPECT_FALSE(base::find_invalid_utf8(escape.error().message)) << escape.error().message;
    EXPECT_NE(escape.error().message.find("\\xC3"), std::string::npos) << escape.error().message;
    EXPECT_EQ(escape.error().message.rfind("N-Quads 1:", 0), 0u) << escape.error().message;
}

// Issue 16: text that is not N-Quads is an error naming its line, whatever came before it.
TEST(NquadsErrors, JunkAfterAValidLineIsAnErrorNamingTheLine) {
    const auto junk = parse_nquads("<urn:a> <urn:b> <urn:c> .\n%%%% junk");
    ASSERT_FALSE(junk);
    EXPECT_EQ(junk.error().message.rfind("N-Quads 2:1:", 0), 0u) << junk.error().message;
    const auto word = parse_nquads("xxxxx");
    ASSERT_FALSE(word);
    EXPECT_EQ(word.error().message.rfind("N-Quads 1:1:", 0), 0u) << word.error().message;
}

}  // namespace
}  // namespace glassbox::schema
