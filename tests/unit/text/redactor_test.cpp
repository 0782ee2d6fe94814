// The redactor: each built-in rule with what it must and must not take, the checksums, user
// patterns and their scopes, offsets kept, and configurations refused.
#include "text/redactor.hpp"

#include <gtest/gtest.h>

#include "base/utf8.hpp"

namespace glassbox::text {
namespace {

// The texts a rule finds in `text`.
std::vector<std::string> found(std::string_view rule, std::string_view text) {
    std::vector<std::string> out;
    for (const auto& [b, e] : find_builtin(rule, text)) out.emplace_back(text.substr(b, e - b));
    return out;
}

using Texts = std::vector<std::string>;

TEST(RedactorEmail, FindsAddressesAndNotLookalikes) {
    EXPECT_EQ(found("email", "write to jane.doe+rag@example.co.uk today."),
              Texts{"jane.doe+rag@example.co.uk"});
    EXPECT_EQ(found("email", "a@b.io and x_y@mail.example.org"),
              (Texts{"a@b.io", "x_y@mail.example.org"}));
    EXPECT_TRUE(found("email", "@handle on twitter").empty());
    EXPECT_TRUE(found("email", "user@localhost").empty());
    EXPECT_TRUE(found("email", "version 1.2@3.4").empty());  // no letters in the top-level label
    EXPECT_TRUE(found("email", "a @ b.com").empty());
}

TEST(RedactorPhone, FindsInternationalAndNationalForms) {
    EXPECT_EQ(found("phone", "call +49 151 12345678 now"), Texts{"+49 151 12345678"});
    EXPECT_EQ(found("phone", "call +4915112345678"), Texts{"+4915112345678"});
    EXPECT_EQ(found("phone", "UK: +44 (0)20 7946 0958."), Texts{"+44 (0)20 7946 0958"});
    EXPECT_EQ(found("phone", "US (555) 123-4567 or 555.123.4567"),
              (Texts{"(555) 123-4567", "555.123.4567"}));
    EXPECT_EQ(found("phone", "1 555 123 4567"), Texts{"1 555 123 4567"});
    EXPECT_EQ(found("phone", "Berlin 030 1234567, mobile 0171-1234567"),
              (Texts{"030 1234567", "0171-1234567"}));
    EXPECT_EQ(found("phone", "06 12 34 56 78"), Texts{"06 12 34 56 78"});
}

TEST(RedactorPhone, LeavesOtherDigitRunsAlone) {
    EXPECT_TRUE(found("phone", "in 2024-05-01 there were 1234567 people").empty());
    EXPECT_TRUE(found("phone", "the 01.02.2024 release, pi 3.14159265").empty());
    EXPECT_TRUE(found("phone", "population 83,200,000 and ISBN 978-3-16-148410-0").empty());
    EXPECT_TRUE(found("phone", "555-123-45678").empty());  // not 3-3-4
    EXPECT_TRUE(found("phone", "+12 34").empty());         // too few digits
    EXPECT_TRUE(found("phone", "order 15112345678").empty());
}

TEST(RedactorCard, TakesLuhnValidNumbersOnly) {
    EXPECT_EQ(found("card", "card 4111 1111 1111 1111 exp"), Texts{"4111 1111 1111 1111"});
    EXPECT_EQ(found("card", "card 4111-1111-1111-1111"), Texts{"4111-1111-1111-1111"});
    EXPECT_EQ(found("card", "amex 378282246310005."), Texts{"378282246310005"});
    EXPECT_EQ(found("card", "4111 1111 1111 1111 12 27"), Texts{"4111 1111 1111 1111"});
    EXPECT_TRUE(found("card", "card 4111 1111 1111 1112").empty());  // Luhn fails
    EXPECT_TRUE(found("card", "id 123456789012").empty());           // 12 digits
    EXPECT_TRUE(found("card", "ab4111111111111111").empty());        // inside a word
}

TEST(RedactorIban, TakesMod97ValidNumbersOnly) {
    EXPECT_EQ(found("iban", "pay DE89 3704 0044 0532 0130 00 by Friday"),
              Texts{"DE89 3704 0044 0532 0130 00"});
    EXPECT_EQ(found("iban", "GB82WEST12345698765432."), Texts{"GB82WEST12345698765432"});
    EXPECT_TRUE(found("iban", "DE88 3704 0044 0532 0130 00").empty());  // check digits wrong
    EXPECT_TRUE(found("iban", "AB12 short").empty());
}

TEST(RedactorMask, KeepsTheCodePointCount) {
    EXPECT_EQ(redaction_mask("email", 12), "[email]*****");
    EXPECT_EQ(redaction_mask("email", 4), "****");
    auto redactor = Redactor::make({"email"}, {});
    ASSERT_TRUE(redactor) << redactor.error().message;
    RedactionTally tally;
    const std::string text = "Grüße an jürgen@example.de — danke";
    const auto out = redactor->redact(text, RedactionScope::kAnswer, tally);
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, "Grüße an [email]********** — danke");
    EXPECT_EQ(base::count_code_points(*out), base::count_code_points(text));
    EXPECT_EQ(base::invalid_utf8_at(*out), std::string_view::npos);
    EXPECT_EQ(tally.total(), 1U);
    EXPECT_EQ((tally.counts().at({"email", RedactionScope::kAnswer})), 1U);
}

TEST(RedactorPatterns, ApplyInTheirScopesOnly) {
    auto patterns = parse_redaction_patterns(
        R"([{"name":"account","regex":"ACC-[0-9]{8}","scope":["question","answer"]}])");
    ASSERT_TRUE(patterns) << patterns.error().message;
    auto redactor = Redactor::make({"email"}, *patterns);
    ASSERT_TRUE(redactor) << redactor.error().message;
    RedactionTally tally;
    const std::string text = "ACC-12345678 and ACC-87654321 of bob@example.com";
    const auto q = redactor->redact(text, RedactionScope::kQuestion, tally);
    ASSERT_TRUE(q);
    EXPECT_EQ(*q, "[account]*** and [account]*** of [email]********");
    const auto d = redactor->redact(text, RedactionScope::kDocuments, tally);
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, "ACC-12345678 and ACC-87654321 of [email]********");
    EXPECT_FALSE(redactor->redact("nothing here", RedactionScope::kQuestion, tally));
    EXPECT_EQ((tally.counts().at({"account", RedactionScope::kQuestion})), 2U);
    EXPECT_EQ((tally.counts().at({"email", RedactionScope::kDocuments})), 1U);
    EXPECT_FALSE(tally.counts().contains({"account", RedactionScope::kDocuments}));
    const auto e = redactor->redact_everywhere(text, RedactionScope::kOther, tally);
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, *q);
}

