// SQLite-backed explain spool: batched appends, delete on ACK, ordered reads for redelivery.
#include "broker/explain_spool.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace glassbox::broker {

namespace detail {
void SqliteClose::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
void SqliteFinalize::operator()(sqlite3_stmt* statement) const noexcept {
    sqlite3_finalize(statement);
}
}  // namespace detail

namespace {

using schema::Error;
using schema::ErrorType;
using schema::Result;

Error sqlite_error(sqlite3* db, const std::string& what) {
    return schema::make_error(ErrorType::kInternal,
                              "spool: " + what + ": " + (db ? sqlite3_errmsg(db) : "no handle"));
}

Result<void> exec(sqlite3* db, const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
        std::string text = message ? message : "unknown error";
        sqlite3_free(message);
        return schema::make_error(ErrorType::kInternal, std::string{"spool: "} + sql + ": " + text);
    }
    return {};
}

Result<detail::SqliteStatement> prepare(sqlite3* db, const char* sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
        return sqlite_error(db, std::string{"prepare "} + sql);
    }
    return detail::SqliteStatement{raw};
}

// Resets a statement when it goes out of scope, so it never holds a read lock.
struct StatementReset {
    sqlite3_stmt* statement;
    ~StatementReset() {
        sqlite3_reset(statement);
        sqlite3_clear_bindings(statement);
    }
};

void bind_text(sqlite3_stmt* statement, int index, const std::string& value) {
    // Blobs: the spool stores bytes as received, and length() then counts bytes.
    sqlite3_bind_blob64(statement, index, value.data(), value.size(), SQLITE_STATIC);
}

std::string column_bytes(sqlite3_stmt* statement, int index) {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(statement, index));
    const int size = sqlite3_column_bytes(statement, index);
    if (data == nullptr || size <= 0) return {};
    return std::string{data, static_cast<std::size_t>(size)};
}

SpoolRecord read_row(sqlite3_stmt* statement) {
    SpoolRecord record;
    record.delivery_id = static_cast<std::uint64_t>(sqlite3_column_int64(statement, 0));
    record.service = column_bytes(statement, 1);
    record.session = column_bytes(statement, 2);
    record.seq = static_cast<std::uint64_t>(sqlite3_column_int64(statement, 3));
    record.state = column_bytes(statement, 4);
    record.body = column_bytes(statement, 5);
    return record;
}

// SQLite creates -wal and -shm with the database file's mode, so making the file 0600 first
// keeps the whole spool owner-only.
Result<void> create_owner_only(const std::string& path) {
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        return schema::make_error(ErrorType::kInternal,
                                  "spool: cannot create " + path + ": " + std::strerror(errno));
    }
    ::close(fd);
    return {};
}

}  // namespace

Result<std::unique_ptr<ExplainSpool>> ExplainSpool::open(const std::string& path,
                                                         SpoolLimits limits) {
    std::unique_ptr<ExplainSpool> spool{new ExplainSpool()};
    spool->limits_ = limits;
    const bool in_memory = path.empty();
    if (!in_memory) {
        if (auto created = create_owner_only(path); !created) return created.error();
    }
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(in_memory ? ":memory:" : path.c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                       SQLITE_OPEN_NOMUTEX,
                                   nullptr);
    spool->db_.reset(raw);
    if (rc != SQLITE_OK) return sqlite_error(raw, "open " + path);
    sqlite3* db = spool->db_.get();

    // Exclusive locking before WAL: no shared-memory file, and a second broker on the same
    // spool fails here instead of interleaving delivery ids.
    for (const char* pragma : {"PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=WAL",
                               "PRAGMA synchronous=NORMAL"}) {
        if (auto done = exec(db, pragma); !done) {
            if (sqlite3_errcode(db) == SQLITE_BUSY) {
                return schema::make_error(ErrorType::kInternal,
                                          "spool " + path + " is in use by another broker");
            }
            return done.error();
        }
    }
    // AUTOINCREMENT: delivery ids are never reused, even after every row was acknowledged.
    if (auto done = exec(db,
                         "BEGIN IMMEDIATE;"
                         "CREATE TABLE IF NOT EXISTS explain ("
                         " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                         " service BLOB NOT NULL, session BLOB NOT NULL, seq INTEGER NOT NULL,"
                         " state BLOB NOT NULL, body BLOB NOT NULL);"
                         "COMMIT");
        !done) {
        return done.error();
    }

    auto insert = prepare(db,
                          "INSERT INTO explain (id, service, session, seq, state, body)"
                          " VALUES (?, ?, ?, ?, ?, ?)");
    auto remove = prepare(db,
                          "DELETE FROM explain WHERE id = ? RETURNING"
                          " length(service) + length(session) + length(state) + length(body)");
    auto after = prepare(db,
                         "SELECT id, service, session, seq, state, body FROM explain"
                         " WHERE id > ? ORDER BY id LIMIT ?");
    auto one = prepare(db,
                       "SELECT id, service, session, seq, state, body FROM explain WHERE id = ?");
    for (auto* statement : {&insert, &remove, &after, &one}) {
        if (!*statement) return statement->error();
    }
    spool->insert_ = std::move(insert).value();
    spool->delete_ = std::move(remove).value();
    spool->select_after_ = std::move(after).value();
    spool->select_one_ = std::move(one).value();

    if (auto counted = spool->recount(); !counted) return counted.error();
    {
        auto last = prepare(db,
                            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence"
                            " WHERE name = 'explain'), 0), coalesce((SELECT max(id) FROM explain), 0))");
        if (!last) return last.error();
        sqlite3_stmt* statement = last.value().get();
        if (sqlite3_step(statement) != SQLITE_ROW) return sqlite_error(db, "read last id");
        spool->next_id_ = static_cast<std::uint64_t>(sqlite3_column_int64(statement, 0)) + 1;
    }
    return spool;
}

