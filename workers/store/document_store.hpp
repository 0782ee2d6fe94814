// The document store: documents, their chunks and a keyword index over the chunks (FTS5 in the
// collection's SQLite file; tsvector and GIN in its PostgreSQL schema), read by document RAG
// (keyword search, chunk fetch) and re-embedding.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "storage/sql.hpp"
#include "workers/store/graph_store.hpp"  // TransactionMode, shared by both stores

namespace glassbox::store {

// Every offset and length here counts characters = Unicode code points of the UTF-8 text (not
// bytes, not UTF-16 units, not grapheme clusters), the unit of schema::Chunk::char_offset.

// A chunk's URI: its document's URI + "#chunk-<ordinal>" (ordinal from 0, decimal). The store
// names every chunk this way; callers never choose chunk URIs.
std::string chunk_uri(std::string_view document_uri, std::uint32_t ordinal);

struct DocumentRecord {
    std::string uri;    // the identity: file:///… or urn:glassbox:doc:…; non-empty
    std::string title;  // may be empty
    std::string
        source_path;         // the file it was read from, as given to `glassbox load`; may be empty
    std::string media_type;  // "text/plain", "text/markdown"; may be empty
    std::uint32_t tier = schema::kDefaultTier;  // 1 authoritative … 4 inferred; others rejected
    std::string loaded_at;  // xsd:dateTime lexical form; empty: the store's clock (UTC) at put
    std::string text;       // the full text, valid UTF-8
    // The document's own date (xsd:date or xsd:dateTime), given at load; empty: not known.
    std::string source_date{};
    bool operator==(const DocumentRecord&) const = default;
};

// One chunk of the document being put; its text must equal the document text sliced at
// [char_offset, char_offset + char_length) (the chunker's spans give exactly that).
struct ChunkRecord {
    std::uint32_t ordinal = 0;  // unique within the document
    std::uint64_t char_offset = 0;
    std::uint64_t char_length = 0;
    std::string text;
    bool operator==(const ChunkRecord&) const = default;
};

enum class PutOutcome {
    kAdded,      // a new uri
    kReplaced,   // the uri was stored with other text, chunking or metadata; see PutResult
    kUnchanged,  // the same text, chunks, title, source path, media type and tier: nothing written
};

std::string_view to_string(PutOutcome outcome) noexcept;  // "added", "replaced", "unchanged"

struct PutResult {
    PutOutcome outcome = PutOutcome::kAdded;
    // The rowids of the chunks written, in ordinal order (the caller embeds and indexes them).
    // Empty when the outcome is kUnchanged, or kReplaced with only metadata changed (title,
    // source path, media type, tier, loaded_at are updated in place; the chunks keep their rowids).
    std::vector<std::int64_t> chunk_rowids;
    // The rowids of the chunks the put deleted (a replaced text or chunking): the caller removes
    // them from the vector index. Rowids are never reused, so a stale vector never names a new
    // chunk.
    std::vector<std::int64_t> removed_rowids;
    bool operator==(const PutResult&) const = default;
};

// A stored chunk with the key the vector index uses.
struct StoredChunk {
    std::int64_t rowid = 0;
    schema::Chunk chunk;  // chunk_id is the chunk URI, document_id the document URI
    bool operator==(const StoredChunk&) const = default;
};

// fetch(): the chunks found, in request order (each requested id once), and the ids not stored.
struct ChunkFetchResult {
    std::vector<StoredChunk> chunks;
    std::vector<std::string> unknown;
};

struct RowidFetchResult {
    std::vector<StoredChunk> chunks;
    std::vector<std::int64_t> unknown;
};

struct KeywordMatch {
    std::int64_t rowid = 0;
    std::string chunk_uri;
    double score = 0.0;  // BM25 (SQLite: -bm25()): higher is better; within one query only
    bool operator==(const KeywordMatch&) const = default;
};

struct StoredDocument {
    DocumentRecord record;     // loaded_at as stored
    std::string content_hash;  // "sha256:<64 hex>" of the text
    std::uint64_t characters = 0;
    std::uint64_t chunks = 0;
    bool operator==(const StoredDocument&) const = default;
};

struct DocumentStats {
    std::uint64_t documents = 0;
    std::uint64_t chunks = 0;
    std::uint64_t characters = 0;  // of all documents' texts
    // [t] for t in 1..4; [0] unused.
    std::array<std::uint64_t, 5> documents_per_tier{};
    std::array<std::uint64_t, 5> chunks_per_tier{};
    bool operator==(const DocumentStats&) const = default;
};

// keyword(): answers when the caller passes limit 0, and the most any limit can ask for.
inline constexpr std::uint32_t kDefaultKeywordLimit = 20;
inline constexpr std::uint32_t kMaxKeywordLimit = 1'000;
// Distinct query words kept by keyword() (more only slow the search down; the first are kept).
inline constexpr std::size_t kMaxKeywordTerms = 32;

// The words keyword() searches for in `user_text`: distinct (at most kMaxKeywordTerms; ASCII
// lower-cased; bytes that are not UTF-8 read as spaces), split where FTS5's unicode61 splits
// (ASCII other than letters and digits, Unicode punctuation and spaces), stop-words dropped
// unless nothing else is left. A word never holds ASCII punctuation, so no word is query syntax.
std::vector<std::string> keyword_words(std::string_view user_text);

// The FTS5 MATCH expression keyword() runs on SQLite: keyword_words, each one quoted, joined by
// OR. Empty when there are no words. Never FTS5 syntax from the user: column filters, NEAR,
// AND/NOT, '*' and '^' are words.
std::string fts_match_query(std::string_view user_text);

// The longest lexeme a PostgreSQL tsvector holds (bytes); longer words are never indexed.
inline constexpr std::size_t kMaxLexemeBytes = 2'047;

// The to_tsquery text keyword() runs on PostgreSQL: keyword_words (longer than kMaxLexemeBytes
// left out), each one quoted, joined by `|`. Empty when there are no words.
std::string tsquery_text(std::string_view user_text);

// One DocumentStore per open knowledge-base connection; not thread-safe (like the connection it
// uses).
//
// Keyword search: FTS5 over chunk text with the unicode61 tokenizer, remove_diacritics 2
// (case- and accent-insensitive in every script, "café" finds "Cafe"; no stemming, which is
// English-only and mangles names — the vector search covers word forms). User text is never FTS5
// syntax: it is split into words, each word quoted, common English stop-words dropped (they
// match nearly every chunk, so they cost time and add no ranking; kept when the query has
// nothing else), and the words ORed, so a chunk with some of the words still ranks, BM25 first.
//
// On PostgreSQL the same words and the same BM25: a tsvector column generated from the chunk text
// (split where unicode61 splits; the text search configuration glassbox_chunk_text: 'simple',
// lower case, behind the unaccent dictionary when the database has or may install the unaccent
// extension, else accents are not folded and a warning says so), a GIN index finding the chunks
// with some word, and FTS5's BM25 formula computed over them in SQL (PostgreSQL's ts_rank has no
// inverse document frequency and retrieves markedly worse; see kPostgresKeywordSql).
class DocumentStore {
public:
    // Creates the tables if needed: documents, chunks, and on SQLite chunks_fts (FTS5, external
    // content on chunks, kept in step by triggers) and sqlite_sequence (chunk rowids use
    // AUTOINCREMENT so they are never reused); on PostgreSQL (in the connection's schema, in one
    // transaction under the writer lock) identity columns (never reused either), the text search
    // configuration, the tsvector column and its GIN index, and chunk_totals.
    static base::Result<std::unique_ptr<DocumentStore>> open(storage::sql::Connection& db);

