// The trace store: idempotent ingest, status, stored texts, quarantine, list/show/export, ids.
#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "base/time_format.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages_trace.hpp"
#include "schema/nquads.hpp"
#include "schema/term_json.hpp"
#include "storage/pg_connection.hpp"
#include "tests/support/trace_store_suite.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
using schema::TraceStatus;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms

TEST_P(StoreTest, FileIsOwnerOnly) {
    if (on_postgres()) GTEST_SKIP() << "a SQLite file's mode";
    struct stat info {};
    ASSERT_EQ(::stat((dir_ / "traces.db").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_P(StoreTest, SameSessionSeqIsStoredOnce) {
    const auto run = FakeRun::make("echo", "why?", kT0);
    const auto first = store({run.open(), run.end()}, kT0 + 20);
    EXPECT_EQ(first.stored, 2u);
    EXPECT_GT(first.triples, 0u);
    // Redelivered: in a later batch, and twice within one batch.
    const auto again = store({run.open(), run.end(), run.end()}, kT0 + 30);
    EXPECT_EQ(again.stored, 0u);
    EXPECT_EQ(again.duplicates, 3u);
    auto stats = store_->stats(at(kT0 + 40));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["sessions"], 1);
    EXPECT_EQ((*stats)["events"], 2);
    EXPECT_EQ((*stats)["triples"], first.triples);
    auto shown = store_->show(run.session(), at(kT0 + 40));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["events"], 2);
}

TEST_P(StoreTest, StatusRunningCompleteErrorIncomplete) {
    config_.incomplete_after = std::chrono::seconds{1};
    TearDown();
    SetUp();
    const auto done = FakeRun::make("echo", "done", kT0);
    const auto failed = FakeRun::make("echo", "failed", kT0 + 1);
    const auto open = FakeRun::make("echo", "open", kT0 + 2);
    store({done.open(), done.end(), failed.open(), failed.end(TraceStatus::kError), open.open()},
          kT0 + 100);

    const auto status_of = [&](const FakeRun& run, std::int64_t now) {
        auto shown = store_->show(run.session(), at(now));
        EXPECT_TRUE(shown.ok()) << shown.error().describe();
        return shown.ok() ? (*shown)["session"]["status"].get<std::string>() : std::string{};
    };
    EXPECT_EQ(status_of(done, kT0 + 200), "complete");
    EXPECT_EQ(status_of(failed, kT0 + 200), "error");
    EXPECT_EQ(status_of(open, kT0 + 200), "running");
    // Nothing for longer than incomplete_after, no end: incomplete (computed on read, no sweep).
    EXPECT_EQ(status_of(open, kT0 + 1200), "incomplete");
    EXPECT_EQ(status_of(done, kT0 + 1200), "complete");
    auto shown = store_->show(failed.session(), at(kT0 + 200));
    EXPECT_EQ((*shown)["session"]["error"], "Internal: boom");
    // A late end turns it complete.
    store({open.end()}, kT0 + 5000);
    EXPECT_EQ(status_of(open, kT0 + 5000), "complete");

    auto stats = store_->stats(at(kT0 + 200));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["by_status"]["complete"], 2);
    EXPECT_EQ((*stats)["by_status"]["error"], 1);
}

TEST_P(StoreTest, EndBeforeStartStillGivesFullSummary) {
    const auto run = FakeRun::make("echo", "reordered", kT0);
    store({run.end()}, kT0 + 50);
    store({run.open()}, kT0 + 60);
    auto shown = store_->show(run.session(), at(kT0 + 70));
    ASSERT_TRUE(shown.ok());
    const auto& s = (*shown)["session"];
    EXPECT_EQ(s["status"], "complete");
    EXPECT_EQ(s["question"], "reordered");
    EXPECT_EQ(s["started"], base::format_xsd_datetime_ms(kT0));
    EXPECT_EQ(s["ended"], base::format_xsd_datetime_ms(kT0 + 12));
    EXPECT_EQ(s["duration_ms"], 12);
    EXPECT_EQ(s["kind"], "echo");
    EXPECT_EQ(s["worker"], "echo-test/0");
    ASSERT_EQ((*shown)["events"].size(), 2u);
    EXPECT_EQ((*shown)["events"][0]["seq"], 0);
    EXPECT_EQ((*shown)["events"][1]["seq"], 1);
    EXPECT_EQ((*shown)["events"][1]["state"], "complete");
}

TEST_P(StoreTest, LongTextsAreStoredOnceAndReinlined) {
    const std::string answer(3000, 'a');
    const auto one = FakeRun::make("echo", "q1", kT0);
    const auto two = FakeRun::make("echo", "q2", kT0 + 1);
    store({one.open(), one.end(TraceStatus::kComplete, answer), two.open(),
           two.end(TraceStatus::kComplete, answer)},
          kT0 + 10);
    auto stats = store_->stats(at(kT0 + 10));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["texts"], 1);
    auto shown = store_->show(two.session(), at(kT0 + 10));
    ASSERT_TRUE(shown.ok());
    bool found = false;
    for (const auto& t : (*shown)["events"][1]["triples"]) {
        if (t["p"]["i"] == schema::vocab::kAnswerText) {
            EXPECT_EQ(t["o"]["v"], answer);
            found = true;
        }
    }
    EXPECT_TRUE(found);
    std::string nquads;
    auto counts = store_->export_nquads(std::nullopt, std::nullopt, [&](std::string_view lines) {
        nquads += lines;
        return true;
    });
    ASSERT_TRUE(counts.ok());
    EXPECT_NE(nquads.find('"' + answer + '"'), std::string::npos);
}

