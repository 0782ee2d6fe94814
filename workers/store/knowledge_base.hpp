// One collection's knowledge base — <home>/knowledge/<collection>.db with its graph, documents
// and vector indexes, or on PostgreSQL one schema of the configured database — and the
// per-process registry that opens each collection once and deletes it whole.
//
// On PostgreSQL a catalog table, glassbox_collections(name, id), in the DSN's schema (its
// search_path's first, usually `public`) names the collections; collection N's tables are in the
// schema `<that schema>_kb_<N>`. Ids are never reused, so a collection deleted and made again
// by another host is told apart from the one this process opened. Every store worker of every
// host shares them; the vector indexes (hnswlib) are each worker's own, cached in
// <home>/knowledge/ and kept current from the shared rows.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/collection_name.hpp"
#include "storage/sql.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/store/document_store.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/vector_index.hpp"

namespace glassbox::store {

// <home>/knowledge/<collection>.db
std::filesystem::path collection_path(const std::filesystem::path& home,
                                      std::string_view collection);

class KnowledgeBase {
public:
    // How a collection's file is opened: WAL, synchronous=NORMAL, 64 MiB of page cache,
    // checkpoints on a background thread (bench/ opens its files the same way).
    static storage::OpenOptions open_options(const std::string& collection);
    // Opens (creating when `create`; else kNotFound for a collection never loaded) the file and
    // every part. A file that is not a knowledge base is reported, not crashed on.
    static base::Result<std::unique_ptr<KnowledgeBase>> open(const std::filesystem::path& home,
                                                             const std::string& collection,
                                                             bool create);
    // Collection `id` of the PostgreSQL catalog in `catalog_schema` (its schema exists), its
    // tables created when missing; the vector index caches go to <home>/knowledge/.
    static base::Result<std::unique_ptr<KnowledgeBase>> open_postgres(
        const std::filesystem::path& home, const std::string& dsn,
        const std::string& catalog_schema, const std::string& collection, std::int64_t id);
    ~KnowledgeBase();
    KnowledgeBase(const KnowledgeBase&) = delete;
    KnowledgeBase& operator=(const KnowledgeBase&) = delete;

    const std::string& collection() const noexcept { return collection_; }
    // The SQLite file (on PostgreSQL: where the vector index caches go, without a suffix).
    const std::filesystem::path& path() const noexcept { return path_; }
    // The catalog id on PostgreSQL; 0 on SQLite.
    std::int64_t postgres_id() const noexcept { return postgres_id_; }
    // The parts, for a holder of lock() only: once the collection is deleted they are gone.
    storage::sql::Connection& db() noexcept { return *db_; }
    GraphStore& graph() noexcept { return *graph_; }
    DocumentStore& documents() noexcept { return *documents_; }
    VectorIndex& entity_vectors() noexcept { return *entity_vectors_; }
    VectorIndex& chunk_vectors() noexcept { return *chunk_vectors_; }
    // Held for every use of the parts above (one SQLite connection, one thread at a time):
    // kNotFound naming the collection once it has been deleted, so a request that got hold of it
    // before a delete ends as if it had come after it.
    base::Result<std::unique_lock<std::mutex>> lock();
    // The highest entity id / chunk rowid whose vector the `index` operation has stored: indexing
    // goes on from there. (An IRI first stored as a predicate only and later used as a subject
    // keeps an id below the mark and is not embedded; see docs/knowledge.md.)
    base::Result<std::int64_t> index_mark(IndexKind kind);
    // Raises the mark (never lowers it: two indexers may race).
    base::Result<void> set_index_mark(IndexKind kind, std::int64_t last_key);
    // Bytes of the database and its WAL and index files (PostgreSQL: of the collection's
    // tables with their indexes, and this worker's index caches). Under lock().
    std::uint64_t bytes_on_disk() const;

    // Whether path() is still the file this opened: false once another process deleted the
    // collection (or deleted and created it again).
    bool file_is_current() const;
    // Marks the collection deleted without closing it (another process deleted its file): lock()
    // refuses from now on, the vector index files are never written again, and the connection
    // closes with the last request that holds this.
    void forget() noexcept;
    // Under lock(): marks the collection deleted and closes every part and the connection (the
    // last connection's close checkpoints and removes the WAL). The files stay for the caller.
    void close_deleted();

private:
    KnowledgeBase() = default;
    base::Result<void> open_parts(const std::filesystem::path& stem);

    std::string collection_;
    std::filesystem::path path_;
    std::uint64_t file_device_ = 0;  // the file's identity when opened
    std::uint64_t file_inode_ = 0;
    std::int64_t postgres_id_ = 0;
    std::string postgres_schema_;
    std::unique_ptr<storage::sql::Connection> db_;
    std::unique_ptr<GraphStore> graph_;
    std::unique_ptr<DocumentStore> documents_;
    std::unique_ptr<VectorIndex> entity_vectors_;
    std::unique_ptr<VectorIndex> chunk_vectors_;
    std::mutex mutex_;
    std::atomic<bool> deleted_{false};
};

// Collections of one home, each opened once per process on first use, and deleted whole.
class KnowledgeBases {
public:
    // A step of remove(), run under the collection's lock; an error keeps the collection.
    using BeforeRemove = std::function<base::Result<void>(KnowledgeBase&)>;

    // `postgres_dsn` empty: SQLite files in <home>/knowledge/; else that PostgreSQL database.
    explicit KnowledgeBases(std::filesystem::path home, std::string postgres_dsn = {});
    ~KnowledgeBases();
    KnowledgeBases(const KnowledgeBases&) = delete;
    KnowledgeBases& operator=(const KnowledgeBases&) = delete;
    // `create` false: kNotFound for a collection that has no file yet (queries never create one),
    // or that is being deleted. Shared: a delete drops the registry's reference while requests
    // that hold one finish (their lock() then says kNotFound).
    base::Result<std::shared_ptr<KnowledgeBase>> get(std::string_view collection, bool create);
    // The collections that have a file in <home>/knowledge/ (PostgreSQL: in the catalog), by
    // name. kStoreUnavailable when PostgreSQL cannot be reached.
    base::Result<std::vector<std::string>> list();
    // list(), or none when it fails.
    std::vector<std::string> names();
    // Deletes the collection. `check` runs under the collection's lock while it is still served
    // (a refusal there leaves every request alone); then the name is taken (every request for it
    // is kNotFound, loads included, until this returns), the requests that hold its lock finish,
    // `check` and `before` run under the lock (an error from either keeps the collection), it is
    // closed, and its index files, its database and any -wal / -shm left beside it are removed.
    // kNotFound naming the collection when it has no file.
    base::Result<void> remove(std::string_view collection, const BeforeRemove& check,
                              const BeforeRemove& before);
    const std::filesystem::path& home() const noexcept { return home_; }

private:
    class Catalog;
    // Caller holds mutex_.
    base::Result<std::shared_ptr<KnowledgeBase>> get_locked(const std::string& name, bool create);
    base::Result<std::unique_ptr<KnowledgeBase>> open_locked(const std::string& name, bool create);
    // Whether `kb` is still the collection of its name (its file, or its catalog id).
    base::Result<bool> is_current(const KnowledgeBase& kb);
    // Removes what a closed collection leaves: its files, or its schema and catalog row.
    base::Result<void> remove_closed(const KnowledgeBase& kb, const std::string& name);

    std::filesystem::path home_;
    std::unique_ptr<Catalog> catalog_;  // PostgreSQL only
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<KnowledgeBase>, std::less<>> open_;
    std::set<std::string, std::less<>> deleting_;
};

}  // namespace glassbox::store
