// Sampling in the trace store (docs/traces.md, "Sampling"): the deterministic rule, which runs a
// pass keeps whole and which it summarises (with their sub-runs), what a summary keeps and shows,
// its export, texts and bytes, runs too young or still running, pins and evaluations before and
// after the pass, and the counts in stats.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "schema/nquads.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/sampling.hpp"

namespace glassbox::trace::testing {
namespace {

using nlohmann::json;
using schema::TraceStatus;
using std::chrono::milliseconds;
namespace v = schema::vocab;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms
constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kNow = kT0 + 48 * kHour;
constexpr std::int64_t kAfterMs = 10 * kMinute;

// A run's UUID whose 56 rightmost bits start with hex digit `high` (>= 8: sampled in at 0.5).
std::string uuid_with(int n, char high) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "00000000-0000-4000-80%c%x-%012x", high, n % 16, n + 1);
    return buffer;
}

constexpr std::size_t kChunks = 120;

// A long text unique to `seed` (over StoreConfig::text_threshold: kept in `texts`), over a page.
std::string long_text(const std::string& seed) {
    std::string out;
    std::uint64_t x = std::hash<std::string>{}(seed) | 1;
    while (out.size() < 40'000) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out += static_cast<char>('a' + x % 26);
    }
    return out;
}

// A document-RAG-like run: a Question, an Exploration of two chunks, a Focus ranking both (the
// second with a long reasoning, kept in `texts`), a Synthesis by a model citing the first.
struct RichRun {
    explain::RunUris uris;
    std::string service;
    std::string question;
    std::int64_t started;
    std::optional<std::string> parent;

    std::string session() const { return uris.question(); }
    std::string document() const { return "https://docs.example/" + uris.uuid() + "/doc"; }

    schema::ExplainMessage message(std::uint64_t seq, std::vector<schema::Triple> triples,
                                   std::string explain_id) const {
        schema::ExplainMessage m;
        m.session = session();
        m.seq = seq;
        m.service = service;
        m.worker = service + "-test/0";
        m.parent_uri = seq == 0 ? parent : std::nullopt;
        m.explain_id = std::move(explain_id);
        m.explain_triples = std::move(triples);
        return m;
    }
    explain::StepInfo step(std::int64_t at_ms) const {
        explain::StepInfo info;
        info.generated_at = at(at_ms);
        info.duration = milliseconds{3};
        return info;
    }
    std::vector<schema::ExplainMessage> messages(TraceStatus status = TraceStatus::kComplete,
                                                 bool escalate = false) const {
        std::vector<schema::ExplainMessage> out;
        out.push_back(message(
            0,
            explain::question(uris, question, at(started), explain::worker_agent_uri(service),
                              parent ? std::optional<std::string_view>{*parent} : std::nullopt),
            session()));
        // Many chunks: the exploration's blob spans pages, which its summary gives back.
        std::vector<explain::RetrievedChunk> chunks(kChunks);
        for (std::size_t i = 0; i < kChunks; ++i) {
            chunks[i].source.chunk = document() + "#c" + std::to_string(i);
            chunks[i].source.document = document();
            chunks[i].score = 0.9 - 0.1 * static_cast<double>(i);
            chunks[i].data_tier = 2;
            chunks[i].vector_rank = i + 1;
        }
        out.push_back(message(1, explain::document_exploration(uris, step(started + 2), chunks),
                              uris.exploration()));
        std::vector<explain::RankedChunk> ranked{
            {0, 0.8, "it names the capital"},
            {1, 0.2, "long reasoning " + uris.uuid() + long_text(uris.uuid())}};
        out.push_back(
            message(2, explain::document_focus(uris, step(started + 4), ranked), uris.focus()));
        auto synth = step(started + 8);
        synth.model = "gpt-test";
        synth.input_tokens = 120;
        synth.output_tokens = 7;
        auto triples = explain::synthesis(
            uris, synth, explain::StoredText{"Paris is the capital.", std::nullopt},
            {explain::Citation{0, 5, {uris.ranked_chunk(0)}}},
            explain::ShortAnswer{"Paris", {uris.ranked_chunk(0)}});
        std::uint64_t seq = 3;
        if (escalate) {
            explain::EscalationInfo info;
            info.reason = "low relevance";
            info.relevance = 0.1;
            info.next_engine = "graph-rag";
            out.push_back(message(seq++, explain::escalation(uris, 0, step(started + 6), info),
                                  uris.escalation(0)));
        }
        const auto tail = explain::trace_end(uris, at(started + 10), status);
        triples.insert(triples.end(), tail.begin(), tail.end());
        auto end = message(seq, std::move(triples), uris.synthesis());
        end.end_of_trace = true;
        end.trace_status = status;
        if (status == TraceStatus::kError)
            end.error = base::make_error(base::ErrorType::kInternal, "boom");
        out.push_back(std::move(end));
        return out;
    }
};

