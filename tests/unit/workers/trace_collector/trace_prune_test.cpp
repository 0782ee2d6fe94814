// Retention in the trace store (docs/traces.md, "Retention"): pin, prune by age and by size,
// what is never pruned, sub-runs and conversations following their traces, long texts shared
// with kept traces, dry runs, the 4 → 5 migration and the service's ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "schema/messages_trace.hpp"
#include "storage/pg_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/retention.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
using schema::TraceStatus;
using std::chrono::milliseconds;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms
constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kNow = kT0 + 48 * kHour;

// A literal over StoreConfig::text_threshold (512): kept once in `texts`.
std::string long_text(const std::string& tag, std::size_t size = 2000) {
    return tag + std::string(size, 'x') + "\"end\"\n" + tag;
}

class PruneTest : public StoreTest {
protected:
    // A complete run started at `started`, its events received 10 ms later.
    FakeRun complete(const std::string& question, std::int64_t started,
                     const std::string& answer = "the answer",
                     std::optional<std::string> parent = std::nullopt) {
        auto run = FakeRun::make("echo", question, started, std::move(parent));
        store({run.open(), run.end(TraceStatus::kComplete, answer)}, started + 10);
        return run;
    }
    // The questions of the top-level runs listed (all of them with `subtraces`), sorted.
    std::vector<std::string> questions(bool subtraces = false) {
        ListQuery query;
        query.include_subtraces = subtraces;
        query.limit = 1000;
        auto listed = store_->list(query, at(kNow));
        EXPECT_TRUE(listed.ok()) << listed.error().describe();
        std::vector<std::string> out;
        if (!listed) return out;
        for (const auto& s : (*listed)["sessions"]) out.push_back(s["question"].get<std::string>());
        std::sort(out.begin(), out.end());
        return out;
    }
    PruneCounts prune(std::optional<std::int64_t> older_than_ms,
                      std::optional<std::int64_t> max_bytes = std::nullopt, bool dry_run = false,
                      std::int64_t batch = 200) {
        PruneRequest request;
        if (older_than_ms) request.older_than = milliseconds{*older_than_ms};
        request.max_bytes = max_bytes;
        request.dry_run = dry_run;
        request.batch_traces = batch;
        request.now = at(kNow);
        auto counts = store_->prune(request);
        EXPECT_TRUE(counts.ok()) << counts.error().describe();
        return counts.ok() ? *counts : PruneCounts{};
    }
    json stats() {
        auto s = store_->stats(at(kNow));
        EXPECT_TRUE(s.ok()) << s.error().describe();
        return s.ok() ? *s : json::object();
    }
    std::string exported(const FakeRun& run) {
        std::string nquads;
        auto counts =
            store_->export_nquads(run.started_ms, run.started_ms + 1, [&](std::string_view lines) {
                nquads += lines;
                return true;
            });
        EXPECT_TRUE(counts.ok()) << counts.error().describe();
        return nquads;
    }
};

GLASSBOX_TRACE_BACKENDS(PruneTest);

