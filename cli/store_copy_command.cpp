// `glassbox store copy --from HOME --to DSN`: a SQLite home's knowledge collections and trace store
// copied into a PostgreSQL database (issue 34, "Moving a home"): each collection and the trace
// store whole or not at all, every table counted on both sides (docs/deployment.md §6.5).
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/storage_choice.hpp"
#include "storage/pg_connection.hpp"
#include "storage/pg_dsn.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/table_copy.hpp"
#include "workers/store/collection_catalog.hpp"
#include "workers/store/knowledge_base.hpp"
#include "workers/trace_collector/trace_store.hpp"

// A namespace of its own: the unity build puts this file beside other commands' anonymous
// namespaces.
namespace glassbox::cli::store_copy {
namespace {

namespace fs = std::filesystem;
using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;
using storage::TableCount;

// A store's staged load that staged a batch this recently is taken as still running (the store
// worker's own staged_load_idle default): copying then would take half a load.
constexpr std::chrono::seconds kLoadIdle{600};
// Collection names are at most 64 characters (schema/collection_name.hpp).
constexpr std::size_t kMaxCollectionName = 64;
constexpr std::string_view kCopyingSuffix = ".copying";

struct StoreCopyOptions {
    std::string from;
    std::string to;
    std::vector<std::string> collections;
    bool no_traces = false;
    bool json = false;
};

// What one collection's or the trace store's copy did.
struct CopyReport {
    std::string name;  // the collection; "" for the traces
    std::vector<TableCount> tables;
    double seconds = 0;
};

// A folder of this process's own under $TMPDIR, removed with its contents at the end: the
// target's KnowledgeBases keep their vector index caches there (the copy never serves queries).
class ScratchHome {
public:
    ScratchHome() {
        std::string pattern = (fs::temp_directory_path() / "glassbox-store-copy-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            exit_with_error(make_error(ErrorType::kInternal, "cannot create a scratch folder"));
        path_ = pattern;
    }
    ~ScratchHome() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    ScratchHome(const ScratchHome&) = delete;
    ScratchHome& operator=(const ScratchHome&) = delete;
    const fs::path& path() const noexcept { return path_; }

private:
    fs::path path_;
};

[[noreturn]] void refuse(const std::string& why) {
    exit_with_error(make_error(ErrorType::kInvalidRequest, why));
}

std::int64_t rows_of(const CopyReport& report, std::string_view table) {
    std::int64_t rows = 0;
    for (const auto& t : report.tables) {
        if (t.table == table) rows += t.target_rows;
    }
    return rows;
}

std::int64_t all_rows(const CopyReport& report) {
    std::int64_t rows = 0;
    for (const auto& t : report.tables) rows += t.target_rows;
    return rows;
}

// The counts a user knows the stores by, per kind.
std::vector<std::pair<std::string, std::int64_t>> kinds_of(const CopyReport& report) {
    if (report.name.empty()) {
        return {{"sessions", rows_of(report, "sessions")}, {"events", rows_of(report, "events")}};
    }
    return {{"facts", rows_of(report, "graph_quads")},
            {"documents", rows_of(report, "documents")},
            {"chunks", rows_of(report, "chunks")},
            {"vectors", rows_of(report, "vectors_entity") + rows_of(report, "vectors_chunk")}};
}

// "collection default: 1,234 facts, 6 documents, 18 chunks, 228 vectors; 14 tables, 5,678 rows
// in 0.4 s, checked equal"
void print_line(const CopyReport& report) {
    std::string line = report.name.empty() ? "traces: " : "collection " + report.name + ": ";
    bool first = true;
    for (const auto& [kind, count] : kinds_of(report)) {
        // Every kind is named in the plural: one of it drops the final s.
        const std::string named = count == 1 ? kind.substr(0, kind.size() - 1) : kind;
        line += (first ? "" : ", ") + with_commas(static_cast<std::uint64_t>(count)) + " " + named;
        first = false;
    }
    line += "; " + std::to_string(report.tables.size()) + " tables, " +
            with_commas(static_cast<std::uint64_t>(all_rows(report))) + " rows in " +
            format_seconds(report.seconds) + ", checked equal";
    std::cout << line << std::endl;
}

json report_json(const CopyReport& report) {
    json out = json::object();
    if (!report.name.empty()) out["collection"] = report.name;
    for (const auto& [kind, count] : kinds_of(report)) out[kind] = count;
    json tables = json::object();
    for (const auto& t : report.tables)
        tables[t.table] = {{"source", t.source_rows}, {"target", t.target_rows}};
    out["tables"] = std::move(tables);
    out["seconds"] = report.seconds;
    out["checked_equal"] = true;
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A SQLite file of the home, read-only (the running workers, if any, keep writing beside it).
Result<std::unique_ptr<storage::SqliteConnection>> open_source(const fs::path& file,
                                                               const std::string& label) {
    storage::OpenOptions options;
    options.read_only = true;
    options.create = false;
    options.label = label;
    auto db = storage::Database::open(file, options);
    if (!db) return db.error();
    return std::make_unique<storage::SqliteConnection>(std::move(db).value());
}

Result<std::unique_ptr<storage::PgConnection>> open_target(const std::string& dsn,
                                                           const std::string& label) {
    storage::PgOptions options;
    options.dsn = dsn;
    options.label = label;
    return storage::PgConnection::open(options);
}

Result<std::optional<std::string>> text_of(storage::sql::Connection& db, const std::string& sql) {
    auto st = db.prepare_once(sql);
    if (!st) return st.error();
    return st->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
}

Result<std::int64_t> int_of(storage::sql::Connection& db, const std::string& sql) {
    auto st = db.prepare_once(sql);
    if (!st) return st.error();
    auto value = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!value) return value.error();
    return value->value_or(0);
}

// ---- what is copied, checked before anything is written -------------------------------------

struct CopyPlan {
    fs::path home;
    std::vector<std::string> collections;
    std::optional<fs::path> traces;  // the home's trace store, when it is copied
};

// The collections and trace store of HOME to copy; refuses names the home does not have.
CopyPlan plan_of(const StoreCopyOptions& options) {
    CopyPlan plan{options.from, {}, std::nullopt};
    std::error_code ec;
    const fs::path traces = plan.home / "traces.db";
    const bool has_traces = fs::is_regular_file(traces, ec);
    if (!fs::is_directory(plan.home / "knowledge", ec) && !has_traces) {
        refuse("--from " + plan.home.string() +
               ": not a glassbox home (it holds neither knowledge/ nor traces.db)");
    }
    auto listed = store::KnowledgeBases(plan.home).list();
    if (!listed) exit_with_error(listed.error());
    if (options.collections.empty()) plan.collections = *listed;
    for (const auto& name : options.collections) {
        if (std::find(listed->begin(), listed->end(), name) == listed->end())
            refuse("collection \"" + name + "\" is not in " + plan.home.string());
        if (std::find(plan.collections.begin(), plan.collections.end(), name) ==
            plan.collections.end())
            plan.collections.push_back(name);
    }
    if (!options.no_traces && has_traces) {
        // A store of another schema version is refused here (its columns may differ).
        auto store = trace::TraceStore::open(traces, trace::OpenMode::kReadOnly);
        if (!store && store.error().message.find("schema version") != std::string::npos) {
            refuse(store.error().message +
                   ": start this version's trace collector on the home once to bring it up to "
                   "date");
        }
        if (!store) exit_with_error(store.error());
        plan.traces = traces;
    }
    return plan;
}

// Refuses (before anything is written) a target that already holds one of the collections, or a
// trace store with sessions.
void check_target(const std::string& dsn, const CopyPlan& plan) {
    auto db = open_target(dsn, "copy target");
    if (!db) exit_with_error(db.error());
    const std::string at = "PostgreSQL at " + storage::dsn_server(dsn);
    auto has_catalog = int_of(**db, "SELECT to_regclass('glassbox_collections') IS NOT NULL");
    if (!has_catalog) exit_with_error(has_catalog.error());
    for (const auto& name : plan.collections) {
        if (*has_catalog == 0) break;
        auto st = (*db)->prepare_once("SELECT COUNT(*) FROM glassbox_collections WHERE name = ?1");
        if (!st) exit_with_error(st.error());
        st->bind(1, name);
        auto found = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        if (!found) exit_with_error(found.error());
        if (found->value_or(0) == 0) continue;
        refuse("collection \"" + name + "\" already exists on " + at +
               "; nothing was copied. Delete it there first (glassbox collections delete " + name +
               ", with a store worker on that database) or name the others with --collection");
    }
    if (!plan.traces) return;
    auto has_sessions = int_of(**db, "SELECT to_regclass('sessions') IS NOT NULL");
    if (!has_sessions) exit_with_error(has_sessions.error());
    if (*has_sessions == 0) return;
    auto sessions = int_of(**db, "SELECT COUNT(*) FROM sessions");
    if (!sessions) exit_with_error(sessions.error());
    if (*sessions == 0) return;
    refuse("the trace store on " + at + " already holds " +
           with_commas(static_cast<std::uint64_t>(*sessions)) +
           (*sessions == 1 ? " session" : " sessions") +
           "; nothing was copied. Copy into an empty database or schema (another "
           "search_path in --to), or leave the traces out with --no-traces");
}

// ---- a collection -----------------------------------------------------------------------------

// The name a collection is copied under until its last row is in: renamed in the transaction that
// commits its rows, it is never seen under its own name half-copied.
std::string copying_name(const std::string& name) {
    return name.substr(0, kMaxCollectionName - kCopyingSuffix.size()) + std::string(kCopyingSuffix);
}

// kInvalidRequest when a staged load of the collection staged a batch lately: it is being loaded.
Result<void> check_not_loading(storage::sql::Connection& source) {
    const auto since = std::chrono::duration_cast<std::chrono::seconds>(
                           (std::chrono::system_clock::now() - kLoadIdle).time_since_epoch())
                           .count();
    auto loads = store::staged_loads_since(source, since);
    if (!loads) return loads.error();
    if (loads->empty()) return {};
    return make_error(ErrorType::kInvalidRequest, "load " + loads->front().load +
                                                      " into it staged a batch in the last " +
                                                      std::to_string(kLoadIdle.count() / 60) +
                                                      " minutes: copy it once the load has ended");
}

// The collection's rows into `kb` (made empty under its copying name) and the rename to `name`,
// in one write transaction on the collection.
Result<std::vector<TableCount>> fill_collection(storage::sql::Connection& source,
                                                store::KnowledgeBase& kb,
                                                const std::vector<storage::TableSpec>& specs,
                                                const std::string& name,
                                                const std::string& catalog) {
    auto held = kb.lock();
    if (!held) return held.error();
    auto& db = kb.db();
    auto tx = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    auto counts = storage::copy_tables(source, db, specs);
    if (!counts) return counts.error();
    auto rename = db.prepare_once("UPDATE " + storage::quoted_identifier(catalog) +
                                  ".glassbox_collections SET name = ?1 WHERE id = ?2");
    if (!rename) return rename.error();
    rename->bind(1, name).bind(2, kb.postgres_id());
    if (auto r = rename->run(); !r) return r.error();
    if (db.changes() != 1)
        return make_error(ErrorType::kInternal, "the collection's catalog row is gone");
    if (auto r = tx->commit(); !r) return r.error();
    return counts;
}

Result<CopyReport> copy_collection(const fs::path& home, const std::string& name,
                                   store::KnowledgeBases& target, const std::string& catalog) {
    const auto start = std::chrono::steady_clock::now();
    auto source = open_source(store::collection_path(home, name), "knowledge store " + name);
    if (!source) return source.error();
    // One snapshot for the check and the copy.
    const storage::sql::ReadScope snapshot(**source);
    if (auto r = check_not_loading(**source); !r) return r.error();
    auto tables = storage::sqlite_tables(**source);
    if (!tables) return tables.error();
    // The new collection's own set-up rows (its vector metadata) give way to the source's.
    std::vector<storage::TableSpec> specs;
    for (const auto& table : *tables) specs.push_back({.name = table, .replace_target_rows = true});
    const std::string temporary = copying_name(name);
    auto counts = [&]() -> Result<std::vector<TableCount>> {
        auto kb = target.get(temporary, true);
        if (!kb) return kb.error();
        return fill_collection(**source, **kb, specs, name, catalog);
    }();
    if (!counts) {
        // Its rows were rolled back; the empty collection under the copying name goes too.
        base::Error error = std::move(counts).error();
        const auto keep = [](store::KnowledgeBase&) { return Result<void>{}; };
        if (auto r = target.remove(temporary, keep, keep);
            !r && r.error().type != ErrorType::kNotFound) {
            error.message += " (the empty collection \"" + temporary +
                             "\" stays on the target: the next copy removes it)";
        }
        return error;
    }
    return CopyReport{name, std::move(counts).value(), seconds_since(start)};
}

// Collections left under their copying name by a copy that was killed: empty (their rows never
// committed), removed before this copy makes its own.
void remove_leftovers(store::KnowledgeBases& target, const CopyPlan& plan) {
    auto names = target.list();
    if (!names) exit_with_error(names.error());
    const auto keep = [](store::KnowledgeBase&) { return Result<void>{}; };
    for (const auto& name : plan.collections) {
        const std::string temporary = copying_name(name);
        if (std::find(names->begin(), names->end(), temporary) == names->end()) continue;
        if (auto r = target.remove(temporary, keep, keep); !r) exit_with_error(r.error());
    }
}

// ---- the trace store --------------------------------------------------------------------------

// The day (UTC, days since the epoch, rounded down) of epoch milliseconds `ms`, as the trace store
// on PostgreSQL files a session's events in the partition of the day it started
// (workers/trace_collector/trace_store_detail.hpp, day_of).
std::string day_of(const std::string& ms) {
    return "(((" + ms + ") - (((" + ms + ") % 86400000) + 86400000) % 86400000) / 86400000)";
}

std::string session_day(const std::string& alias) {
    return day_of("COALESCE(" + alias + ".started, " + alias + ".last_event_at)");
}

// Every table but `meta` (the target's own schema version); the partition day of sessions and
// events, for a target whose tables have one.
std::vector<storage::TableSpec> trace_specs(const std::vector<std::string>& tables) {
    std::vector<storage::TableSpec> specs;
    for (const auto& table : tables) {
        // The usage index is stored in each engine's own form (FTS5 terms here, a GIN-indexed
        // bigint[] there) and is not carried over: docs/deployment.md.
        if (table == "meta" || table == "run_uses") continue;
        storage::TableSpec spec{table};
        if (table == "sessions") spec.derived.push_back({"part", session_day("src")});
        if (table == "events") {
            spec.derived.push_back({"part", "COALESCE((SELECT " + session_day("s") +
                                                " FROM sessions AS s WHERE s.id = src.session), " +
                                                day_of("src.received") + ")"});
        }
        specs.push_back(std::move(spec));
    }
    return specs;
}

// Before the events: the day partitions they go to, made as a collector makes them (a target
// without partitions has no such function).
Result<void> make_event_partitions(storage::sql::Connection& source,
                                   storage::sql::Connection& target) {
    auto partitioned = int_of(target, "SELECT to_regproc('trace_event_partitions') IS NOT NULL");
    if (!partitioned) return partitioned.error();
    if (*partitioned == 0) return {};
    auto st = source.prepare_once("SELECT DISTINCT d FROM (SELECT " + session_day("s") +
                                  " AS d FROM sessions AS s UNION SELECT " + day_of("e.received") +
                                  " FROM events AS e WHERE e.session NOT IN (SELECT id FROM "
                                  "sessions))");
    if (!st) return st.error();
    std::string days;
    if (auto r = st->each([&](const storage::sql::Row& row) {
            days += (days.empty() ? "" : ",") + std::to_string(row.int64(0));
        });
        !r) {
        return r;
    }
    if (days.empty()) return {};
    auto make = target.prepare_once("SELECT trace_event_partitions(CAST(?1 AS BIGINT[]))");
    if (!make) return make.error();
    make->bind(1, "{" + days + "}");
    return make->run();
}

Result<CopyReport> copy_traces(const fs::path& file, const std::string& dsn) {
    const auto start = std::chrono::steady_clock::now();
    auto source = open_source(file, "trace store");
    if (!source) return source.error();
    // The target's tables, made as a collector makes them (nothing when they are there).
    if (auto made = trace::TraceStore::open_postgres(dsn, trace::OpenMode::kReadWrite); !made)
        return made.error();
    // The collectors' writer lock (PgOptions' default key) is held for the whole copy: a
    // collector writing this database waits for it instead of adding sessions beside it.
    auto target = open_target(dsn, "trace store");
    if (!target) return target.error();
    const storage::sql::ReadScope snapshot(**source);
    auto tables = storage::sqlite_tables(**source);
    if (!tables) return tables.error();
    auto tx = storage::sql::Transaction::begin(**target, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    storage::CopyOptions options;
    options.before_table = [&](storage::sql::Connection& db, const std::string& table) {
        return table == "events" ? make_event_partitions(**source, db) : Result<void>{};
    };
    auto counts = storage::copy_tables(**source, **target, trace_specs(*tables), options);
    if (!counts) return counts.error();
    if (auto r = tx->commit(); !r) return r.error();
    return CopyReport{"", std::move(counts).value(), seconds_since(start)};
}

// ---- the command ------------------------------------------------------------------------------

// What failed, for the exit: nothing of the collection (or the traces) was written.
[[noreturn]] void copy_failed(const std::string& what, const base::Error& error) {
    exit_with_error(
        make_error(error.type, what + " not copied (nothing of it was written): " + error.message));
}

void run_copy(const StoreCopyOptions& options) {
    // The stores' own info lines (a vector index set up for each new, empty collection) are not
    // news of the copy: warnings and errors only.
    base::set_log_level("warn");
    if (auto problem = connection_string_problem(options.to)) refuse("--to: " + *problem);
    const CopyPlan plan = plan_of(options);
    check_target(options.to, plan);
    const std::string server = storage::dsn_server(options.to);
    if (!options.json) {
        std::cout << "copying " << plan.home.string() << " to PostgreSQL at " << server
                  << " (dsn \"" << storage::masked_dsn(options.to) << "\")" << std::endl;
    }
    json out = {{"from", plan.home.string()},
                {"server", server},
                {"dsn", storage::masked_dsn(options.to)},
                {"collections", json::array()},
                {"traces", nullptr}};
    if (!plan.collections.empty()) {
        const ScratchHome scratch;
        store::KnowledgeBases target(scratch.path(), options.to);
        remove_leftovers(target, plan);
        auto db = open_target(options.to, "knowledge catalog");
        if (!db) exit_with_error(db.error());
        auto catalog = text_of(**db, "SELECT current_schema()");
        if (!catalog || !*catalog) exit_with_error(make_error(ErrorType::kInternal, "no schema"));
        for (const auto& name : plan.collections) {
            auto report = copy_collection(plan.home, name, target, **catalog);
            if (!report) copy_failed("collection \"" + name + "\"", report.error());
            if (!options.json) print_line(*report);
            out["collections"].push_back(report_json(*report));
        }
    }
    if (plan.traces) {
        auto report = copy_traces(*plan.traces, options.to);
        if (!report) copy_failed("the trace store", report.error());
        if (!options.json) print_line(*report);
        out["traces"] = report_json(*report);
    }
    if (options.json) std::cout << dump_json(out) << std::endl;
}

}  // namespace
}  // namespace glassbox::cli::store_copy

namespace glassbox::cli {

void add_store_command(CLI::App& app) {
    auto* store_cmd = app.add_subcommand(
        "store", "The stores as wholes: copy a home's knowledge and traces to PostgreSQL");
    store_cmd->require_subcommand(1);
    auto [copy_cmd, copy] = add_command<store_copy::StoreCopyOptions>(
        *store_cmd, "copy",
        "Copy a SQLite home's collections and trace store into a PostgreSQL database, each whole "
        "or not at all, and check the counts",
        store_copy::run_copy);
    copy_cmd->add_option("--from", copy->from, "The home to copy (read only; workers may run)")
        ->required();
    copy_cmd
        ->add_option("--to", copy->to,
                     "The PostgreSQL database: a libpq connection string or postgresql:// URI")
        ->required();
    copy_cmd->add_option("--collection", copy->collections,
                         "Copy only these collections (repeat; default: every one)");
    copy_cmd->add_flag("--no-traces", copy->no_traces, "Leave the trace store out");
    copy_cmd->add_flag("--json", copy->json, "Print the counts as one JSON object");
}

}  // namespace glassbox::cli