class SamplingTest : public StoreTest {
protected:
    RichRun add(const std::string& uuid, const std::string& question, std::int64_t started,
                TraceStatus status = TraceStatus::kComplete, bool escalate = false,
                std::optional<std::string> parent = std::nullopt,
                const std::string& service = "document-rag") {
        RichRun run{*explain::RunUris::from_uuid(uuid), service, question, started,
                    std::move(parent)};
        store(run.messages(status, escalate), started + 20);
        return run;
    }
    SampleCounts sample(double fraction, std::int64_t now = kNow) {
        SampleRequest request;
        request.fraction = fraction;
        request.after = milliseconds{kAfterMs};
        request.batch_traces = 4;  // several batches
        request.now = at(now);
        auto counts = store_->sample(request);
        EXPECT_TRUE(counts.ok()) << counts.error().describe();
        return counts.ok() ? *counts : SampleCounts{};
    }
    json show(const std::string& session) {
        auto shown = store_->show(session, at(kNow));
        EXPECT_TRUE(shown.ok()) << shown.error().describe();
        return shown.ok() ? *shown : json::object();
    }
    // The predicates of a shown run's own triples (JSON terms: {"t": "i", "i": IRI}).
    static std::multiset<std::string> predicates(const json& shown) {
        std::multiset<std::string> out;
        for (const auto& event : shown["events"])
            for (const auto& t : event["triples"]) out.insert(t["p"]["i"].get<std::string>());
        return out;
    }
    static std::size_t triple_count(const json& shown) {
        std::size_t n = 0;
        for (const auto& event : shown["events"]) n += event["triples"].size();
        return n;
    }
    // Whether some triple of the shown run has predicate `p` and an object whose value is `o`.
    static bool has(const json& shown, std::string_view p, const std::string& o) {
        for (const auto& event : shown["events"])
            for (const auto& t : event["triples"])
                if (t["p"]["i"] == p && t["o"].value(t["o"].contains("i") ? "i" : "v", "") == o)
                    return true;
        return false;
    }
    std::string exported(std::int64_t started) {
        std::string nquads;
        auto counts = store_->export_nquads(started, started + 1, [&](std::string_view lines) {
            nquads += lines;
            return true;
        });
        EXPECT_TRUE(counts.ok()) << counts.error().describe();
        return nquads;
    }
    json stats() {
        auto s = store_->stats(at(kNow));
        EXPECT_TRUE(s.ok()) << s.error().describe();
        return s.ok() ? *s : json::object();
    }
};

GLASSBOX_TRACE_BACKENDS(SamplingTest);

TEST(SampledInTest, FollowsTheTraceIdRatioRule) {
    const auto uri = [](const std::string& uuid) {
        return explain::RunUris::from_uuid(uuid)->question();
    };
    // R >= (1 - p) * 2^56: the high digit of R decides at 0.5.
    EXPECT_TRUE(sampled_in(uri(uuid_with(1, '8')), 0.5));
    EXPECT_TRUE(sampled_in(uri(uuid_with(2, 'f')), 0.5));
    EXPECT_FALSE(sampled_in(uri(uuid_with(3, '7')), 0.5));
    EXPECT_FALSE(sampled_in(uri(uuid_with(4, '0')), 0.5));
    // A run kept at a fraction is kept at every larger one; 1 keeps all, 0 none.
    for (int n = 0; n < 64; ++n) {
        const auto run = explain::RunUris::generate().question();
        bool kept = false;
        for (const double p : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
            const bool now_kept = sampled_in(run, p);
            EXPECT_TRUE(!kept || now_kept) << run << " at " << p;
            kept = now_kept;
        }
        EXPECT_TRUE(sampled_in(run, 1.0));
        EXPECT_FALSE(sampled_in(run, 0.0));
    }
    // The same id gives the same answer (any process); a URI naming no run is kept.
    EXPECT_EQ(sampled_in(uri(uuid_with(5, '9')), 0.3), sampled_in(uri(uuid_with(5, '9')), 0.3));
    EXPECT_TRUE(sampled_in("https://example.org/not-a-run", 0.0));
}

