// SQLite-backed explain spool: batched appends, delete on ACK, ordered reads for redelivery.
#include "broker/explain_spool.hpp"

#include <algorithm>
#include <limits>

namespace glassbox::broker {

namespace {

using schema::ErrorType;
using schema::Result;

// The statements of the hot path, named once so each call finds its cached statement without
// building the SQL text again.
const std::string kInsertSql =
    "INSERT INTO explain (id, service, session, seq, state, body) VALUES (?, ?, ?, ?, ?, ?)";
const std::string kDeleteSql =
    "DELETE FROM explain WHERE id = ? RETURNING length(service) + length(session) + length(state) + length(body)";
const std::string kSelectAfterSql =
    "SELECT id, service, session, seq, state, body FROM explain WHERE id > ? ORDER BY id LIMIT ?";
const std::string kSelectOneSql = "SELECT id, service, session, seq, state, body FROM explain WHERE id = ?";

// Blobs: the spool stores bytes as received, and length() then counts bytes.
std::string column_bytes(const storage::Statement& statement, int column) {
    const auto bytes = statement.blob(column);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

SpoolRecord read_row(const storage::Statement& statement) {
    SpoolRecord record;
    record.delivery_id = static_cast<std::uint64_t>(statement.int64(0));
    record.service = column_bytes(statement, 1);
    record.session = column_bytes(statement, 2);
    record.seq = static_cast<std::uint64_t>(statement.int64(3));
    record.state = column_bytes(statement, 4);
    record.body = column_bytes(statement, 5);
    return record;
}

}  // namespace

Result<std::unique_ptr<ExplainSpool>> ExplainSpool::open(const std::string& path,
                                                         SpoolLimits limits) {
    std::unique_ptr<ExplainSpool> spool{new ExplainSpool()};
    spool->limits_ = limits;
    storage::OpenOptions options;
    options.label = "spool";
    // Exclusive locking before WAL: no shared-memory file, and a second broker on the same
    // spool fails at open instead of interleaving delivery ids. No busy wait: it would only
    // delay that failure.
    options.exclusive = true;
    options.busy_timeout = std::chrono::milliseconds{0};
    options.synchronous_full = false;
    auto opened = storage::Database::open(std::filesystem::path(path.empty() ? ":memory:" : path), options);
    if (!opened) {
        // SQLITE_BUSY's message: the other broker holds the exclusive lock.
        if (opened.error().message.find("database is locked") != std::string::npos) {
            return schema::make_error(ErrorType::kInternal,
                                      "spool " + path + " is in use by another broker");
        }
        return opened.error();
    }
    spool->db_ = std::move(opened).value();
    storage::Database& db = *spool->db_;

    // AUTOINCREMENT: delivery ids are never reused, even after every row was acknowledged.
    if (auto done = db.exec("BEGIN IMMEDIATE;"
                            "CREATE TABLE IF NOT EXISTS explain ("
                            " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                            " service BLOB NOT NULL, session BLOB NOT NULL, seq INTEGER NOT NULL,"
                            " state BLOB NOT NULL, body BLOB NOT NULL);"
                            "COMMIT");
        !done) {
        return done.error();
    }
    for (const std::string* sql : {&kInsertSql, &kDeleteSql, &kSelectAfterSql, &kSelectOneSql}) {
        if (auto prepared = db.prepare(*sql); !prepared) return prepared.error();
    }

    if (auto counted = spool->recount(); !counted) return counted.error();
    {
        auto last = db.prepare_once(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'explain'), 0),"
            " coalesce((SELECT max(id) FROM explain), 0))");
        if (!last) return last.error();
        storage::Statement statement(db, last->get());
        auto row = statement.step();
        if (!row) return row.error();
        if (!*row) return db.error("read last id");
        spool->next_id_ = static_cast<std::uint64_t>(statement.int64(0)) + 1;
    }
    return spool;
}

ExplainSpool::~ExplainSpool() {
    if (batch_) (void)commit();
}

Result<void> ExplainSpool::recount() {
    auto counted = db_->prepare(
        "SELECT count(*), coalesce(sum(length(service) + length(session) + length(state) + length(body)), 0)"
        " FROM explain");
    if (!counted) return counted.error();
    auto row = counted->step();
    if (!row) return row.error();
    if (!*row) return db_->error("count");
    messages_ = static_cast<std::uint64_t>(counted->int64(0));
    bytes_ = static_cast<std::uint64_t>(counted->int64(1));
    return {};
}

bool ExplainSpool::has_room(std::uint64_t bytes) const noexcept {
    return messages_ < limits_.max_messages && bytes_ + bytes <= limits_.max_bytes;
}

Result<void> ExplainSpool::begin_if_needed() {
    if (batch_) return {};
    auto begun = storage::Transaction::begin(*db_, storage::Transaction::Kind::kDeferred);
    if (!begun) return begun.error();
    batch_.emplace(std::move(begun).value());
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
    auto insert = db_->prepare(kInsertSql);
    if (!insert) return insert.error();
    const std::uint64_t id = next_id_;
    insert->bind(1, static_cast<std::int64_t>(id))
        .bind_blob(2, record.service)
        .bind_blob(3, record.session)
        .bind(4, static_cast<std::int64_t>(record.seq))
        .bind_blob(5, record.state)
        .bind_blob(6, record.body);
    if (auto done = insert->run(); !done) return done.error();
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
    if (delivery_id == 0 ||
        delivery_id > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return false;
    }
    if (auto begun = begin_if_needed(); !begun) return begun.error();
    auto remove = db_->prepare(kDeleteSql);
    if (!remove) return remove.error();
    remove->bind(1, static_cast<std::int64_t>(delivery_id));
    auto row = remove->step();
    if (!row) return row.error();
    if (!*row) return false;
    const auto size = static_cast<std::uint64_t>(remove->int64(0));
    // Step to completion so the RETURNING delete is applied before the reset.
    if (auto done = remove->run(); !done) return done.error();
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
    if (!batch_) return {};
    auto committed = batch_->commit();
    // A failed commit is rolled back by the guard's destructor.
    batch_.reset();
    if (!committed) {
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
    auto select = db_->prepare(kSelectAfterSql);
    if (!select) return select.error();
    select->bind(1, static_cast<std::int64_t>(after))
        .bind(2, static_cast<std::int64_t>(std::min<std::size_t>(
                     limit, static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))));
    while (true) {
        auto row = select->step();
        if (!row) return row.error();
        if (!*row) break;
        records.push_back(read_row(*select));
    }
    return records;
}

Result<std::optional<SpoolRecord>> ExplainSpool::read(std::uint64_t delivery_id) {
    if (const SpoolRecord* hit = cached(delivery_id)) return std::optional<SpoolRecord>{*hit};
    auto select = db_->prepare(kSelectOneSql);
    if (!select) return select.error();
    select->bind(1, static_cast<std::int64_t>(delivery_id));
    auto row = select->step();
    if (!row) return row.error();
    if (!*row) return std::optional<SpoolRecord>{};
    return std::optional<SpoolRecord>{read_row(*select)};
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
