// Log-structured explain spool: batches appended to segment files, ACK flags set in place.
#include "broker/detail/explain_spool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "base/fnv.hpp"
#include "base/log.hpp"
#include "bus/detail/frame_io.hpp"
#include "storage/sqlite_database.hpp"

namespace glassbox::broker {

SpoolBody::SpoolBody(std::string bytes) : message_(bus::message_of(std::move(bytes))) {}

namespace detail {

// An owned file descriptor.
class SpoolFd {
public:
    explicit SpoolFd(int fd) noexcept : fd_(fd) {}
    ~SpoolFd() {
        if (fd_ >= 0) ::close(fd_);
    }
    SpoolFd(const SpoolFd&) = delete;
    SpoolFd& operator=(const SpoolFd&) = delete;
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

// Closes files on a thread of its own. The last close of a deleted segment frees its blocks and
// drops its pages from the cache: for 64 MiB that stalled the broker's routing for tens of ms.
class FileCloser {
public:
    FileCloser() = default;
    FileCloser(const FileCloser&) = delete;
    FileCloser& operator=(const FileCloser&) = delete;
    ~FileCloser() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_one();
        if (thread_.joinable()) thread_.join();
    }

    void close_later(std::unique_ptr<SpoolFd> file) noexcept {
        try {
            std::lock_guard lock(mutex_);
            if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
            files_.push_back(std::move(file));
        } catch (const std::exception&) {
            file.reset();  // no thread: closed here
            return;
        }
        wake_.notify_one();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        while (true) {
            wake_.wait(lock, [this] { return stop_ || !files_.empty(); });
            while (!files_.empty()) {
                auto file = std::move(files_.front());
                files_.pop_front();
                lock.unlock();
                file.reset();
                lock.lock();
            }
            if (stop_) return;
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::unique_ptr<SpoolFd>> files_;
    bool stop_ = false;
    std::thread thread_;
};

// One segment: the file `<first id>.log`, or its bytes in memory for an in-memory spool.
struct SpoolSegment {
    std::uint64_t first_id = 0;
    std::unique_ptr<SpoolFd> file;  // null: in memory
    std::string memory;
    std::uint64_t size = 0;  // bytes written by committed batches
    std::uint64_t live_records = 0;
    std::uint64_t live_bytes = 0;  // their bytes in the file, headers included
    bool compacting = false;
};

}  // namespace detail

namespace {

using base::ErrorType;
using base::Result;
using detail::SpoolFd;
using detail::SpoolSegment;

static_assert(std::endian::native == std::endian::little,
              "spool records are written in the machine's byte order, little-endian");

// Record layout: magic u32, flags u8 (bit 0: acknowledged), 3 pad bytes, id u64, seq u64,
// service/session/state/body lengths u32 x4, checksum u64; then the four fields.
constexpr std::uint32_t kSpoolMagic = 0x31505347;  // "GSP1"
constexpr std::size_t kSpoolHeaderSize = 48;
constexpr std::size_t kSpoolFlagsAt = 4;
constexpr std::size_t kSpoolChecksumAt = 40;
constexpr char kSpoolAcked = 1;
// A buffer of pending headers that grew past this is freed after its commit, not kept for reuse.
constexpr std::size_t kSpoolKeptPendingCapacity = 8u << 20;
// An import commits every this many bytes, so the pending batch stays bounded.
constexpr std::size_t kSpoolImportBatchBytes = 8u << 20;

base::Error spool_errno_error(const std::string& what, int code) {
    return base::make_error(ErrorType::kInternal,
                            "spool: " + what + ": " + std::system_category().message(code));
}

std::string segment_name(std::uint64_t first_id) {
    char name[32];
    std::snprintf(name, sizeof name, "%020llu.log", static_cast<unsigned long long>(first_id));
    return name;
}

std::optional<std::uint64_t> segment_first_id(std::string_view name) {
    if (name.size() != 24 || name.substr(20) != ".log") return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : name.substr(0, 20)) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

// Word-at-a-time hash, four independent lanes so the multiplies overlap; it detects torn and
// garbage tails, nothing more.
constexpr std::uint64_t kSpoolPrime1 = 0x9e3779b97f4a7c15ull;
constexpr std::uint64_t kSpoolPrime2 = 0xc2b2ae3d27d4eb4full;

inline std::uint64_t spool_word(const char* p) noexcept {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    return word;
}

inline std::uint64_t spool_round(std::uint64_t lane, std::uint64_t word) noexcept {
    return std::rotl(lane ^ word, 29) * kSpoolPrime2;
}

std::uint64_t spool_hash(const char* p, std::size_t n, std::uint64_t seed) noexcept {
    const std::uint64_t length = n;
    std::uint64_t a = seed ^ kSpoolPrime1;
    std::uint64_t b = seed + kSpoolPrime2;
    std::uint64_t c = ~seed;
    std::uint64_t d = seed * kSpoolPrime1 + 1;
    for (; n >= 32; p += 32, n -= 32) {
        a = spool_round(a, spool_word(p));
        b = spool_round(b, spool_word(p + 8));
        c = spool_round(c, spool_word(p + 16));
        d = spool_round(d, spool_word(p + 24));
    }
    std::uint64_t h = a ^ std::rotl(b, 17) ^ std::rotl(c, 31) ^ std::rotl(d, 47);
    for (; n >= 8; p += 8, n -= 8) h = spool_round(h, spool_word(p));
    if (n > 0) {
        std::uint64_t tail = 0;
        std::memcpy(&tail, p, n);
        h = spool_round(h, tail);
    }
    return base::mix64(h ^ length);
}

struct SpoolFieldLengths {
    std::uint32_t service = 0;
    std::uint32_t session = 0;
    std::uint32_t state = 0;
    std::uint32_t body = 0;
    std::uint64_t total() const noexcept { return std::uint64_t{service} + session + state + body; }
};

// The checksum covers the header up to itself, then the four fields; the flag byte counts as
// zero, so an ACK is one byte written in place.
std::uint64_t spool_checksum(const char* header, std::string_view service, std::string_view session,
                             std::string_view state, std::string_view body) noexcept {
    char covered[kSpoolChecksumAt];
    std::memcpy(covered, header, sizeof covered);
    covered[kSpoolFlagsAt] = 0;
    std::uint64_t h = spool_hash(covered, sizeof covered, kSpoolMagic);
    h = spool_hash(service.data(), service.size(), h);
    h = spool_hash(session.data(), session.size(), h);
    h = spool_hash(state.data(), state.size(), h);
    return spool_hash(body.data(), body.size(), h);
}

template <typename T>
void store_le(char* at, T value) noexcept {
    std::memcpy(at, &value, sizeof value);
}

template <typename T>
T load_le(const char* at) noexcept {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

// The fixed part of the record at `bytes` (kSpoolHeaderSize bytes readable there).
struct SpoolHeader {
    std::uint32_t magic = 0;
    bool acked = false;
    std::uint64_t id = 0;
    std::uint64_t seq = 0;
    SpoolFieldLengths lengths;
    std::uint64_t size() const noexcept {
        return kSpoolHeaderSize + lengths.total();
    }  // header included
};

SpoolHeader read_header(const char* bytes) noexcept {
    SpoolHeader header;
    header.magic = load_le<std::uint32_t>(bytes);
    header.acked = (bytes[kSpoolFlagsAt] & kSpoolAcked) != 0;
    header.id = load_le<std::uint64_t>(bytes + 8);
    header.seq = load_le<std::uint64_t>(bytes + 16);
    header.lengths = {load_le<std::uint32_t>(bytes + 24), load_le<std::uint32_t>(bytes + 28),
                      load_le<std::uint32_t>(bytes + 32), load_le<std::uint32_t>(bytes + 36)};
    return header;
}

// The service, session, state and body of a record whose header says `lengths`.
struct SpoolFields {
    std::string_view service, session, state, body;
};

SpoolFields fields_of(const char* bytes, const SpoolFieldLengths& lengths) noexcept {
    const char* field = bytes + kSpoolHeaderSize;
    SpoolFields fields;
    fields.service = {field, lengths.service};
    field += lengths.service;
    fields.session = {field, lengths.session};
    field += lengths.session;
    fields.state = {field, lengths.state};
    field += lengths.state;
    fields.body = {field, lengths.body};
    return fields;
}

// The header of a complete, valid record at the start of `bytes`.
std::optional<SpoolHeader> scan_record(const char* bytes, std::uint64_t available) noexcept {
    if (available < kSpoolHeaderSize) return std::nullopt;
    const SpoolHeader header = read_header(bytes);
    if (header.magic != kSpoolMagic || header.id == 0 || header.size() > available)
        return std::nullopt;
    const SpoolFields f = fields_of(bytes, header.lengths);
    if (spool_checksum(bytes, f.service, f.session, f.state, f.body) !=
        load_le<std::uint64_t>(bytes + kSpoolChecksumAt)) {
        return std::nullopt;
    }
    return header;
}

Result<void> write_fully(int fd, const char* data, std::size_t size, std::uint64_t offset) {
    while (size > 0) {
        const ssize_t written = ::pwrite(fd, data, size, static_cast<off_t>(offset));
        if (written < 0) {
            if (errno == EINTR) continue;
            return spool_errno_error("write", errno);
        }
        if (written == 0) return spool_errno_error("write", ENOSPC);
        const auto done = static_cast<std::size_t>(written);
        data += done;
        size -= done;
        offset += done;
    }
    return {};
}

// Writes `pieces` in order at `offset`: IOV_MAX at a time, a short write resumed where it ended.
// No piece is empty.
Result<void> write_pieces(int fd, std::vector<iovec>& pieces, std::uint64_t offset) {
    std::size_t first = 0;
    while (first < pieces.size()) {
        const auto count = static_cast<int>(std::min<std::size_t>(pieces.size() - first, IOV_MAX));
        const ssize_t written =
            ::pwritev(fd, pieces.data() + first, count, static_cast<off_t>(offset));
        if (written < 0) {
            if (errno == EINTR) continue;
            return spool_errno_error("write", errno);
        }
        if (written == 0) return spool_errno_error("write", ENOSPC);
        auto done = static_cast<std::size_t>(written);
        offset += done;
        for (; first < pieces.size() && done >= pieces[first].iov_len; ++first) {
            done -= pieces[first].iov_len;
        }
        if (done > 0) {
            pieces[first].iov_base = static_cast<char*>(pieces[first].iov_base) + done;
            pieces[first].iov_len -= done;
        }
    }
    return {};
}

Result<void> read_fully(int fd, char* data, std::size_t size, std::uint64_t offset) {
    while (size > 0) {
        const ssize_t got = ::pread(fd, data, size, static_cast<off_t>(offset));
        if (got < 0) {
            if (errno == EINTR) continue;
            return spool_errno_error("read", errno);
        }
        if (got == 0) {
            return base::make_error(ErrorType::kInternal, "spool: read: unexpected end of file");
        }
        const auto done = static_cast<std::size_t>(got);
        data += done;
        size -= done;
        offset += done;
    }
    return {};
}

Result<void> segment_write(SpoolSegment& segment, std::uint64_t offset, std::string_view bytes) {
    if (!segment.file) {
        if (offset + bytes.size() > segment.memory.size()) {
            segment.memory.resize(static_cast<std::size_t>(offset + bytes.size()));
        }
        std::memcpy(segment.memory.data() + offset, bytes.data(), bytes.size());
        return {};
    }
    return write_fully(segment.file->get(), bytes.data(), bytes.size(), offset);
}

Result<void> segment_write_pieces(SpoolSegment& segment, std::uint64_t offset,
                                  std::vector<iovec>& pieces) {
    if (segment.file) return write_pieces(segment.file->get(), pieces, offset);
    for (const iovec& piece : pieces) {
        if (auto written = segment_write(segment, offset,
                                         {static_cast<const char*>(piece.iov_base), piece.iov_len});
            !written) {
            return written;
        }
        offset += piece.iov_len;
    }
    return {};
}

Result<void> segment_read(const SpoolSegment& segment, std::uint64_t offset, char* out,
                          std::size_t size) {
    if (!segment.file) {
        if (offset + size > segment.memory.size()) {
            return base::make_error(ErrorType::kInternal, "spool: read past a segment's end");
        }
        std::memcpy(out, segment.memory.data() + offset, size);
        return {};
    }
    return read_fully(segment.file->get(), out, size, offset);
}

Result<void> segment_truncate(SpoolSegment& segment, std::uint64_t size) {
    if (!segment.file) {
        segment.memory.resize(static_cast<std::size_t>(size));
        return {};
    }
    while (::ftruncate(segment.file->get(), static_cast<off_t>(size)) != 0) {
        if (errno != EINTR) return spool_errno_error("truncate", errno);
    }
    return {};
}

// The first ids of the segment files in `directory`, ascending.
Result<std::vector<std::uint64_t>> list_segments(const std::string& directory) {
    DIR* listing = ::opendir(directory.c_str());
    if (listing == nullptr) return spool_errno_error("cannot list " + directory, errno);
    std::vector<std::uint64_t> firsts;
    errno = 0;
    while (const dirent* entry = ::readdir(listing)) {
        if (auto first = segment_first_id(entry->d_name)) firsts.push_back(*first);
    }
    const int failed = errno;
    ::closedir(listing);
    if (failed != 0) return spool_errno_error("cannot list " + directory, failed);
    std::sort(firsts.begin(), firsts.end());
    return firsts;
}

std::string without_trailing_slashes(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

// A spool file of an older version beside the (missing) directory: `<path>.db`, else the old
// default name `spool.db` in the same parent directory.
std::optional<std::string> legacy_spool_beside(const std::string& path) {
    std::error_code ignored;
    const std::filesystem::path directory(path);
    std::filesystem::path parent = directory.parent_path();
    if (parent.empty()) parent = ".";
    for (const std::filesystem::path& candidate :
         {std::filesystem::path(path + ".db"), parent / "spool.db"}) {
        if (std::filesystem::is_regular_file(candidate, ignored)) return candidate.string();
    }
    return std::nullopt;
}

}  // namespace

ExplainSpool::ExplainSpool() = default;

ExplainSpool::~ExplainSpool() {
    // A destructor must not throw: a commit that cannot finish (out of memory) leaves the batch
    // unwritten, as a crash would; its records were never forwarded (their sends wait for it).
    try {
        if (!pending_.empty()) (void)commit();
    } catch (...) {  // NOLINT(bugprone-empty-catch): nothing to do at destruction
    }
}

Result<std::unique_ptr<ExplainSpool>> ExplainSpool::open(const std::string& path,
                                                         SpoolLimits limits) {
    std::unique_ptr<ExplainSpool> spool{new ExplainSpool()};
    spool->limits_ = limits;
    if (path.empty()) {
        auto first = spool->add_segment(1);
        if (!first) return first.error();
        spool->active_ = first.value();
        return spool;
    }
    const std::string directory = without_trailing_slashes(path);
    struct stat info {};
    if (::stat(directory.c_str(), &info) == 0) {
        if (!S_ISDIR(info.st_mode)) {
            return base::make_error(
                ErrorType::kInternal,
                "spool " + path +
                    " is not a directory (a spool file <dir>.db of an older version is imported"
                    " by --spool <dir>)");
        }
    } else if (errno != ENOENT) {
        return spool_errno_error("cannot open spool directory " + path, errno);
    } else if (auto legacy = legacy_spool_beside(directory)) {
        // Built in a staging directory renamed into place once complete: a crash during the
        // import leaves no half-imported spool, and the next start imports again.
        const std::string staging = directory + ".importing";
        if (::mkdir(staging.c_str(), 0700) != 0 && errno != EEXIST) {
            return spool_errno_error("cannot create spool directory " + staging, errno);
        }
        if (auto attached = spool->attach_directory(staging, true); !attached) {
            return attached.error();
        }
        if (auto imported = spool->import_legacy(*legacy); !imported) return imported.error();
        if (::rename(staging.c_str(), directory.c_str()) != 0) {
            return spool_errno_error("cannot rename " + staging + " to " + directory, errno);
        }
        spool->path_ = directory;
        const std::string done = *legacy + ".imported";
        auto log = base::component_logger("broker");
        if (::rename(legacy->c_str(), done.c_str()) != 0) {
            log->warn("event=spool_legacy_not_renamed path={} error=\"{}\"", *legacy,
                      std::system_category().message(errno));
        }
        log->info("event=spool_imported from={} to={} messages={} last_id={}", *legacy, directory,
                  spool->messages_, spool->last_id());
        return spool;
    } else if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
        return spool_errno_error("cannot create spool directory " + path, errno);
    }
    if (auto attached = spool->attach_directory(directory, false); !attached) {
        return attached.error();
    }
    return spool;
}

Result<void> ExplainSpool::attach_directory(const std::string& directory, bool discard_segments) {
    path_ = directory;
    const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory_fd < 0) {
        return spool_errno_error("cannot open spool directory " + directory, errno);
    }
    directory_ = std::make_unique<SpoolFd>(directory_fd);
    const int lock_fd = ::openat(directory_fd, "LOCK", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) return spool_errno_error("cannot open " + directory + "/LOCK", errno);
    lock_ = std::make_unique<SpoolFd>(lock_fd);
    // flock, not fcntl locks: held by this open file, so a second open in the same process
    // (a test, a second broker object) is refused too.
    while (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        if (errno == EWOULDBLOCK) {
            return base::make_error(ErrorType::kInternal,
                                    "spool " + directory + " is in use by another broker");
        }
        return spool_errno_error("cannot lock " + directory + "/LOCK", errno);
    }
    if (discard_segments) {
        // What an interrupted import left: the import starts again from the legacy file.
        auto stale = list_segments(directory);
        if (!stale) return stale.error();
        for (const std::uint64_t first : stale.value()) {
            const std::string name = segment_name(first);
            if (::unlinkat(directory_fd, name.c_str(), 0) != 0) {
                return spool_errno_error("cannot remove " + directory + "/" + name, errno);
            }
        }
    }
    return recover();
}

Result<SpoolSegment*> ExplainSpool::add_segment(std::uint64_t first_id) {
    auto segment = std::make_unique<SpoolSegment>();
    segment->first_id = first_id;
    if (directory_) {
        const std::string name = segment_name(first_id);
        const int fd =
            ::openat(directory_->get(), name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) return spool_errno_error("cannot create " + path_ + "/" + name, errno);
        segment->file = std::make_unique<SpoolFd>(fd);
    }
    SpoolSegment* added = segment.get();
    segments_.emplace(first_id, std::move(segment));
    return added;
}

// Reads one segment file into segments_: its live records into the index (a later copy of a
// record replaces an earlier one), its acknowledged ids into `acked`, the largest id into
// `max_id`. A damaged tail ends the segment there; on the newest segment it is a torn write and
// is cut off. `contents` is a buffer reused between segments.
Result<void> ExplainSpool::recover_segment(std::uint64_t first, bool newest, std::string& contents,
                                           std::uint64_t& max_id,
                                           std::vector<std::uint64_t>& acked) {
    const std::string name = segment_name(first);
    const int fd = ::openat(directory_->get(), name.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return spool_errno_error("cannot open " + path_ + "/" + name, errno);
    auto segment = std::make_unique<SpoolSegment>();
    segment->first_id = first;
    segment->file = std::make_unique<SpoolFd>(fd);
    struct stat info {};
    if (::fstat(fd, &info) != 0) return spool_errno_error("cannot stat " + name, errno);
    const auto file_size = static_cast<std::uint64_t>(info.st_size);
    contents.resize(static_cast<std::size_t>(file_size));
    if (auto read = read_fully(fd, contents.data(), contents.size(), 0); !read) {
        return read.error();
    }
    std::uint64_t offset = 0;
    while (offset < file_size) {
        const auto record = scan_record(contents.data() + offset, file_size - offset);
        if (!record) break;
        max_id = std::max(max_id, record->id);
        if (record->acked) {
            acked.push_back(record->id);
        } else {
            const Location location{segment.get(), offset, record->size()};
            auto [at, inserted] = index_.try_emplace(record->id, location);
            if (!inserted) {
                // A copy made by compaction before its original's file was deleted: the
                // later one (this one) is kept.
                SpoolSegment& earlier = *at->second.segment;
                --earlier.live_records;
                earlier.live_bytes -= at->second.size;
                at->second = location;
            }
            ++segment->live_records;
            segment->live_bytes += record->size();
        }
        offset += record->size();
    }
    segment->size = file_size;
    if (offset < file_size) {
        auto log = base::component_logger("broker");
        if (newest) {
            // A torn tail: a batch the process died while writing.
            if (auto cut = segment_truncate(*segment, offset); !cut) return cut.error();
            segment->size = offset;
            log->warn("event=spool_torn_tail segment={}/{} offset={} dropped_bytes={}", path_, name,
                      offset, file_size - offset);
        } else {
            log->warn("event=spool_segment_damaged segment={}/{} offset={} dropped_bytes={}", path_,
                      name, offset, file_size - offset);
        }
    }
    segments_.emplace(first, std::move(segment));
    return {};
}

Result<void> ExplainSpool::recover() {
    auto listed = list_segments(path_);
    if (!listed) return listed.error();
    const std::vector<std::uint64_t>& firsts = listed.value();
    std::uint64_t max_id = 0;
    // Acknowledged anywhere means acknowledged, also when a copy made by compaction (or the
    // original it was copied from) is still live: applied once every segment is read.
    std::vector<std::uint64_t> acked;
    std::string contents;
    for (std::size_t n = 0; n < firsts.size(); ++n) {
        const bool newest = n + 1 == firsts.size();
        if (auto r = recover_segment(firsts[n], newest, contents, max_id, acked); !r) return r;
    }
    std::sort(acked.begin(), acked.end());
    acked.erase(std::unique(acked.begin(), acked.end()), acked.end());
    for (const std::uint64_t id : acked) {
        const auto found = index_.find(id);
        if (found == index_.end()) continue;
        --found->second.segment->live_records;
        found->second.segment->live_bytes -= found->second.size;
        index_.erase(found);
    }
    for (const auto& [id, location] : index_) {
        ++messages_;
        bytes_ += location.size - kSpoolHeaderSize;
    }
    // Never an id handed out before, even when every record was acknowledged and its file
    // deleted: the newest segment, kept, is named after the next id when it was begun.
    next_id_ = std::max<std::uint64_t>(max_id + 1, firsts.empty() ? 1 : firsts.back());
    if (segments_.empty()) {
        auto first = add_segment(next_id_);
        if (!first) return first.error();
    }
    active_ = segments_.rbegin()->second.get();
    std::vector<SpoolSegment*> spent;
    for (const auto& [first, segment] : segments_) {
        if (segment.get() != active_ && segment->live_records == 0) spent.push_back(segment.get());
    }
    for (SpoolSegment* segment : spent) drop_segment(segment);
    return {};
}

Result<void> ExplainSpool::import_legacy(const std::string& legacy) {
    storage::OpenOptions options;
    options.label = "legacy spool";
    options.create = false;
    // As the old broker opened it: a broker of the older version still running on it makes
    // this fail instead of importing records it is about to deliver.
    options.exclusive = true;
    options.busy_timeout = std::chrono::milliseconds{0};
    auto opened = storage::Database::open(legacy, options);
    if (!opened) return opened.error();
    storage::Database& db = *opened.value();
    std::uint64_t legacy_next = 1;
    {
        auto last = db.prepare_once(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'explain'), 0),"
            " coalesce((SELECT max(id) FROM explain), 0))");
        if (!last) return last.error();
        auto id = last->first([](const storage::Row& row) { return row.int64(0); });
        if (!id) return id.error();
        if (!*id) return db.error("read last id");
        legacy_next = static_cast<std::uint64_t>(**id) + 1;
    }
    // Named after the legacy next id, so the ids go on from there even if every imported
    // record is acknowledged before the next append.
    next_id_ = std::max(next_id_, legacy_next);
    if (active_->first_id != next_id_) {
        if (active_->size != 0 || !pending_.empty()) {
            return base::make_error(ErrorType::kInternal, "spool: import into a used spool");
        }
        SpoolSegment* unused = active_;
        auto first = add_segment(next_id_);
        if (!first) return first.error();
        active_ = first.value();
        drop_segment(unused);
    }
    auto rows =
        db.prepare_once("SELECT id, service, session, seq, state, body FROM explain ORDER BY id");
    if (!rows) return rows.error();
    auto imported = rows->each([&](const storage::Row& row) -> Result<void> {
        const auto bytes_of = [&](int column) {
            const auto blob = row.blob(column);
            return std::string(reinterpret_cast<const char*>(blob.data()), blob.size());
        };
        SpoolRecord record;
        const auto id = static_cast<std::uint64_t>(row.int64(0));
        record.service = bytes_of(1);
        record.session = bytes_of(2);
        record.seq = static_cast<std::uint64_t>(row.int64(3));
        record.state = bytes_of(4);
        record.body = bytes_of(5);
        if (id == 0 || id >= next_id_) {
            return base::make_error(ErrorType::kInternal,
                                    "legacy spool " + legacy + ": row id out of sequence");
        }
        if (pending_.empty()) pending_first_ = id;
        encode(record, id);
        ++messages_;
        bytes_ += record.bytes();
        if (pending_bytes_ >= kSpoolImportBatchBytes) return commit();
        return {};
    });
    if (!imported) return imported;
    return commit();
}

bool ExplainSpool::has_room(std::uint64_t bytes) const noexcept {
    return messages_ < limits_.max_messages && bytes_ + bytes <= limits_.max_bytes;
}

void ExplainSpool::encode(const SpoolRecord& record, std::uint64_t id) {
    char header[kSpoolHeaderSize] = {};
    store_le<std::uint32_t>(header, kSpoolMagic);
    store_le<std::uint64_t>(header + 8, id);
    store_le<std::uint64_t>(header + 16, record.seq);
    store_le<std::uint32_t>(header + 24, static_cast<std::uint32_t>(record.service.size()));
    store_le<std::uint32_t>(header + 28, static_cast<std::uint32_t>(record.session.size()));
    store_le<std::uint32_t>(header + 32, static_cast<std::uint32_t>(record.state.size()));
    store_le<std::uint32_t>(header + 36, static_cast<std::uint32_t>(record.body.size()));
    store_le<std::uint64_t>(
        header + kSpoolChecksumAt,
        spool_checksum(header, record.service, record.session, record.state, record.body.view()));
    const std::uint64_t offset = active_->size + pending_bytes_;
    const std::uint64_t size = kSpoolHeaderSize + record.bytes();
    const std::size_t head = pending_heads_.size();
    pending_heads_.append(header, kSpoolHeaderSize);
    pending_heads_.append(record.service);
    pending_heads_.append(record.session);
    pending_heads_.append(record.state);
    pending_.push_back(PendingRecord{id, head, pending_heads_.size() - head, record.body});
    pending_bytes_ += size;
    index_.emplace_hint(index_.end(), id, Location{active_, offset, size});
    ++active_->live_records;
    active_->live_bytes += size;
}

Result<std::uint64_t> ExplainSpool::append(SpoolRecord record) {
    const std::uint64_t size = record.bytes();
    if (!has_room(size)) {
        return base::make_error(ErrorType::kSpoolFull,
                                "explain spool full (" + std::to_string(messages_) + " messages, " +
                                    std::to_string(bytes_) + " bytes)");
    }
    constexpr std::size_t kMaxField = std::numeric_limits<std::uint32_t>::max();
    if (record.service.size() > kMaxField || record.session.size() > kMaxField ||
        record.state.size() > kMaxField || record.body.size() > kMaxField) {
        return base::make_error(ErrorType::kMessageTooLarge, "explain message field above 4 GiB");
    }
    const std::uint64_t id = next_id_;
    if (pending_.empty()) pending_first_ = id;
    encode(record, id);
    ++next_id_;
    ++messages_;
    bytes_ += size;

    if (!cache_.empty() && cache_.back().record.delivery_id + 1 != id) {
        cache_.clear();
        cache_bytes_ = 0;
    }
    CacheEntry entry{std::move(record), true, size};
    entry.record.delivery_id = id;
    cache_bytes_ += size;
    cache_.push_back(std::move(entry));
    trim_cache();
    return id;
}

Result<bool> ExplainSpool::ack(std::uint64_t delivery_id) {
    const auto found = index_.find(delivery_id);
    if (found == index_.end()) return false;
    const Location location = found->second;
    SpoolSegment& segment = *location.segment;
    if (&segment == active_ && location.offset >= active_->size) {
        if (const PendingRecord* pending = pending_record(delivery_id)) {
            pending_heads_[pending->head + kSpoolFlagsAt] |= kSpoolAcked;
        }
    } else {
        // Not made durable here: an ACK lost in a crash is one redelivery, which the collector
        // stores idempotently (§6.1).
        const char flag = kSpoolAcked;
        if (auto marked = segment_write(segment, location.offset + kSpoolFlagsAt, {&flag, 1});
            !marked) {
            return marked.error();
        }
    }
    index_.erase(found);
    --segment.live_records;
    segment.live_bytes -= location.size;
    --messages_;
    bytes_ -= location.size - kSpoolHeaderSize;
    if (!cache_.empty()) {
        const std::uint64_t first = cache_.front().record.delivery_id;
        if (delivery_id >= first && delivery_id - first < cache_.size()) {
            cache_[static_cast<std::size_t>(delivery_id - first)].live = false;
        }
    }
    if (&segment != active_ && segment.live_records == 0) drop_segment(&segment);
    return true;
}

Result<void> ExplainSpool::commit() {
    if (pending_.empty()) return {};
    // The batch in one write: each record's header and small fields, then its body.
    std::vector<iovec> pieces;
    pieces.reserve(2 * pending_.size());
    for (const PendingRecord& record : pending_) {
        pieces.push_back(iovec{pending_heads_.data() + record.head, record.head_size});
        if (!record.body.empty()) {
            pieces.push_back(iovec{const_cast<char*>(record.body.data()), record.body.size()});
        }
    }
    if (auto written = segment_write_pieces(*active_, active_->size, pieces); !written) {
        // The batch stays pending, in memory, and the next commit writes it again at the same
        // offset (a full disk that frees up loses nothing). A partly written record is cut so
        // a crash meanwhile leaves no torn record behind; if the cut fails, the next write
        // covers it.
        if (auto cut = segment_truncate(*active_, active_->size); !cut) {
            return base::make_error(ErrorType::kInternal,
                                    written.error().message + "; " + cut.error().message);
        }
        return written;
    }
    active_->size += pending_bytes_;
    pending_.clear();
    pending_heads_.clear();
    pending_bytes_ = 0;
    pending_first_ = 0;
    if (pending_heads_.capacity() > kSpoolKeptPendingCapacity) std::string().swap(pending_heads_);
    // Named by the next id: a segment is begun only once an id was handed out since the last.
    if (active_->size >= limits_.segment_bytes && active_->first_id != next_id_) {
        // The batch is written either way; a failed roll is tried again at the next commit,
        // a failed compaction at the next roll.
        if (auto rolled = roll(); !rolled) {
            base::component_logger("broker")->warn("event=spool_roll_failed error=\"{}\"",
                                                   rolled.error().message);
        }
    }
    return {};
}

Result<void> ExplainSpool::roll() {
    SpoolSegment* previous = active_;
    auto next = add_segment(next_id_);
    if (!next) return next.error();
    active_ = next.value();
    if (previous->live_records == 0) drop_segment(previous);
    return compact();
}

Result<void> ExplainSpool::compact() {
    bool any = false;
    for (const auto& [first, segment] : segments_) {
        segment->compacting = segment.get() != active_ && segment->live_bytes * 4 < segment->size;
        any = any || segment->compacting;
    }
    if (!any) return {};
    // The live records of mostly acknowledged segments, with the same ids and bytes, go to
    // the new active segment; then their files are deleted. A crash in between leaves two
    // copies, which recovery resolves to the later one.
    std::string copied;
    std::vector<std::pair<Location*, std::uint64_t>> moved;  // location, offset in `copied`
    for (auto& [id, location] : index_) {
        if (!location.segment->compacting) continue;
        const std::size_t at = copied.size();
        copied.resize(at + static_cast<std::size_t>(location.size));
        if (auto read = segment_read(*location.segment, location.offset, copied.data() + at,
                                     static_cast<std::size_t>(location.size));
            !read) {
            return read.error();
        }
        moved.emplace_back(&location, at);
    }
    if (auto written = segment_write(*active_, active_->size, copied); !written) {
        (void)segment_truncate(*active_, active_->size);
        return written;
    }
    for (auto& [location, at] : moved) {
        location->segment = active_;
        location->offset = active_->size + at;
        ++active_->live_records;
        active_->live_bytes += location->size;
    }
    active_->size += copied.size();
    std::vector<SpoolSegment*> spent;
    for (const auto& [first, segment] : segments_) {
        if (segment->compacting) spent.push_back(segment.get());
    }
    for (SpoolSegment* segment : spent) drop_segment(segment);
    return {};
}

void ExplainSpool::drop_segment(SpoolSegment* segment) noexcept {
    if (segment == active_) return;
    if (segment->file) {
        const std::string name = segment_name(segment->first_id);
        // A file left behind holds only acknowledged or copied records: harmless at recovery.
        if (::unlinkat(directory_->get(), name.c_str(), 0) != 0) {
            base::component_logger("broker")->warn(
                "event=spool_unlink_failed segment={}/{} error=\"{}\"", path_, name,
                std::system_category().message(errno));
        }
        // Unlinked while still open, so the costly part happens at the close, off this thread.
        if (!closer_) closer_ = std::make_unique<detail::FileCloser>();
        closer_->close_later(std::move(segment->file));
    }
    segments_.erase(segment->first_id);
}

const ExplainSpool::PendingRecord* ExplainSpool::pending_record(
    std::uint64_t delivery_id) const noexcept {
    const auto found = std::lower_bound(
        pending_.begin(), pending_.end(), delivery_id,
        [](const PendingRecord& record, std::uint64_t id) { return record.id < id; });
    return found != pending_.end() && found->id == delivery_id ? &*found : nullptr;
}

namespace {

// A record from its header's fields and its body.
SpoolRecord record_of(std::uint64_t delivery_id, const SpoolHeader& header,
                      const SpoolFields& fields, SpoolBody body) {
    SpoolRecord record;
    record.delivery_id = delivery_id;
    record.seq = header.seq;
    record.service = fields.service;
    record.session = fields.session;
    record.state = fields.state;
    record.body = std::move(body);
    return record;
}

}  // namespace

Result<SpoolRecord> ExplainSpool::load(const Location& location, std::uint64_t delivery_id) const {
    if (location.segment == active_ && location.offset >= active_->size) {
        // Not written yet: from the batch (its ids ascend).
        if (const PendingRecord* found = pending_record(delivery_id)) {
            const char* head = pending_heads_.data() + found->head;
            const SpoolHeader header = read_header(head);
            return record_of(delivery_id, header, fields_of(head, header.lengths), found->body);
        }
    }
    std::string bytes(static_cast<std::size_t>(location.size), '\0');
    if (auto read = segment_read(*location.segment, location.offset, bytes.data(), bytes.size());
        !read) {
        return read.error();
    }
    const SpoolHeader header = read_header(bytes.data());
    if (header.magic != kSpoolMagic || header.id != delivery_id || header.size() != location.size) {
        return base::make_error(ErrorType::kInternal, "spool " + path_ + ": record " +
                                                          std::to_string(delivery_id) +
                                                          " unreadable in segment " +
                                                          segment_name(location.segment->first_id));
    }
    const SpoolFields fields = fields_of(bytes.data(), header.lengths);
    return record_of(delivery_id, header, fields, SpoolBody{std::string{fields.body}});
}

SpoolRecord* ExplainSpool::cached(std::uint64_t delivery_id) noexcept {
    if (cache_.empty()) return nullptr;
    const std::uint64_t first = cache_.front().record.delivery_id;
    if (delivery_id < first || delivery_id - first >= cache_.size()) return nullptr;
    auto& entry = cache_[static_cast<std::size_t>(delivery_id - first)];
    return entry.live ? &entry.record : nullptr;
}

Result<std::vector<SpoolRecord>> ExplainSpool::collect_after(std::uint64_t after, std::size_t limit,
                                                             bool move_cached) {
    std::vector<SpoolRecord> records;
    // Records not yet written (a failed commit keeps them pending) are not handed out.
    const std::uint64_t through = committed_id();
    if (limit == 0 || after >= through) return records;
    limit = static_cast<std::size_t>(std::min<std::uint64_t>(limit, through - after));
    const auto from_cache = [move_cached](SpoolRecord& cached) -> SpoolRecord {
        if (move_cached) return std::move(cached);
        return cached;
    };
    if (!cache_.empty() && after + 1 >= cache_.front().record.delivery_id) {
        const std::uint64_t first = cache_.front().record.delivery_id;
        for (auto index = static_cast<std::size_t>(after + 1 - first);
             index < cache_.size() && records.size() < limit; ++index) {
            if (cache_[index].record.delivery_id > through) break;
            if (cache_[index].live) records.push_back(from_cache(cache_[index].record));
        }
        return records;
    }
    for (auto at = index_.upper_bound(after);
         at != index_.end() && at->first <= through && records.size() < limit; ++at) {
        if (SpoolRecord* hit = cached(at->first)) {
            records.push_back(from_cache(*hit));
            continue;
        }
        auto loaded = load(at->second, at->first);
        if (!loaded) return loaded.error();
        records.push_back(std::move(loaded).value());
    }
    return records;
}

Result<std::vector<SpoolRecord>> ExplainSpool::read_after(std::uint64_t after, std::size_t limit) {
    return collect_after(after, limit, false);
}

Result<ExplainSpool::Taken> ExplainSpool::take_after(std::uint64_t after, std::size_t limit) {
    Taken taken;
    taken.through = after;
    if (limit == 0) return taken;
    // Cached records are moved out: every one taken is released below.
    auto records = collect_after(after, limit, true);
    if (!records) return records.error();
    taken.records = std::move(records).value();
    taken.through = std::max(
        after, taken.records.size() < limit ? committed_id() : taken.records.back().delivery_id);
    release_cache_through(taken.through);
    return taken;
}

Result<std::optional<SpoolRecord>> ExplainSpool::read(std::uint64_t delivery_id) {
    if (const SpoolRecord* hit = cached(delivery_id)) return std::optional<SpoolRecord>{*hit};
    const auto found = index_.find(delivery_id);
    if (found == index_.end()) return std::optional<SpoolRecord>{};
    auto loaded = load(found->second, delivery_id);
    if (!loaded) return loaded.error();
    return std::optional<SpoolRecord>{std::move(loaded).value()};
}

void ExplainSpool::release_cache_through(std::uint64_t delivery_id) noexcept {
    while (!cache_.empty() && cache_.front().record.delivery_id <= delivery_id) {
        cache_bytes_ -= cache_.front().bytes;
        cache_.pop_front();
    }
}

void ExplainSpool::trim_cache() noexcept {
    while (!cache_.empty() &&
           (cache_.size() > limits_.cache_max_messages || cache_bytes_ > limits_.cache_max_bytes)) {
        cache_bytes_ -= cache_.front().bytes;
        cache_.pop_front();
    }
}

}  // namespace glassbox::broker