TEST_P(SamplingTest, KeepsErrorsEscalationsEvaluatedPinnedAndSummarisesTheRest) {
    std::map<std::string, std::string> expected;  // session -> decision
    std::vector<RichRun> ordinary;
    std::int64_t t = kT0;
    const auto next = [&] { return t += kMinute; };
    const auto error = add(uuid_with(0, '1'), "fails", next(), TraceStatus::kError);
    expected[error.session()] = "error";
    const auto routed =
        add(uuid_with(1, '2'), "escalates", next(), TraceStatus::kComplete, true, {}, "query");
    expected[routed.session()] = "escalation";
    const auto evaluated = add(uuid_with(2, '3'), "evaluated", next());
    expected[evaluated.session()] = "evaluated";
    const auto pinned = add(uuid_with(3, '4'), "pinned", next());
    expected[pinned.session()] = "pinned";
    for (int n = 0; n < 12; ++n) {
        const char high = "19a2b3c4d5e6"[n];
        ordinary.push_back(add(uuid_with(10 + n, high), "ordinary " + std::to_string(n), next()));
        const bool in = high >= '8';
        EXPECT_EQ(sampled_in(ordinary.back().session(), 0.5), in);
        expected[ordinary.back().session()] = in ? "sampled" : "summarised";
    }
    // A sub-run of a summarised run (ordinary[0]) follows it, sampled-in digit or not.
    const auto sub = add(uuid_with(40, 'f'), "sub-run", t + 1, TraceStatus::kComplete, false,
                         ordinary[0].uris.synthesis(), "graph-rag");
    // Too young (ended 5 minutes ago) and still running: not touched.
    const auto young = add(uuid_with(41, '1'), "young", kNow - 5 * kMinute);
    RichRun running{*explain::RunUris::from_uuid(uuid_with(42, '1')), "document-rag", "running",
                    kNow - 30 * kMinute, std::nullopt};
    store({running.messages().front()}, kNow - kMinute);

    ASSERT_TRUE(store_->pin(pinned.session(), true).ok());
    ASSERT_TRUE(
        store_
            ->evaluate(
                evaluated.session(),
                schema::TraceEvaluation{
                    evaluated.uris.uuid(), "set", "q1", {"Paris"}, true, true, 1.0, 1.0, 0.9, ""},
                at(kNow))
            .ok());
    std::map<std::string, std::size_t> before;
    std::map<std::string, std::string> nquads_before;
    std::map<std::string, json> tokens_before;
    std::map<std::string, json> questions_before;
    for (const auto& [session, decision] : expected) {
        const auto shown = show(session);
        before[session] = triple_count(shown);
        tokens_before[session] = shown["session"]["input_tokens"];
        questions_before[session] = shown["session"]["question"];
        EXPECT_GE(tokens_before[session].get<std::int64_t>(), 120);
    }
    nquads_before[ordinary[0].session()] = exported(ordinary[0].started);
    const auto texts_before = stats()["texts"].get<std::int64_t>();
    const auto bytes_before = store_->live_bytes().value();

    const auto counts = sample(0.5);
    EXPECT_EQ(counts.error, 1);
    EXPECT_EQ(counts.escalation, 1);
    EXPECT_EQ(counts.evaluated, 1);
    EXPECT_EQ(counts.pinned, 1);
    EXPECT_EQ(counts.sampled, 6);
    EXPECT_EQ(counts.summarised, 6);
    EXPECT_EQ(counts.sessions, 7) << "six runs and the sub-run";
    EXPECT_GT(counts.triples, 0);
    EXPECT_EQ(counts.texts, 7) << "each summarised run's long reasoning";
    EXPECT_LT(counts.bytes_after, counts.bytes_before);
    EXPECT_LT(store_->live_bytes().value(), bytes_before);
    EXPECT_EQ(stats()["texts"].get<std::int64_t>(), texts_before - 7);

    for (const auto& [session, decision] : expected) {
        const auto shown = show(session);
        const bool summary = decision == "summarised";
        EXPECT_EQ(shown["session"].value("summary", false), summary) << session << decision;
        if (!summary) {
            EXPECT_EQ(triple_count(shown), before[session]) << "kept whole: " << decision;
            continue;
        }
        EXPECT_LT(triple_count(shown), before[session]);
        EXPECT_TRUE(schema::decode<schema::TraceDetail>(shown).ok());
        // What a summary keeps: question, answer, short answer, sources, timings, tokens, model.
        const auto p = predicates(shown);
        for (const auto kept :
             {v::kQuery, v::kAnswerText, v::kShortAnswer, v::kCitationProperty, v::kSupportedBy,
              v::kSourceDocument, v::kSourceChunk, v::kDataTier, v::kProvStartedAtTime,
              v::kProvEndedAtTime, v::kProvGeneratedAtTime, v::kDurationMs, v::kInputTokens,
              v::kOutputTokens, v::kModelName, v::kStatus})
            EXPECT_GT(p.count(std::string(kept)), 0u) << kept;
        EXPECT_TRUE(has(shown, v::kAnswerText, "Paris is the capital."));
        // The cited chunk's document stays; the uncited chunk's ranking and reasoning go.
        EXPECT_EQ(p.count(std::string(v::kReasoning)), 1u) << "only the cited chunk's";
        EXPECT_EQ(p.count(std::string(v::kRetrievedChunk)), 0u);
        EXPECT_EQ(p.count(std::string(v::kSelectedChunk)), 0u);
        EXPECT_EQ(p.count(std::string(v::kVectorRank)), 1u) << "the cited chunk's retrieval";
        EXPECT_EQ(shown["session"]["input_tokens"], tokens_before[session]);
        EXPECT_EQ(shown["session"]["question"], questions_before[session]);
    }
    // The sub-run follows its top-level run.
    const auto shown_sub = show(sub.session());
    EXPECT_EQ(shown_sub["session"].value("summary", false), true);
    const auto shown_parent = show(ordinary[0].session());
    ASSERT_EQ(shown_parent["subtraces"].size(), 1u);
    EXPECT_EQ(shown_parent["subtraces"][0]["session"].value("summary", false), true);
    // Too young and running runs are untouched, and wait.
    EXPECT_FALSE(show(young.session())["session"].contains("summary"));
    EXPECT_FALSE(show(running.session())["session"].contains("summary"));
    EXPECT_EQ(triple_count(show(running.session())),
              running.messages().front().explain_triples.size());

    // The export of a summary: valid N-Quads, a subset of what it was.
    const auto after = exported(ordinary[0].started);
    auto parsed = schema::parse_nquads(after);
    ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
    EXPECT_FALSE(parsed->empty());
    std::set<std::string> old_lines;
    std::istringstream old_text(nquads_before[ordinary[0].session()]);
    for (std::string line; std::getline(old_text, line);) old_lines.insert(line);
    std::istringstream new_text(after);
    std::size_t lines = 0;
    for (std::string line; std::getline(new_text, line); ++lines)
        EXPECT_EQ(old_lines.count(line), 1u) << "not in the whole trace: " << line;
    EXPECT_LT(lines, old_lines.size());

    // Lists still list them, marked.
    ListQuery query;
    query.limit = 100;
    auto listed = store_->list(query, at(kNow));
    ASSERT_TRUE(listed.ok());
    std::size_t summaries = 0;
    for (const auto& s : (*listed)["sessions"]) summaries += s.value("summary", false) ? 1 : 0;
    EXPECT_EQ(summaries, 6u);
    EXPECT_EQ((*listed)["sessions"].size(), expected.size() + 2);

    // A second pass decides nothing again; the young run goes once old enough.
    const auto again = sample(0.5);
    EXPECT_EQ(again.summarised + again.sampled + again.error + again.pinned, 0);
    const auto later = sample(0.5, kNow + kHour);
    EXPECT_EQ(later.summarised, 1) << "the young run, now old enough";
}

