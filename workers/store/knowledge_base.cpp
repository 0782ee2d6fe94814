// Opening a collection's knowledge base (the SQLite file, its parts and their index files), and
// the registry that keeps each open once and deletes a collection whole.
#include "workers/store/knowledge_base.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <tuple>
#include <utility>

#include "base/owner_only.hpp"
#include "storage/pg_connection.hpp"
#include "storage/sqlite_connection.hpp"
#include "workers/store/source_freshness.hpp"

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

// Writers of the PostgreSQL catalog take this advisory lock; a collection's writers take
// kCollectionLock + its id.
constexpr std::int64_t kCatalogLock = 0x676c6b6200000000;     // "glkb" << 32
constexpr std::int64_t kCollectionLock = 0x676c6b6300000000;  // "glkc" << 32

// `<catalog schema>_kb_<id>`: the schema of collection `id`.
std::string collection_schema(const std::string& catalog_schema, std::int64_t id) {
    return catalog_schema + "_kb_" + std::to_string(id);
}

// The vector index caches of a PostgreSQL collection: this worker's own, in its home.
fs::path postgres_cache_stem(const fs::path& home, const std::string& schema) {
    return home / "knowledge" / ("postgres-" + schema);
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
    if (auto r = kb->open_parts(kb->path_.parent_path() / collection); !r) {
        return make_error(r.error().type, kb->path_.string() + " is not a usable knowledge base: " +
                                              r.error().message);
    }
    return kb;
}

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::open_postgres(
    const fs::path& home, const std::string& dsn, const std::string& catalog_schema,
    const std::string& collection, std::int64_t id) {
    auto kb = std::unique_ptr<KnowledgeBase>(new KnowledgeBase());
    kb->collection_ = collection;
    kb->postgres_id_ = id;
    kb->postgres_schema_ = collection_schema(catalog_schema, id);
    kb->path_ = postgres_cache_stem(home, kb->postgres_schema_);
    storage::PgOptions options;
    options.dsn = dsn;
    options.label = "knowledge store " + collection;
    options.writer_lock_key = kCollectionLock + id;
    options.search_path = kb->postgres_schema_;
    auto connection = storage::PgConnection::open(options);
    if (!connection) return std::move(connection).error();
    kb->db_ = std::move(connection).value();
    if (auto r = kb->open_parts(kb->path_); !r) {
        return make_error(
            r.error().type,
            "collection \"" + collection + "\" on PostgreSQL is not usable: " + r.error().message);
    }
    return kb;
}

// The graph, documents, vector indexes (their caches at <stem>.<kind>.hnsw) and index marks.
Result<void> KnowledgeBase::open_parts(const fs::path& stem) {
    auto graph = GraphStore::open(*db_);
    if (!graph) return graph.error();
    graph_ = std::move(graph).value();
    auto documents = DocumentStore::open(*db_);
    if (!documents) return documents.error();
    documents_ = std::move(documents).value();
    if (auto r = migrate_freshness(*db_); !r) return r;
    auto entities = VectorIndex::open(*db_, IndexKind::kEntity, stem.string() + ".entity.hnsw");
    if (!entities) return entities.error();
    entity_vectors_ = std::move(entities).value();
    auto chunks = VectorIndex::open(*db_, IndexKind::kChunk, stem.string() + ".chunk.hnsw");
    if (!chunks) return chunks.error();
    chunk_vectors_ = std::move(chunks).value();
    // Under the writer lock: on PostgreSQL two workers may open a new collection at once.
    auto tx = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    if (auto r = db_->exec(storage::sql::ddl_for(
            db_->dialect(),
            "CREATE TABLE IF NOT EXISTS kb_index_marks(kind TEXT PRIMARY KEY, "
            "last_key INTEGER NOT NULL) WITHOUT ROWID"));
        !r) {
        return r;
    }
    return tx->commit();
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
        "ON CONFLICT(kind) DO UPDATE SET last_key = " +
        std::string(db_->dialect() == storage::sql::Dialect::kPostgres ? "GREATEST" : "max") +
        "(kb_index_marks.last_key, excluded.last_key)");
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
    if (postgres_id_ == 0) return total;
    // The collection's tables with their indexes and TOAST.
    auto st = db_->prepare(
        "SELECT CAST(COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS BIGINT) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ?1 AND c.relkind = 'r'");
    if (!st) return total;
    st->bind(1, postgres_schema_);
    auto bytes = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (bytes && *bytes) total += static_cast<std::uint64_t>(std::max<std::int64_t>(**bytes, 0));
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

