// Durable explain spool: EXPLAIN messages kept in segment files until ACKed (protocol.md §6.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "base/result.hpp"

namespace glassbox::broker {

// An explain message's body, immutable: its bytes are shared, not copied, between the frame it
// came in, the spool's open batch and cache, and the frames that forward and deliver it (a
// libzmq message: a large one's buffer is reference-counted, thread-safely, by libzmq).
class SpoolBody {
public:
    SpoolBody() = default;
    SpoolBody(std::string bytes);  // NOLINT(google-explicit-constructor): a body is its bytes
    // Shares the frame's bytes (copies a small frame's).
    explicit SpoolBody(const zmq::message_t& frame) { share(frame); }
    SpoolBody(const SpoolBody& other) { share(other.message_); }
    SpoolBody& operator=(const SpoolBody& other) {
        if (this != &other) share(other.message_);
        return *this;
    }
    SpoolBody(SpoolBody&&) noexcept = default;
    SpoolBody& operator=(SpoolBody&&) noexcept = default;
    ~SpoolBody() = default;

    const char* data() const noexcept { return static_cast<const char*>(message_.data()); }
    std::size_t size() const noexcept { return message_.size(); }
    bool empty() const noexcept { return message_.size() == 0; }
    std::string_view view() const noexcept { return {data(), size()}; }
    // A frame over the same bytes, to send.
    zmq::message_t message() const {
        zmq::message_t frame;
        frame.copy(message_);
        return frame;
    }
    friend bool operator==(const SpoolBody& body, std::string_view bytes) noexcept {
        return body.view() == bytes;
    }

private:
    void share(const zmq::message_t& frame) { message_.copy(const_cast<zmq::message_t&>(frame)); }

    // zmq_msg_copy writes to its source (the shared count), not to its bytes.
    mutable zmq::message_t message_;
};

// One spooled explain message, as DELIVER carries it.
struct SpoolRecord {
    std::uint64_t delivery_id = 0;
    std::string service;
    std::string session;
    std::uint64_t seq = 0;
    std::string state;
    SpoolBody body;

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
    // A commit that leaves the active segment file at least this large starts a new one.
    std::uint64_t segment_bytes = 64ull * 1024ull * 1024ull;
};

namespace detail {
struct SpoolSegment;
class SpoolFd;
class FileCloser;
}  // namespace detail

// A directory of segment files `<first id, 20 digits>.log` (0700, files 0600), locked
// exclusively through `<dir>/LOCK`: one broker per spool. append() only encodes the record in
// memory; commit() writes the batch with one write to the active segment (no fsync: a commit
// survives a crash of the process, not a power loss). An ACK sets one flag byte in the record;
// a segment whose records are all acknowledged is deleted, and the rest of one less than a
// quarter live is copied forward when a new segment begins, so a few records never
// acknowledged do not keep whole segments.
class ExplainSpool {
public:
    // path empty: an in-memory spool that does not survive the process. A missing directory is
    // created; if `<path>.db` or `spool.db` beside it is a spool from an older version (SQLite),
    // its records are imported with their ids and the file renamed to `<name>.imported`.
    static base::Result<std::unique_ptr<ExplainSpool>> open(const std::string& path,
                                                            SpoolLimits limits);
    ~ExplainSpool();
    ExplainSpool(const ExplainSpool&) = delete;
    ExplainSpool& operator=(const ExplainSpool&) = delete;

    // Whether one more record of `bytes` fits the bounds.
    bool has_room(std::uint64_t bytes) const noexcept;

    // Adds the record (its delivery_id is ignored) and returns its delivery id: greater than
    // every id this spool ever handed out. SpoolFull when the bounds are reached. Written to
    // the file by the next commit().
    base::Result<std::uint64_t> append(SpoolRecord record);
    // Removes an acknowledged record; false if no such record (already acked, never existed).
    base::Result<bool> ack(std::uint64_t delivery_id);
    // Writes the records appended since the last commit. On failure (a full disk) they stay
    // pending, in memory and counted, and the next commit tries them again; they are not
    // handed out by read_after()/take_after() until written.
    base::Result<void> commit();

