// The one UTF-8 validator: well-formed text passes; every ill-formed shape of Unicode §3.9's
// table (overlong forms, surrogates, above U+10FFFF, truncated and stray bytes) is found at its
// offset.
#include "base/utf8.hpp"

#include <gtest/gtest.h>

namespace glassbox::base {
namespace {

TEST(Utf8, WellFormedTextPasses) {
    EXPECT_FALSE(find_invalid_utf8(""));
    EXPECT_FALSE(find_invalid_utf8("plain ASCII, longer than one eight-byte word"));
    EXPECT_FALSE(find_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
    EXPECT_FALSE(find_invalid_utf8("\xED\x9F\xBF"));      // U+D7FF, just below the surrogates
    EXPECT_FALSE(find_invalid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
    EXPECT_EQ(invalid_utf8_at("ok"), std::string_view::npos);
}

TEST(Utf8, IllFormedShapesAreFoundAtTheirOffset) {
    EXPECT_EQ(find_invalid_utf8("ab\xC0\xAF"), 2u);        // overlong '/'
    EXPECT_EQ(find_invalid_utf8("\xE0\x80\xAF"), 0u);      // overlong, three bytes
    EXPECT_EQ(find_invalid_utf8("\xF0\x80\x80\xAF"), 0u);  // overlong, four bytes
    EXPECT_EQ(find_invalid_utf8("x\xED\xA0\x80"), 1u);     // a surrogate (U+D800)
    EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
    EXPECT_EQ(find_invalid_utf8("abc\xC3"), 3u);           // truncated
    EXPECT_EQ(find_invalid_utf8("\x80"), 0u);              // a stray continuation byte
    EXPECT_EQ(find_invalid_utf8("12345678\xFF"), 8u);      // after the eight-byte fast path
    EXPECT_EQ(invalid_utf8_at("ok\xFE"), 2u);
}

TEST(Utf8, CountsAndAppendsCodePoints) {
    EXPECT_EQ(count_code_points("caf\xC3\xA9"), 4u);
    std::string out;
    append_utf8(out, 0x41);
    append_utf8(out, 0xE9);
    append_utf8(out, 0x20AC);
    append_utf8(out, 0x1F600);
    EXPECT_EQ(out, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    EXPECT_FALSE(find_invalid_utf8(out));
}

// Issue 30: a stored name is cut to a bound; the cut never splits a character.
TEST(Utf8, APrefixEndsOnACharacterBoundary) {
    const std::string text = "caf\xC3\xA9\xE2\x82\xAC";  // c a f é €: bytes 3-4 é, 5-7 €
    EXPECT_EQ(utf8_prefix(text, 100), text);
    EXPECT_EQ(utf8_prefix(text, 8), text);
    EXPECT_EQ(utf8_prefix(text, 7), "caf\xC3\xA9") << "inside the euro sign";
    EXPECT_EQ(utf8_prefix(text, 6), "caf\xC3\xA9");
    EXPECT_EQ(utf8_prefix(text, 5), "caf\xC3\xA9");
    EXPECT_EQ(utf8_prefix(text, 4), "caf") << "inside the e acute";
    EXPECT_EQ(utf8_prefix(text, 0), "");
    EXPECT_EQ(utf8_prefix("\xF0\x9F\x98\x80", 3), "");
    EXPECT_FALSE(find_invalid_utf8(utf8_prefix(text, 7)));
}

// Issue 16: error texts quote input; what they quote must come out valid UTF-8.
TEST(Utf8, PrintableEscapesIllFormedBytesAndControlsOnly) {
    EXPECT_EQ(printable_utf8("caf\xC3\xA9 <urn:a>\tb\nc"), "caf\xC3\xA9 <urn:a>\tb\nc");
    EXPECT_EQ(printable_utf8("x\xFFy"), "x\\xFFy");
    EXPECT_EQ(printable_utf8("\\\xC3"), "\\\\xC3") << "a lead byte cut off at the end";
    EXPECT_EQ(printable_utf8("a\x01\x7F"), "a\\x01\\x7F");
    EXPECT_EQ(printable_utf8("\xED\xA0\x80"), "\\xED\\xA0\\x80") << "a surrogate, byte by byte";
    const std::string once = printable_utf8("\xFF\x02\xE2\x82");
    EXPECT_FALSE(find_invalid_utf8(once));
    EXPECT_EQ(printable_utf8(once), once);
}

}  // namespace
}  // namespace glassbox::base