TEST_P(PruneTest, ByAgeKeepsNewerPinnedAndRunningTraces) {
    complete("old", kT0);
    const auto pinned = complete("old pinned", kT0 + 1);
    // Started long ago, still writing: its last event is a minute old.
    const auto running = FakeRun::make("echo", "old running", kT0 + 2);
    store({running.open()}, kNow - 60'000);
    // Started long ago and silent since: incomplete, so it may go.
    const auto stalled = FakeRun::make("echo", "old incomplete", kT0 + 3);
    store({stalled.open()}, kT0 + 13);
    // An old trace one of whose sub-runs is pinned stays whole.
    const auto parent = complete("old with a pinned sub-run", kT0 + 4);
    const auto sub = complete("its sub-run", kT0 + 5, "the answer", parent.session());
    complete("new", kNow - kHour);

    auto pinned_reply = store_->pin(pinned.uris.uuid().substr(0, 8), true);
    ASSERT_TRUE(pinned_reply.ok()) << pinned_reply.error().describe();
    EXPECT_EQ(*pinned_reply, (json{{"session", pinned.session()}, {"pinned", true}}));
    ASSERT_TRUE(store_->pin(sub.session(), true).ok());
    auto shown = store_->show(pinned.session(), at(kNow));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["pinned"], true);
    EXPECT_TRUE(schema::decode<schema::TraceDetail>(*shown).value().session.pinned);

    const auto counts = prune(24 * kHour);
    EXPECT_EQ(counts.traces, 2);
    EXPECT_EQ(counts.sessions, 2);
    EXPECT_EQ(counts.events, 3);
    EXPECT_EQ(questions(), (std::vector<std::string>{"new", "old pinned", "old running",
                                                     "old with a pinned sub-run"}));
    EXPECT_EQ(questions(true).size(), 5u) << "the pinned sub-run with its parent";
    EXPECT_EQ(stats()["sessions"], 5);

    // Unpinned, it goes with the next prune; the running one stays while it runs.
    ASSERT_TRUE(store_->pin(pinned.session(), false).ok());
    EXPECT_EQ(prune(24 * kHour).traces, 1);
    EXPECT_EQ(questions(),
              (std::vector<std::string>{"new", "old running", "old with a pinned sub-run"}));
    auto unknown = store_->pin("ffffffff", true);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().type, ErrorType::kNotFound);
}

TEST_P(PruneTest, SubRunsGoWithTheirTopLevelRun) {
    const auto parent = complete("parent", kT0);
    // Sub-runs started after the cutoff still belong to the old trace.
    const auto child = complete("child", kNow - kHour, "a", parent.session());
    complete("grandchild", kNow - kHour + 1, "b", child.session());
    // A sub-run whose parent was never stored is a trace of its own.
    complete("orphan", kT0 + 1, "c", FakeRun::make("echo", "never stored", kT0).session());
    complete("new", kNow - kHour);

    const auto counts = prune(24 * kHour);
    EXPECT_EQ(counts.traces, 2);
    EXPECT_EQ(counts.sessions, 4);
    EXPECT_EQ(counts.events, 8);
    EXPECT_EQ(questions(true), std::vector<std::string>{"new"});
    EXPECT_EQ(stats()["events"], 2);
}

TEST_P(PruneTest, ConversationsFollowTheirTraces) {
    const auto turn = [&](const std::string& conversation, const std::string& question,
                          std::int64_t started) {
        auto run = FakeRun::make("graph-rag", question, started);
        run.conversation = conversation;
        store({run.open(), run.end()}, started + 10);
    };
    turn("c1", "first", kT0);
    turn("c1", "second", kT0 + 1);
    turn("c1", "third", kNow - kHour);
    turn("c2", "only old", kT0 + 2);

    const auto counts = prune(24 * kHour);
    EXPECT_EQ(counts.traces, 3);
    EXPECT_EQ(counts.turns, 3);
    auto turns = store_->turns("c1", 10);
    ASSERT_TRUE(turns.ok());
    ASSERT_EQ((*turns)["turns"].size(), 1u);
    EXPECT_EQ((*turns)["turns"][0]["question"], "third");
    auto listed = store_->conversations(50);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ((*listed)["sessions"].size(), 1u) << "c2 has no turn left";
    EXPECT_EQ((*listed)["sessions"][0]["session_id"], "c1");
    EXPECT_EQ((*listed)["sessions"][0]["turns"], 1);
    EXPECT_EQ((*listed)["sessions"][0]["started"], (*listed)["sessions"][0]["last"]);
}