TEST_P(SamplingTest, StatsCountEachDecisionAndTheRunsWaiting) {
    config_.sample = 0.5;
    config_.sample_after = std::chrono::seconds{kAfterMs / 1000};
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    add(uuid_with(0, '1'), "fails", kT0, TraceStatus::kError);
    add(uuid_with(1, '9'), "in", kT0 + 1);
    add(uuid_with(2, '1'), "out", kT0 + 2);
    add(uuid_with(3, '2'), "out too", kT0 + 3);
    add(uuid_with(4, '1'), "young", kNow - kMinute);
    auto s = stats();
    EXPECT_EQ(s["sampling"]["waiting"], 5);
    EXPECT_EQ(s["sampling"]["summarised"], 0);
    sample(0.5);
    s = stats();
    EXPECT_EQ(s["sampling"]["fraction"], 0.5);
    EXPECT_EQ(
        s["sampling"]["whole"],
        (json{{"error", 1}, {"escalation", 0}, {"evaluated", 0}, {"pinned", 0}, {"sampled", 1}}));
    EXPECT_EQ(s["sampling"]["summarised"], 2);
    EXPECT_EQ(s["sampling"]["waiting"], 1);
    auto decoded = schema::decode<schema::TraceStats>(s);
    ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
    ASSERT_TRUE(decoded->sampling);
    EXPECT_EQ(decoded->sampling->summarised, 2);
    EXPECT_EQ(decoded->sampling->whole.error, 1);
}