ExplainSpool::~ExplainSpool() {
    if (in_transaction_) (void)commit();
}

Result<void> ExplainSpool::recount() {
    auto counted = prepare(db_.get(),
                           "SELECT count(*), coalesce(sum(length(service) + length(session) +"
                           " length(state) + length(body)), 0) FROM explain");
    if (!counted) return counted.error();
    sqlite3_stmt* statement = counted.value().get();
    if (sqlite3_step(statement) != SQLITE_ROW) return sqlite_error(db_.get(), "count");
    messages_ = static_cast<std::uint64_t>(sqlite3_column_int64(statement, 0));
    bytes_ = static_cast<std::uint64_t>(sqlite3_column_int64(statement, 1));
    return {};
}

bool ExplainSpool::has_room(std::uint64_t bytes) const noexcept {
    return messages_ < limits_.max_messages && bytes_ + bytes <= limits_.max_bytes;
}

Result<void> ExplainSpool::begin_if_needed() {
    if (in_transaction_) return {};
    if (auto begun = exec(db_.get(), "BEGIN"); !begun) return begun;
    in_transaction_ = true;
    return {};
}

Result<std::uint64_t> ExplainSpool::append(const SpoolRecord& record) {
    const std::uint64_t size = record.bytes();
    if (!has_room(size)) {
        return schema::make_error(ErrorType::kSpoolFull,
                                  "explain spool full (" + std::to_string(messages_) +
                                      " messages, " + std::to_string(bytes_) + " bytes)");
    }
    if (auto begun = begin_if_needed(); !begun) return begun.error();
    sqlite3_stmt* statement = insert_.get();
    StatementReset reset{statement};
    const std::uint64_t id = next_id_;
    sqlite3_bind_int64(statement, 1, static_cast<sqlite3_int64>(id));
    bind_text(statement, 2, record.service);
    bind_text(statement, 3, record.session);
    sqlite3_bind_int64(statement, 4, static_cast<sqlite3_int64>(record.seq));
    bind_text(statement, 5, record.state);
    bind_text(statement, 6, record.body);
    if (sqlite3_step(statement) != SQLITE_DONE) return sqlite_error(db_.get(), "insert");
    ++next_id_;
    ++messages_;
    bytes_ += size;

    if (!cache_.empty() && cache_.back().record.delivery_id + 1 != id) {
        cache_.clear();
        cache_bytes_ = 0;
    }
    CacheEntry entry{record, true};
    entry.record.delivery_id = id;
    cache_bytes_ += size;
    cache_.push_back(std::move(entry));
    trim_cache();
    return id;
}

