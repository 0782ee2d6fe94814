// The document store in SQLite: documents and chunks tables, an external-content FTS5 index kept
// in step by triggers, idempotent puts keyed by content hashes, and safe keyword queries.
#include "workers/store/document_store.hpp"
#include "workers/store/store_bounds.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <optional>
#include <type_traits>
#include <unordered_set>

#include "base/ascii.hpp"
#include "base/log.hpp"
#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "schema/freshness.hpp"
#include "storage/feed_rows.hpp"
#include "text/stopwords.hpp"

namespace glassbox::store {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

namespace detail {

// SHA-256 (FIPS 180-4): content hashes that stay meaningful outside this process and version.
class Sha256 {
public:
    void update(std::string_view data) noexcept {
        for (const char ch : data) {
            block_[fill_++] = static_cast<std::uint8_t>(ch);
            if (fill_ == 64) {
                compress();
                fill_ = 0;
            }
        }
        length_ += data.size();
    }

    std::string hex() noexcept {
        const std::uint64_t bits = length_ * 8;
        block_[fill_++] = 0x80;
        if (fill_ > 56) {
            while (fill_ < 64) block_[fill_++] = 0;
            compress();
            fill_ = 0;
        }
        while (fill_ < 56) block_[fill_++] = 0;
        for (int i = 7; i >= 0; --i) block_[fill_++] = static_cast<std::uint8_t>(bits >> (i * 8));
        compress();
        static constexpr char kHex[] = "0123456789abcdef";
        std::string out;
        for (const std::uint32_t word : state_) {
            for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(word >> shift) & 0xFU];
        }
        return out;
    }

private:
    static std::uint32_t rotr(std::uint32_t x, int n) noexcept {
        return (x >> n) | (x << (32 - n));
    }