    // Up to `limit` records with delivery id above `after`, in id order.
    base::Result<std::vector<SpoolRecord>> read_after(std::uint64_t after, std::size_t limit);
    base::Result<std::optional<SpoolRecord>> read(std::uint64_t delivery_id);
    // read_after() for a caller that hands the records out once: `through` is the last id
    // read, or last_id() when fewer than `limit` were left, and the cache is released up to
    // it — so cached records are moved out, not copied.
    struct Taken {
        std::vector<SpoolRecord> records;
        std::uint64_t through = 0;
    };
    base::Result<Taken> take_after(std::uint64_t after, std::size_t limit);

    std::uint64_t messages() const noexcept { return messages_; }
    std::uint64_t bytes() const noexcept { return bytes_; }
    std::uint64_t last_id() const noexcept { return next_id_ - 1; }
    // Every id at or below is written to the file (or gone): the ones a collector may get.
    std::uint64_t committed_id() const noexcept {
        return pending_first_ != 0 ? pending_first_ - 1 : next_id_ - 1;
    }
    const SpoolLimits& limits() const noexcept { return limits_; }

private:
    // Where a live record is: its segment, its offset there and its size with the header.
    struct Location {
        detail::SpoolSegment* segment = nullptr;
        std::uint64_t offset = 0;
        std::uint64_t size = 0;
    };

    ExplainSpool();
    base::Result<void> attach_directory(const std::string& directory, bool discard_segments);
    base::Result<void> recover();
    base::Result<void> recover_segment(std::uint64_t first, bool newest, std::string& contents,
                                       std::uint64_t& max_id, std::vector<std::uint64_t>& acked);
    base::Result<void> import_legacy(const std::string& legacy);
    base::Result<detail::SpoolSegment*> add_segment(std::uint64_t first_id);
    void encode(const SpoolRecord& record, std::uint64_t id);
    base::Result<void> roll();
    base::Result<void> compact();
    void drop_segment(detail::SpoolSegment* segment) noexcept;
    base::Result<SpoolRecord> load(const Location& location, std::uint64_t delivery_id) const;
    void trim_cache() noexcept;
    SpoolRecord* cached(std::uint64_t delivery_id) noexcept;
    // Drops cached records up to `delivery_id` (delivered; a redelivery reads the file).
    void release_cache_through(std::uint64_t delivery_id) noexcept;
    // read_after(), the cached records copied or, for take_after(), moved out.
    base::Result<std::vector<SpoolRecord>> collect_after(std::uint64_t after, std::size_t limit,
                                                         bool move_cached);

    SpoolLimits limits_;
    std::string path_;                            // empty: in memory
    std::unique_ptr<detail::SpoolFd> directory_;  // the directory, for *at() calls
    std::unique_ptr<detail::SpoolFd> lock_;       // `LOCK`, flock()ed for the spool's life
    std::map<std::uint64_t, std::unique_ptr<detail::SpoolSegment>> segments_;  // by first id
    detail::SpoolSegment* active_ = nullptr;
    std::map<std::uint64_t, Location> index_;  // live records by delivery id
    // Records appended since the last commit, to be written in order at the end of the active
    // segment; the first of them has id pending_first_ (0: none). Each one's header and small
    // fields are encoded in pending_heads_; its body is written from its own buffer, the one
    // it came in (one pwritev for the batch, no copy).
    struct PendingRecord {
        std::uint64_t id = 0;
        std::size_t head = 0;       // where its header is in pending_heads_
        std::size_t head_size = 0;  // header, service, session and state
        SpoolBody body;
    };
    const PendingRecord* pending_record(std::uint64_t delivery_id) const noexcept;
    std::vector<PendingRecord> pending_;
    std::string pending_heads_;
    std::uint64_t pending_bytes_ = 0;  // the batch's size in the file
    std::uint64_t pending_first_ = 0;
    std::uint64_t next_id_ = 1;
    std::uint64_t messages_ = 0;
    std::uint64_t bytes_ = 0;
    // Contiguous run of the latest appended ids; `live` false once acked.
    struct CacheEntry {
        SpoolRecord record;
        bool live = true;
        std::uint64_t bytes = 0;  // record.bytes() when cached (the record may be moved out)
    };
    std::deque<CacheEntry> cache_;
    std::uint64_t cache_bytes_ = 0;
    // Closes the files of deleted segments off the caller's thread (started on first use).
    std::unique_ptr<detail::FileCloser> closer_;
};

}  // namespace glassbox::broker