Result<bool> ExplainSpool::ack(std::uint64_t delivery_id) {
    if (delivery_id == 0 || delivery_id > static_cast<std::uint64_t>(
                                              std::numeric_limits<sqlite3_int64>::max())) {
        return false;
    }
    if (auto begun = begin_if_needed(); !begun) return begun.error();
    sqlite3_stmt* statement = delete_.get();
    StatementReset reset{statement};
    sqlite3_bind_int64(statement, 1, static_cast<sqlite3_int64>(delivery_id));
    const int rc = sqlite3_step(statement);
    if (rc == SQLITE_DONE) return false;
    if (rc != SQLITE_ROW) return sqlite_error(db_.get(), "delete");
    const auto size = static_cast<std::uint64_t>(sqlite3_column_int64(statement, 0));
    // Step to completion so the RETURNING delete is applied before the reset.
    while (sqlite3_step(statement) == SQLITE_ROW) {
    }
    --messages_;
    bytes_ = bytes_ >= size ? bytes_ - size : 0;
    if (!cache_.empty()) {
        const std::uint64_t first = cache_.front().record.delivery_id;
        if (delivery_id >= first && delivery_id - first < cache_.size()) {
            auto& entry = cache_[static_cast<std::size_t>(delivery_id - first)];
            entry.live = false;
        }
    }
    return true;
}

Result<void> ExplainSpool::commit() {
    if (!in_transaction_) return {};
    in_transaction_ = false;
    if (auto committed = exec(db_.get(), "COMMIT"); !committed) {
        (void)exec(db_.get(), "ROLLBACK");
        cache_.clear();
        cache_bytes_ = 0;
        (void)recount();
        return committed;
    }
    return {};
}

const SpoolRecord* ExplainSpool::cached(std::uint64_t delivery_id) const noexcept {
    if (cache_.empty()) return nullptr;
    const std::uint64_t first = cache_.front().record.delivery_id;
    if (delivery_id < first || delivery_id - first >= cache_.size()) return nullptr;
    const auto& entry = cache_[static_cast<std::size_t>(delivery_id - first)];
    return entry.live ? &entry.record : nullptr;
}

Result<std::vector<SpoolRecord>> ExplainSpool::read_after(std::uint64_t after, std::size_t limit) {
    std::vector<SpoolRecord> records;
    if (limit == 0 || after >= last_id()) return records;
    if (!cache_.empty() && after + 1 >= cache_.front().record.delivery_id) {
        const std::uint64_t first = cache_.front().record.delivery_id;
        for (auto index = static_cast<std::size_t>(after + 1 - first);
             index < cache_.size() && records.size() < limit; ++index) {
            if (cache_[index].live) records.push_back(cache_[index].record);
        }
        return records;
    }
    sqlite3_stmt* statement = select_after_.get();
    StatementReset reset{statement};
    sqlite3_bind_int64(statement, 1, static_cast<sqlite3_int64>(after));
    sqlite3_bind_int64(statement, 2, static_cast<sqlite3_int64>(limit));
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) records.push_back(read_row(statement));
    if (rc != SQLITE_DONE) return sqlite_error(db_.get(), "read");
    return records;
}

Result<std::optional<SpoolRecord>> ExplainSpool::read(std::uint64_t delivery_id) {
    if (const SpoolRecord* hit = cached(delivery_id)) return std::optional<SpoolRecord>{*hit};
    sqlite3_stmt* statement = select_one_.get();
    StatementReset reset{statement};
    sqlite3_bind_int64(statement, 1, static_cast<sqlite3_int64>(delivery_id));
    const int rc = sqlite3_step(statement);
    if (rc == SQLITE_DONE) return std::optional<SpoolRecord>{};
    if (rc != SQLITE_ROW) return sqlite_error(db_.get(), "read");
    return std::optional<SpoolRecord>{read_row(statement)};
}

void ExplainSpool::release_cache_through(std::uint64_t delivery_id) noexcept {
    while (!cache_.empty() && cache_.front().record.delivery_id <= delivery_id) {
        cache_bytes_ -= cache_.front().record.bytes();
        cache_.pop_front();
    }
}

void ExplainSpool::trim_cache() noexcept {
    while (!cache_.empty() && (cache_.size() > limits_.cache_max_messages ||
                               cache_bytes_ > limits_.cache_max_bytes)) {
        cache_bytes_ -= cache_.front().record.bytes();
        cache_.pop_front();
    }
}

}  // namespace glassbox::broker
