// The in-memory int64 row-feed virtual table: the sqlite3_module and its per-thread rows.
#include "storage/int64_row_feed.hpp"

#include <sqlite3.h>

namespace glassbox::storage {

namespace {

// The feed of the statement running on this thread (run_with_row_feed sets it around the run).
thread_local const Int64RowFeed* current_feed = nullptr;

struct FeedCursor {
    sqlite3_vtab_cursor base;
    std::size_t at;
};

int feed_connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
    const int rc = sqlite3_declare_vtab(
        db,
        "CREATE TABLE x(c0 INTEGER, c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER, t0 TEXT, t1 "
        "TEXT)");
    if (rc != SQLITE_OK) return rc;
    auto* table = static_cast<sqlite3_vtab*>(sqlite3_malloc(sizeof(sqlite3_vtab)));
    if (table == nullptr) return SQLITE_NOMEM;
    *table = sqlite3_vtab{};
    *out = table;
    return SQLITE_OK;
}
int feed_disconnect(sqlite3_vtab* table) {
    sqlite3_free(table);
    return SQLITE_OK;
}
int feed_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
    info->estimatedCost = 1e6;
    return SQLITE_OK;
}
int feed_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    auto* cursor = static_cast<FeedCursor*>(sqlite3_malloc(sizeof(FeedCursor)));
    if (cursor == nullptr) return SQLITE_NOMEM;
    *cursor = FeedCursor{};
    *out = &cursor->base;
    return SQLITE_OK;
}
int feed_close(sqlite3_vtab_cursor* cursor) {
    sqlite3_free(cursor);
    return SQLITE_OK;
}
int feed_filter(sqlite3_vtab_cursor* cursor, int, const char*, int, sqlite3_value**) {
    reinterpret_cast<FeedCursor*>(cursor)->at = 0;
    return SQLITE_OK;
}
int feed_next(sqlite3_vtab_cursor* cursor) {
    ++reinterpret_cast<FeedCursor*>(cursor)->at;
    return SQLITE_OK;
}
int feed_eof(sqlite3_vtab_cursor* cursor) {
    return current_feed == nullptr ||
           reinterpret_cast<FeedCursor*>(cursor)->at >= current_feed->count;
}
int feed_column(sqlite3_vtab_cursor* cursor, sqlite3_context* context, int column) {
    const auto at = reinterpret_cast<FeedCursor*>(cursor)->at;
    constexpr auto kAll = static_cast<int>(kRowFeedColumns + kRowFeedTextColumns);
    if (current_feed == nullptr || column < 0 || column >= kAll || at >= current_feed->count) {
        sqlite3_result_null(context);
        return SQLITE_OK;
    }
    const auto index = static_cast<std::size_t>(column);
    if (index >= kRowFeedColumns) {
        if (current_feed->texts == nullptr) {
            sqlite3_result_null(context);
            return SQLITE_OK;
        }
        const std::string_view text =
            current_feed->texts[at * kRowFeedTextColumns + (index - kRowFeedColumns)];
        // SQLITE_STATIC: the views outlive the run (the caller's promise), so no copy is made.
        // An empty view may have no data pointer, which SQLite would read as NULL.
        sqlite3_result_text64(context, text.empty() ? "" : text.data(), text.size(), SQLITE_STATIC,
                              SQLITE_UTF8);
        return SQLITE_OK;
    }
    sqlite3_result_int64(
        context, current_feed->rows[at * current_feed->stride + current_feed->column_at[index]]);
    return SQLITE_OK;
}
int feed_rowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
    *rowid = static_cast<sqlite3_int64>(reinterpret_cast<FeedCursor*>(cursor)->at);
    return SQLITE_OK;
}

sqlite3_module make_feed_module() {
    sqlite3_module module{};
    module.iVersion = 0;
    module.xCreate = nullptr;  // eponymous only: used by its name, never created
    module.xConnect = feed_connect;
    module.xBestIndex = feed_best_index;
    module.xDisconnect = feed_disconnect;
    module.xDestroy = feed_disconnect;
    module.xOpen = feed_open;
    module.xClose = feed_close;
    module.xFilter = feed_filter;
    module.xNext = feed_next;
    module.xEof = feed_eof;
    module.xColumn = feed_column;
    module.xRowid = feed_rowid;
    return module;
}
const sqlite3_module feed_module = make_feed_module();

}  // namespace

base::Result<void> register_row_feed(Database& db, const std::string& name) {
    if (sqlite3_create_module_v2(db.handle(), name.c_str(), &feed_module, nullptr, nullptr) !=
        SQLITE_OK) {
        return base::make_error(base::ErrorType::kInternal,
                                "cannot register the virtual table " + name + ": " + db.message());
    }
    return {};
}

base::Result<std::int64_t> run_with_row_feed(Database& db, const std::string& sql,
                                             const Int64RowFeed& feed) {
    auto st = db.prepare(sql);
    if (!st) return st.error();
    current_feed = &feed;
    auto r = st->run();
    current_feed = nullptr;
    if (!r) return r.error();
    return db.changes();
}

}  // namespace glassbox::storage