    void compress() noexcept {
        static constexpr std::uint32_t k[64] = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
            0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
            0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
            0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
            0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
            0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
            0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
            0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
            0xc67178f2};
        std::uint32_t w[64];
        for (std::size_t i = 0; i < 16; ++i) {
            w[i] = (std::uint32_t{block_[i * 4]} << 24) | (std::uint32_t{block_[i * 4 + 1]} << 16) |
                   (std::uint32_t{block_[i * 4 + 2]} << 8) | std::uint32_t{block_[i * 4 + 3]};
        }
        for (int i = 16; i < 64; ++i) {
            const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
        std::uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
        for (int i = 0; i < 64; ++i) {
            const std::uint32_t t1 =
                h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            const std::uint32_t t2 =
                (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        state_[0] += a;
        state_[1] += b;
        state_[2] += c;
        state_[3] += d;
        state_[4] += e;
        state_[5] += f;
        state_[6] += g;
        state_[7] += h;
    }

    std::uint32_t state_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::uint8_t block_[64] = {};
    std::size_t fill_ = 0;
    std::uint64_t length_ = 0;
};

std::string sha256_hex(std::string_view data) {
    Sha256 hash;
    hash.update(data);
    return hash.hex();
}

std::uint64_t code_points(std::string_view text) noexcept { return base::count_code_points(text); }

// Separators between query words: ASCII other than letters and digits, and the Unicode
// punctuation and space blocks that unicode61 also treats as separators.
std::size_t separator_length_at(std::string_view text, std::size_t p) noexcept {
    const auto b0 = static_cast<unsigned char>(text[p]);
    if (b0 < 0x80U) {
        const bool word =
            (b0 >= '0' && b0 <= '9') || (b0 >= 'a' && b0 <= 'z') || (b0 >= 'A' && b0 <= 'Z');
        return word ? 0 : 1;
    }
    std::size_t length = b0 < 0xE0U ? 2 : b0 < 0xF0U ? 3 : 4;
    if (p + length > text.size()) length = text.size() - p;
    std::uint32_t cp = length == 2 ? (b0 & 0x1FU) : length == 3 ? (b0 & 0x0FU) : (b0 & 0x07U);
    for (std::size_t i = 1; i < length; ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(text[p + i]) & 0x3FU);
    const bool separator = (cp >= 0x80 && cp <= 0xBF) || cp == 0xD7 || cp == 0xF7 ||
                           (cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x3000 && cp <= 0x303F) ||
                           (cp >= 0xFF01 && cp <= 0xFF0F) ||
                           (cp >= 0x1F000 && cp <= 0x1FAFF);  // emoji: unicode61 drops them too
    return separator ? length : 0;
}

}  // namespace detail

std::vector<std::string> keyword_words(std::string_view text) {
    std::string cleaned;
    if (base::invalid_utf8_at(text) != std::string_view::npos) {
        cleaned = std::string(text);
        for (std::size_t from = 0;;) {
            const std::size_t at = base::invalid_utf8_at(std::string_view(cleaned).substr(from));
            if (at == std::string_view::npos) break;
            cleaned[from + at] = ' ';
            from += at + 1;
        }
        text = cleaned;
    }
    const std::string_view user_text = text;
    std::vector<std::string> words;
    std::unordered_set<std::string> seen;
    std::size_t p = 0;
    while (p < user_text.size() && words.size() < kMaxKeywordTerms) {
        if (const std::size_t separator = detail::separator_length_at(user_text, p);
            separator > 0) {
            p += separator;
            continue;
        }
        const std::size_t start = p;
        while (p < user_text.size() && detail::separator_length_at(user_text, p) == 0) {
            const auto b = static_cast<unsigned char>(user_text[p]);
            p += b < 0x80U ? 1 : b < 0xE0U ? 2 : b < 0xF0U ? 3 : 4;
        }
        p = std::min(p, user_text.size());
        std::string word = base::ascii_lower(user_text.substr(start, p - start));
        if (seen.insert(word).second) words.push_back(std::move(word));
    }
    // Stopwords match nearly every chunk in an OR query: they cost time and, with BM25's near-zero
    // IDF for them, add nothing to the ranking. A query of stopwords only keeps them all.
    const bool all_stop_words = std::all_of(
        words.begin(), words.end(), [](const std::string& w) { return text::is_stopword(w); });
    if (!all_stop_words) {
        std::erase_if(words, [](const std::string& w) { return text::is_stopword(w); });
    }
    return words;
}

std::string fts_match_query(std::string_view user_text) {
    std::string query;
    for (const std::string& word : keyword_words(user_text)) {
        if (!query.empty()) query += " OR ";
        query += '"';
        for (const char ch : word) query += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        query += '"';
    }
    return query;
}

namespace {

// keyword_words without those longer than a tsvector lexeme can be (2,047 bytes): no chunk can
// hold one, and to_tsquery would refuse it.
std::vector<std::string> lexeme_words(std::string_view user_text) {
    auto words = keyword_words(user_text);
    std::erase_if(words, [](const std::string& w) { return w.size() > kMaxLexemeBytes; });
    return words;
}

}  // namespace

std::string tsquery_text(std::string_view user_text) {
    std::string query;
    for (const std::string& word : lexeme_words(user_text)) {
        if (!query.empty()) query += " | ";
        query += '\'';
        for (const char ch : word) {
            if (ch == '\'' || ch == '\\') query += ch;  // doubled inside the quotes
            query += ch;
        }
        query += '\'';
    }
    return query;
}

std::string chunk_uri(std::string_view document_uri, std::uint32_t ordinal) {
    return std::string(document_uri) + "#chunk-" + std::to_string(ordinal);
}

std::string_view to_string(PutOutcome outcome) noexcept {
    switch (outcome) {
        case PutOutcome::kAdded:
            return "added";
        case PutOutcome::kReplaced:
            return "replaced";
        case PutOutcome::kUnchanged:
            return "unchanged";
    }
    return "unknown";
}

namespace {

// The tables, in SQLite's words (storage::sql::ddl_for gives PostgreSQL's). Chunk ids are never
// reused (AUTOINCREMENT; an identity column on PostgreSQL), so a stale vector never names a new
// chunk.
constexpr std::string_view kTables = R"sql(
CREATE TABLE IF NOT EXISTS documents(
  id INTEGER PRIMARY KEY,
  uri TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL,
  source_path TEXT NOT NULL,
  media_type TEXT NOT NULL,
  tier INTEGER NOT NULL CHECK (tier BETWEEN 1 AND 4),
  loaded_at TEXT NOT NULL,
  source_date TEXT NOT NULL DEFAULT '',
  characters INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  chunking_hash TEXT NOT NULL,
  text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uri TEXT NOT NULL UNIQUE,
  document_id INTEGER NOT NULL REFERENCES documents(id),
  ordinal INTEGER NOT NULL,
  char_offset INTEGER NOT NULL,
  char_length INTEGER NOT NULL,
  text TEXT NOT NULL,
  UNIQUE (document_id, ordinal)
);
)sql";

// SQLite's keyword index: FTS5 over the chunks' text (external content), kept in step by triggers.
constexpr std::string_view kSqliteFts = R"sql(
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
  INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
)sql";

// PostgreSQL's keyword index: a generated tsvector column over the chunk text, with a GIN index
// created last (its presence says the schema is complete). The text is split where unicode61
// splits (keyword_words' separators become spaces), so PostgreSQL's parser sees the words FTS5
// sees and never its e-mail, URL, host or file-path tokens; glassbox_chunk_text is 'simple' (lower
// case, no stemming, no stop-words) behind unaccent when the database has it.
//
// chunk_totals holds what BM25 needs besides the hits (N, the mean length), so no query scans
// the chunks for them: statement triggers add a row per INSERT or DELETE on chunks (chunks are
// never updated), folded into one row every 256 rows so a query sums a few. Rows, not one row
// updated in place: a load of many documents in one transaction would pile up versions of that
// row, each update slower than the last.
constexpr std::string_view kPostgresTextSearch = R"sql(
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS text_search tsvector GENERATED ALWAYS AS (
  to_tsvector('glassbox_chunk_text'::regconfig, regexp_replace(text,
    '[\x01-\x2F\x3A-\x40\x5B-\x60\x7B-\x7F\u0080-\u00BF\u00D7\u00F7\u2000-\u206F\u3000-\u303F\uFF01-\uFF0F\U0001F000-\U0001FAFF]',
    ' ', 'g'))) STORED;
CREATE TABLE IF NOT EXISTS chunk_totals(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, chunks BIGINT NOT NULL,
  characters BIGINT NOT NULL);
CREATE OR REPLACE FUNCTION chunk_totals_fold(written BIGINT) RETURNS void LANGUAGE plpgsql
  SET search_path FROM CURRENT AS $$
BEGIN
  IF written % 256 = 0 THEN
    WITH folded AS (DELETE FROM chunk_totals RETURNING chunks, characters)
    INSERT INTO chunk_totals(chunks, characters)
      SELECT coalesce(sum(chunks), 0), coalesce(sum(characters), 0) FROM folded;
  END IF;
END$$;
CREATE OR REPLACE FUNCTION chunk_totals_added() RETURNS trigger LANGUAGE plpgsql
  SET search_path FROM CURRENT AS $$
DECLARE written BIGINT;
BEGIN
  INSERT INTO chunk_totals(chunks, characters)
    SELECT count(*), coalesce(sum(char_length), 0) FROM added RETURNING id INTO written;
  PERFORM chunk_totals_fold(written);
  RETURN NULL;
END$$;
CREATE OR REPLACE FUNCTION chunk_totals_removed() RETURNS trigger LANGUAGE plpgsql
  SET search_path FROM CURRENT AS $$
DECLARE written BIGINT;
BEGIN
  INSERT INTO chunk_totals(chunks, characters)
    SELECT -count(*), -coalesce(sum(char_length), 0) FROM gone RETURNING id INTO written;
  PERFORM chunk_totals_fold(written);
  RETURN NULL;
END$$;
CREATE OR REPLACE TRIGGER chunk_totals_added AFTER INSERT ON chunks
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION chunk_totals_added();
CREATE OR REPLACE TRIGGER chunk_totals_removed AFTER DELETE ON chunks
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION chunk_totals_removed();
CREATE INDEX IF NOT EXISTS chunks_text_search ON chunks USING GIN (text_search);
)sql";