TEST(RedactorPatterns, RunOnBoundedPiecesOfALongText) {
    auto redactor = Redactor::make({}, {{"x", "SECRET[0-9]+", {RedactionScope::kAnswer}}});
    ASSERT_TRUE(redactor);
    std::string text;
    for (int i = 0; i < 5000; ++i) text += "word SECRET" + std::to_string(i) + "\n";
    RedactionTally tally;
    const auto out = redactor->redact(text, RedactionScope::kAnswer, tally);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->find("SECRET"), std::string::npos);
    EXPECT_EQ(out->size(), text.size());
    EXPECT_EQ(tally.total(), 5000U);
}

TEST(RedactorConfig, ParsesRulesAsJsonOrACommaList) {
    EXPECT_EQ(*parse_redaction_rules(R"(["email","card"])"), (Texts{"email", "card"}));
    EXPECT_EQ(*parse_redaction_rules("email, phone"), (Texts{"email", "phone"}));
    EXPECT_TRUE(parse_redaction_rules("")->empty());
    EXPECT_FALSE(redaction_rules_problem("email,iban"));
}

TEST(RedactorConfig, RefusesWhatCannotWork) {
    const auto unknown_rule = redaction_rules_problem(R"(["email","ssn"])");
    ASSERT_TRUE(unknown_rule);
    EXPECT_NE(unknown_rule->find("unknown rule \"ssn\""), std::string::npos);
    const auto bad_regex = redaction_patterns_problem(R"([{"name":"x","regex":"([a-z"}])");
    ASSERT_TRUE(bad_regex);
    EXPECT_NE(bad_regex->find("does not compile"), std::string::npos);
    const auto bad_scope =
        redaction_patterns_problem(R"([{"name":"x","regex":"a","scope":["questions"]}])");
    ASSERT_TRUE(bad_scope);
    EXPECT_NE(bad_scope->find("unknown scope"), std::string::npos);
    EXPECT_TRUE(redaction_patterns_problem(R"([{"name":"email","regex":"a"}])"));
    EXPECT_TRUE(redaction_patterns_problem(R"([{"name":"x","regex":"a","scop":"answer"}])"));
    EXPECT_TRUE(
        redaction_patterns_problem(R"([{"name":"x","regex":"a"},{"name":"x","regex":"b"}])"));
    EXPECT_TRUE(redaction_patterns_problem("not json"));
    EXPECT_FALSE(redaction_patterns_problem(R"([{"name":"x","regex":"a"}])"));
    EXPECT_FALSE(Redactor::from_settings("email", "[{\"name\":\"x\",\"regex\":\"(\"}]"));
}

}  // namespace
}  // namespace glassbox::text
