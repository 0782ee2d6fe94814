// The trace store's schema 4: each event's triples one compressed blob on its `events` row, read
// back exactly by show and export, a damaged blob a typed error, and a schema-3 store (a row per
// triple) migrated with every triple.
#include <gtest/gtest.h>

#include "schema/nquads.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "tests/unit/workers/trace_collector/schema3_store.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
using schema::TraceStatus;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms

// Long enough for `texts` (StoreConfig::text_threshold 512), with JSON escapes and non-ASCII.
const std::string kLongOne = std::string(600, 'a') + "\"quoted\"\nline\t\u00e9\U0001F680";
const std::string kLongTwo = std::string(700, 'b') + "\\";

class BlobStoreTest : public StoreTest {
protected:
    std::unique_ptr<storage::Database> raw() {
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        EXPECT_TRUE(db.ok()) << db.error().describe();
        return db.ok() ? std::move(db).value() : nullptr;
    }
    std::int64_t count(storage::Database& db, const std::string& sql) {
        auto q = db.prepare_once(sql);
        EXPECT_TRUE(q.ok()) << sql;
        if (!q) return -1;
        auto n = q->first([](const storage::Row& row) { return row.int64(0); });
        return n.ok() && *n ? **n : -1;
    }
    void reopen() {
        store_.reset();
        auto opened = TraceStore::open(dir_ / "traces.db", OpenMode::kReadWrite, config_);
        ASSERT_TRUE(opened.ok()) << opened.error().describe();
        store_ = std::move(opened).value();
    }
};

// A run whose Question carries graph-less triples with long literals (one twice), one with a
// graph of its own and a short one; an event with no triples; the end repeating a long text.
std::vector<schema::ExplainMessage> messages_of(const FakeRun& run) {
    auto question = run.open();
    const auto s = schema::iri(run.session());
    const auto p = schema::iri("http://example.org/p");
    question.explain_triples.push_back(schema::make_triple(s, p, schema::literal(kLongOne)));
    question.explain_triples.push_back(
        schema::make_triple(s, p, schema::literal(kLongTwo), "urn:graph:other"));
    question.explain_triples.push_back(schema::make_triple(s, p, schema::literal("short")));
    question.explain_triples.push_back(
        schema::make_triple(s, p, schema::lang_literal(kLongOne, "en")));
    schema::ExplainMessage empty = run.open();
    empty.seq = 1;
    empty.explain_id = run.uris.synthesis() + "-empty";
    empty.explain_triples.clear();
    auto end = run.end(TraceStatus::kComplete, kLongOne);
    end.seq = 2;
    return {question, empty, end};
}

// The triples show must answer for `m`: as sent, the message's graph on those without one.
json expected_triples(const schema::ExplainMessage& m) {
    json out = json::array();
    for (const auto& t : m.explain_triples) {
        json e = schema::encode(t);
        if (!t.graph) e["g"] = m.explain_graph;
        out.push_back(std::move(e));
    }
    return out;
}

// These read and damage the SQLite file itself.
GLASSBOX_TRACE_SQLITE_ONLY(BlobStoreTest);

TEST_P(BlobStoreTest, AnEventsTriplesAreOneBlobAndReadBackExactly) {
    const auto run = FakeRun::make("echo", "q", kT0);
    const auto messages = messages_of(run);
    const auto outcome = store(messages, kT0 + 20);
    EXPECT_EQ(outcome.stored, 3u);
    std::size_t triples = 0;
    std::string nquads;
    for (const auto& m : messages) {
        triples += m.explain_triples.size();
        for (const auto& t : expected_triples(m))
            nquads += schema::to_nquads(schema::decode_triple(t).value()) + "\n";
    }
    EXPECT_EQ(outcome.triples, triples);

    auto shown = store_->show(run.session(), at(kT0 + 30));
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    ASSERT_EQ((*shown)["events"].size(), 3u);
    for (std::size_t e = 0; e < messages.size(); ++e)
        EXPECT_EQ((*shown)["events"][e]["triples"], expected_triples(messages[e])) << e;
    EXPECT_EQ(exported(), nquads);
    auto stats = store_->stats(at(kT0 + 30));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["triples"], triples);
    EXPECT_EQ((*stats)["texts"], 2) << "each long value once, however often it is used";

    auto db = raw();
    ASSERT_TRUE(db);
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'triples'"), 0);
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM events"), 3);
    EXPECT_EQ(count(*db, "SELECT triple_count FROM events WHERE seq = 0"),
              static_cast<std::int64_t>(messages[0].explain_triples.size()));
    EXPECT_EQ(count(*db, "SELECT triples IS NULL FROM events WHERE seq = 1"), 1)
        << "no triples: no blob";
    EXPECT_EQ(count(*db, "SELECT triple_count FROM events WHERE seq = 1"), 0);
    EXPECT_EQ(count(*db, "SELECT typeof(triples) = 'blob' FROM events WHERE seq = 2"), 1);
}