// Database-wide (not per collection): two collections opened at once must not both install
// unaccent.
constexpr std::int64_t kUnaccentLockKey = 0x676c6278756e6163;  // "glbxunac"

// The schema of the unaccent extension, installed into glassbox_text (a schema of its own: never
// a collection's, whose DROP SCHEMA ... CASCADE would take every collection's configuration
// with it) when missing and this role may (a trusted extension of PostgreSQL's contrib, in
// Debian's postgresql-15); nullopt when it cannot be had, with a warning.
Result<std::optional<std::string>> unaccent_schema(storage::sql::Connection& db) {
    const auto installed = [&]() -> Result<std::optional<std::string>> {
        auto select = db.prepare_once(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'unaccent'");
        if (!select) return select.error();
        return select->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    };
    auto found = installed();
    if (!found || *found) return found;
    if (auto r = db.exec("SAVEPOINT gb_unaccent"); !r) return r.error();
    auto created = db.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kUnaccentLockKey) +
                           "); CREATE SCHEMA IF NOT EXISTS glassbox_text; "
                           "CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA glassbox_text");
    if (!created) {
        if (auto r = db.exec("ROLLBACK TO SAVEPOINT gb_unaccent; RELEASE SAVEPOINT gb_unaccent");
            !r)
            return r.error();
        base::component_logger("store")->warn(
            "document store: keyword search folds case but not accents: PostgreSQL's unaccent "
            "extension is missing and cannot be installed ({}); CREATE EXTENSION unaccent as its "
            "owner, then recreate the collection",
            created.error().message);
        return std::optional<std::string>{};
    }
    if (auto r = db.exec("RELEASE SAVEPOINT gb_unaccent"); !r) return r.error();
    return installed();
}

std::string quoted_schema_name(std::string_view name) {
    std::string out = "\"";
    for (const char ch : name) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
}

// glassbox_chunk_text in the collection's schema, when it is not there yet.
Result<void> create_chunk_text_config(storage::sql::Connection& db) {
    auto exists = db.prepare_once(
        "SELECT EXISTS(SELECT 1 FROM pg_ts_config WHERE cfgname = 'glassbox_chunk_text' AND "
        "cfgnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))");
    if (!exists) return exists.error();
    auto found = exists->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
    if (!found) return found.error();
    if (found->value_or(false)) return {};
    auto unaccent = unaccent_schema(db);
    if (!unaccent) return unaccent.error();
    if (auto r = db.exec(
            "CREATE TEXT SEARCH CONFIGURATION glassbox_chunk_text (COPY = pg_catalog.simple)");
        !r)
        return r;
    if (!*unaccent) return {};
    // Only the token types that can hold letters beyond ASCII. A role that may not use the
    // extension's schema keeps 'simple' alone, as when the extension is missing.
    if (auto r = db.exec("SAVEPOINT gb_unaccent_mapping"); !r) return r;
    auto mapped = db.exec(
        "ALTER TEXT SEARCH CONFIGURATION glassbox_chunk_text ALTER MAPPING FOR word, numword, "
        "hword, hword_part, hword_numpart WITH " +
        quoted_schema_name(**unaccent) + ".unaccent, pg_catalog.simple");
    if (mapped) return db.exec("RELEASE SAVEPOINT gb_unaccent_mapping");
    base::component_logger("store")->warn(
        "document store: keyword search folds case but not accents: the unaccent dictionary "
        "cannot be used ({})",
        mapped.error().message);
    return db.exec(
        "ROLLBACK TO SAVEPOINT gb_unaccent_mapping; RELEASE SAVEPOINT gb_unaccent_mapping");
}

// The tables, the text search configuration and the tsvector column with its index, in one
// transaction under the writer lock (two workers opening a new collection at once must not
// both create them: PostgreSQL's DDL is transactional, its IF NOT EXISTS not race-free).
Result<void> create_document_tables_postgres(storage::sql::Connection& db) {
    {
        auto complete = db.prepare_once("SELECT to_regclass('chunks_text_search') IS NOT NULL");
        if (!complete) return complete.error();
        auto found =
            complete->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
        if (!found) return found.error();
        if (found->value_or(false)) return {};
    }
    std::optional<storage::sql::Transaction> transaction;
    if (!db.in_transaction()) {
        auto begun = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
        if (!begun) return begun.error();
        transaction.emplace(std::move(begun).value());
    }
    // documents.id: SQLite gives an INTEGER PRIMARY KEY its rowid; PostgreSQL needs an identity.
    std::string tables(kTables);
    const std::string_view plain_id = "id INTEGER PRIMARY KEY,";
    tables.replace(tables.find(plain_id), plain_id.size(), "id INTEGER PRIMARY KEY AUTOINCREMENT,");
    if (auto r = db.exec(storage::sql::ddl_for(storage::sql::Dialect::kPostgres, tables)); !r)
        return r;
    if (auto r = create_chunk_text_config(db); !r) return r;
    if (auto r = db.exec(kPostgresTextSearch); !r) return r;
    return transaction ? transaction->commit() : Result<void>{};
}

