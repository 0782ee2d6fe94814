// parse_json_variable against schema::parse_untrusted_json, the parser it stands in for: the
// same tree (value types included) or the same error, for the texts the cursor builds and for
// those it hands over.
#include "workers/llm/json_variable.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/untrusted_json.hpp"

namespace glassbox::llm {
namespace {

using nlohmann::json;

// Equal, and of the same types all the way down (5 as unsigned is == 5 as signed).
bool same_tree(const json& a, const json& b) {
    if (a.type() != b.type()) return false;
    if (a.is_object()) {
        if (a.size() != b.size()) return false;
        for (auto it = a.begin(), jt = b.begin(); it != a.end(); ++it, ++jt)
            if (it.key() != jt.key() || !same_tree(it.value(), jt.value())) return false;
        return true;
    }
    if (a.is_array()) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!same_tree(a[i], b[i])) return false;
        return true;
    }
    return a == b;
}

void expect_same(const std::string& text) {
    SCOPED_TRACE(text.substr(0, 200));
    const auto fast = parse_json_variable(text);
    const auto parsed = schema::parse_untrusted_json(text);
    ASSERT_EQ(fast.ok(), parsed.ok());
    if (parsed) {
        EXPECT_TRUE(same_tree(*fast, *parsed)) << fast->dump() << " vs " << parsed->dump();
    } else {
        EXPECT_EQ(fast.error().type, parsed.error().type);
        EXPECT_EQ(fast.error().message, parsed.error().message);
    }
}

TEST(JsonVariableTest, EdgesAndConceptsAreTheParsersTree) {
    const json edges =
        json::array({{{"id", "e1"}, {"s", "Cruz Azul FC"}, {"p", "is in country"}, {"o", "Mexico"}},
                     {{"id", "e2"}, {"s", "Zoë \"Z\"\n\\"}, {"p", "p/q"}, {"o", "😀 \u0001"}}});
    expect_same(edges.dump());
    expect_same(edges.dump(2));
    expect_same(R"(["Cruz Azul FC", "soccer team"])");
    const auto tree = parse_json_variable(edges.dump());
    ASSERT_TRUE(tree);
    EXPECT_EQ(*tree, edges);
}

TEST(JsonVariableTest, ScalarsLiteralsAndNumbersAreTheParsersToo) {
    for (const std::string text : {"0",
                                   "7",
                                   "18446744073709551615",
                                   "18446744073709551616",
                                   "-1",
                                   "-0",
                                   "1.5",
                                   "1e3",
                                   "2E-2",
                                   "01",
                                   "true",
                                   "false",
                                   "null",
                                   "  null  ",
                                   "\"\"",
                                   "\"a\\u00e9\\ud83d\\ude00\"",
                                   "[]",
                                   "{}",
                                   "[[],{}]",
                                   "[1,true,null,\"x\",{\"a\":[0]}]",
                                   "{\"a\":1,\"b\":-2,\"c\":0.5}",
                                   "\xEF\xBB\xBF[1]",
                                   "{\"a\":1,\"a\":2}",
                                   "{\"\\u0061\":1}",
                                   "{\"a\":{\"a\":{}}}"})
        expect_same(text);
}

// Fractions and exponents are built by the cursor too (the scores of an llm reply): the parser's
// doubles to the bit, and its errors beyond double's range.
TEST(JsonVariableTest, FractionsAndExponentsAreTheParsersDoubles) {
    for (const std::string text :
         {"0.0", "0e5", "0.1", "0.30000000000000004", "1.7976931348623157e308", "4.9e-324",
          "2.2250738585072014e-308", "1e400", "1e-400", "-1.5", "1.", ".5", "1e", "1e+",
          "123456789012345678901234.5", "00.5", "[0.25,1e-7,3E+2]",
          R"({"scores":[{"id":"e1","score":0.8123},{"id":"e2","score":1},{"id":"e3","score":0}]})"})
        expect_same(text);
    std::mt19937_64 random(33);
    for (int i = 0; i < 2000; ++i) {
        double d = 0.0;
        const std::uint64_t bits = random();
        std::memcpy(&d, &bits, sizeof d);
        if (!std::isfinite(d)) continue;
        expect_same(
            json::array({std::fabs(d), static_cast<double>(random() % 10'000) / 10'000.0}).dump());
    }
}

TEST(JsonVariableTest, InvalidTextGivesTheParsersError) {
    const std::string deep = std::string(300, '[') + std::string(300, ']');
    const std::string nested = std::string(100, '[') + std::string(100, ']');
    for (const std::string& text : std::vector<std::string>{
             "",         " ",           "[",     "]",     "[1,]",    "{\"a\"}", "{\"a\":}",
             "{a:1}",    "nul",         "nulls", "truex", "[1] [2]", "\"\\x\"", "\"a\x01\"",
             "\"\xFF\"", "\"\\ud800\"", "'a'",   "[NaN]", deep,      nested,    "[" + nested + "]"})
        expect_same(text);
}

TEST(JsonVariableTest, RandomTreesRoundTrip) {
    std::mt19937 random(33);
    const auto word = [&] {
        static const std::vector<std::string> pieces{"a",  "b",  " ",    "\"", "\\", "/",
                                                     "\n", "\t", "\x01", "é",  "😀"};
        std::string out;
        for (std::size_t n = random() % 6; n > 0; --n) out += pieces[random() % pieces.size()];
        return out;
    };
    std::function<json(int)> make = [&](int depth) -> json {
        switch (depth > 3 ? random() % 4 : random() % 7) {
            case 0:
                return word();
            case 1:
                return static_cast<std::uint64_t>(random() % 1000);
            case 2:
                return random() % 2 == 0;
            case 3:
                return nullptr;
            case 4: {
                json a = json::array();
                for (std::size_t n = random() % 4; n > 0; --n) a.push_back(make(depth + 1));
                return a;
            }
            default: {
                json o = json::object();
                for (std::size_t n = random() % 4; n > 0; --n) o[word()] = make(depth + 1);
                return o;
            }
        }
    };
    for (int i = 0; i < 300; ++i) {
        const json tree = make(0);
        expect_same(tree.dump());
        expect_same(tree.dump(1));
    }
}

}  // namespace
}  // namespace glassbox::llm
