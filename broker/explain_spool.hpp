// The durable explain spool: EXPLAIN messages kept in SQLite until a trace collector ACKs them (protocol.md §6.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schema/result.hpp"
#include "storage/sqlite_database.hpp"

namespace glassbox::broker {

// One spooled explain message, as DELIVER carries it.
struct SpoolRecord {
    std::uint64_t delivery_id = 0;
    std::string service;
    std::string session;
    std::uint64_t seq = 0;
    std::string state;
    std::string body;

    // What the record counts against spool_max_bytes.
    std::uint64_t bytes() const noexcept {
        return service.size() + session.size() + state.size() + body.size();
    }
};

struct SpoolLimits {
    std::uint64_t max_messages = 1'000'000;
    std::uint64_t max_bytes = 1024ull * 1024ull * 1024ull;
    // Recently appended records kept in memory so a keeping-up collector is fed without reads.
    std::size_t cache_max_messages = 4096;
    std::uint64_t cache_max_bytes = 64ull * 1024ull * 1024ull;
};

// Appends and ACK deletions join one open transaction that commit() ends, so the broker pays
// one transaction per poll-loop drain, not one per message (WAL, synchronous=NORMAL). The
// file is created owner-only (0600) and locked exclusively: one broker per spool.
class ExplainSpool {
public:
    // path empty: an in-memory spool that does not survive the process.
    static schema::Result<std::unique_ptr<ExplainSpool>> open(const std::string& path,
                                                               SpoolLimits limits);
    ~ExplainSpool();
    ExplainSpool(const ExplainSpool&) = delete;
    ExplainSpool& operator=(const ExplainSpool&) = delete;

    // Whether one more record of `bytes` fits the bounds.
    bool has_room(std::uint64_t bytes) const noexcept;

    // Adds the record (its delivery_id is ignored) and returns its delivery id: greater than
    // every id this spool file ever handed out. SpoolFull when the bounds are reached.
    schema::Result<std::uint64_t> append(const SpoolRecord& record);
    // Removes an acknowledged record; false if no such record (already acked, never existed).
    schema::Result<bool> ack(std::uint64_t delivery_id);
    // Ends the open transaction, if any. On failure the batch is rolled back.
    schema::Result<void> commit();

    // Up to `limit` records with delivery id above `after`, in id order.
    schema::Result<std::vector<SpoolRecord>> read_after(std::uint64_t after, std::size_t limit);
    schema::Result<std::optional<SpoolRecord>> read(std::uint64_t delivery_id);
    // Drops cached records up to `delivery_id` (delivered; a redelivery reads the file).
    void release_cache_through(std::uint64_t delivery_id) noexcept;

    std::uint64_t messages() const noexcept { return messages_; }
    std::uint64_t bytes() const noexcept { return bytes_; }
    std::uint64_t last_id() const noexcept { return next_id_ - 1; }
    const SpoolLimits& limits() const noexcept { return limits_; }

private:
    ExplainSpool() = default;
    schema::Result<void> begin_if_needed();
    schema::Result<void> recount();
    void trim_cache() noexcept;
    const SpoolRecord* cached(std::uint64_t delivery_id) const noexcept;

    SpoolLimits limits_;
    std::unique_ptr<storage::Database> db_;
    // The open batch; destroyed (rolled back unless committed) before db_.
    std::optional<storage::Transaction> batch_;
    std::uint64_t next_id_ = 1;
    std::uint64_t messages_ = 0;
    std::uint64_t bytes_ = 0;
    // Contiguous run of the latest appended ids; `live` false once acked.
    struct CacheEntry {
        SpoolRecord record;
        bool live = true;
    };
    std::deque<CacheEntry> cache_;
    std::uint64_t cache_bytes_ = 0;
};

}  // namespace glassbox::broker