// PostgreSQL's keyword ranking: FTS5's bm25() (k1 1.2, b 0.75, idf ln((N - df + 0.5) / (df +
// 0.5)) floored at 1e-6), computed over the chunks that hold some word, since PostgreSQL's own
// ts_rank and ts_rank_cd know no inverse document frequency: on the HotpotQA dev set (issue 34)
// the best of them (ts_rank, normalisation 1) reached R@5 61.7 % against SQLite's 70.2 %, this
// 69.1 %. Term frequency is read from each hit's tsvector, restricted to the query's lexemes
// (setweight marks them, ts_filter keeps them); df is counted among the hits (every chunk holding
// a word is one); N and the mean length come from chunk_totals; a chunk's length is its
// characters (FTS5 counts tokens: the ratio to the mean is what matters). ?1 the tsquery text,
// ?2 the limit, ?3 the same words separated by spaces.
constexpr std::string_view kPostgresKeywordSql =
    "WITH q AS MATERIALIZED (SELECT to_tsquery('glassbox_chunk_text', ?1) AS query, "
    "tsvector_to_array(to_tsvector('glassbox_chunk_text', ?3)) AS lexemes), "
    "sums AS MATERIALIZED (SELECT greatest(CAST(sum(chunks) AS DOUBLE PRECISION), 1) AS n, "
    "greatest(CAST(sum(characters) AS DOUBLE PRECISION), 1) AS characters FROM chunk_totals), "
    "totals AS (SELECT n, characters / n AS mean_length FROM sums), "
    "hits AS MATERIALIZED (SELECT c.id, c.uri, c.char_length, c.text_search FROM chunks c, q "
    "WHERE c.text_search @@ q.query), "
    "tf AS (SELECT h.id, u.lexeme, cardinality(u.positions) AS tf FROM hits h, q, "
    "unnest(ts_filter(setweight(h.text_search, 'A', q.lexemes), '{a}')) AS u), "
    "df AS (SELECT lexeme, count(*) AS df FROM tf GROUP BY lexeme) "
    "SELECT h.id, h.uri, sum(greatest(ln((totals.n - df.df + 0.5) / (df.df + 0.5)), 1e-6) * "
    "tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * h.char_length / totals.mean_length))) AS score "
    "FROM tf JOIN df USING (lexeme) JOIN hits h ON h.id = tf.id, totals "
    "GROUP BY h.id, h.uri ORDER BY score DESC, h.id LIMIT ?2";

constexpr const char* kChunkColumns =
    "SELECT c.id, c.uri, d.uri, c.text, c.char_offset, c.char_length, c.ordinal, d.title, d.tier, "
    "d.loaded_at, d.source_date FROM chunks c JOIN documents d ON d.id = c.document_id ";

StoredChunk read_chunk(const storage::sql::Row& row) {
    StoredChunk out;
    out.rowid = row.int64(0);
    out.chunk.chunk_id = std::string(row.text(1));
    out.chunk.document_id = std::string(row.text(2));
    out.chunk.text = std::string(row.text(3));
    out.chunk.char_offset = static_cast<std::uint64_t>(row.int64(4));
    out.chunk.char_length = static_cast<std::uint64_t>(row.int64(5));
    out.chunk.ordinal = static_cast<std::uint32_t>(row.int64(6));
    out.chunk.document_title = std::string(row.text(7));
    out.chunk.tier = static_cast<std::uint32_t>(row.int64(8));
    if (!row.text(9).empty()) out.chunk.loaded_at = std::string(row.text(9));
    if (!row.text(10).empty()) out.chunk.date = std::string(row.text(10));
    return out;
}

// Chunks by one key each (URI or rowid), in request order, each key once; the keys not stored
// are listed in `unknown`.
template <typename Out, typename Key>
Result<Out> fetch_by(storage::sql::Connection& db, const char* where, std::span<const Key> keys,
                     std::size_t max_bytes = SIZE_MAX) {
    // Keys and punctuation around a chunk's strings in a chunks-fetch reply.
    constexpr std::size_t kChunkOverhead = 160;
    std::size_t bytes = 0;
    Out out;
    using Seen = std::conditional_t<std::is_same_v<Key, std::string>, std::string_view, Key>;
    std::unordered_set<Seen> asked;
    auto select = db.prepare(std::string(kChunkColumns) + where);
    if (!select) return select.error();
    for (const Key& key : keys) {
        if (!asked.insert(Seen{key}).second) continue;
        if constexpr (std::is_same_v<Key, std::string>) {
            select->bind(1, std::string_view{key});
        } else {
            select->bind(1, key);
        }
        auto chunk = select->first(read_chunk);
        if (!chunk) return chunk.error();
        if (*chunk) {
            out.chunks.push_back(std::move(**chunk));
            const auto& c = out.chunks.back().chunk;
            bytes += kChunkOverhead + c.chunk_id.size() + c.document_id.size() +
                     c.document_title.size() + c.text.size();
            if (bytes > max_bytes) {
                return reply_too_large("chunks-fetch", max_bytes, "max_reply_bytes",
                                       "reached at chunk " + std::to_string(out.chunks.size()) +
                                           " of " + std::to_string(keys.size()),
                                       "fetch fewer chunks per request");
            }
        } else {
            out.unknown.push_back(key);
        }
        select->reset();
    }
    return out;
}

Error invalid(const std::string& uri, const std::string& why) {
    return make_error(ErrorType::kInvalidRequest, "document \"" + uri + "\": " + why);
}

// Checks a document's own fields: its uri, tier, texts (UTF-8) and dates.
std::optional<Error> check_fields(const DocumentRecord& document) {
    const std::string& uri = document.uri;
    if (uri.empty()) return make_error(ErrorType::kInvalidRequest, "document uri is empty");
    if (base::invalid_utf8_at(uri) != std::string_view::npos) {
        return make_error(ErrorType::kInvalidRequest, "document uri is not valid UTF-8");
    }
    if (document.tier < schema::kTierAuthoritative || document.tier > schema::kTierInferred) {
        return invalid(
            uri,
            "tier " + std::to_string(document.tier) +
                " is not a data tier (1 authoritative, 2 verified, 3 crowd-sourced, 4 inferred)");
    }
    const std::pair<const char*, const std::string*> fields[] = {
        {"title", &document.title},
        {"source path", &document.source_path},
        {"media type", &document.media_type},
        {"loaded_at", &document.loaded_at},
        {"text", &document.text}};
    for (const auto& [name, value] : fields) {
        if (const auto at = base::invalid_utf8_at(*value); at != std::string_view::npos) {
            return invalid(
                uri, std::string(name) + " is not valid UTF-8 (byte " + std::to_string(at) + ")");
        }
    }
    if (!document.loaded_at.empty() && !base::is_xsd_datetime(document.loaded_at)) {
        return invalid(uri, "loaded_at \"" + document.loaded_at + "\" is not an xsd:dateTime");
    }
    if (!document.source_date.empty() && !schema::parse_source_date_ms(document.source_date)) {
        return invalid(uri, "date \"" + document.source_date +
                                "\" is neither an xsd:date nor an xsd:dateTime");
    }
    return std::nullopt;
}