TEST_P(StoreTest, TriplesAreStoredInTheirCanonicalEncodingWhateverTheirReceivedForm) {
    const auto run = FakeRun::make("echo", "why?", kT0);
    auto message = run.open();
    ASSERT_FALSE(message.explain_graph.empty());
    json body = schema::encode(message);
    const std::string s = run.session();
    const json iri = {{"t", "i"}, {"i", s}};
    const json p = {{"t", "i"}, {"i", "http://example.org/p"}};
    // Decodable but not canonical: no "t", xsd:string datatype, empty language, an empty
    // graph, an unknown key, and a quoted triple with a graph; then two canonical ones.
    json extra = json::array({
        {{"s", {{"i", s}}}, {"p", p}, {"o", {{"v", "no t"}}}},
        {{"s", iri},
         {"p", p},
         {"o", {{"t", "l"}, {"v", "x"}, {"dt", std::string(schema::kXsdString)}}}},
        {{"s", iri}, {"p", p}, {"o", {{"t", "l"}, {"v", "y"}, {"ln", ""}}}},
        {{"s", iri}, {"p", p}, {"o", iri}, {"g", ""}},
        {{"s", iri}, {"p", p}, {"o", iri}, {"extra", 1}},
        {{"s", iri},
         {"p", p},
         {"o", {{"t", "t"}, {"tr", {{"s", iri}, {"p", p}, {"o", iri}, {"g", "urn:g"}}}}}},
        {{"s", iri}, {"p", p}, {"o", {{"t", "l"}, {"v", "z"}, {"ln", "en"}}}, {"g", "urn:other"}},
        {{"s", iri},
         {"p", p},
         {"o", {{"t", "l"}, {"v", "3"}, {"dt", "http://www.w3.org/2001/XMLSchema#integer"}}}},
    });
    for (const auto& t : extra) body["explain_triples"].push_back(t);
    Delivery d = delivery_of(message, 1);
    d.body = schema::dump(body);
    auto decoded = validate_delivery(d);
    ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
    auto outcome = store_->store_batch({d}, at(kT0 + 10));
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    EXPECT_EQ(outcome->stored, 1u);
    auto shown = store_->show(s, at(kT0 + 10));
    ASSERT_TRUE(shown.ok());
    const auto& stored = (*shown)["events"][0]["triples"];
    ASSERT_EQ(stored.size(), decoded->explain_triples.size());
    for (std::size_t i = 0; i < stored.size(); ++i) {
        json expected = schema::encode(decoded->explain_triples[i]);
        if (!decoded->explain_triples[i].graph) expected["g"] = decoded->explain_graph;
        EXPECT_EQ(stored[i], expected) << i;
    }
}

TEST_P(StoreTest, BodiesInAnyLayoutAndEscapingReadBackAsTheirTriples) {
    // Pretty-printed, non-ASCII escaped as \uXXXX, quotes and controls in the question, a long
    // answer (to the texts table) with escapes: stored as received, read back decoded.
    const std::string question = "was \"ünïcödé\" 🚀\tokay?";
    const std::string answer = std::string(600, 'a') + "\u00e9\"\n";
    const auto run = FakeRun::make("echo", question, kT0);
    std::vector<Delivery> batch;
    std::vector<schema::ExplainMessage> messages = {run.open(),
                                                    run.end(TraceStatus::kComplete, answer)};
    for (const auto& m : messages) {
        Delivery d = delivery_of(m, next_id_++);
        d.body = schema::encode(m).dump(2, ' ', true);
        batch.push_back(std::move(d));
    }
    auto outcome = store_->store_batch(batch, at(kT0 + 20));
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    EXPECT_EQ(outcome->stored, 2u);
    EXPECT_EQ(outcome->quarantined, 0u);
    auto shown = store_->show(run.session(), at(kT0 + 30));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["question"], question);
    for (std::size_t e = 0; e < messages.size(); ++e) {
        const auto& triples = (*shown)["events"][e]["triples"];
        ASSERT_EQ(triples.size(), messages[e].explain_triples.size());
        for (std::size_t i = 0; i < triples.size(); ++i) {
            json expected = schema::encode(messages[e].explain_triples[i]);
            if (!messages[e].explain_triples[i].graph) expected["g"] = messages[e].explain_graph;
            EXPECT_EQ(triples[i], expected) << e << "/" << i;
        }
    }
    auto stats = store_->stats(at(kT0 + 30));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["texts"], 1);
}

// Every IRI of `term`, quoted triples and literal datatypes included.
void collect_iris(const schema::Term& term, std::vector<std::string>& out) {
    if (term.is_iri()) out.push_back(term.as_iri().value);
    if (term.is_literal() && !term.as_literal().datatype.empty())
        out.push_back(term.as_literal().datatype);
    if (term.is_triple()) {
        const auto& t = term.as_triple();
        for (const auto* part : {&t.s, &t.p, &t.o}) collect_iris(*part, out);
    }
}

std::vector<std::string> iris_of(const schema::Triple& t) {
    std::vector<std::string> out;
    for (const auto* part : {&t.s, &t.p, &t.o}) collect_iris(*part, out);
    if (t.graph) out.push_back(*t.graph);
    return out;
}