TEST_P(SamplingTest, APinOrEvaluationBeforeThePassKeepsItWholeAfterItStaysASummary) {
    const auto pinned_first = add(uuid_with(0, '1'), "pinned first", kT0);
    const auto evaluated_first = add(uuid_with(1, '1'), "evaluated first", kT0 + 1);
    const auto late = add(uuid_with(2, '1'), "pinned late", kT0 + 2);
    ASSERT_TRUE(store_->pin(pinned_first.session(), true).ok());
    ASSERT_TRUE(store_
                    ->evaluate(evaluated_first.uris.uuid(),
                               schema::TraceEvaluation{evaluated_first.uris.uuid(),
                                                       "set",
                                                       "q1",
                                                       {"Paris"},
                                                       true,
                                                       true,
                                                       1.0,
                                                       1.0,
                                                       0.9,
                                                       ""},
                               at(kNow))
                    .ok());
    const auto counts = sample(0.0);
    EXPECT_EQ(counts.pinned, 1);
    EXPECT_EQ(counts.evaluated, 1);
    EXPECT_EQ(counts.summarised, 1);
    EXPECT_FALSE(show(pinned_first.session())["session"].contains("summary"));
    EXPECT_FALSE(show(evaluated_first.session())["session"].contains("summary"));
    // Pinned after the pass: pinned, and still a summary (the reply says so).
    auto reply = store_->pin(late.session(), true);
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    EXPECT_EQ(*reply, (json{{"session", late.session()}, {"pinned", true}, {"summary", true}}));
    EXPECT_TRUE(schema::decode<schema::TracePinned>(*reply)->summary.value_or(false));
    const auto shown = show(late.session());
    EXPECT_EQ(shown["session"]["pinned"], true);
    EXPECT_EQ(shown["session"]["summary"], true);
    // A run kept whole pins without the mark.
    EXPECT_EQ(*store_->pin(pinned_first.session(), true),
              (json{{"session", pinned_first.session()}, {"pinned", true}}));
}

TEST_P(SamplingTest, SummarisedRunsStayInTheUsageIndexAndAreMirroredAgain) {
    config_.mirror_sparql = true;
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    const auto run = add(uuid_with(0, '1'), "indexed", kT0);
    // The mirror took the run as it ended.
    auto pending = store_->mirror_pending(10);
    ASSERT_TRUE(pending.ok());
    for (const auto& item : *pending) ASSERT_TRUE(store_->mirror_done(item).ok());
    EXPECT_EQ(sample(0.0).summarised, 1);
    pending = store_->mirror_pending(10);
    ASSERT_TRUE(pending.ok());
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_EQ((*pending)[0].session, run.session());
    ListQuery query;
    query.uses_document = run.document();
    auto listed = store_->list(query, at(kNow));
    ASSERT_TRUE(listed.ok()) << listed.error().describe();
    ASSERT_EQ((*listed)["sessions"].size(), 1u);
    EXPECT_EQ((*listed)["sessions"][0]["session"], run.session());
}

}  // namespace
}  // namespace glassbox::trace::testing