// ---- the PostgreSQL catalog -------------------------------------------------------------------

// The catalog's connection (one, used under the registry's mutex): made on first use, and its
// table with it; libpq re-connects it after a loss.
class KnowledgeBases::Catalog {
public:
    explicit Catalog(std::string dsn) : dsn_(std::move(dsn)) {}

    const std::string& dsn() const noexcept { return dsn_; }
    // The schema the catalog is in (the DSN's current schema).
    Result<std::string> schema() {
        if (auto r = ready(); !r) return r.error();
        return schema_;
    }

    Result<std::optional<std::int64_t>> id_of(const std::string& name) {
        if (auto r = ready(); !r) return r.error();
        auto st = connection_->prepare("SELECT id FROM glassbox_collections WHERE name = ?1");
        if (!st) return st.error();
        st->bind(1, name);
        return st->first([](const storage::sql::Row& row) { return row.int64(0); });
    }

    // The collection's id, its catalog row and schema made when it has none.
    Result<std::int64_t> create(const std::string& name) {
        if (auto r = ready(); !r) return r.error();
        auto tx =
            storage::sql::Transaction::begin(*connection_, storage::sql::TransactionKind::kWrite);
        if (!tx) return tx.error();
        auto existing = id_of(name);
        if (!existing) return existing.error();
        if (*existing) return **existing;
        auto insert = connection_->prepare(
            "INSERT INTO glassbox_collections(name, created_at) VALUES(?1, ?2) RETURNING id");
        if (!insert) return insert.error();
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        insert->bind(1, name).bind(2, static_cast<std::int64_t>(now.count()));
        auto id = insert->first([](const storage::sql::Row& row) { return row.int64(0); });
        insert->reset();
        if (!id) return id.error();
        if (!*id) return make_error(ErrorType::kInternal, "knowledge catalog: no id returned");
        if (auto r = connection_->exec("CREATE SCHEMA IF NOT EXISTS " +
                                       collection_schema(schema_, **id));
            !r) {
            return r.error();
        }
        if (auto r = tx->commit(); !r) return r.error();
        return **id;
    }

