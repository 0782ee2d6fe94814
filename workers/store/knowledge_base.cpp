// Opening a collection's knowledge base (the SQLite file, its parts and their index files), and
// the registry that keeps each open once and deletes a collection whole.
#include "workers/store/knowledge_base.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "base/owner_only.hpp"
#include "storage/sqlite_connection.hpp"

namespace glassbox::store {

namespace fs = std::filesystem;
using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

fs::path collection_path(const fs::path& home, std::string_view collection) {
    return home / "knowledge" / (std::string(collection) + ".db");
}

namespace {

constexpr std::string_view kDatabaseSuffix = ".db";

// The file's (device, inode), or nullopt when there is none.
std::optional<std::pair<std::uint64_t, std::uint64_t>> file_identity(const fs::path& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return std::nullopt;
    return std::pair{static_cast<std::uint64_t>(info.st_dev),
                     static_cast<std::uint64_t>(info.st_ino)};
}

Error not_found(std::string_view collection) {
    // The message reaches HTTP and MCP clients: it names the collection, never the path.
    return make_error(ErrorType::kNotFound,
                      "collection \"" + std::string(collection) +
                          "\" has no knowledge yet: nothing was loaded into it");
}

}  // namespace

KnowledgeBase::~KnowledgeBase() {
    // Parts before the connection they use; vector indexes save their files on the way out.
    chunk_vectors_.reset();
    entity_vectors_.reset();
    documents_.reset();
    graph_.reset();
    db_.reset();
}

storage::OpenOptions KnowledgeBase::open_options(const std::string& collection) {
    storage::OpenOptions options;
    options.label = "knowledge store " + collection;
    options.cache_size =
        -65'536;  // 64 MiB of page cache: the indexes of a 1M-triple graph stay hot
    // A load's commits (one per batch, then the whole load's) return without copying the WAL
    // into the file; the copy runs beside the next batch.
    options.background_checkpoint = true;
    // 16 KiB pages for a new file (an existing one keeps its own): a load writes a quarter of
    // the WAL frames, the B-trees are a level shallower, and pattern queries are as fast.
    options.page_size = 16'384;
    return options;
}

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::open(const fs::path& home,
                                                           const std::string& collection,
                                                           bool create) {
    auto kb = std::unique_ptr<KnowledgeBase>(new KnowledgeBase());
    kb->collection_ = collection;
    kb->path_ = collection_path(home, collection);
    std::error_code ec;
    if (!fs::exists(kb->path_, ec)) {
        if (!create) return not_found(collection);
        // knowledge/ is created owner-only; an existing one is checked (a symbolic link or a
        // folder others can write is refused), never chmodded.
        const fs::path folder = kb->path_.parent_path();
        if (folder.has_parent_path()) fs::create_directories(folder.parent_path(), ec);
        if (ec) {
            return make_error(
                ErrorType::kInternal,
                "cannot create " + folder.parent_path().string() + ": " + ec.message());
        }
        if (auto made = base::ensure_owner_only_folder(folder); !made)
            return std::move(made).error();
    }
    auto options = open_options(collection);
    // A file deleted between the check above and here is not made again by a reader.
    options.create = create;
    auto db = storage::Database::open(kb->path_, options);
    if (!db) {
        if (!create && !fs::exists(kb->path_, ec)) return not_found(collection);
        return std::move(db).error();
    }
    kb->db_ = std::make_unique<storage::SqliteConnection>(std::move(db).value());
    if (const auto identity = file_identity(kb->path_))
        std::tie(kb->file_device_, kb->file_inode_) = *identity;
    const auto fail = [&](const base::Error& error) {
        return make_error(error.type,
                          kb->path_.string() + " is not a usable knowledge base: " + error.message);
    };
    auto graph = GraphStore::open(*kb->db_);
    if (!graph) return fail(graph.error());
    kb->graph_ = std::move(graph).value();
    auto documents = DocumentStore::open(*kb->db_);
    if (!documents) return fail(documents.error());
    kb->documents_ = std::move(documents).value();
    const fs::path stem = kb->path_.parent_path() / collection;
    auto entities = VectorIndex::open(*kb->db_, IndexKind::kEntity, stem.string() + ".entity.hnsw");
    if (!entities) return fail(entities.error());
    kb->entity_vectors_ = std::move(entities).value();
    auto chunks = VectorIndex::open(*kb->db_, IndexKind::kChunk, stem.string() + ".chunk.hnsw");
    if (!chunks) return fail(chunks.error());
    kb->chunk_vectors_ = std::move(chunks).value();
    if (auto r = kb->db_->exec("CREATE TABLE IF NOT EXISTS kb_index_marks(kind TEXT PRIMARY KEY, "
                               "last_key INTEGER NOT NULL) WITHOUT ROWID");
        !r) {
        return fail(r.error());
    }
    return kb;
}

Result<std::int64_t> KnowledgeBase::index_mark(IndexKind kind) {
    auto st = db_->prepare("SELECT last_key FROM kb_index_marks WHERE kind = ?1");
    if (!st) return std::move(st).error();
    st->bind(1, to_string(kind));
    auto mark = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!mark) return std::move(mark).error();
    return mark->value_or(0);
}

Result<void> KnowledgeBase::set_index_mark(IndexKind kind, std::int64_t last_key) {
    auto st = db_->prepare(
        "INSERT INTO kb_index_marks(kind, last_key) VALUES(?1, ?2) "
        "ON CONFLICT(kind) DO UPDATE SET last_key = max(last_key, excluded.last_key)");
    if (!st) return std::move(st).error();
    st->bind(1, to_string(kind)).bind(2, last_key);
    return st->run();
}