// Issue 16 point 12: a third-party worker's explain messages reach the collector with whatever
// IRIs they carry. Each is stored as a valid IRI (percent-encoded, under urn:glassbox:iri: when
// it has no scheme), nothing is lost, and the trace's show and N-Quads export hold only IRIs
// N-Triples accepts.
TEST_P(StoreTest, IrisThatNTriplesRejectsAreStoredRewrittenNotLost) {
    const std::string bad = "not a uri <>\"\n";
    const std::string spaced = "urn:x y";
    // A run whose session, step, parent and triples all carry such IRIs.
    schema::ExplainMessage m;
    m.session = spaced;
    m.seq = 0;
    m.service = "third-party";
    m.worker = "third-party/0";
    m.parent_uri = bad;
    m.explain_id = bad;
    m.explain_graph = "urn:graph:{x}";
    const auto plain = schema::iri("urn:ok");
    m.explain_triples = {
        schema::make_triple(schema::iri(spaced), schema::iri(schema::vocab::kQuery),
                            schema::literal("q")),
        schema::make_triple(schema::iri(bad), schema::iri(spaced), schema::iri("relative/thing")),
        schema::make_triple(plain, plain, schema::typed_literal("1", "urn:dt x"), "urn:g|h"),
        schema::make_triple(schema::quoted(schema::make_triple(plain, schema::iri(bad), plain)),
                            plain, plain),
        schema::make_triple(plain, plain, schema::literal("kept as it is")),
    };
    schema::ExplainMessage end = m;
    end.seq = 1;
    end.explain_triples = {schema::make_triple(schema::iri(spaced), plain, schema::iri("`tick`"))};
    end.end_of_trace = true;
    end.trace_status = TraceStatus::kComplete;

    const auto outcome = store({m, end}, kT0 + 10);
    EXPECT_EQ(outcome.stored, 2u);
    EXPECT_EQ(outcome.quarantined, 0u);
    // Each message's session, explain_id, parent_uri and explain_graph; the open one's triples'
    // s (twice), p, o, dt, g and quoted p; the end's s and o.
    EXPECT_EQ(outcome.iris_rewritten, 4u + 4u + 7u + 2u);

    // The export (what `glassbox traces export` writes) reads back as N-Quads of valid IRIs.
    std::string nquads;
    auto counts = store_->export_nquads(std::nullopt, std::nullopt, [&](std::string_view lines) {
        nquads += lines;
        return true;
    });
    ASSERT_TRUE(counts.ok()) << counts.error().describe();
    const std::size_t triples = m.explain_triples.size() + end.explain_triples.size();
    EXPECT_EQ(counts->triples, triples);
    std::uint64_t line_number = 0;
    std::size_t checked = 0;
    for (std::size_t begin = 0, end_at = 0;
         (end_at = nquads.find('\n', begin)) != std::string::npos; begin = end_at + 1) {
        const std::string_view line(nquads.data() + begin, end_at - begin);
        ++line_number;
        // Quoted triples are not N-Quads 1.1 (the parser refuses them); their parts are checked
        // in the shown triples below.
        if (line.starts_with("<<") || line.find(" <<") != std::string_view::npos) continue;
        auto parsed = schema::parse_nquads_line(line, line_number);
        ASSERT_TRUE(parsed.ok()) << parsed.error().describe() << "\n" << line;
        ASSERT_TRUE(parsed->has_value()) << line;
        for (const auto& iri : iris_of(**parsed))
            EXPECT_FALSE(schema::explain::iri_problem(iri)) << line;
        ++checked;
    }
    EXPECT_EQ(checked, triples - 1);

    // Found by its session IRI as stored (the one a reader sees in `list`).
    const std::string session = schema::explain::writable_iri(spaced);
    EXPECT_EQ(session, "urn:x%20y");
    auto shown = store_->show(session, at(kT0 + 20));
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["session"]["session"], session);
    EXPECT_EQ((*shown)["session"]["status"], "complete");
    EXPECT_EQ((*shown)["session"]["question"], "q");
    const auto& events = (*shown)["events"];
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0]["explain_id"], schema::explain::writable_iri(bad));
    std::vector<schema::Triple> stored;
    for (const auto& event : events) {
        for (const auto& t : event["triples"]) {
            auto decoded = schema::decode_triple(t);
            ASSERT_TRUE(decoded.ok()) << t.dump();
            stored.push_back(*decoded);
        }
    }
    ASSERT_EQ(stored.size(), triples);
    for (const auto& t : stored) {
        for (const auto& iri : iris_of(t)) EXPECT_FALSE(schema::explain::iri_problem(iri)) << iri;
    }
    // Nothing lost: each IRI is there, rewritten; valid ones and literals are as they came.
    EXPECT_EQ(stored[1].s, schema::iri(schema::explain::writable_iri(bad)));
    EXPECT_EQ(stored[1].p, schema::iri("urn:x%20y"));
    EXPECT_EQ(stored[1].o, schema::iri("urn:glassbox:iri:relative/thing"));
    EXPECT_EQ(stored[1].graph, "urn:graph:%7Bx%7D");
    EXPECT_EQ(stored[2].o, schema::typed_literal("1", "urn:dt%20x"));
    EXPECT_EQ(stored[2].graph, "urn:g%7Ch");
    EXPECT_EQ(stored[4], schema::make_triple(plain, plain, schema::literal("kept as it is"),
                                             "urn:graph:%7Bx%7D"));
    EXPECT_EQ(stored[5].o, schema::iri("urn:glassbox:iri:%60tick%60"));
}