TEST_P(PruneTest, ADryRunDeletesNothingAndCountsTheSame) {
    for (int i = 0; i < 5; ++i)
        complete("old " + std::to_string(i), kT0 + i, long_text("old" + std::to_string(i)));
    const auto parent = complete("old parent", kT0 + 10);
    complete("old child", kT0 + 11, long_text("shared"), parent.session());
    complete("new", kNow - kHour, long_text("shared"));
    // A malformed delivery, quarantined long ago.
    Delivery bad;
    bad.delivery_id = 999;
    bad.service = "echo";
    bad.session = "urn:x";
    bad.seq = "0";
    bad.state = "open";
    bad.body = "not json";
    ASSERT_TRUE(store_->store_batch({bad}, at(kT0)).ok());
    const json before = stats();

    const auto dry = prune(24 * kHour, std::nullopt, true, 2);
    EXPECT_EQ(stats(), before) << "a dry run deletes nothing";
    EXPECT_EQ(dry.traces, 6);
    EXPECT_EQ(dry.texts, 5) << "the shared text stays";
    EXPECT_EQ(dry.quarantined, 1);
    EXPECT_LT(dry.bytes_after, dry.bytes_before);

    const auto real = prune(24 * kHour, std::nullopt, false, 2);
    for (const auto& [name, d, r] :
         {std::tuple{"traces", dry.traces, real.traces},
          std::tuple{"sessions", dry.sessions, real.sessions},
          std::tuple{"events", dry.events, real.events},
          std::tuple{"triples", dry.triples, real.triples},
          std::tuple{"texts", dry.texts, real.texts}, std::tuple{"turns", dry.turns, real.turns},
          std::tuple{"quarantined", dry.quarantined, real.quarantined}})
        EXPECT_EQ(d, r) << name;
    EXPECT_EQ(real.bytes_before, dry.bytes_before);
    const json after = stats();
    EXPECT_EQ(after["sessions"], 1);
    EXPECT_EQ(after["texts"], 1);
    EXPECT_EQ(after["quarantined"], 0);
    EXPECT_EQ(after["triples"].get<std::int64_t>(),
              before["triples"].get<std::int64_t>() - real.triples);
}

TEST_P(PruneTest, ATextSharedWithAKeptTraceSurvivesExactly) {
    const std::string shared = long_text("shared answer é \U0001F680");
    const auto old_twin = complete("twin", kT0, shared);
    // Its own long text goes with it.
    complete("old alone", kT0 + 1, long_text("alone"));
    const auto new_twin = complete("twin", kNow - kHour, shared);
    const std::string expected = exported(new_twin);
    ASSERT_NE(expected.find("shared answer"), std::string::npos);
    ASSERT_EQ(stats()["texts"], 2);

    const auto counts = prune(24 * kHour);
    EXPECT_EQ(counts.traces, 2);
    EXPECT_EQ(counts.texts, 1);
    EXPECT_EQ(stats()["texts"], 1);
    EXPECT_EQ(exported(new_twin), expected);
    auto shown = store_->show(new_twin.session(), at(kNow));
    ASSERT_TRUE(shown.ok());
    EXPECT_NE(shown->dump().find(schema::dump(json(shared))), std::string::npos);
    EXPECT_FALSE(store_->show(old_twin.session(), at(kNow)).ok());

    // A text used again after the prune is stored again, and prunes keep it as long as its user.
    const auto third = complete("third", kNow - kHour + 5, long_text("alone"));
    EXPECT_EQ(prune(24 * kHour).traces, 0);
    EXPECT_NE(exported(third).find("alone"), std::string::npos);
}

