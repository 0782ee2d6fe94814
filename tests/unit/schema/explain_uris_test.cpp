// Run URIs: one UUID per run, patterns, recovery of the run from a URI.
#include "schema/explain_uris.hpp"

#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "base/utf8.hpp"

namespace glassbox::schema::explain {
namespace {

TEST(RunUris, GeneratesVersion4Uuids) {
    const std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        const auto run = RunUris::generate();
        EXPECT_TRUE(std::regex_match(run.uuid(), v4)) << run.uuid();
        seen.insert(run.uuid());
    }
    EXPECT_EQ(seen.size(), 1000u);
}

TEST(RunUris, Patterns) {
    const auto run = RunUris::from_uuid("0123ABCD-0000-4000-8000-00000000000F");
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->uuid(), "0123abcd-0000-4000-8000-00000000000f");
    const std::string p = "urn:glassbox:0123abcd-0000-4000-8000-00000000000f:";
    EXPECT_EQ(run->question(), p + "question");
    EXPECT_EQ(run->grounding(), p + "grounding");
    EXPECT_EQ(run->exploration(), p + "exploration");
    EXPECT_EQ(run->focus(), p + "focus");
    EXPECT_EQ(run->synthesis(), p + "synthesis");
    EXPECT_EQ(run->conclusion(), p + "conclusion");
    EXPECT_EQ(run->routing_decision(), p + "routing");
    EXPECT_EQ(run->escalation(1), p + "escalation:1");
    EXPECT_EQ(run->analysis(2), p + "analysis:2");
    EXPECT_EQ(run->observation(2), p + "observation:2");
    EXPECT_EQ(run->edge_selection(3), p + "focus:edge:3");
    EXPECT_EQ(run->retrieved_chunk(4), p + "exploration:chunk:4");
    EXPECT_EQ(run->ranked_chunk(5), p + "focus:chunk:5");
    EXPECT_EQ(run->citation(0), p + "synthesis:citation:0");
    EXPECT_EQ(run->text("answer 1"), p + "text:answer%201");
    EXPECT_EQ(worker_agent_uri("graph-rag"), "urn:glassbox:agent:worker:graph-rag");
    EXPECT_EQ(model_agent_uri("llama3:8b/q4"), "urn:glassbox:agent:model:llama3%3A8b%2Fq4");
}

TEST(RunUris, RejectsMalformedUuids) {
    EXPECT_FALSE(RunUris::from_uuid("").has_value());
    EXPECT_FALSE(RunUris::from_uuid("0123abcd-0000-4000-8000-00000000000").has_value());
    EXPECT_FALSE(RunUris::from_uuid("0123abcd-0000-4000-8000_00000000000f").has_value());
    EXPECT_FALSE(RunUris::from_uuid("0123abcg-0000-4000-8000-00000000000f").has_value());
}

TEST(RunUris, RecoversTheRunOfAUri) {
    const auto run = RunUris::generate();
    auto back = RunUris::from_uri(run.edge_selection(2));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->uuid(), run.uuid());
    EXPECT_FALSE(RunUris::from_uri(worker_agent_uri("echo")).has_value());
    EXPECT_FALSE(RunUris::from_uri("https://example.org/x").has_value());
}

TEST(RunUris, SelectionsAndOwnership) {
    const auto run = RunUris::generate();
    const auto other = RunUris::generate();
    EXPECT_TRUE(run.owns(run.focus()));
    EXPECT_FALSE(run.owns(other.focus()));
    EXPECT_TRUE(run.is_selection(run.edge_selection(0)));
    EXPECT_TRUE(run.is_selection(run.retrieved_chunk(7)));
    EXPECT_TRUE(run.is_selection(run.ranked_chunk(1)));
    EXPECT_FALSE(run.is_selection(run.focus()));
    EXPECT_FALSE(run.is_selection(run.citation(0)));
    EXPECT_FALSE(run.is_selection(run.focus() + ":edge:"));
    EXPECT_FALSE(run.is_selection(run.focus() + ":edge:1x"));
    EXPECT_FALSE(run.is_selection(other.edge_selection(0)));
}

// ---- IRIs fit for a trace ---------------------------------------------------------------------

// The parent_uri of issue 16 that rdflib's N-Triples parser rejected once exported.
const std::string kNotAnIri = "not a uri <>\"\n";

TEST(IriCheck, AcceptsAbsoluteIrisAndNamesWhatIsWrongWithOthers) {
    for (std::string_view good : {"urn:glassbox:11111111-2222-4333-8444-555555555555:routing",
                                  "https://example.org/a?b=c#d", "http://xn--r8jz45g.jp/%E3%83%91",
                                  "http://例え.jp/パス", "tag:x+y.z-1:a", "urn:x:%20"}) {
        EXPECT_FALSE(iri_problem(good)) << good << ": " << iri_problem(good).value_or("");
    }
    struct Case {
        std::string iri;
        std::string says;
    };
    for (const auto& c :
         {Case{kNotAnIri, "a space at byte 3"}, Case{"urn:a<b", "'<' at byte 5"},
          Case{"urn:a\nb", "U+000A at byte 5"}, Case{"urn:a\x7f", "U+007F"}, Case{"urn:{x}", "'{'"},
          Case{"urn:a|b", "'|'"}, Case{"urn:a^b", "'^'"}, Case{"urn:a`b", "'`'"},
          Case{"urn:a\\b", "'\\'"}, Case{"urn:a\"b", "'\"'"},
          Case{"relative/path", "not an absolute IRI"}, Case{"", "not an absolute IRI"},
          Case{"1urn:x", "not an absolute IRI"}, Case{":x", "not an absolute IRI"},
          Case{"urn:caf\xff", "not well-formed UTF-8 (at byte 7)"}}) {
        const auto why = iri_problem(c.iri);
        ASSERT_TRUE(why) << c.iri;
        EXPECT_NE(why->find(c.says), std::string::npos) << *why;
        EXPECT_FALSE(base::find_invalid_utf8(*why)) << "the reason is valid UTF-8";
    }
}

TEST(IriCheck, WritableIrisAreValidAndLeaveGoodOnesAlone) {
    EXPECT_EQ(writable_iri("https://example.org/a"), "https://example.org/a");
    EXPECT_EQ(writable_iri("http://例え.jp/パス"), "http://例え.jp/パス");
    EXPECT_EQ(writable_iri(kNotAnIri), "urn:glassbox:iri:not%20a%20uri%20%3C%3E%22%0A");
    EXPECT_EQ(writable_iri("urn:a b%"), "urn:a%20b%25") << "'%' too, so the original reads back";
    for (const std::string& bad :
         {kNotAnIri, std::string("urn:caf\xff"), std::string(""), std::string("urn:\x01")}) {
        const auto fixed = writable_iri(bad);
        EXPECT_FALSE(iri_problem(fixed)) << fixed << ": " << iri_problem(fixed).value_or("");
    }
}

}  // namespace
}  // namespace glassbox::schema::explain
