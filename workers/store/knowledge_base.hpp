// One collection's knowledge base — <home>/knowledge/<collection>.db with its graph, documents
// and vector indexes — and the per-process registry that opens each collection once.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "schema/collection_name.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/store/document_store.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/vector_index.hpp"

namespace glassbox::store {

// <home>/knowledge/<collection>.db
std::filesystem::path collection_path(const std::filesystem::path& home, std::string_view collection);

class KnowledgeBase {
public:
    // How a collection's file is opened: WAL, synchronous=NORMAL, 64 MiB of page cache,
    // checkpoints on a background thread (bench/ opens its files the same way).
    static storage::OpenOptions open_options(const std::string& collection);
    // Opens (creating when `create`; else kNotFound for a collection never loaded) the file and
    // every part. A file that is not a knowledge base is reported, not crashed on.
    static base::Result<std::unique_ptr<KnowledgeBase>> open(const std::filesystem::path& home,
                                                               const std::string& collection, bool create);
    ~KnowledgeBase();
    KnowledgeBase(const KnowledgeBase&) = delete;
    KnowledgeBase& operator=(const KnowledgeBase&) = delete;

    const std::string& collection() const noexcept { return collection_; }
    const std::filesystem::path& path() const noexcept { return path_; }
    storage::Database& db() noexcept { return *db_; }
    GraphStore& graph() noexcept { return *graph_; }
    DocumentStore& documents() noexcept { return *documents_; }
    VectorIndex& entity_vectors() noexcept { return *entity_vectors_; }
    VectorIndex& chunk_vectors() noexcept { return *chunk_vectors_; }
    // Held for every use of the parts above: one SQLite connection, one thread at a time.
    std::mutex& mutex() noexcept { return mutex_; }
    // The highest entity id / chunk rowid whose vector the `index` operation has stored: indexing
    // goes on from there. (An IRI first stored as a predicate only and later used as a subject
    // keeps an id below the mark and is not embedded; see docs/knowledge.md.)
    base::Result<std::int64_t> index_mark(IndexKind kind);
    // Raises the mark (never lowers it: two indexers may race).
    base::Result<void> set_index_mark(IndexKind kind, std::int64_t last_key);
    // Bytes of the database and its WAL and index files.
    std::uint64_t bytes_on_disk() const;

private:
    KnowledgeBase() = default;

    std::string collection_;
    std::filesystem::path path_;
    std::unique_ptr<storage::Database> db_;
    std::unique_ptr<GraphStore> graph_;
    std::unique_ptr<DocumentStore> documents_;
    std::unique_ptr<VectorIndex> entity_vectors_;
    std::unique_ptr<VectorIndex> chunk_vectors_;
    std::mutex mutex_;
};

// Collections of one home, each opened once per process on first use.
class KnowledgeBases {
public:
    explicit KnowledgeBases(std::filesystem::path home) : home_(std::move(home)) {}
    // `create` false: kNotFound for a collection that has no file yet (queries never create one).
    base::Result<KnowledgeBase*> get(std::string_view collection, bool create);
    const std::filesystem::path& home() const noexcept { return home_; }

private:
    std::filesystem::path home_;
    std::mutex mutex_;
    std::map<std::string, std::unique_ptr<KnowledgeBase>, std::less<>> open_;
};

}  // namespace glassbox::store