TEST_P(PruneTest, MaxBytesPrunesTheOldestUntilTheStoreIsUnderItsBudget) {
    std::vector<FakeRun> runs;
    runs.reserve(40);
    for (std::int64_t i = 0; i < 40; ++i)
        runs.push_back(complete("run " + std::to_string(100 + i), kNow - (40 - i) * 60'000,
                                long_text(std::to_string(i), 30'000)));
    auto full = store_->live_bytes();
    ASSERT_TRUE(full.ok()) << full.error().describe();
    const std::int64_t budget = *full / 2;

    const auto dry = prune(std::nullopt, budget, true);
    EXPECT_GT(dry.traces, 0);
    EXPECT_EQ(stats()["sessions"], 40);

    const auto counts = prune(std::nullopt, budget, false, 5);
    EXPECT_GT(counts.traces, 10);
    EXPECT_LT(counts.traces, 40);
    EXPECT_EQ(counts.bytes_before, *full);
    EXPECT_LE(counts.bytes_after, budget);
    auto live = store_->live_bytes();
    ASSERT_TRUE(live.ok());
    EXPECT_LE(*live, budget);
    // The oldest went: what is left is the newest, unbroken.
    const auto left = questions();
    ASSERT_EQ(left.size(), static_cast<std::size_t>(40 - counts.traces));
    EXPECT_EQ(left.front(), "run " + std::to_string(100 + counts.traces));
    EXPECT_EQ(left.back(), "run 139");
    // Under budget: nothing more goes.
    EXPECT_EQ(prune(std::nullopt, budget).traces, 0);
}

// The file itself shrinks: pages a prune frees leave it (auto_vacuum=INCREMENTAL).
class SqlitePruneTest : public PruneTest {
protected:
    std::uintmax_t checkpointed_size() {
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        EXPECT_TRUE(db.ok());
        if (db.ok()) {
            EXPECT_TRUE((*db)->exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
        }
        return std::filesystem::file_size(dir_ / "traces.db");
    }
    std::int64_t auto_vacuum() {
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        auto q = (*db)->prepare_once("PRAGMA auto_vacuum");
        return q->first([](const storage::Row& row) { return row.int64(0); }).value().value();
    }
};

GLASSBOX_TRACE_SQLITE_ONLY(SqlitePruneTest);

TEST_P(SqlitePruneTest, TheFileShrinksAfterAPrune) {
    EXPECT_EQ(auto_vacuum(), 2) << "a new store is created with auto_vacuum=INCREMENTAL";
    // Texts large enough that the pages of an empty store (the question index's tables among
    // them, the evaluation runs' since version 11) are a small part of it.
    for (int i = 0; i < 40; ++i)
        complete("run " + std::to_string(i), kT0 + i, long_text(std::to_string(i), 100'000));
    complete("new", kNow - kHour);
    const auto before = checkpointed_size();
    EXPECT_EQ(prune(24 * kHour).traces, 40);
    const auto after = checkpointed_size();
    EXPECT_LT(after * 4, before) << before << " -> " << after;
}

TEST_P(SqlitePruneTest, AStoreWithoutAutoVacuumGetsItOnItsFirstPrune) {
    // Texts large enough that the store's empty tables and indexes (two pages each) stay well
    // under half of the file.
    for (int i = 0; i < 20; ++i)
        complete("run " + std::to_string(i), kT0 + i, long_text(std::to_string(i), 80'000));
    store_.reset();
    {
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("PRAGMA auto_vacuum = NONE; VACUUM").ok());
    }
    ASSERT_EQ(auto_vacuum(), 0);
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    const auto before = checkpointed_size();
    EXPECT_EQ(prune(24 * kHour).traces, 20);
    EXPECT_EQ(auto_vacuum(), 2);
    EXPECT_LT(checkpointed_size() * 2, before);
}

TEST_P(SqlitePruneTest, AVersion4StoreIsMigratedAndItsTextsKeptForItsEvents) {
    const std::string shared = long_text("shared");
    complete("old twin", kT0, shared);
    const auto new_twin = complete("new twin", kNow - kHour, shared);
    const std::string expected = exported(new_twin);
    store_.reset();
    {
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)
                        ->exec("DROP INDEX texts_last_used; ALTER TABLE texts DROP COLUMN "
                               "last_used; ALTER TABLE sessions DROP COLUMN pinned; DROP INDEX "
                               "events_received; DROP TABLE sessions_search; UPDATE meta SET "
                               "value = '4' WHERE key = 'schema'")
                        .ok());
    }
    ASSERT_FALSE(TraceStore::open(dir_ / "traces.db", OpenMode::kReadOnly, config_).ok())
        << "a reader does not migrate";
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
    auto version = (*db)->prepare_once("SELECT value FROM meta WHERE key = 'schema'");
    EXPECT_EQ(version->first([](const storage::Row& r) { return std::string(r.text(0)); })
                  .value()
                  .value(),
              "11");  // 4 → … → 11 (issue 35)
    EXPECT_EQ(prune(24 * kHour).traces, 1);
    EXPECT_EQ(stats()["texts"], 1);
    EXPECT_EQ(exported(new_twin), expected);
}

// Ingest on one connection while another prunes, batch by batch: every event stored once.
TEST_P(PruneTest, IngestGoesOnWhileAPruneRuns) {
    for (int i = 0; i < 60; ++i) complete("old " + std::to_string(i), kT0 + i);
    auto pruner = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(pruner);
    std::atomic<bool> ingesting{true};
    std::atomic<std::int64_t> pruned{0};
    std::thread thread([&] {
        // Batches of one trace: the two writers interleave as much as they can.
        PruneRequest request;
        request.older_than = milliseconds{24 * kHour};
        request.batch_traces = 1;
        request.now = at(kNow);
        do {
            auto counts = pruner->prune(request);
            EXPECT_TRUE(counts.ok()) << counts.error().describe();
            if (!counts) break;
            pruned += counts->traces;
        } while (ingesting.load());
    });
    std::vector<FakeRun> fresh;
    for (int i = 0; i < 40; ++i) {
        fresh.push_back(FakeRun::make("echo", "fresh " + std::to_string(i), kNow - kHour + i));
        const auto& run = fresh.back();
        // Every message twice (a redelivery): stored once.
        store({run.open(), run.end(), run.open()}, kNow - kHour + i + 10);
    }
    ingesting = false;
    thread.join();
    EXPECT_EQ(pruned.load(), 60);
    const json s = stats();
    EXPECT_EQ(s["sessions"], 40);
    EXPECT_EQ(s["events"], 80);
    for (const auto& run : fresh) {
        auto shown = store_->show(run.session(), at(kNow));
        ASSERT_TRUE(shown.ok()) << run.question;
        EXPECT_EQ((*shown)["events"].size(), 2u);
    }
}

TEST_P(PruneTest, TheRetentionWorkerPrunesAndCounts) {
    for (int i = 0; i < 3; ++i) complete("old " + std::to_string(i), kT0 + i);
    complete("new", kNow - kHour);
    RetentionConfig config;
    config.retention = milliseconds{24 * kHour};
    auto counters = std::make_shared<RetentionCounters>(config);
    RetentionWorker worker(reopen(OpenMode::kReadWrite), config, counters);
    auto counts = worker.prune_once(at(kNow));
    ASSERT_TRUE(counts.ok()) << counts.error().describe();
    EXPECT_EQ(counts->traces, 3);
    EXPECT_EQ(worker.prune_once(at(kNow))->traces, 0);
    const auto snapshot = counters->snapshot();
    EXPECT_EQ(snapshot.retention_ms, 24 * kHour);
    EXPECT_EQ(snapshot.prunes, 1u) << "a prune that deleted nothing is not counted";
    EXPECT_EQ(snapshot.traces, 3u);
    EXPECT_EQ(snapshot.events, 6u);
    EXPECT_EQ(questions(), std::vector<std::string>{"new"});
    // Started and stopped: the thread's first prune runs at once and stop() ends it.
    worker.start();
    worker.stop();
    EXPECT_EQ(counters->snapshot().failures, 0u);
}

// ---- PostgreSQL: day partitions --------------------------------------------------------------

constexpr std::int64_t kDay = 86'400'000;

// The events partitions of the store's schema (PostgreSQL), by name.
std::set<std::string> partitions(const StoreSite& site) {
    storage::PgOptions options;
    options.dsn = site.dsn();
    auto db = storage::PgConnection::open(options);
    EXPECT_TRUE(db.ok()) << db.error().describe();
    std::set<std::string> out;
    if (!db) return out;
    auto q = (*db)->prepare(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass('events')");
    EXPECT_TRUE(q.ok());
    if (!q) return out;
    EXPECT_TRUE(q->each([&](const storage::sql::Row& row) { out.emplace(row.text(0)); }).ok());
    return out;
}

std::string day_partition(std::int64_t ms) { return "events_d" + std::to_string(ms / kDay); }

TEST_P(PruneTest, OnPostgresADayWhollyBeforeTheCutOffIsDroppedWithoutItsKeptTraces) {
    if (!on_postgres()) GTEST_SKIP() << "PostgreSQL's partitions";
    complete("day one a", kT0);
    complete("day one b", kT0 + kHour);
    const auto pinned = complete("day one pinned", kT0 + 2 * kHour);
    const auto running = FakeRun::make("echo", "day one running", kT0 + 3 * kHour);
    store({running.open()}, kNow - 60'000);
    complete("new", kNow - kHour);
    ASSERT_TRUE(store_->pin(pinned.session(), true).ok());
    const std::string old_day = day_partition(kT0);
    const std::string new_day = day_partition(kNow - kHour);
    ASSERT_NE(old_day, new_day);
    EXPECT_EQ(partitions(*site_), (std::set<std::string>{"events_kept", old_day, new_day}));

    const auto counts = prune(24 * kHour);
    EXPECT_EQ(counts.traces, 2);
    EXPECT_EQ(counts.sessions, 2);
    EXPECT_EQ(counts.events, 4);
    EXPECT_EQ(partitions(*site_), (std::set<std::string>{"events_kept", new_day}))
        << "the old day's partition is dropped";
    EXPECT_EQ(questions(), (std::vector<std::string>{"day one pinned", "day one running", "new"}));
    // The kept traces are whole, and the running one goes on.
    EXPECT_EQ(store_->show(pinned.session(), at(kNow)).value()["session"]["events"], 2);
    EXPECT_NE(exported(pinned).find("day one pinned"), std::string::npos);
    EXPECT_EQ(store({running.end(TraceStatus::kComplete, "done")}, kNow).stored, 1u);
    EXPECT_EQ(store({running.open()}, kNow).duplicates, 1u) << "its stored events still count";
    auto shown = store_->show(running.session(), at(kNow));
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["session"]["events"], 2);
    EXPECT_EQ((*shown)["session"]["status"], "complete");
    EXPECT_EQ(stats()["events"], 2 + 2 + 2);

    // Unpinned and ended, they go by row from events_kept with the next prune.
    ASSERT_TRUE(store_->pin(pinned.session(), false).ok());
    const auto later = prune(24 * kHour);
    EXPECT_EQ(later.traces, 2);
    EXPECT_EQ(later.events, 4);
    EXPECT_EQ(questions(), std::vector<std::string>{"new"});
}

TEST_P(PruneTest, OnPostgresASubRunOfADroppedDayGoesWithItsTraceFromTheNextDay) {
    if (!on_postgres()) GTEST_SKIP() << "PostgreSQL's partitions";
    // A trace started in the last second of a day, its sub-run in the next day.
    const std::int64_t day_end = (kT0 / kDay + 1) * kDay;
    const auto parent = complete("late parent", day_end - 1000);
    complete("its sub-run", day_end + 1000, "the answer", parent.session());
    const auto next_day = complete("next day", day_end + 2 * kHour);
    EXPECT_EQ(partitions(*site_),
              (std::set<std::string>{"events_kept", day_partition(kT0), day_partition(day_end)}));
    // The cut-off in the next day: the first day is wholly before it, the next one is not.
    const auto counts = prune(kNow - (day_end + kHour));
    EXPECT_EQ(counts.traces, 1);
    EXPECT_EQ(counts.sessions, 2);
    EXPECT_EQ(counts.events, 4);
    EXPECT_EQ(questions(true), std::vector<std::string>{"next day"});
    EXPECT_EQ(partitions(*site_), (std::set<std::string>{"events_kept", day_partition(day_end)}));
    EXPECT_NE(exported(next_day).find("next day"), std::string::npos);
}

TEST_P(PruneTest, OnPostgresTheRetentionWorkerCutsAtTheStartOfADay) {
    if (!on_postgres()) GTEST_SKIP() << "PostgreSQL's partitions";
    // Two hours after the start of a day, with a retention of a day: the cut-off goes back to the
    // start of yesterday, so yesterday's traces stay until its day is wholly past.
    const std::int64_t now = (kT0 / kDay + 2) * kDay + 2 * kHour;
    complete("the day before yesterday", now - 2 * kDay);
    complete("yesterday, first hour", now - kDay - kHour);
    RetentionConfig config;
    config.retention = milliseconds{kDay};
    auto counters = std::make_shared<RetentionCounters>(config);
    RetentionWorker worker(reopen(OpenMode::kReadWrite), config, counters);
    auto counts = worker.prune_once(at(now));
    ASSERT_TRUE(counts.ok()) << counts.error().describe();
    EXPECT_EQ(counts->traces, 1);
    EXPECT_EQ(questions(), std::vector<std::string>{"yesterday, first hour"});
    EXPECT_EQ(partitions(*site_).count(day_partition(now - 2 * kDay)), 0u);
}

class PruneServiceTest : public PruneTest {
protected:
    base::Result<json> ask(const json& body) {
        return answer_trace_request(
            *store_, body, [](const json&) { return true; }, {}, &counters_);
    }
    void expect_invalid(const json& body, const std::string& says) {
        auto r = ask(body);
        ASSERT_FALSE(r.ok()) << body.dump();
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest) << body.dump();
        EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    }
    RetentionCounters counters_;
};

GLASSBOX_TRACE_BACKENDS(PruneServiceTest);

TEST_P(PruneServiceTest, OpsAndTheirChecks) {
    // kT0 is in the past: "30d" before the real clock reaches back past these runs? They are
    // older than 30 days from any date after 2026-10-21, so older_than 1d prunes them.
    const auto a = complete("a", kT0);
    const auto b = complete("b", kT0 + 1);
    EXPECT_TRUE(is_write_request({{"op", "prune"}}));
    EXPECT_TRUE(is_write_request({{"op", "pin"}}));
    EXPECT_TRUE(is_write_request({{"op", "unpin"}}));
    EXPECT_FALSE(is_write_request({{"op", "list"}}));

    auto pinned = ask({{"op", "pin"}, {"session", b.uris.uuid().substr(0, 8)}});
    ASSERT_TRUE(pinned.ok()) << pinned.error().describe();
    EXPECT_EQ(schema::decode<schema::TracePinned>(*pinned).value(),
              (schema::TracePinned{b.session(), true, std::nullopt}));
    auto listed = ask({{"op", "list"}});
    ASSERT_TRUE(listed.ok());
    for (const auto& s : (*listed)["sessions"]) EXPECT_EQ(s["pinned"], s["question"] == "b");

    auto dry = ask({{"op", "prune"}, {"older_than", "1d"}, {"dry_run", true}});
    ASSERT_TRUE(dry.ok()) << dry.error().describe();
    const auto dry_result = schema::decode<schema::TracePruneResult>(*dry).value();
    EXPECT_TRUE(dry_result.dry_run);
    EXPECT_EQ(dry_result.traces, 1);
    EXPECT_EQ(counters_.snapshot().prunes, 0u) << "a dry run is not counted";

    auto done = ask({{"op", "prune"}, {"older_than", 86'400'000}});
    ASSERT_TRUE(done.ok()) << done.error().describe();
    EXPECT_EQ((*done)["traces"], 1);
    EXPECT_EQ((*done)["dry_run"], false);
    EXPECT_FALSE(store_->show(a.session(), at(kNow)).ok());
    auto stats = ask({{"op", "stats"}});
    ASSERT_TRUE(stats.ok());
    const auto typed = schema::decode<schema::TraceStats>(*stats).value();
    ASSERT_TRUE(typed.retention);
    EXPECT_EQ(typed.retention->traces, 1u);
    EXPECT_EQ(typed.retention->events, 2u);

    auto unpinned = ask({{"op", "unpin"}, {"session", b.session()}});
    ASSERT_TRUE(unpinned.ok());
    EXPECT_EQ((*unpinned)["pinned"], false);
    auto unknown = ask({{"op", "pin"}, {"session", "urn:nothing"}});
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().type, ErrorType::kNotFound);

    expect_invalid({{"op", "prune"}}, "older_than");
    expect_invalid({{"op", "prune"}, {"dry_run", true}}, "older_than");
    for (const json& age : {json("30x"), json("30"), json("-1d"), json(""), json(0), json(-5),
                            json(1.5), json(true), json::array()})
        expect_invalid({{"op", "prune"}, {"older_than", age}}, "\"older_than\" must be an age");
    expect_invalid({{"op", "prune"}, {"older_than", "1d"}, {"dry_run", "yes"}}, "dry_run");
    expect_invalid({{"op", "prune"}, {"max_bytes", -1}}, "max_bytes");
    expect_invalid({{"op", "pin"}}, "pin needs \"session\"");
    expect_invalid({{"op", "unpin"}, {"session", 7}}, "\"session\" must be a string");
    expect_invalid({{"op", "prunes"}}, "prune, pin, unpin");
}

}  // namespace
}  // namespace glassbox::trace::testing
