// The SQLite wrapper: open with the project's pragmas, cached statements, transactions.
#include "storage/sqlite_database.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <sqlite3.h>

namespace glassbox::storage {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

// ---- Statement ---------------------------------------------------------------------------------

Statement::~Statement() {
    if (statement_ != nullptr && owned_) {
        sqlite3_finalize(statement_);
    } else if (statement_ != nullptr) {
        sqlite3_reset(statement_);
        sqlite3_clear_bindings(statement_);
    }
}

Statement& Statement::bind(int index, std::string_view text) {
    sqlite3_bind_text64(statement_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    return *this;
}

Statement& Statement::bind_static(int index, std::string_view text) {
    sqlite3_bind_text64(statement_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
    return *this;
}

Statement& Statement::bind_blob(int index, std::span<const std::byte> bytes) {
    sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
    sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
    sqlite3_bind_int64(statement_, index, value);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    sqlite3_bind_double(statement_, index, value);
    return *this;
}

Statement& Statement::bind(int index, const std::optional<std::string>& text) {
    if (text) return bind(index, std::string_view{*text});
    return bind_null(index);
}

Statement& Statement::bind(int index, const std::optional<std::int64_t>& value) {
    if (value) return bind(index, *value);
    return bind_null(index);
}

Statement& Statement::bind_null(int index) {
    sqlite3_bind_null(statement_, index);
    return *this;
}

Result<bool> Statement::step() {
    const int rc = sqlite3_step(statement_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return db_->error("statement failed");
}

Result<void> Statement::run() {
    for (;;) {
        auto row = step();
        if (!row) return row.error();
        if (!*row) return {};
    }
}

void Statement::reset() noexcept { sqlite3_reset(statement_); }

// ---- Row ---------------------------------------------------------------------------------------

bool Row::is_null(int column) const noexcept {
    return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

std::int64_t Row::int64(int column) const noexcept {
    return sqlite3_column_int64(statement_, column);
}

double Row::real(int column) const noexcept { return sqlite3_column_double(statement_, column); }

std::string_view Row::text(int column) const noexcept {
    const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(statement_, column));
    if (data == nullptr) return {};
    return {data, static_cast<std::size_t>(sqlite3_column_bytes(statement_, column))};
}

std::span<const std::byte> Row::blob(int column) const noexcept {
    const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(statement_, column));
    if (data == nullptr) return {};
    return {data, static_cast<std::size_t>(sqlite3_column_bytes(statement_, column))};
}

std::optional<std::string> Row::optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return std::string(text(column));
}

// ---- Database ----------------------------------------------------------------------------------

// Runs PASSIVE checkpoints on its own connection and thread when asked. A passive checkpoint
// never blocks the writer or readers: it copies what no reader still needs and leaves the rest
// for the next one, so a request that meets a busy file is simply repeated at the next commit.
class Database::Checkpointer {
public:
    static std::unique_ptr<Checkpointer> start(const std::filesystem::path& path) {
        sqlite3* handle = nullptr;
        if (sqlite3_open_v2(path.c_str(), &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                            nullptr) != SQLITE_OK) {
            sqlite3_close(handle);
            return nullptr;
        }
        sqlite3_busy_timeout(handle, 1000);
        // A connection learns the file is in WAL mode when it first reads it; until then a
        // checkpoint call does nothing.
        if (sqlite3_exec(handle, "PRAGMA schema_version", nullptr, nullptr, nullptr) != SQLITE_OK) {
            sqlite3_close(handle);
            return nullptr;
        }
        return std::unique_ptr<Checkpointer>(new Checkpointer(handle));
    }

    ~Checkpointer() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_one();
        thread_.join();
        sqlite3_close(handle_);
    }

    void request() {
        {
            std::lock_guard lock(mutex_);
            requested_ = true;
        }
        wake_.notify_one();
    }

private:
    explicit Checkpointer(sqlite3* handle) : handle_(handle), thread_([this] { run(); }) {}

    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return requested_ || stop_; });
            if (stop_) return;
            requested_ = false;
            lock.unlock();
            (void)sqlite3_wal_checkpoint_v2(handle_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                            nullptr);
            lock.lock();
        }
    }

    sqlite3* handle_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool requested_ = false;
    bool stop_ = false;
    std::thread thread_;  // last: started once the rest is initialised
};

int Database::on_wal_commit(void* self, sqlite3* /*handle*/, const char* /*schema*/, int pages) {
    auto* db = static_cast<Database*>(self);
    if (pages >= db->options_.checkpoint_pages) db->checkpointer_->request();
    return SQLITE_OK;
}

void Database::Finalize::operator()(sqlite3_stmt* statement) const noexcept {
    sqlite3_finalize(statement);
}