TEST_P(BlobStoreTest, ARedeliveredEventIsStoredOnceAndAddsNoText) {
    const auto run = FakeRun::make("echo", "q", kT0);
    const auto messages = messages_of(run);
    store(messages, kT0 + 20);
    const auto again = store({messages[0], messages[2], messages[0]}, kT0 + 30);
    EXPECT_EQ(again.stored, 0u);
    EXPECT_EQ(again.duplicates, 3u);
    EXPECT_EQ(again.triples, 0u);
    auto stats = store_->stats(at(kT0 + 40));
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ((*stats)["events"], 3);
    EXPECT_EQ((*stats)["texts"], 2);
}

TEST_P(BlobStoreTest, ADamagedBlobIsATypedErrorThroughShowAndExport) {
    const auto run = FakeRun::make("echo", "q", kT0);
    const auto other = FakeRun::make("echo", "other", kT0 + 1);
    store(messages_of(run), kT0 + 20);
    store({other.open(), other.end()}, kT0 + 20);
    const auto expect_damaged = [&](const std::string& what) {
        auto shown = store_->show(run.session(), at(kT0 + 30));
        ASSERT_FALSE(shown.ok()) << what;
        EXPECT_EQ(shown.error().type, ErrorType::kInternal) << what;
        EXPECT_NE(shown.error().message.find("event 2 of session row"), std::string::npos)
            << shown.error().message;
        EXPECT_NE(shown.error().message.find("damaged triples blob"), std::string::npos)
            << shown.error().message;
        auto counts = store_->export_nquads(std::nullopt, std::nullopt,
                                            [](std::string_view) { return true; });
        ASSERT_FALSE(counts.ok()) << what;
        EXPECT_EQ(counts.error().type, ErrorType::kInternal) << what;
        // The rest of the store still reads.
        EXPECT_TRUE(store_->show(other.session(), at(kT0 + 30)).ok()) << what;
        EXPECT_TRUE(store_->stats(at(kT0 + 30)).ok()) << what;
        EXPECT_TRUE(store_->list({}, at(kT0 + 30)).ok()) << what;
    };
    const auto tamper = [&](const std::string& sql) {
        auto db = raw();
        ASSERT_TRUE(db);
        auto r = db->exec(sql);
        ASSERT_TRUE(r.ok()) << r.error().describe();
    };
    const std::string event =
        " WHERE seq = 2 AND session = (SELECT id FROM sessions WHERE uri = '" + run.session() +
        "')";
    tamper("UPDATE events SET triple_count = triple_count + 1" + event);
    expect_damaged("one triple fewer than its count");
    tamper("UPDATE events SET triple_count = triple_count - 1, triples = x'28b52ffd0102'" + event);
    expect_damaged("a cut frame");
    tamper("UPDATE events SET triples = randomblob(200)" + event);
    expect_damaged("random bytes");
    tamper("UPDATE events SET triples = NULL" + event);
    expect_damaged("no blob for its triples");
}