TEST_P(StoreTest, OneBatchGivesTheSameSessionRowAsOneBatchPerEvent) {
    const auto a = FakeRun::make("echo", "same?", kT0);
    const auto b = FakeRun::with_uuid(a.uris.uuid(), "echo", "same?", kT0);
    const StoreSite other_site(GetParam());
    auto other = other_site.open(OpenMode::kReadWrite, config_);
    ASSERT_TRUE(other.ok());
    store({a.open(), a.end(TraceStatus::kError)}, kT0 + 10);
    for (const auto& m : {b.open(), b.end(TraceStatus::kError)}) {
        auto r = (*other)->store_batch({delivery_of(m, next_id_++)}, at(kT0 + 10));
        ASSERT_TRUE(r.ok());
    }
    auto one = store_->list({}, at(kT0 + 20));
    auto many = (*other)->list({}, at(kT0 + 20));
    ASSERT_TRUE(one.ok() && many.ok());
    EXPECT_EQ(*one, *many);
    EXPECT_EQ((*one)["sessions"][0]["events"], 2);
    EXPECT_EQ((*one)["sessions"][0]["status"], "error");
    other->reset();
}

TEST_P(StoreTest, MalformedDeliveriesAreQuarantinedWithTheirReason) {
    const auto run = FakeRun::make("echo", "q", kT0);
    auto good = delivery_of(run.open(), 1);
    // A copy of `good` under delivery id `id`, changed by `change`.
    const auto variant = [&](std::uint64_t id, auto change) {
        auto d = good;
        d.delivery_id = id;
        change(d);
        return d;
    };
    auto not_json = variant(2, [](Delivery& d) { d.body = "{not json"; });
    auto wrong_types = variant(3, [&](Delivery& d) {
        d.body = R"({"message_type":"explain","session":")" + run.session() + R"(","seq":"zero"})";
    });
    auto seq_mismatch = variant(4, [](Delivery& d) { d.seq = "7"; });
    auto bad_triple = variant(5, [&](Delivery& d) {
        d.body =
            R"({"message_type":"explain","session":")" + run.session() +
            R"(","seq":0,"explain_triples":[{"s":{"t":"i","i":"urn:x"},"p":42,"o":{"t":"i","i":"urn:y"}}]})";
    });
    auto state_mismatch = variant(6, [](Delivery& d) { d.state = "complete"; });
    auto session_mismatch = variant(7, [](Delivery& d) { d.session = "urn:glassbox:other"; });
    auto outcome = store_->store_batch({good, not_json, wrong_types, seq_mismatch, bad_triple,
                                        state_mismatch, session_mismatch, not_json},
                                       at(kT0));
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    EXPECT_EQ(outcome->stored, 1u);
    EXPECT_EQ(outcome->quarantined, 7u);
    auto stats = store_->stats(at(kT0));
    // The same delivery id quarantined twice is kept once.
    EXPECT_EQ((*stats)["quarantined"], 6);

    const auto reason = [&](const Delivery& d) {
        auto checked = validate_delivery(d);
        EXPECT_FALSE(checked.ok());
        return checked.ok() ? std::string{} : checked.error().message;
    };
    EXPECT_EQ(reason(not_json).rfind("not JSON", 0), 0u) << reason(not_json);
    EXPECT_EQ(reason(wrong_types).rfind("wrong types", 0), 0u) << reason(wrong_types);
    EXPECT_NE(reason(seq_mismatch).find("seq"), std::string::npos);
    EXPECT_EQ(reason(bad_triple).rfind("bad triple", 0), 0u) << reason(bad_triple);
    EXPECT_NE(reason(state_mismatch).find("state"), std::string::npos);
    EXPECT_NE(reason(session_mismatch).find("session"), std::string::npos);
}

// A write into a session that already ended is refused (issue 20: a rogue worker added a step
// to another user's completed trace): kept aside in quarantine with its reason, never part of
// the trace. What may still come after an end: a redelivery (a duplicate), an earlier seq
// delivered late, and the broker's own error end (SpoolFull after the worker's end).
TEST_P(StoreTest, AWriteAfterASessionsEndIsRefused) {
    const auto run = FakeRun::make("echo", "why?", kT0);
    const auto first = store({run.open(), run.end()}, kT0 + 20);
    ASSERT_EQ(first.stored, 2u);

    auto forged = run.open();
    forged.seq = 77;
    forged.explain_id = run.uris.conclusion();
    const auto refused = store({forged}, kT0 + 30);
    EXPECT_EQ(refused.stored, 0u);
    EXPECT_EQ(refused.refused, 1u);
    auto shown = store_->show(run.session(), at(kT0 + 40));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["events"], 2);
    EXPECT_EQ((*shown)["session"]["status"], "complete");
    ASSERT_EQ((*shown)["events"].size(), 2u);
    EXPECT_EQ((*shown)["events"][1]["seq"], 1);
    auto stats = store_->stats(at(kT0 + 40));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["quarantined"], 1) << "kept aside, with its reason";

    // The same within one batch: the end, then a write after it.
    const auto other = FakeRun::make("echo", "again?", kT0);
    auto late = other.open();
    late.seq = 5;
    const auto in_batch = store({other.open(), other.end(), late}, kT0 + 50);
    EXPECT_EQ(in_batch.stored, 2u);
    EXPECT_EQ(in_batch.refused, 1u);

    const auto again = store({run.end()}, kT0 + 60);
    EXPECT_EQ(again.duplicates, 1u);
    EXPECT_EQ(again.refused, 0u);

    schema::ExplainMessage broker_end;  // what the broker writes (broker/explain_router.cpp)
    broker_end.session = run.session();
    broker_end.seq = 2;
    broker_end.service = "echo";
    broker_end.end_of_trace = true;
    broker_end.trace_status = TraceStatus::kError;
    broker_end.error = base::make_error(ErrorType::kSpoolFull, "1 explain message was not spooled");
    const auto ended = store({broker_end}, kT0 + 70);
    EXPECT_EQ(ended.stored, 1u);
    EXPECT_EQ(ended.refused, 0u);
    shown = store_->show(run.session(), at(kT0 + 80));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["status"], "error");
}