Database::Database(std::filesystem::path path, OpenOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

Database::~Database() {
    statements_.clear();  // statements before the connection, or close would fail
    checkpointer_
        .reset();  // before the last connection closes (which checkpoints and removes the WAL)
    if (handle_ != nullptr) sqlite3_close(handle_);
}

Result<std::unique_ptr<Database>> Database::open(const std::filesystem::path& path,
                                                 const OpenOptions& options) {
    const bool in_memory = path == ":memory:";
    const auto fail = [&](const std::string& why) {
        return make_error(ErrorType::kInternal, options.label + " " + path.string() + ": " + why);
    };
    if (!in_memory && !options.read_only && options.create) {
        const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) return fail(std::string("cannot create: ") + std::strerror(errno));
        ::close(fd);
    }
    auto db = std::unique_ptr<Database>(new Database(path, options));
    const int flags =
        (options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path.c_str(), &db->handle_, flags, nullptr) != SQLITE_OK) {
        return fail("cannot open: " + db->message());
    }
    sqlite3_extended_result_codes(db->handle_, 1);
    sqlite3_busy_timeout(db->handle_, static_cast<int>(options.busy_timeout.count()));
    if (options.exclusive) {
        if (auto r = db->exec("PRAGMA locking_mode=EXCLUSIVE"); !r) return fail(r.error().message);
    }
    // Takes effect only while the file is still empty (before journal_mode writes the header).
    if (options.page_size != 0 && !options.read_only) {
        if (auto r = db->exec("PRAGMA page_size=" + std::to_string(options.page_size)); !r) {
            return fail(r.error().message);
        }
    }
    // Like page_size, only while the file is empty (before the first table); an existing file
    // keeps its mode until a VACUUM.
    if (options.auto_vacuum_incremental && !options.read_only) {
        if (auto r = db->exec("PRAGMA auto_vacuum=INCREMENTAL"); !r) return fail(r.error().message);
    }
    // The first statement reads the header: a file that is not SQLite fails here.
    if (!options.read_only && !in_memory && options.wal) {
        if (auto r = db->exec("PRAGMA journal_mode=WAL"); !r) return fail(r.error().message);
    } else if (auto r = db->exec("PRAGMA schema_version"); !r) {
        return fail(r.error().message);
    }
    if (!options.read_only) {
        if (auto r = db->exec(options.synchronous_full ? "PRAGMA synchronous=FULL"
                                                       : "PRAGMA synchronous=NORMAL");
            !r) {
            return fail(r.error().message);
        }
    }
    if (options.cache_size != 0) {
        if (auto r = db->exec("PRAGMA cache_size=" + std::to_string(options.cache_size)); !r) {
            return fail(r.error().message);
        }
    }
    if (options.background_checkpoint && options.wal && !options.read_only && !options.exclusive &&
        !in_memory) {
        db->checkpointer_ = Checkpointer::start(path);
        if (!db->checkpointer_) return fail("cannot open the checkpoint connection");
        // Replaces SQLite's automatic checkpoint (which runs inside the committing call).
        sqlite3_wal_hook(db->handle_, &Database::on_wal_commit, db.get());
    }
    return db;
}

Result<void> Database::exec(std::string_view sql) {
    const std::string text(sql);
    char* message = nullptr;
    if (sqlite3_exec(handle_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        std::string why = message != nullptr ? message : this->message();
        sqlite3_free(message);
        return make_error(ErrorType::kInternal, options_.label + ": " + why);
    }
    return {};
}

Result<Statement> Database::prepare(const std::string& sql) {
    if (const auto found = statements_.find(sql); found != statements_.end()) {
        return Statement(*this, found->second.get());
    }
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(handle_, sql.c_str(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
        return error("cannot prepare \"" + sql.substr(0, 60) + "\"");
    }
    auto& slot = statements_[sql];
    slot.reset(raw);
    return Statement(*this, raw);
}

Result<Statement> Database::prepare_once(const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(handle_, sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr) !=
        SQLITE_OK) {
        return error("cannot prepare \"" + sql.substr(0, 60) + "\"");
    }
    return Statement(*this, raw, true);
}

std::int64_t Database::last_insert_rowid() const noexcept {
    return sqlite3_last_insert_rowid(handle_);
}

std::int64_t Database::changes() const noexcept { return sqlite3_changes64(handle_); }

std::int64_t Database::total_changes() const noexcept { return sqlite3_total_changes64(handle_); }

bool Database::in_write_transaction() const noexcept {
    return sqlite3_txn_state(handle_, nullptr) == SQLITE_TXN_WRITE;
}

base::Result<std::int64_t> Database::data_version() {
    auto st = prepare("PRAGMA data_version");
    if (!st) return st.error();
    std::int64_t version = 0;
    auto read = st->each([&](const Row& row) { version = row.int64(0); });
    if (!read) return read.error();
    return version;
}

std::string Database::message() const {
    return handle_ != nullptr ? sqlite3_errmsg(handle_) : "out of memory";
}

Error Database::error(std::string_view what) const {
    return make_error(ErrorType::kInternal,
                      options_.label + ": " + std::string(what) + ": " + message());
}

// ---- Transaction -------------------------------------------------------------------------------

Result<Transaction> Transaction::begin(Database& db, Kind kind) {
    if (auto r = db.exec(kind == Kind::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN"); !r)
        return r.error();
    return Transaction(db);
}

Transaction::~Transaction() {
    if (db_ != nullptr) (void)db_->exec("ROLLBACK");
}

Result<void> Transaction::commit() {
    if (db_ == nullptr) return make_error(ErrorType::kInternal, "transaction already ended");
    auto r = db_->exec("COMMIT");
    if (r) db_ = nullptr;
    return r;
}

ReadScope::ReadScope(Database& db) {
    if (sqlite3_get_autocommit(db.handle()) == 0) return;
    auto begin = db.prepare("BEGIN");
    // Without it the statements still run, each in its own read transaction.
    if (begin && begin->run()) db_ = &db;
}

ReadScope::~ReadScope() {
    if (db_ == nullptr) return;
    auto commit = db_->prepare("COMMIT");
    if (!commit || !commit->run()) (void)db_->exec("ROLLBACK");
}

}  // namespace glassbox::storage
