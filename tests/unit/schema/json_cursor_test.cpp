// JsonCursor's strings read 8 bytes at a time between quotes, backslashes and control bytes: at
// every position within a word, what it accepts and the value it gives agree with nlohmann.
#include "schema/json_cursor.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace glassbox::schema {
namespace {

// What nlohmann makes of `token` (a JSON string token): its value, or nullopt when it refuses it.
std::optional<std::string> nlohmann_value(const std::string& token) {
    const auto parsed = nlohmann::json::parse(token, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_string()) return std::nullopt;
    return parsed.get<std::string>();
}

std::optional<std::string> cursor_value(const std::string& token) {
    JsonCursor cursor(token);
    std::string value;
    if (!cursor.string(value) || !cursor.at_end()) return std::nullopt;
    return value;
}

TEST(JsonCursorString, EachSpecialByteAtEachPositionOfAWord) {
    const std::vector<std::string> specials{"\"",   "\\\"",     "\\\\", "\\n",  "\\u00e9",
                                            "\x01", "\x1f",     " ",    "\x7f", "\xc3\xa9",
                                            "\xc3", "\xe2\x82", "\xff", "\\x",  "\xf0\x9f\x93\x9a"};
    for (const auto& special : specials) {
        for (std::size_t before = 0; before < 20; ++before) {
            for (std::size_t after : {0, 1, 7, 8, 9, 17}) {
                const std::string token =
                    "\"" + std::string(before, 'a') + special + std::string(after, 'b') + "\"";
                EXPECT_EQ(cursor_value(token), nlohmann_value(token))
                    << "special " << special << " after " << before << " bytes";
            }
        }
    }
}

TEST(JsonCursorString, RandomStringsAgreeWithNlohmann) {
    const std::vector<std::string> pieces{"a",
                                          "Zz0",
                                          "urn:kg:",
                                          "\\\"",
                                          "\\\\",
                                          "\\/",
                                          "\\u0041",
                                          "\\ud83d\\udcda",
                                          "\\ud83d",
                                          "\xc3\xa9",
                                          "\xe2\x82\xac",
                                          "\xf0\x9f\x93\x9a",
                                          "\xc3",
                                          "\x80",
                                          "\x1f",
                                          "\t",
                                          "\"",
                                          " ",
                                          "~",
                                          "\x7f"};
    std::mt19937_64 rng(33);
    for (int i = 0; i < 20'000; ++i) {
        std::string token = "\"";
        const auto n = rng() % 24;
        for (std::size_t k = 0; k < n; ++k) {
            // Mostly plain text, as IRIs and labels are, so the 8-byte steps are taken.
            token += rng() % 4 != 0
                         ? std::string(1 + rng() % 12, static_cast<char>('c' + rng() % 20))
                         : pieces[rng() % pieces.size()];
        }
        token += '"';
        EXPECT_EQ(cursor_value(token), nlohmann_value(token)) << token;
    }
}

TEST(JsonCursorString, AStringCutShortIsRefused) {
    for (std::size_t n = 0; n < 30; ++n) {
        const std::string token = "\"" + std::string(n, 'x');
        EXPECT_EQ(cursor_value(token), std::nullopt) << n;
    }
}

}  // namespace
}  // namespace glassbox::schema
