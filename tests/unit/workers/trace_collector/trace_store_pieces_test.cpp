// A dictionary body's triples stored as pieces (docs/traces.md, "Storage layout"): every place a
// piece goes (a long literal cut as an object and whole as a subject, a graph of its own, the
// message's explain graph, none) read back by show and export exactly as sent, on each backend;
// the plain form's events keep the records layout beside them.
#include <gtest/gtest.h>

#include <set>

#include "schema/json_fast.hpp"
#include "schema/nquads.hpp"
#include "schema/term_json.hpp"
#include "tests/support/trace_store_suite.hpp"

namespace glassbox::trace::testing {
namespace {

using nlohmann::json;
using schema::TraceStatus;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms

// Long enough for `texts` (StoreConfig::text_threshold 512), with JSON escapes and non-ASCII.
const std::string kLong = std::string(600, 'a') + "\"quoted\"\nline\t\u00e9\U0001F680";

// The triples show must answer for `m`: as sent, the message's graph on those without one.
json expected_triples(const schema::ExplainMessage& m) {
    json out = json::array();
    for (const auto& t : m.explain_triples) {
        json e = schema::encode(t);
        if (!t.graph && !m.explain_graph.empty()) e["g"] = m.explain_graph;
        out.push_back(std::move(e));
    }
    return out;
}

class PiecesStoreTest : public StoreTest {
protected:
    // `messages` stored with their triples in `form`.
    BatchOutcome store_in(schema::TripleForm form,
                          const std::vector<schema::ExplainMessage>& messages,
                          std::int64_t received_ms) {
        std::vector<Delivery> batch;
        for (const auto& m : messages) {
            Delivery d = delivery_of(m, next_id_++);
            d.body = schema::encode_text(m, m.explain_triples, form);
            batch.push_back(std::move(d));
        }
        auto outcome = store_->store_batch(batch, at(received_ms));
        EXPECT_TRUE(outcome.ok()) << outcome.error().describe();
        return outcome.ok() ? *outcome : BatchOutcome{};
    }
    // The first bytes of each stored event's blob of `run`, in hex, by seq (SQLite's file).
    std::vector<std::string> blob_heads(const FakeRun& run) {
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        EXPECT_TRUE(db.ok());
        std::vector<std::string> heads;
        if (!db.ok()) return heads;
        auto q = (*db)->prepare_once(
            "SELECT hex(substr(triples, 1, 4)) FROM events WHERE session = (SELECT id FROM "
            "sessions WHERE uri = ?1) ORDER BY seq");
        EXPECT_TRUE(q.ok());
        const std::string uri = run.session();
        q->bind(1, std::string_view{uri});
        EXPECT_TRUE(q->each([&](const storage::Row& row) {
                         heads.push_back(row.is_null(0) ? "" : std::string(row.text(0)));
                     }).ok());
        return heads;
    }
};

// A run whose steps put pieces in every place: the Question with long values (one cut as an
// object twice, the same value whole as a subject), a triple in a graph of its own, a blank node
// and a quoted triple; a step with no explain graph; the end repeating the long value.
std::vector<schema::ExplainMessage> messages_of(const FakeRun& run) {
    auto question = run.open();
    const auto s = schema::iri(run.session());
    const auto p = schema::iri("http://example.org/p");
    auto& q = question.explain_triples;
    q.push_back(schema::make_triple(s, p, schema::literal(kLong)));
    q.push_back(schema::make_triple(schema::iri("urn:other"), p, schema::literal(kLong)));
    q.push_back(schema::make_triple(schema::literal(kLong), p, schema::literal(kLong)));
    q.push_back(schema::make_triple(s, p, schema::lang_literal(kLong, "en"), "urn:graph:other"));
    q.push_back(schema::make_triple(schema::blank("b0"), p, schema::literal("short")));
    q.push_back(schema::make_triple(
        s, p, schema::quoted(schema::make_triple(s, p, schema::literal(kLong)))));
    schema::ExplainMessage step = run.open();
    step.seq = 1;
    step.explain_id = run.uris.synthesis() + "-step";
    step.explain_graph.clear();
    step.explain_triples = {schema::make_triple(s, p, schema::literal(kLong)),
                            schema::make_triple(s, p, schema::iri("urn:o"), "urn:graph:own")};
    auto end = run.end(TraceStatus::kComplete, kLong);
    end.seq = 2;
    return {question, step, end};
}

TEST_P(PiecesStoreTest, ADictionaryBodyReadsBackAsSentInEitherLayout) {
    const auto pieces = FakeRun::make("echo", "pieces", kT0);
    const auto records = FakeRun::make("echo", "records", kT0 + 1);
    const auto sent = messages_of(pieces);
    const auto plain = messages_of(records);
    EXPECT_EQ(store_in(schema::TripleForm::kDictionary, sent, kT0 + 20).stored, 3u);
    EXPECT_EQ(store_in(schema::TripleForm::kPlain, plain, kT0 + 20).stored, 3u);
    std::string nquads;
    for (const auto* messages : {&sent, &plain}) {
        for (const auto& m : *messages) {
            for (const auto& t : expected_triples(m))
                nquads += schema::to_nquads(schema::decode_triple(t).value()) + "\n";
        }
    }
    for (const auto& [run, messages] : {std::pair{&pieces, &sent}, std::pair{&records, &plain}}) {
        auto shown = store_->show(run->session(), at(kT0 + 30));
        ASSERT_TRUE(shown.ok()) << shown.error().describe();
        ASSERT_EQ((*shown)["events"].size(), 3u);
        for (std::size_t e = 0; e < messages->size(); ++e) {
            EXPECT_EQ((*shown)["events"][e]["triples"], expected_triples((*messages)[e]))
                << run->question << " event " << e;
        }
    }
    // Sorted: export orders runs by when they started, the same for both.
    const auto lines = [](const std::string& text) {
        std::multiset<std::string> out;
        std::size_t at = 0;
        for (std::size_t end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
            out.insert(text.substr(at, end - at));
        return out;
    };
    EXPECT_EQ(lines(exported()), lines(nquads));
    auto stats = store_->stats(at(kT0 + 30));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["texts"], 1) << "the long value once, however often and wherever used";
    if (on_postgres()) return;
    // A skippable frame before the pieces' zstd frame; records start with the zstd frame.
    EXPECT_EQ(blob_heads(pieces), (std::vector<std::string>{"502A4D18", "502A4D18", "502A4D18"}));
    EXPECT_EQ(blob_heads(records), (std::vector<std::string>{"28B52FFD", "28B52FFD", "28B52FFD"}));
}

TEST_P(PiecesStoreTest, ARedeliveredDictionaryBodyIsStoredOnce) {
    const auto run = FakeRun::make("echo", "q", kT0);
    const auto messages = messages_of(run);
    store_in(schema::TripleForm::kDictionary, messages, kT0 + 20);
    const auto again =
        store_in(schema::TripleForm::kDictionary, {messages[0], messages[2]}, kT0 + 30);
    EXPECT_EQ(again.stored, 0u);
    EXPECT_EQ(again.duplicates, 2u);
    auto shown = store_->show(run.session(), at(kT0 + 40));
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["events"][0]["triples"], expected_triples(messages[0]));
}

GLASSBOX_TRACE_BACKENDS(PiecesStoreTest);

}  // namespace
}  // namespace glassbox::trace::testing