std::uint64_t KnowledgeBase::bytes_on_disk() const {
    std::uint64_t total = 0;
    std::error_code ec;
    for (const auto& file : {path_, fs::path(path_.string() + "-wal"),
                             entity_vectors_->index_file(), chunk_vectors_->index_file()}) {
        const auto size = fs::file_size(file, ec);
        if (!ec) total += size;
    }
    return total;
}

Result<std::unique_lock<std::mutex>> KnowledgeBase::lock() {
    std::unique_lock held(mutex_);
    if (deleted_) return not_found(collection_);
    return held;
}

bool KnowledgeBase::file_is_current() const {
    const auto identity = file_identity(path_);
    return identity && identity->first == file_device_ && identity->second == file_inode_;
}

void KnowledgeBase::forget() noexcept {
    deleted_ = true;
    // Another process deleted the file; this instance's index files would be a stale cache
    // beside whatever takes the name next.
    if (entity_vectors_) entity_vectors_->discard();
    if (chunk_vectors_) chunk_vectors_->discard();
}

void KnowledgeBase::close_deleted() {
    forget();
    chunk_vectors_.reset();
    entity_vectors_.reset();
    documents_.reset();
    graph_.reset();
    db_.reset();
}

Result<std::shared_ptr<KnowledgeBase>> KnowledgeBases::get(std::string_view collection,
                                                           bool create) {
    auto name = schema::validate_collection(collection);
    if (!name) return std::move(name).error();
    std::lock_guard lock(mutex_);
    return get_locked(*name, create);
}

Result<std::shared_ptr<KnowledgeBase>> KnowledgeBases::get_locked(const std::string& name,
                                                                  bool create) {
    if (deleting_.count(name) > 0) return not_found(name);
    if (auto found = open_.find(name); found != open_.end()) {
        // One stat per request: another store process may have deleted the collection.
        if (found->second->file_is_current()) return found->second;
        found->second->forget();
        open_.erase(found);
    }
    auto kb = KnowledgeBase::open(home_, name, create);
    if (!kb) return std::move(kb).error();
    std::shared_ptr<KnowledgeBase> shared = std::move(kb).value();
    open_.emplace(name, shared);
    return shared;
}

std::vector<std::string> KnowledgeBases::names() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(home_ / "knowledge", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string file = it->path().filename().string();
        if (file.size() <= kDatabaseSuffix.size() || !file.ends_with(kDatabaseSuffix)) continue;
        const std::string name = file.substr(0, file.size() - kDatabaseSuffix.size());
        // Only what a collection may be called: no other file is taken for one.
        if (auto valid = schema::validate_collection(name); valid && *valid == name)
            out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

// Removes one file; a file already gone is no error. The message names no path (it reaches
// HTTP clients).
Result<void> remove_file(const fs::path& file, std::string_view collection) {
    std::error_code ec;
    fs::remove(file, ec);
    if (!ec) return {};
    return make_error(ErrorType::kInternal, "collection \"" + std::string(collection) +
                                                "\": its file " + file.filename().string() +
                                                " could not be removed: " + ec.message());
}

// The files of a closed collection: the vector index caches first (a crash after them leaves
// the database, which rebuilds them), then the database (from here on the collection is gone),
// then a -wal / -shm that another process's connection may have kept.
Result<void> remove_files(const fs::path& database, std::string_view collection) {
    const fs::path stem = database.parent_path() / std::string(collection);
    for (const auto& file :
         {fs::path(stem.string() + ".entity.hnsw"), fs::path(stem.string() + ".chunk.hnsw"),
          database, fs::path(database.string() + "-wal"), fs::path(database.string() + "-shm")}) {
        if (auto r = remove_file(file, collection); !r) return r;
    }
    return {};
}

}  // namespace

Result<void> KnowledgeBases::remove(std::string_view collection, const BeforeRemove& check,
                                    const BeforeRemove& before) {
    auto name = schema::validate_collection(collection);
    if (!name) return std::move(name).error();
    // First `check` alone, while the collection is served as usual: a refusal (the common case
    // of a refused delete) costs the requests for it nothing.
    {
        auto kb = get(*name, false);
        if (!kb) return std::move(kb).error();
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        if (auto r = check(**kb); !r) return r;
    }
    std::shared_ptr<KnowledgeBase> kb;
    {
        std::lock_guard lock(mutex_);
        auto found = get_locked(*name, false);
        if (!found) return std::move(found).error();
        kb = std::move(found).value();
        // From here every request for the name is kNotFound, loads included.
        open_.erase(*name);
        deleting_.insert(*name);
    }
    bool refused = false;
    Result<void> removed = [&]() -> Result<void> {
        auto held = kb->lock();
        if (!held) return std::move(held).error();
        // Again: a load may have begun between the first check and the name's taking.
        for (const BeforeRemove* step : {&check, &before}) {
            if (auto r = (*step)(*kb); !r) {
                refused = true;
                return r;
            }
        }
        kb->close_deleted();
        return remove_files(kb->path(), *name);
    }();
    std::lock_guard lock(mutex_);
    deleting_.erase(*name);
    // Refused: the collection stays as it was, open.
    if (refused && kb->file_is_current()) open_.emplace(*name, kb);
    return removed;
}

}  // namespace glassbox::store