// Checks a document and its chunks before anything is written; fills `characters`.
std::optional<Error> check(const DocumentRecord& document, std::span<const ChunkRecord> chunks,
                           std::uint64_t& characters) {
    const std::string& uri = document.uri;
    if (auto bad = check_fields(document)) return bad;
    characters = detail::code_points(document.text);

    // Every chunk boundary, in characters, mapped to bytes in one walk over the text.
    std::vector<std::uint64_t> boundaries;
    boundaries.reserve(chunks.size() * 2);
    std::unordered_set<std::uint32_t> ordinals;
    for (const ChunkRecord& chunk : chunks) {
        const std::string which = "chunk " + std::to_string(chunk.ordinal);
        if (!ordinals.insert(chunk.ordinal).second) return invalid(uri, which + " appears twice");
        if (chunk.char_length == 0) return invalid(uri, which + " is empty");
        if (chunk.char_offset > characters || chunk.char_length > characters - chunk.char_offset) {
            return invalid(uri, which + " [" + std::to_string(chunk.char_offset) + ", +" +
                                    std::to_string(chunk.char_length) + ") lies beyond the text (" +
                                    std::to_string(characters) + " characters)");
        }
        boundaries.push_back(chunk.char_offset);
        boundaries.push_back(chunk.char_offset + chunk.char_length);
    }
    std::sort(boundaries.begin(), boundaries.end());
    boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
    std::vector<std::size_t> bytes(boundaries.size());
    {
        const std::string& text = document.text;
        std::size_t byte = 0;
        std::uint64_t character = 0;
        for (std::size_t i = 0; i < boundaries.size(); ++i) {
            while (character < boundaries[i]) {
                ++byte;
                while (byte < text.size() &&
                       (static_cast<unsigned char>(text[byte]) & 0xC0U) == 0x80U)
                    ++byte;
                ++character;
            }
            bytes[i] = byte;
        }
    }
    const auto byte_of = [&](std::uint64_t character) {
        return bytes[static_cast<std::size_t>(
            std::lower_bound(boundaries.begin(), boundaries.end(), character) -
            boundaries.begin())];
    };
    for (const ChunkRecord& chunk : chunks) {
        const std::size_t begin = byte_of(chunk.char_offset);
        const std::size_t end = byte_of(chunk.char_offset + chunk.char_length);
        if (std::string_view(document.text).substr(begin, end - begin) != chunk.text) {
            return invalid(uri, "chunk " + std::to_string(chunk.ordinal) +
                                    ": its text is not the document text at its offset and length");
        }
    }
    return std::nullopt;
}

// What decides "unchanged": the chunk boundaries (the text is covered by content_hash).
std::string chunking_hash(std::span<const ChunkRecord> chunks) {
    std::vector<const ChunkRecord*> ordered;
    for (const ChunkRecord& chunk : chunks) ordered.push_back(&chunk);
    std::sort(ordered.begin(), ordered.end(),
              [](const ChunkRecord* a, const ChunkRecord* b) { return a->ordinal < b->ordinal; });
    detail::Sha256 hash;
    for (const ChunkRecord* chunk : ordered) {
        hash.update(std::to_string(chunk->ordinal) + ":" + std::to_string(chunk->char_offset) +
                    ":" + std::to_string(chunk->char_length) + ";");
    }
    return "sha256:" + hash.hex();
}

// A SAVEPOINT inside the caller's transaction: released on success, rolled back otherwise.
class Savepoint {
public:
    static Result<Savepoint> begin(storage::sql::Connection& db) {
        if (auto r = db.exec("SAVEPOINT document_put"); !r) return r.error();
        return Savepoint(db);
    }
    Savepoint(Savepoint&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
    Savepoint(const Savepoint&) = delete;
    Savepoint& operator=(const Savepoint&) = delete;
    Savepoint& operator=(Savepoint&&) = delete;
    ~Savepoint() {
        if (db_ != nullptr) (void)db_->exec("ROLLBACK TO document_put; RELEASE document_put");
    }
    Result<void> release() {
        auto r = db_->exec("RELEASE document_put");
        if (r) db_ = nullptr;
        return r;
    }

private:
    explicit Savepoint(storage::sql::Connection& db) : db_(&db) {}
    storage::sql::Connection* db_;
};

}  // namespace

// ---- DocumentStore ------------------------------------------------------------------------------

Result<std::unique_ptr<DocumentStore>> DocumentStore::open(storage::sql::Connection& db) {
    auto store = std::unique_ptr<DocumentStore>(new DocumentStore(db));
    if (auto r = store->create_schema(); !r) return r.error();
    return store;
}

Result<void> DocumentStore::create_schema() {
    if (db_.dialect() == storage::sql::Dialect::kPostgres) {
        if (auto r = create_document_tables_postgres(db_); !r) {
            return make_error(r.error().type,
                              "document store: cannot create its tables: " + r.error().message);
        }
        return {};
    }
    if (auto r = db_.exec(std::string(kTables) + std::string(kSqliteFts)); !r) {
        return make_error(ErrorType::kInternal, "document store: cannot create its tables (" +
                                                    r.error().message + "; SQLite needs FTS5)");
    }
    return {};
}