// A session belongs to the service (named by the broker in DELIVER) and the worker that wrote
// its first message: another's write into it is refused.
TEST_P(StoreTest, AWriteIntoAnotherServicesOrWorkersSessionIsRefused) {
    const auto run = FakeRun::make("graph-rag", "who?", kT0);
    ASSERT_EQ(store({run.open()}, kT0 + 10).stored, 1u);

    auto step = run.open();
    step.seq = 1;
    step.explain_id = run.uris.grounding();
    auto from_echo = delivery_of(step, next_id_++);
    from_echo.service = "echo";
    auto from_rogue = step;
    from_rogue.worker = "rogue/0";
    std::vector<Delivery> batch{from_echo, delivery_of(from_rogue, next_id_++)};
    auto outcome = store_->store_batch(batch, at(kT0 + 20));
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    EXPECT_EQ(outcome->stored, 0u);
    EXPECT_EQ(outcome->refused, 2u);

    auto end = run.end();
    end.seq = 2;
    const auto own = store({step, end}, kT0 + 30);
    EXPECT_EQ(own.stored, 2u) << "the session's own worker goes on";
    EXPECT_EQ(own.refused, 0u);
}

class ListTest : public StoreTest {
protected:
    void SetUp() override {
        StoreTest::SetUp();
        for (int i = 0; i < 5; ++i) {
            runs_.push_back(FakeRun::make(i % 2 == 0 ? "echo" : "graph-rag",
                                          "question " + std::to_string(i), kT0 + i * 1000));
        }
        std::vector<schema::ExplainMessage> messages;
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            messages.push_back(runs_[i].open());
            if (i != 4)
                messages.push_back(
                    runs_[i].end(i == 3 ? TraceStatus::kError : TraceStatus::kComplete));
        }
        // A sub-trace of run 1, called from its Question step.
        child_ = FakeRun::make("echo", "sub question", kT0 + 1500, runs_[1].session());
        messages.push_back(child_.open());
        messages.push_back(child_.end());
        store(messages, kT0 + 10'000);
    }
    std::vector<std::string> sessions(const ListQuery& q, std::int64_t now = kT0 + 10'000) {
        auto listed = store_->list(q, at(now));
        EXPECT_TRUE(listed.ok()) << listed.error().describe();
        std::vector<std::string> out;
        if (listed.ok()) {
            for (const auto& s : (*listed)["sessions"]) out.push_back(s["session"]);
        }
        return out;
    }

    std::vector<FakeRun> runs_;
    FakeRun child_ = FakeRun::make("echo", "", 0);
};

GLASSBOX_TRACE_BACKENDS(StoreTest);
GLASSBOX_TRACE_BACKENDS(ListTest);

TEST_P(ListTest, NewestFirstSubtracesHidden) {
    EXPECT_EQ(sessions({}),
              (std::vector<std::string>{runs_[4].session(), runs_[3].session(), runs_[2].session(),
                                        runs_[1].session(), runs_[0].session()}));
    ListQuery all;
    all.include_subtraces = true;
    EXPECT_EQ(sessions(all).size(), 6u);
    ListQuery children;
    children.parent = runs_[1].session();
    EXPECT_EQ(sessions(children), std::vector<std::string>{child_.session()});
    children.parent = runs_[1].uris.uuid().substr(0, 8);  // a prefix works here too
    EXPECT_EQ(sessions(children), std::vector<std::string>{child_.session()});
}

TEST_P(ListTest, Filters) {
    ListQuery q;
    q.kind = "graph-rag";
    EXPECT_EQ(sessions(q), (std::vector<std::string>{runs_[3].session(), runs_[1].session()}));
    q = {};
    q.status = "error";
    EXPECT_EQ(sessions(q), std::vector<std::string>{runs_[3].session()});
    q.status = "running";
    EXPECT_EQ(sessions(q), std::vector<std::string>{runs_[4].session()});
    q.status = "incomplete";
    EXPECT_TRUE(sessions(q).empty());
    EXPECT_EQ(sessions(q, kT0 + 10'000 + 301'000), std::vector<std::string>{runs_[4].session()});
    q.status = "bogus";
    EXPECT_EQ(store_->list(q).error().type, ErrorType::kInvalidRequest);
    q = {};
    q.since_ms = kT0 + 1000;
    q.until_ms = kT0 + 3000;  // [since, until)
    EXPECT_EQ(sessions(q), (std::vector<std::string>{runs_[2].session(), runs_[1].session()}));
    q = {};
    q.search = "QUESTION 3";
    EXPECT_EQ(sessions(q), std::vector<std::string>{runs_[3].session()});
    q.search = "%";
    EXPECT_TRUE(sessions(q).empty());
}

