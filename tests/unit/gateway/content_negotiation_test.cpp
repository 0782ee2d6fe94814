// Accept read as RFC 9110 §12.5.1 reads it (gateway/content_negotiation.hpp), and the checks
// every route makes alike of names and questions (gateway/request_checks.hpp).
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/content_negotiation.hpp"
#include "gateway/request_checks.hpp"

namespace glassbox::gateway {
namespace {

// The POST /api/v1/query choice: JSON first, then SSE.
constexpr std::string_view kQuery[] = {"application/json", "text/event-stream"};
// The GET /api/v1/traces/{id} choice.
constexpr std::string_view kTrace[] = {"application/json", "text/turtle", "application/n-triples",
                                       "application/n-quads", "application/ld+json"};
constexpr std::string_view kMetrics[] = {"text/plain; version=0.0.4; charset=utf-8"};

// The media type `accept` picks of `offered`, or "406".
std::string chosen(std::string_view accept, std::span<const std::string_view> offered = kQuery) {
    const auto index = preferred_media_type(accept, offered);
    return index ? std::string(offered[*index]) : "406";
}

using AcceptAndChoice = std::pair<std::string_view, std::string_view>;

// For each case, the media type its Accept header picks of `offered` ("406": none).
void expect_chosen(std::initializer_list<AcceptAndChoice> cases,
                   std::span<const std::string_view> offered = kQuery) {
    for (const auto& [accept, choice] : cases) EXPECT_EQ(chosen(accept, offered), choice) << accept;
}

TEST(ContentNegotiation, NoOrAnEmptyAcceptTakesTheRoutesFirstType) {
    expect_chosen(
        {{"", "application/json"}, {"  \t ", "application/json"}, {" , ,", "application/json"}});
    EXPECT_EQ(chosen("", kTrace), "application/json");
}

TEST(ContentNegotiation, TypesSubtypesAndParameterNamesAreCaseInsensitive) {
    expect_chosen({
        {"TEXT/EVENT-STREAM", "text/event-stream"},
        {"Text/Event-Stream", "text/event-stream"},
        {"application/json;Q=0, text/event-stream", "text/event-stream"},
    });
    expect_chosen({{"text/turtle;CHARSET=UTF-8", "text/turtle"},
                   {"Application/N-Quads", "application/n-quads"}},
                  kTrace);
}

TEST(ContentNegotiation, AZeroWeightInAnySpellingExcludes) {
    for (const char* zero : {"0", "0.", "0.0", "0.00", "0.000", "00", "0.0000"}) {
        const std::string accept =
            std::string("application/json;q=") + zero + ", text/event-stream";
        EXPECT_EQ(chosen(accept), "text/event-stream") << accept;
        EXPECT_EQ(chosen(std::string("text/event-stream;q=") + zero), "406") << zero;
    }
    EXPECT_EQ(chosen("application/json; q=0 , text/event-stream ; q=0.001"), "text/event-stream");
    // Positive weights never round to zero.
    EXPECT_EQ(chosen("text/event-stream;q=0.0001"), "text/event-stream");
    EXPECT_EQ(chosen("*/*;q=0"), "406");
    EXPECT_EQ(chosen("*/*;q=0", kTrace), "406");
}

TEST(ContentNegotiation, TheHighestWeightWins) {
    expect_chosen({
        {"application/json;q=0.5, text/event-stream;q=0.9", "text/event-stream"},
        {"application/json;q=0.9, text/event-stream;q=0.5", "application/json"},
        {"text/event-stream;q=0.5, application/json;q=0.501", "application/json"},
        {"application/json;q=1.0, text/event-stream;q=1.000", "application/json"},
        {"text/event-stream;q=1, application/json;q=0.999", "text/event-stream"},
        // Java's default Accept: a lone * and weights without their leading 0.
        {"text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", "application/json"},
    });
    EXPECT_EQ(chosen("text/turtle;q=0.8, application/n-triples", kTrace), "application/n-triples");
}

TEST(ContentNegotiation, WildcardsMatchAndTheMostSpecificRangeGivesTheWeight) {
    expect_chosen({
        {"*/*", "application/json"},
        {"text/*", "text/event-stream"},
        {"application/*", "application/json"},
        // The exact range beats the wildcard that would also match: SSE is excluded by its own
        // range.
        {"text/*, text/event-stream;q=0", "406"},
        {"*/*;q=0, text/event-stream", "text/event-stream"},
        {"*/*;q=0.1, application/json;q=0", "text/event-stream"},
    });
    EXPECT_EQ(chosen("text/*", kTrace), "text/turtle");
    // RFC 9110's own example: text/plain;format=flowed is more specific than text/plain.
    constexpr std::string_view kFlowed[] = {"text/plain; format=flowed",
                                            "text/plain; format=fixed"};
    EXPECT_EQ(chosen("text/*;q=0.3, text/plain;q=0.7, text/plain;format=flowed, "
                     "text/plain;format=fixed;q=0.4",
                     kFlowed),
              "text/plain; format=flowed");
    EXPECT_EQ(chosen("text/plain;format=flowed;q=0.1, text/plain;q=0.7", kFlowed),
              "text/plain; format=fixed");
    // Equal weights: the range naming the type beats a wildcard, whatever the route's order.
    EXPECT_EQ(chosen("*/*, text/event-stream"), "text/event-stream");
    EXPECT_EQ(chosen("text/event-stream, */*"), "text/event-stream");
    EXPECT_EQ(chosen("application/json, text/*"), "application/json");
    // A browser's navigation: everything through */*, so the route's first.
    EXPECT_EQ(chosen("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", kTrace),
              "application/json");
}

TEST(ContentNegotiation, ATypeTheRouteCannotServeIsNotAcceptable) {
    EXPECT_EQ(chosen("image/png"), "406");
    EXPECT_EQ(chosen("image/*, text/html"), "406");
    EXPECT_EQ(chosen("application/xml", kTrace), "406");
    EXPECT_EQ(chosen("text/event-stream", kTrace), "406");
    EXPECT_EQ(chosen("application/json", std::span<const std::string_view>()), "406");
}

TEST(ContentNegotiation, RangeParametersMustBeTheTypesButCharsetIsUtf8) {
    EXPECT_EQ(chosen("application/json; charset=utf-8"), "application/json");
    EXPECT_EQ(chosen("application/json; charset=\"UTF-8\""), "application/json");
    EXPECT_EQ(chosen("application/json; charset=iso-8859-1"), "406");
    EXPECT_EQ(chosen("application/json; profile=x"), "406");
    // What Prometheus sends: the text format's version must be the one served.
    const char* prometheus =
        "application/openmetrics-text;version=1.0.0;q=0.5,application/"
        "openmetrics-text;version=0.0.1;q=0.4,"
        "text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
    EXPECT_EQ(chosen(prometheus, kMetrics), std::string(kMetrics[0]));
    EXPECT_EQ(chosen("text/plain;version=1.0.0", kMetrics), "406");
    EXPECT_EQ(chosen("text/plain;VERSION=0.0.4", kMetrics), std::string(kMetrics[0]));
}

TEST(ContentNegotiation, MalformedRangesAreLeftOutAndNoneLeftAcceptsAnything) {
    EXPECT_EQ(
        parse_accept(
            "text, /json, text/, a/b/c, te xt/plain, */json, text/plain;q=2, text/plain;q=x, "
            "text/plain;q=-1, text/plain;q=, text/plain;q=1.5, text/plain;foo, text/plain;a=\"open")
            .size(),
        0u);
    EXPECT_EQ(chosen("garbage"), "application/json");
    EXPECT_EQ(chosen("text/event-stream;q=2"), "application/json");
    // A bad range does not spoil the good ones beside it.
    EXPECT_EQ(chosen("text/event-stream;q=2, image/png"), "406");
    EXPECT_EQ(chosen("nonsense, text/event-stream"), "text/event-stream");
}

TEST(ContentNegotiation, ParsesParametersQuotedStringsAndAcceptExtensions) {
    const auto ranges = parse_accept(
        "Text/Plain ; Format=\"a, b;c\\\"d\" ; q=0.5 ; ext=1, application/json;;, "
        "*/*;q=0.25;level=2");
    ASSERT_EQ(ranges.size(), 3u);
    EXPECT_EQ(ranges[0].type, "text");
    EXPECT_EQ(ranges[0].subtype, "plain");
    ASSERT_EQ(ranges[0].parameters.size(), 1u) << "what follows q is accept-ext, not a parameter";
    EXPECT_EQ(ranges[0].parameters[0].first, "format");
    EXPECT_EQ(ranges[0].parameters[0].second, "a, b;c\"d");
    EXPECT_EQ(ranges[0].weight, 500);
    EXPECT_EQ(ranges[1].subtype, "json");
    EXPECT_TRUE(ranges[1].parameters.empty());
    EXPECT_EQ(ranges[1].weight, 1000);
    EXPECT_EQ(ranges[2].type, "*");
    EXPECT_EQ(ranges[2].weight, 250);
}

std::vector<std::string> names(std::initializer_list<const char*> list) {
    return {list.begin(), list.end()};
}

TEST(RequestChecks, OnlyKnownNamesPassAndAnUnknownOneIsNamedWithTheAcceptedOnes) {
    constexpr std::string_view kAccepted[] = {"kind", "limit"};
    EXPECT_TRUE(only_known("parameter", names({}), kAccepted));
    EXPECT_TRUE(only_known("parameter", names({"limit", "kind"}), kAccepted));
    const auto unknown = only_known("parameter", names({"kind", "colour"}), kAccepted);
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_EQ(unknown.error().message,
              "unknown parameter \"colour\" (this route takes kind, limit)");
    const auto repeated = only_known("parameter", names({"limit", "limit"}), kAccepted);
    ASSERT_FALSE(repeated);
    EXPECT_EQ(repeated.error().message,
              "repeated parameter \"limit\" (this route takes kind, limit)");
    const auto none = only_known("parameter", names({"x"}), std::span<const std::string_view>());
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().message, "unknown parameter \"x\" (this route takes none)");
    const auto field = only_known_fields(nlohmann::json{{"kind", 1}, {"\x01odd", 2}}, kAccepted);
    ASSERT_FALSE(field);
    EXPECT_EQ(field.error().message, "unknown field \"\\x01odd\" (this route takes kind, limit)");
    EXPECT_TRUE(only_known_fields(nlohmann::json{{"limit", 1}}, kAccepted));
}

TEST(RequestChecks, AQuestionOfWhiteSpaceIsBlank) {
    for (const char* blank :
         {"", " ", "   ", "\t\n\r\v\f", "\xC2\xA0", "\xE3\x80\x80 \xE2\x80\x83", "\xE2\x80\xA8"})
        EXPECT_TRUE(is_blank(blank)) << blank;
    for (const char* text : {"a", "  a  ", "\xC2\xA0x", "\xE2\x80\x8B", "?", "\xC3\xA9"})
        EXPECT_FALSE(is_blank(text)) << text;
}

}  // namespace
}  // namespace glassbox::gateway