Result<PutResult> DocumentStore::put(const DocumentRecord& document,
                                     std::span<const ChunkRecord> chunks, TransactionMode mode) {
    std::uint64_t characters = 0;
    if (auto error = check(document, chunks, characters)) return *error;
    const std::string content_hash = "sha256:" + detail::sha256_hex(document.text);
    const std::string chunks_hash = chunking_hash(chunks);
    if (mode == TransactionMode::kCallers) {
        auto savepoint = Savepoint::begin(db_);
        if (!savepoint) return savepoint.error();
        auto result = put_rows(document, chunks, characters, content_hash, chunks_hash);
        if (!result) return result;
        if (auto r = savepoint->release(); !r) return r.error();
        return result;
    }
    auto transaction = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto result = put_rows(document, chunks, characters, content_hash, chunks_hash);
    if (!result) return result;
    if (auto r = transaction->commit(); !r) return r.error();
    return result;
}

namespace {

// What the stored copy of a document (if any) has in common with the one being put.
struct StoredVersion {
    std::int64_t id = 0;
    bool same_chunks = false;    // same text and chunk boundaries
    bool same_metadata = false;  // same title, source path, media type and tier
};

// The column values put writes besides the URI (?2 … ?10 of its INSERT and UPDATE).
struct DocumentColumns {
    const DocumentRecord& document;
    std::string_view loaded_at;
    std::uint64_t characters;
    std::string_view content_hash;
    std::string_view chunks_hash;
};

Result<std::optional<StoredVersion>> stored_version(storage::sql::Connection& db,
                                                    const DocumentRecord& document,
                                                    const std::string& content_hash,
                                                    const std::string& chunks_hash) {
    auto existing = db.prepare(
        "SELECT id, content_hash, chunking_hash, title, source_path, media_type, tier FROM "
        "documents "
        "WHERE uri = ?1");
    if (!existing) return existing.error();
    existing->bind(1, std::string_view{document.uri});
    return existing->first([&](const storage::sql::Row& row) {
        StoredVersion stored;
        stored.id = row.int64(0);
        stored.same_chunks = row.text(1) == content_hash && row.text(2) == chunks_hash;
        stored.same_metadata =
            row.text(3) == document.title && row.text(4) == document.source_path &&
            row.text(5) == document.media_type && row.int64(6) == std::int64_t{document.tier};
        return stored;
    });
}

// A document whose text and chunks are unchanged: only its metadata and loaded_at change.
Result<void> update_metadata(storage::sql::Connection& db, std::int64_t document_id,
                             const DocumentRecord& document, std::string_view loaded_at) {
    auto update = db.prepare(
        "UPDATE documents SET title = ?2, source_path = ?3, media_type = ?4, tier = "
        "?5, loaded_at = ?6, source_date = ?7 "
        "WHERE id = ?1");
    if (!update) return update.error();
    update->bind(1, document_id)
        .bind(2, std::string_view{document.title})
        .bind(3, std::string_view{document.source_path})
        .bind(4, std::string_view{document.media_type})
        .bind(5, std::int64_t{document.tier})
        .bind(6, loaded_at)
        .bind(7, std::string_view{document.source_date});
    return update->run();
}

void bind_document_columns(storage::sql::Statement& st, const DocumentColumns& c) {
    st.bind(2, std::string_view{c.document.title})
        .bind(3, std::string_view{c.document.source_path})
        .bind(4, std::string_view{c.document.media_type})
        .bind(5, std::int64_t{c.document.tier})
        .bind(6, c.loaded_at)
        .bind(7, static_cast<std::int64_t>(c.characters))
        .bind(8, c.content_hash)
        .bind(9, c.chunks_hash)
        .bind_static(10, c.document.text)
        .bind(11, std::string_view{c.document.source_date});
}

// A document whose text or chunks changed: its chunks go (their rowids into `removed`) and its
// row takes the new values.
Result<void> replace_document(storage::sql::Connection& db, std::int64_t document_id,
                              const DocumentColumns& columns, std::vector<std::int64_t>& removed) {
    {
        auto old = db.prepare("SELECT id FROM chunks WHERE document_id = ?1 ORDER BY id");
        if (!old) return old.error();
        old->bind(1, document_id);
        auto ids = old->collect([](const storage::sql::Row& row) { return row.int64(0); });
        if (!ids) return ids.error();
        removed.insert(removed.end(), ids->begin(), ids->end());
    }
    auto remove = db.prepare("DELETE FROM chunks WHERE document_id = ?1");
    if (!remove) return remove.error();
    remove->bind(1, document_id);
    if (auto r = remove->run(); !r) return r.error();
    auto update = db.prepare(
        "UPDATE documents SET title = ?2, source_path = ?3, media_type = ?4, tier = ?5, "
        "loaded_at = ?6, "
        "characters = ?7, content_hash = ?8, chunking_hash = ?9, text = ?10, source_date = ?11 "
        "WHERE id = ?1");
    if (!update) return update.error();
    update->bind(1, document_id);
    bind_document_columns(*update, columns);
    return update->run();
}

// The id an INSERT ... RETURNING id gave its row.
Result<std::int64_t> returned_id(storage::sql::Statement& insert) {
    auto id = insert.first([](const storage::sql::Row& row) { return row.int64(0); });
    insert.reset();
    if (!id) return id.error();
    if (!*id) return make_error(ErrorType::kInternal, "document store: an insert returned no id");
    return **id;
}

// A document not stored before: its new rowid.
Result<std::int64_t> insert_document(storage::sql::Connection& db, const DocumentColumns& columns) {
    auto insert = db.prepare(
        "INSERT INTO documents(uri, title, source_path, media_type, tier, loaded_at, "
        "characters, content_hash, "
        "chunking_hash, text, source_date) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
        "RETURNING id");
    if (!insert) return insert.error();
    insert->bind(1, std::string_view{columns.document.uri});
    bind_document_columns(*insert, columns);
    return returned_id(*insert);
}

// PostgreSQL: every chunk of the document in one INSERT (arrays bound as parameters), not one
// round trip per chunk; `ordered` by ordinal, so the identity ids rise with the ordinals.
Result<void> insert_chunks_postgres(storage::sql::Connection& db, std::string_view document_uri,
                                    std::int64_t document_id,
                                    std::span<const ChunkRecord* const> ordered,
                                    std::vector<std::int64_t>& rowids) {
    std::string uris = "{";
    std::string numbers[3] = {"{", "{", "{"};  // ordinal, char_offset, char_length
    std::string texts = "{";
    for (const ChunkRecord* chunk : ordered) {
        const bool first = chunk == ordered.front();
        if (!first) {
            uris += ',';
            texts += ',';
            for (auto& column : numbers) column += ',';
        }
        storage::sql::append_text_array_element(uris, chunk_uri(document_uri, chunk->ordinal));
        numbers[0] += std::to_string(chunk->ordinal);
        numbers[1] += std::to_string(chunk->char_offset);
        numbers[2] += std::to_string(chunk->char_length);
        storage::sql::append_text_array_element(texts, chunk->text);
    }
    uris += '}';
    texts += '}';
    for (auto& column : numbers) column += '}';
    auto insert = db.prepare(
        "INSERT INTO chunks(uri, document_id, ordinal, char_offset, char_length, text) SELECT "
        "r.uri, CAST(?1 AS BIGINT), r.ordinal, r.char_offset, r.char_length, r.text FROM "
        "unnest(CAST(?2 AS "
        "TEXT[]), CAST(?3 AS BIGINT[]), CAST(?4 AS BIGINT[]), CAST(?5 AS BIGINT[]), CAST(?6 AS "
        "TEXT[])) WITH ORDINALITY AS r(uri, ordinal, char_offset, char_length, text, at) ORDER BY "
        "r.at RETURNING id, ordinal");
    if (!insert) return insert.error();
    insert->bind(1, document_id)
        .bind_static(2, uris)
        .bind_static(3, numbers[0])
        .bind_static(4, numbers[1])
        .bind_static(5, numbers[2])
        .bind_static(6, texts);
    auto inserted = insert->collect([](const storage::sql::Row& row) {
        return std::pair{row.int64(1), row.int64(0)};
    });
    insert.value().reset();
    if (!inserted) return inserted.error();
    if (inserted->size() != ordered.size()) {
        return make_error(ErrorType::kInternal,
                          "document store: " + std::to_string(inserted->size()) + " of " +
                              std::to_string(ordered.size()) + " chunks inserted");
    }
    // RETURNING's order is not promised: the ids are put back in ordinal order.
    std::sort(inserted->begin(), inserted->end());
    rowids.reserve(rowids.size() + inserted->size());
    for (const auto& [ordinal, id] : *inserted) rowids.push_back(id);
    return {};
}

// In ordinal order, so rowids rise with ordinals (chunks_after then reads documents in order).
Result<void> insert_chunks(storage::sql::Connection& db, std::string_view document_uri,
                           std::int64_t document_id, std::span<const ChunkRecord> chunks,
                           std::vector<std::int64_t>& rowids) {
    std::vector<const ChunkRecord*> ordered;
    ordered.reserve(chunks.size());
    for (const ChunkRecord& chunk : chunks) ordered.push_back(&chunk);
    std::sort(ordered.begin(), ordered.end(),
              [](const ChunkRecord* a, const ChunkRecord* b) { return a->ordinal < b->ordinal; });
    if (db.dialect() == storage::sql::Dialect::kPostgres) {
        if (ordered.empty()) return {};
        return insert_chunks_postgres(db, document_uri, document_id, ordered, rowids);
    }
    auto insert = db.prepare(
        "INSERT INTO chunks(uri, document_id, ordinal, char_offset, char_length, text) VALUES (?1, "
        "?2, ?3, ?4, ?5, ?6) RETURNING id");
    if (!insert) return insert.error();
    rowids.reserve(ordered.size());
    for (const ChunkRecord* chunk : ordered) {
        insert->bind(1, std::string_view{chunk_uri(document_uri, chunk->ordinal)})
            .bind(2, document_id)
            .bind(3, std::int64_t{chunk->ordinal})
            .bind(4, static_cast<std::int64_t>(chunk->char_offset))
            .bind(5, static_cast<std::int64_t>(chunk->char_length))
            .bind_static(6, chunk->text);
        auto id = returned_id(*insert);
        if (!id) return id.error();
        rowids.push_back(*id);
    }
    return {};
}

}  // namespace