// Issue 31: a kind that is a near miss of a known one is a typo, not an empty list; a kind near
// nothing known lists nothing (a service whose first run is still to come).
TEST_P(ListTest, AMisspeltKindIsAnErrorNamingTheNearest) {
    ListQuery q;
    q.kind = "graphrag";
    auto typo = store_->list(q);
    ASSERT_FALSE(typo.ok());
    EXPECT_EQ(typo.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(typo.error().message.find("(did you mean graph-rag?)"), std::string::npos)
        << typo.error().message;
    q.kind = "weather-station";
    EXPECT_TRUE(sessions(q).empty());
    // A stored run's own kind is known too, and so are its near misses.
    const auto third = FakeRun::make("weather-station", "rain?", kT0 + 6000);
    store({third.open(), third.end()}, kT0 + 10'000);
    EXPECT_EQ(sessions(q), std::vector<std::string>{third.session()});
    q.kind = "weather-stations";
    auto near = store_->list(q);
    ASSERT_FALSE(near.ok());
    EXPECT_NE(near.error().message.find("(did you mean weather-station?)"), std::string::npos);
}

// Issue 31: a run records the collection it asked and the tokens its steps used; a list row
// adds its sub-runs' tokens, and `collection` filters.
TEST_P(ListTest, RowsCarryTheCollectionAndTheTokensWithTheSubRuns) {
    auto parent = FakeRun::make("query", "who?", kT0 + 7000);
    auto sub = FakeRun::make("graph-rag", "who?", kT0 + 7001, parent.session());
    auto open = parent.open();
    open.explain_triples =
        explain::question(parent.uris, "who?", at(kT0 + 7000), explain::worker_agent_uri("query"),
                          std::nullopt, std::nullopt, {}, "islands");
    explain::StepInfo used;
    used.generated_at = at(kT0 + 7010);
    used.input_tokens = 600;
    used.output_tokens = 40;
    auto sub_end = sub.end();
    const auto synthesis =
        explain::synthesis(sub.uris, used, explain::StoredText{"it", std::nullopt}, {});
    sub_end.explain_triples.insert(sub_end.explain_triples.end(), synthesis.begin(),
                                   synthesis.end());
    store({open, sub.open(), sub_end, parent.end()}, kT0 + 10'000);
    ListQuery q;
    q.collection = "islands";
    auto listed = store_->list(q, at(kT0 + 10'000));
    ASSERT_TRUE(listed.ok()) << listed.error().describe();
    ASSERT_EQ((*listed)["sessions"].size(), 1u) << listed->dump();
    const auto& row = (*listed)["sessions"][0];
    EXPECT_EQ(row["session"], parent.session());
    EXPECT_EQ(row["collection"], "islands");
    EXPECT_EQ(row["input_tokens"], 600);
    EXPECT_EQ(row["output_tokens"], 40);
    EXPECT_TRUE(schema::decode<schema::TraceSessionList>(*listed).ok());
    q.collection = "elsewhere";
    EXPECT_TRUE(sessions(q).empty());
}

TEST_P(ListTest, LimitOffsetTotal) {
    ListQuery q;
    q.limit = 2;
    q.offset = 1;
    auto listed = store_->list(q, at(kT0 + 10'000));
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)["total"], 5);
    EXPECT_EQ((*listed)["limit"], 2);
    EXPECT_EQ((*listed)["offset"], 1);
    ASSERT_EQ((*listed)["sessions"].size(), 2u);
    EXPECT_EQ((*listed)["sessions"][0]["session"], runs_[3].session());
    const auto& s = (*listed)["sessions"][1];
    EXPECT_EQ(s["session"], runs_[2].session());
    EXPECT_EQ(s["kind"], "echo");
    EXPECT_EQ(s["question"], "question 2");
    EXPECT_TRUE(s["parent"].is_null());
    EXPECT_EQ(s["status"], "complete");
    EXPECT_EQ(s["events"], 2);
    EXPECT_EQ(s["duration_ms"], 12);
}

TEST_P(ListTest, NextCursorPagesThroughEverySessionOnce) {
    ListQuery q;
    q.include_subtraces = true;
    q.limit = 2;
    std::vector<std::string> paged;
    int pages = 0;
    while (true) {
        auto listed = store_->list(q, at(kT0 + 10'000));
        ASSERT_TRUE(listed.ok()) << listed.error().describe();
        for (const auto& s : (*listed)["sessions"]) paged.push_back(s["session"]);
        EXPECT_EQ((*listed)["total"], 6);
        ++pages;
        if ((*listed)["next"].is_null()) break;
        ASSERT_LT(pages, 10);
        q.after = (*listed)["next"].get<std::string>();
    }
    EXPECT_EQ(pages, 3);
    ListQuery all;
    all.include_subtraces = true;
    EXPECT_EQ(paged, sessions(all));
    // The cursor keeps the filters' order: graph-rag sessions one by one.
    ListQuery kind;
    kind.kind = "graph-rag";
    kind.limit = 1;
    auto first = store_->list(kind, at(kT0 + 10'000));
    ASSERT_TRUE(first.ok());
    EXPECT_EQ((*first)["sessions"][0]["session"], runs_[3].session());
    kind.after = (*first)["next"].get<std::string>();
    auto second = store_->list(kind, at(kT0 + 10'000));
    ASSERT_TRUE(second.ok());
    ASSERT_EQ((*second)["sessions"].size(), 1u);
    EXPECT_EQ((*second)["sessions"][0]["session"], runs_[1].session());
    EXPECT_TRUE((*second)["next"].is_null());
    kind.after = "not a cursor";
    EXPECT_EQ(store_->list(kind).error().type, ErrorType::kInvalidRequest);
}

TEST_P(ListTest, TotalStopsAtTheCountLimitUnlessExactIsAsked) {
    config_.list_count_limit = 3;
    store_.reset();
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    ListQuery q;
    q.limit = 1;
    auto capped = store_->list(q, at(kT0 + 10'000));
    ASSERT_TRUE(capped.ok());
    EXPECT_EQ((*capped)["total"], 3);
    EXPECT_EQ((*capped)["total_exact"], false);
    // A page further on than the limit counts at least to its end.
    q.offset = 3;
    auto deeper = store_->list(q, at(kT0 + 10'000));
    ASSERT_TRUE(deeper.ok());
    EXPECT_EQ((*deeper)["total"], 4);
    EXPECT_EQ((*deeper)["total_exact"], false);
    EXPECT_EQ((*deeper)["sessions"][0]["session"], runs_[1].session());
    q.exact_total = true;
    auto exact = store_->list(q, at(kT0 + 10'000));
    ASSERT_TRUE(exact.ok());
    EXPECT_EQ((*exact)["total"], 5);
    EXPECT_EQ((*exact)["total_exact"], true);
    // Below the limit the count is exact anyway.
    q = {};
    q.kind = "graph-rag";
    auto few = store_->list(q, at(kT0 + 10'000));
    ASSERT_TRUE(few.ok());
    EXPECT_EQ((*few)["total"], 2);
    EXPECT_EQ((*few)["total_exact"], true);
}

TEST_P(ListTest, ShowNestsSubtraces) {
    auto shown = store_->show(runs_[1].session(), at(kT0 + 10'000));
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    ASSERT_EQ((*shown)["subtraces"].size(), 1u);
    const auto& sub = (*shown)["subtraces"][0];
    EXPECT_EQ(sub["session"]["session"], child_.session());
    EXPECT_EQ(sub["session"]["parent"], runs_[1].session());
    EXPECT_EQ(sub["events"].size(), 2u);
    EXPECT_TRUE(sub["subtraces"].empty());
    // The triples are in the compact wire encoding and decode.
    for (const auto& t : (*shown)["events"][0]["triples"]) {
        auto decoded = schema::decode_triple(t);
        EXPECT_TRUE(decoded.ok()) << t.dump();
        EXPECT_EQ(t["g"], "urn:graph:retrieval");
    }
}

TEST_P(ListTest, ExportIsNQuadsOfTheRangeWithSubtraces) {
    std::string nquads;
    int chunks = 0;
    auto counts = store_->export_nquads(
        kT0 + 1000, kT0 + 2000,
        [&](std::string_view lines) {
            nquads += lines;
            ++chunks;
            return true;
        },
        5);
    ASSERT_TRUE(counts.ok()) << counts.error().describe();
    EXPECT_EQ(counts->sessions, 2u);  // run 1 and its sub-trace (started kT0+1500)
    EXPECT_GT(counts->triples, 10u);
    EXPECT_GT(chunks, 1);
    std::size_t lines = 0;
    for (std::size_t at = 0; (at = nquads.find('\n', at)) != std::string::npos; ++at) ++lines;
    EXPECT_EQ(lines, counts->triples);
    EXPECT_NE(
        nquads.find("<" + runs_[1].session() +
                    "> <https://glassbox.dev/ns#query> \"question 1\" <urn:graph:retrieval> .\n"),
        std::string::npos)
        << nquads.substr(0, 400);
    EXPECT_NE(nquads.find("<" + child_.session() + ">"), std::string::npos);
    EXPECT_EQ(nquads.find("<" + runs_[2].session() + ">"), std::string::npos);
}

TEST(SessionIds, UniqueAmbiguousUnknownPrefix) {
    const auto dir = fresh_dir();
    auto store = TraceStore::open(dir / "traces.db", OpenMode::kReadWrite);
    ASSERT_TRUE(store.ok());
    const auto a = FakeRun::with_uuid("abcd0000-0000-4000-8000-000000000001", "echo", "a", kT0);
    const auto b = FakeRun::with_uuid("abcd0000-0000-4000-8000-000000000002", "echo", "b", kT0);
    const auto c = FakeRun::with_uuid("ffff0000-0000-4000-8000-000000000003", "echo", "c", kT0);
    ASSERT_TRUE((*store)
                    ->store_batch({delivery_of(a.open(), 1), delivery_of(b.open(), 2),
                                   delivery_of(c.open(), 3)})
                    .ok());

    EXPECT_EQ((*store)->resolve_session("ffff").value(), c.session());
    EXPECT_EQ((*store)->resolve_session("FFFF0000").value(), c.session());
    EXPECT_EQ((*store)->resolve_session(a.session()).value(), a.session());
    EXPECT_EQ((*store)->resolve_session("abcd0000-0000-4000-8000-000000000002").value(),
              b.session());
    auto ambiguous = (*store)->resolve_session("abcd");
    ASSERT_FALSE(ambiguous.ok());
    EXPECT_EQ(ambiguous.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(ambiguous.error().message.find(a.session()), std::string::npos);
    EXPECT_NE(ambiguous.error().message.find(b.session()), std::string::npos);
    EXPECT_EQ((*store)->resolve_session("1234").error().type, ErrorType::kNotFound);
    EXPECT_EQ((*store)->resolve_session("urn:glassbox:nothing").error().type, ErrorType::kNotFound);
    EXPECT_EQ((*store)->show("1234").error().type, ErrorType::kNotFound);
    EXPECT_EQ((*store)->show("abcd").error().type, ErrorType::kInvalidRequest);
    store.value().reset();
    std::filesystem::remove_all(dir);
}

TEST(OpenStore, CorruptFileIsAnErrorNotACrash) {
    const auto dir = fresh_dir();
    {
        std::ofstream out(dir / "traces.db", std::ios::binary);
        out << std::string(8192, 'x');
    }
    auto rw = TraceStore::open(dir / "traces.db", OpenMode::kReadWrite);
    ASSERT_FALSE(rw.ok());
    EXPECT_EQ(rw.error().type, ErrorType::kInternal);
    EXPECT_NE(rw.error().message.find("traces.db"), std::string::npos);
    EXPECT_EQ(rw.error().describe().find('\n'), std::string::npos);
    auto ro = TraceStore::open(dir / "traces.db", OpenMode::kReadOnly);
    EXPECT_FALSE(ro.ok());
    auto missing = TraceStore::open(dir / "none.db", OpenMode::kReadOnly);
    EXPECT_FALSE(missing.ok());
    std::filesystem::remove_all(dir);
}

TEST(OpenStore, ReaderSeesWriterCommitsBesideIt) {
    const auto dir = fresh_dir();
    auto writer = TraceStore::open(dir / "traces.db", OpenMode::kReadWrite);
    ASSERT_TRUE(writer.ok());
    auto reader = TraceStore::open(dir / "traces.db", OpenMode::kReadOnly);
    ASSERT_TRUE(reader.ok()) << reader.error().describe();
    const auto run = FakeRun::make("echo", "q", kT0);
    ASSERT_TRUE((*writer)->store_batch({delivery_of(run.open(), 1)}).ok());
    auto listed = (*reader)->list({}, at(kT0));
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)["total"], 1);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace glassbox::trace::testing

namespace glassbox::trace::testing {
namespace {

// Issue 34: `search` finds the runs whose question holds the text (ASCII case folded, LIKE's
// wildcards literal) whether an index finds the candidates (3 characters or more: SQLite's
// trigram table, PostgreSQL's trigram index) or the questions are read, and a question stored
// after its run's row (a late first event) is found too.
TEST_P(StoreTest, SearchFindsSubstringsWhetherAnIndexServesItOrNot) {
    constexpr std::int64_t kT = 1'790'000'000'000;
    const auto turbine = FakeRun::make("echo", "Which Turbine failed first?", kT);
    const auto quoted = FakeRun::make("echo", "a \"quoted\" word, 100% sure_thing", kT + 1);
    const auto accents = FakeRun::make("echo", "Ünïcode ÉTÉ question", kT + 2);
    const auto late = FakeRun::make("echo", "the question came late", kT + 3);
    store({turbine.open(), turbine.end(), quoted.open(), quoted.end(), accents.open()}, kT + 10);
    // Its end first: the row has no question until the Question event arrives.
    store({late.end()}, kT + 20);
    store({late.open()}, kT + 30);
    const auto found = [&](const std::string& text) {
        ListQuery q;
        q.search = text;
        auto listed = store_->list(q, at(kT + 40));
        EXPECT_TRUE(listed.ok()) << listed.error().describe();
        std::vector<std::string> out;
        if (listed) {
            for (const auto& s : (*listed)["sessions"]) out.push_back(s["session"]);
        }
        return out;
    };
    const std::vector<std::string> none;
    EXPECT_EQ(found("turbine"), std::vector<std::string>{turbine.session()});
    EXPECT_EQ(found("TURBINE FAIL"), std::vector<std::string>{turbine.session()});
    EXPECT_EQ(found("\"quoted\""), std::vector<std::string>{quoted.session()});
    EXPECT_EQ(found("100%"), std::vector<std::string>{quoted.session()});
    EXPECT_EQ(found("e_th"), std::vector<std::string>{quoted.session()});
    EXPECT_EQ(found("e%th"), none) << "a wildcard is a character";
    EXPECT_EQ(found("ÉTÉ q"), std::vector<std::string>{accents.session()});
    EXPECT_EQ(found("came late"), std::vector<std::string>{late.session()});
    EXPECT_EQ(found("Wh"), std::vector<std::string>{turbine.session()}) << "2 characters: a scan";
    EXPECT_EQ(found("question").size(), 2u);
    EXPECT_EQ(found("turbines"), none);
    if (!on_postgres()) return;
    // The test server has pg_trgm (PostgreSQL's contrib): the store made its index.
    storage::PgOptions options;
    options.dsn = site_->dsn();
    auto db = storage::PgConnection::open(options);
    ASSERT_TRUE(db.ok()) << db.error().describe();
    auto q = (*db)->prepare("SELECT to_regclass('sessions_question_trgm') IS NOT NULL");
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->first([](const storage::sql::Row& row) { return row.int64(0); }).value(), 1);
}

}  // namespace
}  // namespace glassbox::trace::testing