    Result<std::vector<std::string>> names() {
        if (auto r = ready(); !r) return r.error();
        auto st = connection_->prepare("SELECT name FROM glassbox_collections ORDER BY name");
        if (!st) return st.error();
        return st->collect([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    }

    // Deletes the collection's row and schema (its tables with it), in one transaction.
    Result<void> drop(const std::string& name, std::int64_t id) {
        if (auto r = ready(); !r) return r;
        auto tx =
            storage::sql::Transaction::begin(*connection_, storage::sql::TransactionKind::kWrite);
        if (!tx) return tx.error();
        auto st =
            connection_->prepare("DELETE FROM glassbox_collections WHERE name = ?1 AND id = ?2");
        if (!st) return st.error();
        st->bind(1, name).bind(2, id);
        if (auto r = st->run(); !r) return r;
        if (auto r = connection_->exec("DROP SCHEMA IF EXISTS " + collection_schema(schema_, id) +
                                       " CASCADE");
            !r) {
            return r;
        }
        return tx->commit();
    }

private:
    Result<void> ready() {
        if (!connection_) {
            storage::PgOptions options;
            options.dsn = dsn_;
            options.label = "knowledge catalog";
            options.writer_lock_key = kCatalogLock;
            auto connection = storage::PgConnection::open(options);
            if (!connection) return connection.error();
            connection_ = std::move(connection).value();
        }
        if (!schema_.empty()) return {};
        auto found = find_schema();
        if (!found) return found.error();
        auto tx =
            storage::sql::Transaction::begin(*connection_, storage::sql::TransactionKind::kWrite);
        if (!tx) return tx.error();
        if (auto r = connection_->exec(
                "CREATE TABLE IF NOT EXISTS glassbox_collections(name TEXT COLLATE \"C\" PRIMARY "
                "KEY, id BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE, created_at BIGINT NOT NULL)");
            !r) {
            return r;
        }
        if (auto r = tx->commit(); !r) return r;
        schema_ = std::move(found).value();
        return {};
    }

    // current_schema(): the first schema of the DSN's search_path that exists. Its name makes
    // the collections' schema names, unquoted: lowercase letters, digits and _ only.
    Result<std::string> find_schema() {
        auto st = connection_->prepare("SELECT current_schema()");
        if (!st) return st.error();
        auto name = st->first([](const storage::sql::Row& row) { return row.optional_text(0); });
        if (!name) return name.error();
        const std::string schema = *name && **name ? ***name : std::string();
        const bool plain =
            !schema.empty() && schema.size() <= 40 &&
            schema.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
        if (!plain) {
            return make_error(ErrorType::kInvalidRequest,
                              "knowledge store on PostgreSQL: the connection's search_path must "
                              "name an existing schema of lowercase letters, digits and _ (at "
                              "most 40), e.g. public; it names \"" +
                                  schema + "\"");
        }
        return schema;
    }

    std::string dsn_;
    std::unique_ptr<storage::PgConnection> connection_;
    std::string schema_;
};

// ---- the registry --------------------------------------------------------------------------

KnowledgeBases::KnowledgeBases(fs::path home, std::string postgres_dsn) : home_(std::move(home)) {
    if (!postgres_dsn.empty()) catalog_ = std::make_unique<Catalog>(std::move(postgres_dsn));
}

KnowledgeBases::~KnowledgeBases() {
    // Collections before the catalog: each closes its own connection.
    open_.clear();
}

Result<std::shared_ptr<KnowledgeBase>> KnowledgeBases::get(std::string_view collection,
                                                           bool create) {
    auto name = schema::validate_collection(collection);
    if (!name) return std::move(name).error();
    std::lock_guard lock(mutex_);
    return get_locked(*name, create);
}

Result<bool> KnowledgeBases::is_current(const KnowledgeBase& kb) {
    if (!catalog_) return kb.file_is_current();
    auto id = catalog_->id_of(kb.collection());
    if (!id) return id.error();
    return *id && **id == kb.postgres_id();
}

Result<std::shared_ptr<KnowledgeBase>> KnowledgeBases::get_locked(const std::string& name,
                                                                  bool create) {
    if (deleting_.count(name) > 0) return not_found(name);
    if (auto found = open_.find(name); found != open_.end()) {
        // One check per request (a stat, or a catalog read): another store process may have
        // deleted the collection.
        auto current = is_current(*found->second);
        if (!current) return current.error();
        if (*current) return found->second;
        found->second->forget();
        open_.erase(found);
    }
    auto kb = open_locked(name, create);
    if (!kb) return std::move(kb).error();
    std::shared_ptr<KnowledgeBase> shared = std::move(kb).value();
    open_.emplace(name, shared);
    return shared;
}

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBases::open_locked(const std::string& name,
                                                                   bool create) {
    if (!catalog_) return KnowledgeBase::open(home_, name, create);
    auto schema = catalog_->schema();
    if (!schema) return schema.error();
    std::int64_t id = 0;
    if (create) {
        auto made = catalog_->create(name);
        if (!made) return made.error();
        id = *made;
    } else {
        auto found = catalog_->id_of(name);
        if (!found) return found.error();
        if (!*found) return not_found(name);
        id = **found;
    }
    return KnowledgeBase::open_postgres(home_, catalog_->dsn(), *schema, name, id);
}

std::vector<std::string> KnowledgeBases::names() {
    auto listed = list();
    return listed ? std::move(listed).value() : std::vector<std::string>{};
}

Result<std::vector<std::string>> KnowledgeBases::list() {
    if (catalog_) {
        std::lock_guard lock(mutex_);
        return catalog_->names();
    }
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

Result<void> KnowledgeBases::remove_closed(const KnowledgeBase& kb, const std::string& name) {
    if (!catalog_) return remove_files(kb.path(), name);
    // The caches first (a crash after them leaves the collection, which rebuilds them).
    const std::string stem = kb.path().string();
    for (const char* kind : {".entity.hnsw", ".chunk.hnsw"}) {
        if (auto r = remove_file(stem + kind, name); !r) return r;
    }
    std::lock_guard lock(mutex_);
    return catalog_->drop(name, kb.postgres_id());
}

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
        return remove_closed(*kb, *name);
    }();
    std::lock_guard lock(mutex_);
    deleting_.erase(*name);
    // Refused: the collection stays as it was, open.
    if (refused) {
        auto current = is_current(*kb);
        if (current && *current) open_.emplace(*name, kb);
    }
    return removed;
}

}  // namespace glassbox::store