Result<PutResult> DocumentStore::put_rows(const DocumentRecord& document,
                                          std::span<const ChunkRecord> chunks,
                                          std::uint64_t characters, const std::string& content_hash,
                                          const std::string& chunks_hash) {
    const std::string loaded_at = document.loaded_at.empty()
                                      ? base::format_xsd_datetime(std::chrono::system_clock::now(),
                                                                  base::TimePrecision::kSeconds)
                                      : document.loaded_at;
    const DocumentColumns columns{document, loaded_at, characters, content_hash, chunks_hash};
    PutResult result;
    auto stored = stored_version(db_, document, content_hash, chunks_hash);
    if (!stored) return stored.error();
    std::int64_t document_id = 0;
    if (*stored) {
        document_id = (*stored)->id;
        const bool same_chunks = (*stored)->same_chunks;
        const bool same_metadata = (*stored)->same_metadata;
        result.outcome =
            same_chunks && same_metadata ? PutOutcome::kUnchanged : PutOutcome::kReplaced;
        if (same_chunks && same_metadata) return result;
        if (same_chunks) {
            if (auto r = update_metadata(db_, document_id, document, loaded_at); !r)
                return r.error();
            return result;
        }
        if (auto r = replace_document(db_, document_id, columns, result.removed_rowids); !r)
            return r.error();
    } else {
        auto inserted = insert_document(db_, columns);
        if (!inserted) return inserted.error();
        document_id = *inserted;
        result.outcome = PutOutcome::kAdded;
    }
    if (auto r = insert_chunks(db_, document.uri, document_id, chunks, result.chunk_rowids); !r)
        return r.error();
    return result;
}

