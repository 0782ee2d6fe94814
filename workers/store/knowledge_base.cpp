// Opening a collection's knowledge base: the SQLite file, its parts and their index files.
#include "workers/store/knowledge_base.hpp"

#include "base/owner_only.hpp"

namespace glassbox::store {

namespace fs = std::filesystem;
using base::ErrorType;
using base::make_error;
using base::Result;

fs::path collection_path(const fs::path& home, std::string_view collection) {
    return home / "knowledge" / (std::string(collection) + ".db");
}

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
    options.cache_size = -65'536;  // 64 MiB of page cache: the indexes of a 1M-triple graph stay hot
    // A load's commits (one per batch, then the whole load's) return without copying the WAL
    // into the file; the copy runs beside the next batch.
    options.background_checkpoint = true;
    // 16 KiB pages for a new file (an existing one keeps its own): a load writes a quarter of
    // the WAL frames, the B-trees are a level shallower, and pattern queries are as fast.
    options.page_size = 16'384;
    return options;
}

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::open(const fs::path& home, const std::string& collection,
                                                           bool create) {
    auto kb = std::unique_ptr<KnowledgeBase>(new KnowledgeBase());
    kb->collection_ = collection;
    kb->path_ = collection_path(home, collection);
    std::error_code ec;
    if (!fs::exists(kb->path_, ec)) {
        if (!create) {
            // The message reaches HTTP and MCP clients: it names the collection, never the path.
            return make_error(ErrorType::kNotFound,
                              "collection \"" + collection + "\" has no knowledge yet: nothing was loaded into it");
        }
        // knowledge/ is created owner-only; an existing one is checked (a symbolic link or a
        // folder others can write is refused), never chmodded.
        const fs::path folder = kb->path_.parent_path();
        if (folder.has_parent_path()) fs::create_directories(folder.parent_path(), ec);
        if (ec) {
            return make_error(ErrorType::kInternal,
                              "cannot create " + folder.parent_path().string() + ": " + ec.message());
        }
        if (auto made = base::ensure_owner_only_folder(folder); !made) return std::move(made).error();
    }
    auto db = storage::Database::open(kb->path_, open_options(collection));
    if (!db) return std::move(db).error();
    kb->db_ = std::move(db).value();
    const auto fail = [&](const base::Error& error) {
        return make_error(error.type, kb->path_.string() + " is not a usable knowledge base: " + error.message);
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
    auto row = st->step();
    if (!row) return std::move(row).error();
    return *row ? st->int64(0) : std::int64_t{0};
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
    for (const auto& file : {path_, fs::path(path_.string() + "-wal"), entity_vectors_->index_file(),
                             chunk_vectors_->index_file()}) {
        const auto size = fs::file_size(file, ec);
        if (!ec) total += size;
    }
    return total;
}

Result<KnowledgeBase*> KnowledgeBases::get(std::string_view collection, bool create) {
    auto name = schema::validate_collection(collection);
    if (!name) return std::move(name).error();
    std::lock_guard lock(mutex_);
    if (auto found = open_.find(*name); found != open_.end()) return found->second.get();
    auto kb = KnowledgeBase::open(home_, *name, create);
    if (!kb) return std::move(kb).error();
    auto* raw = kb->get();
    open_.emplace(*name, std::move(kb).value());
    return raw;
}

}  // namespace glassbox::store