TEST_P(BlobStoreTest, ASchema3StoreIsMigratedWithEveryTriple) {
    const auto run = FakeRun::make("echo", "q", kT0);
    const auto parent = FakeRun::make("agent", "parent", kT0 + 5);
    const auto child = FakeRun::make("echo", "child", kT0 + 6, parent.uris.question());
    store(messages_of(run), kT0 + 20);
    store({parent.open(), child.open(), child.end(TraceStatus::kError), parent.end()}, kT0 + 30);
    std::vector<json> before;
    for (const auto* r : {&run, &parent, &child}) {
        auto shown = store_->show(r->session(), at(kT0 + 40));
        ASSERT_TRUE(shown.ok()) << shown.error().describe();
        before.push_back(std::move(shown).value());
    }
    const std::string nquads = exported();
    const auto stats = store_->stats(at(kT0 + 40)).value();
    ASSERT_GT(stats["triples"].get<std::int64_t>(), 20);

    store_.reset();
    downgrade_to_schema3(dir_ / "traces.db");
    {
        auto db = raw();
        ASSERT_TRUE(db);
        EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM triples"), stats["triples"]);
        // The Question's three long values and the answer.
        EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM triples WHERE text_id IS NOT NULL"), 4);
        EXPECT_FALSE(db->prepare_once("SELECT triples FROM events").ok()) << "a schema-3 events";
        EXPECT_GT(count(*db,
                        "SELECT instr(sql, 'WITHOUT ROWID') FROM sqlite_master WHERE name = "
                        "'events'"),
                  0);
    }
    ASSERT_FALSE(TraceStore::open(dir_ / "traces.db", OpenMode::kReadOnly, config_).ok())
        << "a reader does not migrate";
    reopen();
    std::size_t i = 0;
    for (const auto* r : {&run, &parent, &child}) {
        auto shown = store_->show(r->session(), at(kT0 + 40));
        ASSERT_TRUE(shown.ok()) << shown.error().describe();
        EXPECT_EQ(*shown, before[i++]) << r->question;
    }
    EXPECT_EQ(exported(), nquads);
    EXPECT_EQ(store_->stats(at(kT0 + 40)).value()["triples"], stats["triples"]);
    auto db = raw();
    ASSERT_TRUE(db);
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'triples'"), 0);
    EXPECT_EQ(count(*db, "SELECT value = '11' FROM meta WHERE key = 'schema'"), 1)
        << "3 → 4 → 5 → 6 → 7 → 8 → 9 in one open";
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM sessions WHERE pinned <> 0"), 0);
    EXPECT_EQ(count(*db,
                    "SELECT COUNT(*) FROM texts WHERE last_used = (SELECT MAX(received) FROM "
                    "events)"),
              count(*db, "SELECT COUNT(*) FROM texts"))
        << "texts stored before are marked used by the newest event";
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM events WHERE triples IS NULL"), 1);
    EXPECT_EQ(count(*db,
                    "SELECT instr(sql, 'WITHOUT ROWID') FROM sqlite_master WHERE name = "
                    "'events'"),
              0)
        << "events is rebuilt as a rowid table";

    // The migrated store takes new runs, their long texts found among the migrated ones.
    const auto after = FakeRun::make("echo", "after", kT0 + 100);
    store({after.open(), after.end(TraceStatus::kComplete, kLongOne)}, kT0 + 110);
    EXPECT_EQ(store_->stats(at(kT0 + 120)).value()["texts"], 2);
    auto shown = store_->show(after.session(), at(kT0 + 120));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["events"][1]["triples"],
              expected_triples(after.end(TraceStatus::kComplete, kLongOne)));
}

TEST_P(BlobStoreTest, AMigrationThatFailsLeavesTheSchema3StoreAsItWas) {
    const auto run = FakeRun::make("echo", "q", kT0);
    store(messages_of(run), kT0 + 20);
    store_.reset();
    downgrade_to_schema3(dir_ / "traces.db");
    std::int64_t rows = 0;
    {
        auto db = raw();
        ASSERT_TRUE(db);
        rows = count(*db, "SELECT COUNT(*) FROM triples");
        // A text id SQLite never assigns: the migration cannot keep the row as it is.
        ASSERT_TRUE(db->exec("UPDATE triples SET text_id = 0 WHERE seq = 2 AND ord = 0").ok());
    }
    auto opened = TraceStore::open(dir_ / "traces.db", OpenMode::kReadWrite, config_);
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.error().type, ErrorType::kInternal);
    EXPECT_NE(opened.error().message.find("text id 0"), std::string::npos)
        << opened.error().message;
    auto db = raw();
    ASSERT_TRUE(db);
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM triples"), rows);
    EXPECT_EQ(count(*db, "SELECT value = '3' FROM meta WHERE key = 'schema'"), 1);
    EXPECT_FALSE(db->prepare_once("SELECT triple_count FROM events").ok()) << "rolled back";
}

}  // namespace
}  // namespace glassbox::trace::testing