Result<ChunkFetchResult> DocumentStore::fetch(std::span<const std::string> chunk_uris,
                                              std::size_t max_bytes) {
    return fetch_by<ChunkFetchResult>(db_, "WHERE c.uri = ?1", chunk_uris, max_bytes);
}

Result<RowidFetchResult> DocumentStore::fetch_rowids(std::span<const std::int64_t> rowids) {
    return fetch_by<RowidFetchResult>(db_, "WHERE c.id = ?1", rowids);
}

Result<std::vector<KeywordMatch>> DocumentStore::keyword(std::string_view query,
                                                         std::uint32_t limit) {
    const std::uint32_t n =
        std::min(schema::or_default(limit, kDefaultKeywordLimit), kMaxKeywordLimit);
    if (db_.dialect() == storage::sql::Dialect::kPostgres) return keyword_postgres(query, n);
    std::vector<KeywordMatch> out;
    const std::string match = fts_match_query(query);
    if (match.empty()) return out;
    // FTS5 ranks inside the subquery (ORDER BY rank LIMIT is its fast path); the join only names.
    auto select = db_.prepare(
        "SELECT c.id, c.uri, m.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts "
        "MATCH ?1 "
        "ORDER BY rank LIMIT ?2) AS m JOIN chunks c ON c.id = m.rowid ORDER BY m.rank, c.id");
    if (!select) return select.error();
    select->bind(1, std::string_view{match}).bind(2, std::int64_t{n});
    return select->collect([](const storage::sql::Row& row) {
        return KeywordMatch{row.int64(0), std::string(row.text(1)), -row.real(2)};
    });
}

Result<std::vector<KeywordMatch>> DocumentStore::keyword_postgres(std::string_view query,
                                                                  std::uint32_t limit) {
    std::vector<KeywordMatch> out;
    const std::string match = tsquery_text(query);
    if (match.empty()) return out;
    std::string words;
    for (const std::string& word : lexeme_words(query)) words += word + " ";
    auto select = db_.prepare(std::string(kPostgresKeywordSql));
    if (!select) return select.error();
    select->bind(1, std::string_view{match})
        .bind(2, std::int64_t{limit})
        .bind(3, std::string_view{words});
    return select->collect([](const storage::sql::Row& row) {
        return KeywordMatch{row.int64(0), std::string(row.text(1)), row.real(2)};
    });
}

Result<StoredDocument> DocumentStore::document(std::string_view uri) {
    auto select = db_.prepare(
        "SELECT d.uri, d.title, d.source_path, d.media_type, d.tier, d.loaded_at, d.text, "
        "d.content_hash, "
        "d.characters, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id), d.source_date "
        "FROM documents d WHERE d.uri = ?1");
    if (!select) return select.error();
    select->bind(1, uri);
    auto found = select->first([](const storage::sql::Row& row) {
        StoredDocument out;
        out.record.uri = std::string(row.text(0));
        out.record.title = std::string(row.text(1));
        out.record.source_path = std::string(row.text(2));
        out.record.media_type = std::string(row.text(3));
        out.record.tier = static_cast<std::uint32_t>(row.int64(4));
        out.record.loaded_at = std::string(row.text(5));
        out.record.text = std::string(row.text(6));
        out.content_hash = std::string(row.text(7));
        out.characters = static_cast<std::uint64_t>(row.int64(8));
        out.chunks = static_cast<std::uint64_t>(row.int64(9));
        out.record.source_date = std::string(row.text(10));
        return out;
    });
    if (!found) return found.error();
    if (!*found)
        return make_error(ErrorType::kNotFound, "no document \"" + std::string(uri) + "\"");
    return std::move(**found);
}

Result<std::vector<StoredChunk>> DocumentStore::chunks_after(std::int64_t after_rowid,
                                                             std::size_t limit) {
    std::vector<StoredChunk> out;
    if (limit == 0) return out;
    auto select =
        db_.prepare(std::string(kChunkColumns) + "WHERE c.id > ?1 ORDER BY c.id LIMIT ?2");
    if (!select) return select.error();
    select->bind(1, after_rowid)
        .bind(2, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
    return select->collect(read_chunk);
}

namespace {

// One row of a (tier, count) group: the count added to the total and put at its tier (1 … 4).
void add_tier_count(const storage::sql::Row& row, std::uint64_t& total,
                    std::array<std::uint64_t, 5>& per_tier) {
    const auto tier = row.int64(0);
    const auto count = static_cast<std::uint64_t>(row.int64(1));
    total += count;
    if (tier >= 1 && tier <= 4) per_tier[static_cast<std::size_t>(tier)] = count;
}

}  // namespace

Result<DocumentStats> DocumentStore::stats() {
    DocumentStats out;
    {
        auto documents = db_.prepare(
            "SELECT tier, count(*), CAST(coalesce(sum(characters), 0) AS BIGINT) FROM documents "
            "GROUP "
            "BY tier");
        if (!documents) return documents.error();
        auto read = documents->each([&](const storage::sql::Row& row) {
            out.characters += static_cast<std::uint64_t>(row.int64(2));
            add_tier_count(row, out.documents, out.documents_per_tier);
        });
        if (!read) return read.error();
    }
    auto chunks = db_.prepare(
        "SELECT d.tier, count(*) FROM chunks c JOIN documents d ON d.id = c.document_id GROUP BY "
        "d.tier");
    if (!chunks) return chunks.error();
    auto read = chunks->each([&](const storage::sql::Row& row) {
        add_tier_count(row, out.chunks, out.chunks_per_tier);
    });
    if (!read) return read.error();
    return out;
}

}  // namespace glassbox::store