    DocumentStore(const DocumentStore&) = delete;
    DocumentStore& operator=(const DocumentStore&) = delete;

    // Adds or replaces the document and its chunks, atomically. Idempotent by uri and content:
    // see PutOutcome. Checked first, nothing written on failure (kInvalidRequest naming the
    // problem): an empty uri, tier outside 1..4, invalid UTF-8 in any text, a chunk beyond the
    // text or whose text is not its slice of the document, a repeated ordinal.
    base::Result<PutResult> put(const DocumentRecord& document, std::span<const ChunkRecord> chunks,
                                TransactionMode mode = TransactionMode::kOwn);

    // Chunks by URI (duplicates answered once); unknown URIs are listed, not an error.
    // Chunks whose texts add up to more than `max_bytes`: kInvalidRequest, found as they are read
    // (the store's reply bound; a request cannot make it hold more).
    base::Result<ChunkFetchResult> fetch(std::span<const std::string> chunk_uris,
                                         std::size_t max_bytes = SIZE_MAX);
    // Chunks by rowid (duplicates answered once); unknown rowids are listed, not an error.
    base::Result<RowidFetchResult> fetch_rowids(std::span<const std::int64_t> rowids);

    // At most `limit` (0: kDefaultKeywordLimit; capped at kMaxKeywordLimit) chunks matching some
    // word of `query`, best first. Text with no words (empty, punctuation only) gives no matches.
    base::Result<std::vector<KeywordMatch>> keyword(std::string_view query, std::uint32_t limit);

    // kNotFound when the uri is not stored.
    base::Result<StoredDocument> document(std::string_view uri);
    // Chunks with rowid > after_rowid in rowid order, at most `limit` (for re-embedding).
    base::Result<std::vector<StoredChunk>> chunks_after(std::int64_t after_rowid,
                                                        std::size_t limit);
    // Counts (one scan of the documents and chunks tables).
    base::Result<DocumentStats> stats();

private:
    explicit DocumentStore(storage::sql::Connection& db) : db_(db) {}

    base::Result<void> create_schema();
    // keyword() on PostgreSQL; `limit` already bounded.
    base::Result<std::vector<KeywordMatch>> keyword_postgres(std::string_view query,
                                                             std::uint32_t limit);
    base::Result<PutResult> put_rows(const DocumentRecord& document,
                                     std::span<const ChunkRecord> chunks, std::uint64_t characters,
                                     const std::string& content_hash,
                                     const std::string& chunking_hash);

    storage::sql::Connection& db_;
};

}  // namespace glassbox::store
