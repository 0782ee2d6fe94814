// Redaction in the one encoder of every worker's explain messages: text literals redacted by the
// scope of their predicate, the step's record of it, the error message, and both triple forms.
#include "workers/runtime/explain_redaction.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/utf8.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::runtime {
namespace {

namespace v = schema::vocab;
using text::RedactionScope;

const text::Redactor& redactor() {
    static const auto made = text::Redactor::from_settings(
        R"(["email"])", R"([{"name":"account","regex":"ACC-[0-9]{8}","scope":"answer"}])");
    return made.value();
}

schema::ExplainMessage decoded(const std::string& body) {
    auto message = schema::decode_body<schema::ExplainMessage>(body);
    EXPECT_TRUE(message) << message.error().message;
    return message ? std::move(message).value() : schema::ExplainMessage{};
}

// The literal values of `predicate` in `triples`.
std::vector<std::string> values(const std::vector<schema::Triple>& triples,
                                std::string_view predicate) {
    std::vector<std::string> out;
    for (const auto& t : triples) {
        if (t.p.is_iri() && t.p.as_iri().value == predicate && t.o.is_literal())
            out.push_back(t.o.as_literal().value);
    }
    return out;
}

TEST(ExplainRedaction, PredicatesHaveTheirScopes) {
    EXPECT_EQ(redaction_scope_of(v::kQuery), RedactionScope::kQuestion);
    EXPECT_EQ(redaction_scope_of(v::kArguments), RedactionScope::kQuestion);
    EXPECT_EQ(redaction_scope_of(v::kAnswerText), RedactionScope::kAnswer);
    EXPECT_EQ(redaction_scope_of(v::kObservationText), RedactionScope::kObservations);
    EXPECT_EQ(redaction_scope_of(v::kRdfObject), RedactionScope::kDocuments);
    EXPECT_EQ(redaction_scope_of(v::kRequestId), RedactionScope::kOther);
}

TEST(ExplainRedaction, BuiltStepIsRedactedAndRecordsIt) {
    const auto run = schema::explain::RunUris::generate();
    const std::string answer = "Mail ana@example.org about ACC-12345678.";
    ExplainStep step;
    step.session = run.question();
    step.explain_id = run.synthesis();
    step.build = [&](schema::TripleSink& sink) {
        schema::explain::synthesis(sink, run, {}, {answer, std::nullopt}, {{5, 20, {}}});
        sink.literal(run.synthesis(), v::kQuery, "ask ana@example.org about ACC-12345678");
    };
    const auto body = build_explain_body(step, 0, "graph-rag", "w-1", &redactor());
    EXPECT_EQ(body.find("ana@example.org"), std::string::npos);
    const auto message = decoded(body);
    const auto answers = values(message.explain_triples, v::kAnswerText);
    ASSERT_EQ(answers.size(), 1U);
    EXPECT_EQ(answers[0], "Mail [email]******** about [account]***.");
    // Same length in code points: the citation's span [5, 20) still points at the address.
    EXPECT_EQ(base::count_code_points(answers[0]), base::count_code_points(answer));
    // The pattern is for answers only: the question keeps the account number.
    EXPECT_EQ(values(message.explain_triples, v::kQuery),
              std::vector<std::string>{"ask [email]******** about ACC-12345678"});
    // The record: one node per rule and scope, on the step.
    std::vector<std::string> records;
    for (const auto& t : message.explain_triples) {
        if (t.p.as_iri().value != v::kRedactionProperty) continue;
        EXPECT_EQ(t.s.as_iri().value, run.synthesis());
        const auto node = t.o.as_iri().value;
        std::string record;
        for (const auto& u : message.explain_triples) {
            if (!u.s.is_iri() || u.s.as_iri().value != node || !u.o.is_literal()) continue;
            record += u.o.as_literal().value + " ";
        }
        records.push_back(record);
    }
    std::sort(records.begin(), records.end());
    EXPECT_EQ(records, (std::vector<std::string>{"account answer 1 ", "email answer 1 ",
                                                 "email question 1 "}));
}

TEST(ExplainRedaction, TripleListsAndErrorsAreRedactedToo) {
    const auto run = schema::explain::RunUris::generate();
    ExplainStep step;
    step.session = run.question();
    step.explain_id = run.question();
    step.state = ExplainState::kError;
    step.error = base::make_error(base::ErrorType::kInvalidRequest,
                                  "no answer for bob@example.com (ACC-00000001)");
    step.triples.push_back(schema::make_triple(schema::iri(run.question()), schema::iri(v::kQuery),
                                               schema::literal("who is bob@example.com"),
                                               std::string(v::kRetrievalGraph)));
    const auto body = build_explain_body(step, 3, "agent", "w-1", &redactor());
    EXPECT_EQ(body.find("bob@example.com"), std::string::npos);
    EXPECT_EQ(body.find("ACC-00000001"), std::string::npos);
    const auto message = decoded(body);
    ASSERT_TRUE(message.error);
    EXPECT_EQ(message.error->message, "no answer for [email]******** ([account]***)");
    EXPECT_EQ(values(message.explain_triples, v::kQuery),
              std::vector<std::string>{"who is [email]********"});
    EXPECT_EQ(values(message.explain_triples, v::kRedactionRule).size(), 3U);
    // Without rules the body is what it always was.
    const text::Redactor none;
    EXPECT_EQ(build_explain_body(step, 3, "agent", "w-1", nullptr),
              build_explain_body(step, 3, "agent", "w-1", &none));
    EXPECT_NE(build_explain_body(step, 3, "agent", "w-1").find("bob@example.com"),
              std::string::npos);
}

}  // namespace
}  // namespace glassbox::runtime
