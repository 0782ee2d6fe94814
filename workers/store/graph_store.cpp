// The knowledge-graph store on SQLite: term dictionary, quad indexes, sources, labels, provenance.
#include "workers/store/graph_store.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <future>
#include <tuple>
#include <utility>

#include <sqlite3.h>

#include "base/fnv.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;
using schema::Term;
using schema::Triple;

namespace detail {

// Term kinds as stored (never renumber: they are on disk).
enum StoredKind : int { kIri = 0, kBlank = 1, kTypedLiteral = 2, kLangLiteral = 3, kQuoted = 4 };

// The dictionary's lookup key: 64-bit FNV-1a with a final avalanche. It is stored in the file,
// so it must never change; collisions are harmless (the row's columns are compared).
std::int64_t key_hash(std::string_view key) noexcept {
    std::uint64_t h = base::fnv1a64(key);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return static_cast<std::int64_t>(h);
}

// A key for the in-process cache and the hash: a tag byte, then the fields, NUL-separated (no
// field of a valid term contains NUL before its value, which comes last).
void append_id(std::string& key, std::int64_t id) {
    char buffer[24];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, id).ptr;
    key.append(buffer, end);
}

bool valid_iri(std::string_view iri) noexcept {
    if (iri.empty()) return false;
    const auto colon = iri.find(':');
    if (colon == 0 || colon == std::string_view::npos) return false;
    for (std::size_t i = 0; i < colon; ++i) {
        const char c = iri[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))) return false;
    }
    for (const char c : iri) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20) return false;
        switch (c) {
            case '<': case '>': case '"': case '{': case '}': case '|': case '^': case '`': case '\\':
                return false;
            default:
                break;
        }
    }
    return true;
}

// Empty when the term may stand in `position`; else why not.
std::string check_term(const Term& term, std::string_view position, int depth) {
    if (depth > 32) return std::string(position) + ": quoted triples nested more than 32 deep";
    switch (term.kind()) {
        case Term::Kind::kIri:
            if (!valid_iri(term.as_iri().value)) {
                return std::string(position) + ": \"" + term.as_iri().value + "\" is not an absolute IRI";
            }
            return {};
        case Term::Kind::kBlankNode:
            if (position == "predicate") return "predicate: a blank node cannot be a predicate";
            if (term.as_blank().id.empty()) return std::string(position) + ": blank node with an empty label";
            return {};
        case Term::Kind::kLiteral: {
            if (position != "object") return std::string(position) + ": a literal can only be an object";
            const auto& literal = term.as_literal();
            if (!literal.datatype.empty() && !literal.language.empty()) {
                return "object: literal \"" + literal.value.substr(0, 40) + "\" has both datatype <" +
                       literal.datatype + "> and language \"" + literal.language + "\"";
            }
            if (!literal.datatype.empty() && !valid_iri(literal.datatype)) {
                return "object: literal datatype \"" + literal.datatype + "\" is not an absolute IRI";
            }
            return {};
        }
        case Term::Kind::kTriple: {
            if (position == "predicate") return "predicate: a quoted triple cannot be a predicate";
            const Triple& inner = term.as_triple();
            for (const auto& [part, name] : {std::pair{&inner.s, "subject"}, std::pair{&inner.p, "predicate"},
                                             std::pair{&inner.o, "object"}}) {
                if (auto why = check_term(*part, name, depth + 1); !why.empty()) {
                    return std::string(position) + ": in quoted triple: " + why;
                }
            }
            return {};
        }
    }
    return {};
}

std::string check_triple(const Triple& triple) {
    if (auto why = check_term(triple.s, "subject", 0); !why.empty()) return why;
    if (auto why = check_term(triple.p, "predicate", 0); !why.empty()) return why;
    if (auto why = check_term(triple.o, "object", 0); !why.empty()) return why;
    if (triple.graph && !valid_iri(*triple.graph)) return "graph: \"" + *triple.graph + "\" is not an absolute IRI";
    return {};
}

std::string local_name(std::string_view iri) {
    while (!iri.empty()) {
        const auto cut = iri.find_last_of("#/:");
        if (cut == std::string_view::npos) return std::string(iri);
        if (cut + 1 < iri.size()) return std::string(iri.substr(cut + 1));
        iri.remove_suffix(1);  // a trailing separator: use the segment before it
    }
    return {};
}

// Lower is better: "en", then "en-…", then no language, then any other.
int label_rank(int kind, std::string_view language) noexcept {
    if (kind == kLangLiteral) {
        if (language.size() >= 2 && (language[0] == 'e' || language[0] == 'E') &&
            (language[1] == 'n' || language[1] == 'N')) {
            return language.size() == 2 ? 0 : (language[2] == '-' ? 1 : 3);
        }
        return 3;
    }
    return 2;
}

struct Quad {
    std::int64_t s, p, o, g;
    auto operator<=>(const Quad&) const = default;
};

// Registers the `glassbox_quad_feed` virtual table on a connection (see the staged loads).
int register_quad_feed(sqlite3* db);

}  // namespace detail

using detail::StoredKind;

std::string_view to_string(SourceKind kind) noexcept {
    switch (kind) {
        case SourceKind::kFile: return "file";
        case SourceKind::kDocument: return "document";
        case SourceKind::kChunk: return "chunk";
    }
    return "file";
}

// ---- the bounded caches --------------------------------------------------------------------

template <typename K, typename V>
const V* GraphStore::TwoGenerationCache<K, V>::find(const K& key) {
    if (auto it = current.find(key); it != current.end()) return &it->second;
    auto it = previous.find(key);
    if (it == previous.end()) return nullptr;
    V value = std::move(it->second);
    previous.erase(it);
    put(key, std::move(value));
    auto again = current.find(key);
    return again == current.end() ? nullptr : &again->second;
}

template <typename K, typename V>
void GraphStore::TwoGenerationCache<K, V>::put(K key, V value) {
    if (capacity == 0) return;
    if (current.size() >= capacity) {
        previous = std::move(current);
        current = {};
        current.reserve(capacity);
    }
    current.insert_or_assign(std::move(key), std::move(value));
}

template <typename K, typename V>
void GraphStore::TwoGenerationCache<K, V>::clear() noexcept {
    current.clear();
    previous.clear();
}

// ---- opening -------------------------------------------------------------------------------

GraphStore::GraphStore(storage::Database& db, GraphStoreOptions options)
    : db_(db),
      options_(options),
      term_ids_(options_.term_cache_entries),
      known_hashes_(options_.known_term_limit) {
    decoded_.capacity = options_.decode_cache_entries;
}

Result<std::unique_ptr<GraphStore>> GraphStore::open(storage::Database& db, GraphStoreOptions options) {
    std::unique_ptr<GraphStore> store(new GraphStore(db, options));
    if (auto r = store->create_schema(); !r) return r.error();
    if (auto r = store->migrate_index_tables(); !r) return r.error();
    // Registering again on the same connection (another GraphStore) replaces it with itself.
    if (detail::register_quad_feed(db.handle()) != SQLITE_OK) {
        return make_error(ErrorType::kInternal, "graph store: cannot register the quad feed: " + db.message());
    }
    return store;
}

Result<void> GraphStore::create_schema() {
    // Quads are WITHOUT ROWID with integer columns: graph_quads is the SPO order (with `src`),
    // graph_pos and graph_osp the POS and OSP orders of the same quads, each its own table so a
    // staged load can write each order in key order (a secondary index can only be written in
    // the table's order, i.e. at random, or rebuilt whole). `src` is the first source of a fact
    // (most facts have one); further sources go to graph_fact_sources. GSPO is an index that
    // holds named graphs only (g = 0 is the default graph, which SPO already orders), so a
    // default-graph quad is three B-tree entries, not four.
    return db_.exec(R"sql(
CREATE TABLE IF NOT EXISTS graph_terms(
  id INTEGER PRIMARY KEY,
  hash INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  value TEXT NOT NULL,
  qualifier TEXT NOT NULL,
  qs INTEGER, qp INTEGER, qo INTEGER);
CREATE INDEX IF NOT EXISTS graph_terms_hash ON graph_terms(hash);
CREATE TABLE IF NOT EXISTS graph_quads(
  s INTEGER NOT NULL, p INTEGER NOT NULL, o INTEGER NOT NULL, g INTEGER NOT NULL,
  src INTEGER NOT NULL,
  PRIMARY KEY(s, p, o, g)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graph_pos(
  p INTEGER NOT NULL, o INTEGER NOT NULL, s INTEGER NOT NULL, g INTEGER NOT NULL,
  PRIMARY KEY(p, o, s, g)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graph_osp(
  o INTEGER NOT NULL, s INTEGER NOT NULL, p INTEGER NOT NULL, g INTEGER NOT NULL,
  PRIMARY KEY(o, s, p, g)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS graph_quads_gspo ON graph_quads(g, s, p, o) WHERE g != 0;
CREATE TABLE IF NOT EXISTS graph_staged_sources(
  load TEXT NOT NULL, uri TEXT NOT NULL, n INTEGER NOT NULL,
  kind INTEGER NOT NULL, document_uri TEXT NOT NULL, tier INTEGER NOT NULL,
  loaded_at TEXT NOT NULL, media_type TEXT NOT NULL,
  PRIMARY KEY(load, uri)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graph_staged_quads(
  id INTEGER PRIMARY KEY,
  load TEXT NOT NULL,
  statements INTEGER NOT NULL,
  staged_at INTEGER NOT NULL,
  quads BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS graph_staged_quads_load ON graph_staged_quads(load);
CREATE TABLE IF NOT EXISTS graph_fact_sources(
  s INTEGER NOT NULL, p INTEGER NOT NULL, o INTEGER NOT NULL, g INTEGER NOT NULL,
  source INTEGER NOT NULL,
  PRIMARY KEY(s, p, o, g, source)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graph_sources(
  id INTEGER PRIMARY KEY,
  uri TEXT NOT NULL UNIQUE,
  kind INTEGER NOT NULL,
  document_uri TEXT NOT NULL,
  tier INTEGER NOT NULL,
  loaded_at TEXT NOT NULL,
  media_type TEXT NOT NULL);
)sql");
}

// Files written before graph_pos / graph_osp existed kept those orders as indexes of
// graph_quads: copy them into the tables (in key order) and drop the indexes, once.
Result<void> GraphStore::migrate_index_tables() {
    const auto has_old_index = [this]() -> Result<bool> {
        auto st = db_.prepare(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('graph_quads_pos', 'graph_quads_osp')");
        if (!st) return st.error();
        auto row = st->step();
        if (!row) return row.error();
        return *row && st->int64(0) > 0;
    };
    auto old = has_old_index();
    if (!old) return old.error();
    if (!*old) return {};
    auto tx = storage::Transaction::begin(db_, storage::Transaction::Kind::kImmediate);
    if (!tx) return tx.error();
    old = has_old_index();  // another process may have migrated meanwhile
    if (!old) return old.error();
    if (!*old) return {};
    if (auto r = db_.exec(
            "DELETE FROM graph_pos; DELETE FROM graph_osp;"
            "INSERT INTO graph_pos(p, o, s, g) SELECT p, o, s, g FROM graph_quads ORDER BY p, o, s, g;"
            "INSERT INTO graph_osp(o, s, p, g) SELECT o, s, p, g FROM graph_quads ORDER BY o, s, p, g;"
            "DROP INDEX IF EXISTS graph_quads_pos; DROP INDEX IF EXISTS graph_quads_osp;");
        !r) {
        return r.error();
    }
    return tx->commit();
}

void GraphStore::forget_cached_terms() noexcept {
    term_ids_.clear();
    decoded_.clear();
    // A rolled-back insert's id may be given to another term later: synchronise from scratch.
    drop_known_terms();
}

void GraphStore::drop_known_terms() noexcept {
    known_hashes_.clear();
    known_through_ = 0;
    known_ready_ = false;
}

// ---- sources -------------------------------------------------------------------------------

Result<std::int64_t> GraphStore::register_source(const SourceRecord& source) {
    if (source.uri.empty()) return make_error(ErrorType::kInvalidRequest, "source: empty uri");
    if (source.tier < 1 || source.tier > 4) {
        return make_error(ErrorType::kInvalidRequest, "source " + source.uri + ": tier " +
                                                          std::to_string(source.tier) + " is not in 1..4");
    }
    if (source.kind == SourceKind::kChunk && source.document_uri.empty()) {
        return make_error(ErrorType::kInvalidRequest, "source " + source.uri + ": a chunk needs its document_uri");
    }
    auto st = db_.prepare(
        "INSERT INTO graph_sources(uri, kind, document_uri, tier, loaded_at, media_type) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(uri) DO UPDATE SET kind = excluded.kind, "
        "document_uri = excluded.document_uri, tier = excluded.tier, loaded_at = excluded.loaded_at, "
        "media_type = excluded.media_type RETURNING id");
    if (!st) return st.error();
    st->bind(1, std::string_view{source.uri})
        .bind(2, static_cast<std::int64_t>(source.kind))
        .bind(3, std::string_view{source.document_uri})
        .bind(4, static_cast<std::int64_t>(source.tier))
        .bind(5, std::string_view{source.loaded_at})
        .bind(6, std::string_view{source.media_type});
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) return make_error(ErrorType::kInternal, "graph store: registering a source returned no id");
    return st->int64(0);
}

// ---- the term dictionary -------------------------------------------------------------------

Result<std::optional<std::int64_t>> GraphStore::find_key(std::int64_t hash, int kind, std::string_view value,
                                                         std::string_view qualifier, const std::int64_t* parts) {
    auto st = db_.prepare("SELECT id, kind, value, qualifier, qs, qp, qo FROM graph_terms WHERE hash = ?1");
    if (!st) return st.error();
    st->bind(1, hash);
    for (;;) {
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) return std::optional<std::int64_t>{};
        if (st->int64(1) != kind || st->text(2) != value || st->text(3) != qualifier) continue;
        if (parts != nullptr && (st->int64(4) != parts[0] || st->int64(5) != parts[1] || st->int64(6) != parts[2])) {
            continue;
        }
        return std::optional<std::int64_t>{st->int64(0)};
    }
}

Result<void> GraphStore::sync_known_terms() {
    known_ready_ = false;
    if (options_.known_term_limit == 0) return {};
    std::int64_t max_id = 0;
    {
        auto st = db_.prepare("SELECT max(id) FROM graph_terms");
        if (!st) return st.error();
        auto row = st->step();
        if (!row) return row.error();
        if (*row) max_id = st->int64(0);  // NULL (no term) reads as 0
    }
    // Ids are never deleted, so the largest is about the count: too many, and the set is not kept.
    if (max_id > static_cast<std::int64_t>(options_.known_term_limit)) {
        drop_known_terms();
        return {};
    }
    if (max_id > known_through_) {
        // The first time, the hash index alone (smaller than the table); then the new rows by id.
        const char* sql = known_through_ == 0 ? "SELECT hash FROM graph_terms INDEXED BY graph_terms_hash"
                                              : "SELECT hash FROM graph_terms WHERE id > ?1";
        auto st = db_.prepare(sql);
        if (!st) return st.error();
        if (known_through_ != 0) st->bind(1, known_through_);
        for (;;) {
            auto row = st->step();
            if (!row) return row.error();
            if (!*row) break;
            if (!known_hashes_.insert(static_cast<std::uint64_t>(st->int64(0)))) {
                drop_known_terms();
                return {};
            }
        }
        known_through_ = max_id;
    }
    known_ready_ = true;
    return {};
}

namespace {

// The key, kind and fields of a non-quoted term.
struct Encoded {
    int kind;
    std::string_view value;
    std::string_view qualifier;
};

Encoded encode_simple(const Term& term, std::string& key) {
    key.clear();
    switch (term.kind()) {
        case Term::Kind::kIri:
            key.push_back('I');
            key.append(term.as_iri().value);
            return {StoredKind::kIri, term.as_iri().value, {}};
        case Term::Kind::kBlankNode:
            key.push_back('B');
            key.append(term.as_blank().id);
            return {StoredKind::kBlank, term.as_blank().id, {}};
        case Term::Kind::kLiteral: {
            const auto& literal = term.as_literal();
            const bool lang = !literal.language.empty();
            const std::string& qualifier = lang ? literal.language : literal.datatype;
            key.push_back(lang ? 'G' : 'L');
            key.append(qualifier);
            key.push_back('\0');
            key.append(literal.value);
            return {lang ? StoredKind::kLangLiteral : StoredKind::kTypedLiteral, literal.value, qualifier};
        }
        case Term::Kind::kTriple:
            break;
    }
    return {StoredKind::kQuoted, {}, {}};
}

void encode_quoted(const std::int64_t* parts, std::string& key) {
    key.clear();
    key.push_back('T');
    for (int i = 0; i < 3; ++i) {
        if (i > 0) key.push_back(' ');
        detail::append_id(key, parts[i]);
    }
}

}  // namespace

Result<std::int64_t> GraphStore::intern_key(std::string& key, int kind, std::string_view value,
                                            std::string_view qualifier, const std::int64_t* parts) {
    const std::int64_t hash = detail::key_hash(key);
    if (const auto cached = term_ids_.find(key, static_cast<std::uint64_t>(hash))) return *cached;
    // A hash the complete set lacks proves the term is new: no lookup in the file.
    std::optional<std::int64_t> found;
    if (!known_ready_ || known_hashes_.maybe_contains(static_cast<std::uint64_t>(hash))) {
        auto row = find_key(hash, kind, value, qualifier, parts);
        if (!row) return row.error();
        found = *row;
    }
    std::int64_t id = 0;
    if (found) {
        id = *found;
    } else {
        auto st = db_.prepare(
            "INSERT INTO graph_terms(hash, kind, value, qualifier, qs, qp, qo) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        if (!st) return st.error();
        // An empty view may have no data pointer, which SQLite would store as NULL.
        const auto not_null = [](std::string_view text) { return text.empty() ? std::string_view{""} : text; };
        st->bind(1, hash)
            .bind(2, static_cast<std::int64_t>(kind))
            .bind_static(3, not_null(value))
            .bind_static(4, not_null(qualifier));
        for (int i = 0; i < 3; ++i) {
            if (parts != nullptr) {
                st->bind(5 + i, parts[i]);
            } else {
                st->bind_null(5 + i);
            }
        }
        if (auto r = st->run(); !r) return r.error();
        id = db_.last_insert_rowid();
        if (known_ready_) {
            if (known_hashes_.insert(static_cast<std::uint64_t>(hash))) {
                known_through_ = id;
            } else {
                drop_known_terms();  // past the limit: stop keeping the set
            }
        }
    }
    if (caching_) term_ids_.put(key, static_cast<std::uint64_t>(hash), id);
    return id;
}

Result<std::int64_t> GraphStore::intern(const Term& term) {
    if (!term.is_triple()) {
        const auto e = encode_simple(term, key_buffer_);  // reused: no allocation per term
        return intern_key(key_buffer_, e.kind, e.value, e.qualifier, nullptr);
    }
    std::string key;
    const Triple& inner = term.as_triple();
    std::int64_t parts[3];
    const Term* members[3] = {&inner.s, &inner.p, &inner.o};
    for (int i = 0; i < 3; ++i) {
        auto id = intern(*members[i]);
        if (!id) return id.error();
        parts[i] = *id;
    }
    encode_quoted(parts, key);
    return intern_key(key, StoredKind::kQuoted, {}, {}, parts);
}

Result<std::array<std::int64_t, 4>> GraphStore::intern_statement(const Triple& triple, StatementMemo& memo) {
    const auto repeat = [this](const Term& term, const Term*& last, std::int64_t& last_id) -> Result<std::int64_t> {
        if (last == nullptr || !(*last == term)) {
            auto id = intern(term);
            if (!id) return id.error();
            last = &term;
            last_id = *id;
        }
        return last_id;
    };
    auto s = repeat(triple.s, memo.s, memo.s_id);
    if (!s) return s.error();
    auto p = repeat(triple.p, memo.p, memo.p_id);
    if (!p) return p.error();
    auto o = intern(triple.o);
    if (!o) return o.error();
    std::array<std::int64_t, 4> ids{*s, *p, *o, 0};
    if (triple.graph) {
        if (memo.g == nullptr || *memo.g != *triple.graph) {
            auto g = intern(Term(schema::Iri{*triple.graph}));
            if (!g) return g.error();
            memo.g = &*triple.graph;
            memo.g_id = *g;
        }
        ids[3] = memo.g_id;
    }
    return ids;
}

Result<std::optional<std::int64_t>> GraphStore::lookup_id(const Term& term) {
    std::string key;
    std::int64_t parts[3];
    const std::int64_t* parts_pointer = nullptr;
    detail::StoredKind kind = StoredKind::kQuoted;
    std::string_view value;
    std::string_view qualifier;
    if (!term.is_triple()) {
        const auto e = encode_simple(term, key);
        kind = static_cast<StoredKind>(e.kind);
        value = e.value;
        qualifier = e.qualifier;
    } else {
        const Triple& inner = term.as_triple();
        const Term* members[3] = {&inner.s, &inner.p, &inner.o};
        for (int i = 0; i < 3; ++i) {
            auto id = lookup_id(*members[i]);
            if (!id) return id.error();
            if (!*id) return std::optional<std::int64_t>{};
            parts[i] = **id;
        }
        encode_quoted(parts, key);
        parts_pointer = parts;
    }
    const std::int64_t hash = detail::key_hash(key);
    if (const auto cached = term_ids_.find(key, static_cast<std::uint64_t>(hash))) {
        return std::optional<std::int64_t>{*cached};
    }
    auto found = find_key(hash, kind, value, qualifier, parts_pointer);
    if (!found) return found.error();
    if (*found && caching_) term_ids_.put(key, static_cast<std::uint64_t>(hash), **found);
    return found;
}

Result<std::optional<std::int64_t>> GraphStore::find_term(const Term& term) { return lookup_id(term); }

Result<std::optional<std::int64_t>> GraphStore::lookup_graph(const std::string& graph) {
    if (graph.empty()) return std::optional<std::int64_t>{0};
    return lookup_id(Term(schema::Iri{graph}));
}

Result<Term> GraphStore::decode(std::int64_t id) {
    if (const auto* cached = decoded_.find(id)) return *cached;
    int kind = 0;
    std::string value;
    std::string qualifier;
    std::int64_t parts[3] = {0, 0, 0};
    {
        auto st = db_.prepare("SELECT kind, value, qualifier, qs, qp, qo FROM graph_terms WHERE id = ?1");
        if (!st) return st.error();
        st->bind(1, id);
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) return make_error(ErrorType::kNotFound, "graph store: no term with id " + std::to_string(id));
        kind = static_cast<int>(st->int64(0));
        value = st->text(1);
        qualifier = st->text(2);
        for (int i = 0; i < 3; ++i) parts[i] = st->int64(3 + i);
    }  // released before recursing: a quoted triple's parts use the same statement
    Term term;
    switch (kind) {
        case StoredKind::kIri: term = schema::Iri{std::move(value)}; break;
        case StoredKind::kBlank: term = schema::BlankNode{std::move(value)}; break;
        case StoredKind::kTypedLiteral: term = schema::Literal{std::move(value), std::move(qualifier), {}}; break;
        case StoredKind::kLangLiteral: term = schema::Literal{std::move(value), {}, std::move(qualifier)}; break;
        case StoredKind::kQuoted: {
            Triple inner;
            Term* members[3] = {&inner.s, &inner.p, &inner.o};
            for (int i = 0; i < 3; ++i) {
                auto part = decode(parts[i]);
                if (!part) return part.error();
                *members[i] = std::move(*part);
            }
            term = schema::quoted(std::move(inner));
            break;
        }
        default:
            return make_error(ErrorType::kInternal,
                              "graph store: term " + std::to_string(id) + " has unknown kind " + std::to_string(kind));
    }
    if (caching_) decoded_.put(id, term);
    return term;
}

Result<std::vector<Term>> GraphStore::terms(std::span<const std::int64_t> ids) {
    std::vector<Term> out;
    out.reserve(ids.size());
    for (const auto id : ids) {
        auto term = decode(id);
        if (!term) return term.error();
        out.push_back(std::move(*term));
    }
    return out;
}

// ---- inserting -----------------------------------------------------------------------------

Result<InsertCounts> GraphStore::insert(std::int64_t source_id, std::span<const Triple> triples,
                                        TransactionMode mode) {
    // Everything is checked before anything is written.
    for (std::size_t i = 0; i < triples.size(); ++i) {
        if (auto why = detail::check_triple(triples[i]); !why.empty()) {
            return make_error(ErrorType::kInvalidRequest, "triple " + std::to_string(i) + " (" +
                                                              schema::to_ntriples(triples[i]).substr(0, 200) +
                                                              "): " + why);
        }
    }
    if (mode == TransactionMode::kOwn) {
        auto tx = storage::Transaction::begin(db_, storage::Transaction::Kind::kImmediate);
        if (!tx) return tx.error();
        KnownTermsScope known{*this};
        if (auto r = sync_known_terms(); !r) return r.error();
        auto counts = insert_rows(source_id, triples);
        if (counts) {
            if (auto r = tx->commit(); !r) {
                forget_cached_terms();
                return r.error();
            }
            return counts;
        }
        forget_cached_terms();  // ids cached during the call are rolled back with it
        return counts;
    }
    if (auto r = db_.exec("SAVEPOINT graph_insert"); !r) return r.error();
    caching_ = false;
    auto counts = insert_rows(source_id, triples);
    caching_ = true;
    if (!counts) {
        (void)db_.exec("ROLLBACK TO graph_insert; RELEASE graph_insert");
        return counts;
    }
    if (auto r = db_.exec("RELEASE graph_insert"); !r) return r.error();
    return counts;
}

Result<InsertCounts> GraphStore::insert_rows(std::int64_t source_id, std::span<const Triple> triples) {
    {
        auto st = db_.prepare("SELECT 1 FROM graph_sources WHERE id = ?1");
        if (!st) return st.error();
        st->bind(1, source_id);
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) {
            return make_error(ErrorType::kNotFound,
                              "graph store: no source with id " + std::to_string(source_id) + " (register it first)");
        }
    }
    std::vector<detail::Quad> quads;
    quads.reserve(triples.size());
    StatementMemo memo;
    for (const auto& triple : triples) {
        auto ids = intern_statement(triple, memo);
        if (!ids) return ids.error();
        quads.push_back({(*ids)[0], (*ids)[1], (*ids)[2], (*ids)[3]});
    }
    // Key order makes the primary-key inserts append-like and groups the index writes.
    std::sort(quads.begin(), quads.end());
    const auto unique_end = std::unique(quads.begin(), quads.end());
    InsertCounts counts;
    counts.already_present = static_cast<std::uint64_t>(quads.end() - unique_end);  // repeats in the call
    quads.erase(unique_end, quads.end());

    // Prepared once for the loop (finding a cached statement hashes its SQL text).
    auto insert_quad = db_.prepare("INSERT OR IGNORE INTO graph_quads(s, p, o, g, src) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!insert_quad) return insert_quad.error();
    auto insert_pos = db_.prepare("INSERT OR IGNORE INTO graph_pos(p, o, s, g) VALUES(?1, ?2, ?3, ?4)");
    if (!insert_pos) return insert_pos.error();
    auto insert_osp = db_.prepare("INSERT OR IGNORE INTO graph_osp(o, s, p, g) VALUES(?1, ?2, ?3, ?4)");
    if (!insert_osp) return insert_osp.error();
    storage::Statement& pos = *insert_pos;
    storage::Statement& osp = *insert_osp;
    insert_quad->bind(5, source_id);
    for (const auto& q : quads) {
        insert_quad->reset();
        insert_quad->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g);
        if (auto r = insert_quad->run(); !r) return r.error();
        if (db_.changes() == 1) {
            ++counts.added;
            pos.reset();
            pos.bind(1, q.p).bind(2, q.o).bind(3, q.s).bind(4, q.g);
            if (auto r = pos.run(); !r) return r.error();
            osp.reset();
            osp.bind(1, q.o).bind(2, q.s).bind(3, q.p).bind(4, q.g);
            if (auto r = osp.run(); !r) return r.error();
            continue;
        }
        ++counts.already_present;
        std::int64_t first_source = 0;
        {
            auto st = db_.prepare("SELECT src FROM graph_quads WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
            if (!st) return st.error();
            st->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g);
            auto row = st->step();
            if (!row) return row.error();
            if (*row) first_source = st->int64(0);
        }
        if (first_source == source_id) continue;
        auto st = db_.prepare(
            "INSERT OR IGNORE INTO graph_fact_sources(s, p, o, g, source) VALUES(?1, ?2, ?3, ?4, ?5)");
        if (!st) return st.error();
        st->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g).bind(5, source_id);
        if (auto r = st->run(); !r) return r.error();
    }
    return counts;
}

// ---- matching ------------------------------------------------------------------------------

namespace {

struct BoundPattern {
    std::optional<std::int64_t> s, p, o, g;
};

// The SQL for a pattern shape: the table whose key order serves the bound positions (SPO,
// POS, OSP; GSPO for a named graph alone), ordered by that key for a stable order. Each row
// carries the object's term (most of a result's distinct terms are objects), so decoding it
// needs no further lookup; CROSS JOIN keeps the quad table the outer loop.
std::string match_sql(const BoundPattern& b, bool limited) {
    const char* table = "graph_quads";
    const char* order = "q.s, q.p, q.o, q.g";
    if (b.s) {
        if (b.o && !b.p) {
            table = "graph_osp";
            order = "q.o, q.s, q.p, q.g";
        }
    } else if (b.p) {
        table = "graph_pos";
        order = "q.p, q.o, q.s, q.g";
    } else if (b.o) {
        table = "graph_osp";
        order = "q.o, q.s, q.p, q.g";
    } else if (b.g && *b.g != 0) {
        order = "q.g, q.s, q.p, q.o";
    }
    std::string sql = "SELECT q.s, q.p, q.o, q.g, t.kind, t.value, t.qualifier FROM ";
    sql += table;
    sql += " AS q CROSS JOIN graph_terms AS t ON t.id = q.o";
    std::string where;
    const auto add = [&](bool bound, const char* condition) {
        if (!bound) return;
        where += where.empty() ? " WHERE " : " AND ";
        where += condition;
    };
    add(b.s.has_value(), "q.s = ?1");
    add(b.p.has_value(), "q.p = ?2");
    add(b.o.has_value(), "q.o = ?3");
    add(b.g.has_value(), "q.g = ?4");
    // Lets the planner use the partial GSPO index, which holds named graphs only.
    add(b.g.has_value() && *b.g != 0, "q.g != 0");
    sql += where;
    sql += " ORDER BY ";
    sql += order;
    if (limited) sql += " LIMIT ?5";
    return sql;
}

void bind_pattern(storage::Statement& st, const BoundPattern& b) {
    if (b.s) st.bind(1, *b.s);
    if (b.p) st.bind(2, *b.p);
    if (b.o) st.bind(3, *b.o);
    if (b.g) st.bind(4, *b.g);
}

}  // namespace

Result<std::vector<Triple>> GraphStore::match(const schema::TriplePattern& pattern, std::uint32_t limit) {
    return match_rows(pattern, limit);
}

Result<std::vector<std::vector<Triple>>> GraphStore::match_batch(std::span<const schema::TriplePattern> patterns,
                                                                 std::uint32_t limit_per_pattern) {
    storage::ReadScope snapshot(db_);  // every pattern read from one snapshot, one read lock
    std::vector<std::vector<Triple>> results;
    results.reserve(patterns.size());
    for (const auto& pattern : patterns) {
        auto found = match_rows(pattern, limit_per_pattern);
        if (!found) return found.error();
        results.push_back(std::move(*found));
    }
    return results;
}

namespace {

// The ids of a pattern's bound positions; nullopt when one names a term the store lacks.
template <typename Lookup, typename LookupGraph>
Result<std::optional<BoundPattern>> bind_ids(const schema::TriplePattern& pattern, Lookup&& lookup,
                                             LookupGraph&& lookup_graph) {
    BoundPattern b;
    const std::pair<const std::optional<Term>*, std::optional<std::int64_t>*> positions[3] = {
        {&pattern.s, &b.s}, {&pattern.p, &b.p}, {&pattern.o, &b.o}};
    for (const auto& [term, slot] : positions) {
        if (!term->has_value()) continue;
        auto id = lookup(**term);
        if (!id) return id.error();
        if (!*id) return std::optional<BoundPattern>{};
        *slot = **id;
    }
    if (pattern.g) {
        auto id = lookup_graph(*pattern.g);
        if (!id) return id.error();
        if (!*id) return std::optional<BoundPattern>{};
        b.g = **id;
    }
    return std::optional<BoundPattern>{b};
}

}  // namespace

Result<std::vector<Triple>> GraphStore::match_rows(const schema::TriplePattern& pattern, std::uint32_t limit) {
    if (limit == 0 || limit > kMaxMatchLimit) limit = kMaxMatchLimit;
    auto bound = bind_ids(
        pattern, [this](const Term& t) { return lookup_id(t); },
        [this](const std::string& g) { return lookup_graph(g); });
    if (!bound) return bound.error();
    std::vector<Triple> out;
    if (!*bound) return out;
    auto st = db_.prepare(match_sql(**bound, true));
    if (!st) return st.error();
    bind_pattern(*st, **bound);
    st->bind(5, static_cast<std::int64_t>(limit));
    RowMemo memo;
    for (;;) {
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) break;
        auto triple = decode_row(*st, pattern, memo);
        if (!triple) return triple.error();
        out.push_back(std::move(*triple));
    }
    return out;
}

Result<Triple> GraphStore::decode_row(storage::Statement& st, const schema::TriplePattern& pattern,
                                      RowMemo& memo) {
    const std::int64_t s = st.int64(0);
    const std::int64_t p = st.int64(1);
    const std::int64_t o = st.int64(2);
    const std::int64_t g = st.int64(3);
    // A position the pattern binds is copied from it; any other is decoded, reusing the last
    // row's term while the id repeats (rows come in index order).
    const auto fill = [this](const std::optional<Term>& bound, std::int64_t id, std::int64_t& memo_id,
                             Term& memo_term, Term& out) -> Result<void> {
        if (bound) {
            out = *bound;
            return {};
        }
        if (memo_id != id) {
            auto term = decode(id);
            if (!term) return term.error();
            memo_term = std::move(*term);
            memo_id = id;
        }
        out = memo_term;
        return {};
    };
    Triple triple;
    if (auto r = fill(pattern.s, s, memo.s, memo.s_term, triple.s); !r) return r.error();
    if (auto r = fill(pattern.p, p, memo.p, memo.p_term, triple.p); !r) return r.error();
    if (pattern.o) {
        triple.o = *pattern.o;
    } else {
        switch (st.int64(4)) {
            case StoredKind::kIri: triple.o = schema::Iri{std::string(st.text(5))}; break;
            case StoredKind::kBlank: triple.o = schema::BlankNode{std::string(st.text(5))}; break;
            case StoredKind::kTypedLiteral:
                triple.o = schema::Literal{std::string(st.text(5)), std::string(st.text(6)), {}};
                break;
            case StoredKind::kLangLiteral:
                triple.o = schema::Literal{std::string(st.text(5)), {}, std::string(st.text(6))};
                break;
            default: {  // a quoted triple (its parts are ids) or a kind decode() reports
                auto object = decode(o);
                if (!object) return object.error();
                triple.o = std::move(*object);
            }
        }
    }
    if (g != 0) {
        auto graph = decode(g);
        if (!graph) return graph.error();
        if (!graph->is_iri()) return make_error(ErrorType::kInternal, "graph store: a graph name is not an IRI");
        triple.graph = graph->as_iri().value;
    }
    return triple;
}

Result<void> GraphStore::match_each(const schema::TriplePattern& pattern, std::size_t batch_size,
                                    const TripleBatchFn& on_batch) {
    if (batch_size == 0) batch_size = kDefaultStreamBatch;
    auto bound = bind_ids(
        pattern, [this](const Term& t) { return lookup_id(t); },
        [this](const std::string& g) { return lookup_graph(g); });
    if (!bound) return bound.error();
    if (!*bound) return {};
    // Its own statement (not the cached one), so the callback may run matches of the same shape.
    auto raw = db_.prepare_once(match_sql(**bound, false));
    if (!raw) return raw.error();
    storage::Statement st(db_, raw->get());
    bind_pattern(st, **bound);
    std::vector<Triple> batch;
    batch.reserve(batch_size);
    RowMemo memo;
    for (;;) {
        auto row = st.step();
        if (!row) return row.error();
        if (*row) {
            auto triple = decode_row(st, pattern, memo);
            if (!triple) return triple.error();
            batch.push_back(std::move(*triple));
        }
        if ((!*row && !batch.empty()) || batch.size() >= batch_size) {
            if (!on_batch(batch)) return {};
            batch.clear();
        }
        if (!*row) return {};
    }
}

// ---- sources of a fact ---------------------------------------------------------------------

Result<std::vector<SourceRecord>> GraphStore::sources_of(const Triple& fact) {
    std::vector<SourceRecord> out;
    schema::TriplePattern pattern{fact.s, fact.p, fact.o, fact.graph ? *fact.graph : std::string{}};
    auto bound = bind_ids(
        pattern, [this](const Term& t) { return lookup_id(t); },
        [this](const std::string& g) { return lookup_graph(g); });
    if (!bound) return bound.error();
    if (!*bound) return out;
    const BoundPattern& b = **bound;
    std::vector<std::int64_t> source_ids;
    {
        auto st = db_.prepare("SELECT src FROM graph_quads WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
        if (!st) return st.error();
        bind_pattern(*st, b);
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) return out;
        source_ids.push_back(st->int64(0));
    }
    {
        auto st = db_.prepare(
            "SELECT source FROM graph_fact_sources WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
        if (!st) return st.error();
        bind_pattern(*st, b);
        for (;;) {
            auto row = st->step();
            if (!row) return row.error();
            if (!*row) break;
            source_ids.push_back(st->int64(0));
        }
    }
    auto st = db_.prepare(
        "SELECT uri, kind, document_uri, tier, loaded_at, media_type FROM graph_sources WHERE id = ?1");
    if (!st) return st.error();
    for (const auto id : source_ids) {
        st->reset();
        st->bind(1, id);
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) continue;
        SourceRecord record;
        record.uri = st->text(0);
        record.kind = static_cast<SourceKind>(std::clamp<std::int64_t>(st->int64(1), 0, 2));
        record.document_uri = st->text(2);
        record.tier = static_cast<std::uint32_t>(st->int64(3));
        record.loaded_at = st->text(4);
        record.media_type = st->text(5);
        out.push_back(std::move(record));
    }
    std::sort(out.begin(), out.end(), [](const SourceRecord& a, const SourceRecord& b) {
        return std::tie(a.tier, a.uri) < std::tie(b.tier, b.uri);
    });
    return out;
}

// ---- labels and entities -------------------------------------------------------------------

Result<std::int64_t> GraphStore::label_predicate_id() {
    auto id = lookup_id(Term(schema::Iri{std::string(schema::vocab::kRdfsLabel)}));
    if (!id) return id.error();
    return id->value_or(-1);
}

namespace {

// The best rdfs:label of each id, in one statement for the whole set.
Result<std::unordered_map<std::int64_t, std::string>> best_labels(storage::Database& db, std::int64_t label_id,
                                                                  const std::vector<std::int64_t>& ids) {
    std::unordered_map<std::int64_t, std::string> best;
    if (label_id < 0 || ids.empty()) return best;
    std::string array = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) array.push_back(',');
        detail::append_id(array, ids[i]);
    }
    array.push_back(']');
    auto st = db.prepare(
        "SELECT q.s, t.kind, t.value, t.qualifier FROM json_each(?1) AS j "
        "CROSS JOIN graph_quads AS q CROSS JOIN graph_terms AS t "
        "WHERE q.s = j.value AND q.p = ?2 AND t.id = q.o AND t.kind IN (2, 3)");
    if (!st) return st.error();
    st->bind(1, std::string_view{array}).bind(2, label_id);
    std::unordered_map<std::int64_t, int> rank;
    for (;;) {
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) break;
        const auto id = st->int64(0);
        const int kind = static_cast<int>(st->int64(1));
        const int r = detail::label_rank(kind, kind == StoredKind::kLangLiteral ? st->text(3) : std::string_view{});
        const auto value = st->text(2);
        auto [it, inserted] = rank.try_emplace(id, r);
        // Ties go to the smallest value, so the answer does not depend on storage order.
        if (inserted || r < it->second || (r == it->second && value < std::string_view{best[id]})) {
            it->second = r;
            best[id] = std::string(value);
        }
    }
    return best;
}

std::string fallback_label(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri: return detail::local_name(term.as_iri().value);
        case Term::Kind::kLiteral: return term.as_literal().value;
        default: return schema::to_ntriples(term);
    }
}

}  // namespace

Result<std::vector<std::string>> GraphStore::labels(std::span<const Term> terms) {
    auto label_id = label_predicate_id();
    if (!label_id) return label_id.error();
    std::vector<std::optional<std::int64_t>> term_ids(terms.size());
    std::vector<std::int64_t> wanted;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        if (terms[i].is_literal() || *label_id < 0) continue;
        auto id = lookup_id(terms[i]);
        if (!id) return id.error();
        term_ids[i] = *id;
        if (*id) wanted.push_back(**id);
    }
    auto best = best_labels(db_, *label_id, wanted);
    if (!best) return best.error();
    std::vector<std::string> out;
    out.reserve(terms.size());
    for (std::size_t i = 0; i < terms.size(); ++i) {
        if (term_ids[i]) {
            if (auto it = best->find(*term_ids[i]); it != best->end()) {
                out.push_back(it->second);
                continue;
            }
        }
        out.push_back(fallback_label(terms[i]));
    }
    return out;
}

Result<std::vector<Entity>> GraphStore::entities_after(std::int64_t after_id, std::size_t limit) {
    if (limit == 0 || limit > kMaxMatchLimit) limit = kMaxMatchLimit;
    std::vector<Entity> out;
    {
        auto st = db_.prepare(
            "SELECT t.id, t.value FROM graph_terms AS t WHERE t.id > ?1 AND t.kind = 0 AND "
            "(EXISTS (SELECT 1 FROM graph_quads AS q WHERE q.s = t.id) OR "
            "EXISTS (SELECT 1 FROM graph_osp AS q WHERE q.o = t.id)) ORDER BY t.id LIMIT ?2");
        if (!st) return st.error();
        st->bind(1, after_id).bind(2, static_cast<std::int64_t>(limit));
        for (;;) {
            auto row = st->step();
            if (!row) return row.error();
            if (!*row) break;
            out.push_back(Entity{st->int64(0), Term(schema::Iri{std::string(st->text(1))}), {}});
        }
    }
    auto label_id = label_predicate_id();
    if (!label_id) return label_id.error();
    std::vector<std::int64_t> ids;
    ids.reserve(out.size());
    for (const auto& entity : out) ids.push_back(entity.id);
    auto best = best_labels(db_, *label_id, ids);
    if (!best) return best.error();
    for (auto& entity : out) {
        if (auto it = best->find(entity.id); it != best->end()) {
            entity.label = std::move(it->second);
        } else {
            entity.label = fallback_label(entity.term);
        }
    }
    return out;
}

// ---- stats ---------------------------------------------------------------------------------

Result<GraphStats> GraphStore::stats() {
    GraphStats stats;
    const auto count = [this](const std::string& sql) -> Result<std::uint64_t> {
        auto st = db_.prepare(sql);
        if (!st) return st.error();
        auto row = st->step();
        if (!row) return row.error();
        return *row ? static_cast<std::uint64_t>(st->int64(0)) : 0;
    };
    const std::pair<std::uint64_t*, const char*> counts[] = {
        {&stats.quads, "SELECT count(*) FROM graph_quads"},
        {&stats.subjects, "SELECT count(*) FROM (SELECT DISTINCT s FROM graph_quads)"},
        {&stats.predicates, "SELECT count(*) FROM (SELECT DISTINCT p FROM graph_pos)"},
        {&stats.objects, "SELECT count(*) FROM (SELECT DISTINCT o FROM graph_osp)"},
        {&stats.terms, "SELECT count(*) FROM graph_terms"},
        {&stats.graphs, "SELECT count(*) FROM (SELECT DISTINCT g FROM graph_quads WHERE g != 0)"},
        {&stats.sources, "SELECT count(*) FROM graph_sources"},
    };
    for (const auto& [slot, sql] : counts) {
        auto n = count(sql);
        if (!n) return n.error();
        *slot = *n;
    }
    {
        auto st = db_.prepare(
            "SELECT st.tier, count(*) FROM graph_quads AS q JOIN graph_sources AS st ON st.id = q.src "
            "GROUP BY st.tier");
        if (!st) return st.error();
        for (;;) {
            auto row = st->step();
            if (!row) return row.error();
            if (!*row) break;
            const auto tier = st->int64(0);
            if (tier >= 1 && tier <= 4) stats.facts_per_tier[static_cast<std::size_t>(tier)] += static_cast<std::uint64_t>(st->int64(1));
        }
    }
    // A fact with further sources counts under its best tier: move it there.
    auto st = db_.prepare(
        "SELECT first.tier, min(more.tier) FROM graph_fact_sources AS f "
        "JOIN graph_quads AS q ON q.s = f.s AND q.p = f.p AND q.o = f.o AND q.g = f.g "
        "JOIN graph_sources AS first ON first.id = q.src JOIN graph_sources AS more ON more.id = f.source "
        "GROUP BY f.s, f.p, f.o, f.g");
    if (!st) return st.error();
    for (;;) {
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) break;
        const auto first = st->int64(0);
        const auto best = st->int64(1);
        if (best < first && first >= 1 && first <= 4 && best >= 1) {
            --stats.facts_per_tier[static_cast<std::size_t>(first)];
            ++stats.facts_per_tier[static_cast<std::size_t>(best)];
        }
    }
    return stats;
}

// ---- provenance export ---------------------------------------------------------------------

Result<void> GraphStore::export_provenance(std::size_t batch_size, const TripleBatchFn& on_batch) {
    namespace vocab = schema::vocab;
    if (batch_size == 0) batch_size = kDefaultStreamBatch;
    const std::string graph(vocab::kSourceGraph);
    const Term type = schema::iri(vocab::kRdfType);
    const Term entity = schema::iri(vocab::kProvEntity);
    const Term derived = schema::iri(vocab::kProvWasDerivedFrom);
    const Term tier = schema::iri(vocab::kDataTier);
    const Term generated = schema::iri(vocab::kProvGeneratedAtTime);
    std::vector<Triple> batch;
    batch.reserve(batch_size + 8);
    bool stopped = false;
    const auto flush = [&](bool force) {
        if (stopped || batch.empty() || (!force && batch.size() < batch_size)) return;
        stopped = !on_batch(batch);
        batch.clear();
    };

    std::unordered_map<std::int64_t, std::string> source_uris;
    {
        auto raw = db_.prepare_once("SELECT id, uri, kind, document_uri, tier, loaded_at FROM graph_sources ORDER BY id");
        if (!raw) return raw.error();
        storage::Statement st(db_, raw->get());
        for (;;) {
            auto row = st.step();
            if (!row) return row.error();
            if (!*row || stopped) break;
            const std::string uri(st.text(1));
            source_uris.emplace(st.int64(0), uri);
            const Term subject = schema::iri(uri);
            batch.push_back(Triple{subject, type, entity, graph});
            const auto kind = st.int64(2);
            if (kind == static_cast<std::int64_t>(SourceKind::kDocument)) {
                batch.push_back(Triple{subject, type, schema::iri(vocab::kDocument), graph});
            } else if (kind == static_cast<std::int64_t>(SourceKind::kChunk)) {
                batch.push_back(Triple{subject, type, schema::iri(vocab::kChunk), graph});
                if (!st.text(3).empty()) batch.push_back(Triple{subject, derived, schema::iri(st.text(3)), graph});
            }
            batch.push_back(Triple{subject, tier, schema::xsd_integer(st.int64(4)), graph});
            if (!st.text(5).empty()) batch.push_back(Triple{subject, generated, schema::xsd_datetime(st.text(5)), graph});
            flush(false);
        }
    }
    for (const char* sql : {"SELECT s, p, o, src FROM graph_quads", "SELECT s, p, o, source FROM graph_fact_sources"}) {
        auto raw = db_.prepare_once(sql);
        if (!raw) return raw.error();
        storage::Statement st(db_, raw->get());
        for (;;) {
            if (stopped) return {};
            auto row = st.step();
            if (!row) return row.error();
            if (!*row) break;
            const std::int64_t ids[3] = {st.int64(0), st.int64(1), st.int64(2)};
            const auto source = source_uris.find(st.int64(3));
            if (source == source_uris.end()) continue;
            Triple fact;
            Term* members[3] = {&fact.s, &fact.p, &fact.o};
            for (int i = 0; i < 3; ++i) {
                auto term = decode(ids[i]);
                if (!term) return term.error();
                *members[i] = std::move(*term);
            }
            batch.push_back(Triple{schema::quoted(std::move(fact)), derived, schema::iri(source->second), graph});
            flush(false);
        }
    }
    flush(true);
    return {};
}

// ---- staged (bulk) loads --------------------------------------------------------------------

namespace {

// A staged load untouched this long was abandoned (its client died): the next stage or commit
// drops it.
constexpr std::int64_t kStaleStagingSeconds = 24 * 60 * 60;
constexpr std::size_t kStagedQuadBytes = 5 * 8;

Result<void> check_load_name(std::string_view load) {
    bool ok = !load.empty() && load.size() <= 64;
    for (const char c : load) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.');
    }
    if (ok) return {};
    return make_error(ErrorType::kInvalidRequest,
                      "load \"" + std::string(load.substr(0, 80)) + "\" is not a valid staged-load name: 1-64 of "
                                                                     "A-Z a-z 0-9 _ - .");
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Little-endian, so a file moved between machines still reads.
void put_i64(std::string& out, std::int64_t value) {
    auto u = static_cast<std::uint64_t>(value);
    char bytes[8];
    for (char& b : bytes) {
        b = static_cast<char>(u & 0xFF);
        u >>= 8;
    }
    out.append(bytes, 8);
}

std::int64_t get_i64(const std::byte* in) {
    std::uint64_t u = 0;
    for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<std::uint64_t>(in[i]);
    return static_cast<std::int64_t>(u);
}

}  // namespace

struct GraphStore::StagedQuad {
    std::int64_t s, p, o, g, src;
};

namespace {

// `glassbox_quad_feed`: an eponymous virtual table whose rows are an in-memory array of this
// thread's current feed, so a sorted run is written by one INSERT ... SELECT (SQLite appends
// row after row inside one statement) instead of one statement step per row.
struct Feed {
    const std::int64_t* rows = nullptr;
    std::size_t count = 0;
    std::size_t stride = 0;      // int64s per row
    std::array<int, 5> map{};    // column -> index in a row
};
thread_local const Feed* current_feed = nullptr;

struct FeedCursor {
    sqlite3_vtab_cursor base;
    std::size_t at;
};

int feed_connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
    const int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(c0 INTEGER, c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER)");
    if (rc != SQLITE_OK) return rc;
    auto* table = static_cast<sqlite3_vtab*>(sqlite3_malloc(sizeof(sqlite3_vtab)));
    if (table == nullptr) return SQLITE_NOMEM;
    *table = sqlite3_vtab{};
    *out = table;
    return SQLITE_OK;
}
int feed_disconnect(sqlite3_vtab* table) {
    sqlite3_free(table);
    return SQLITE_OK;
}
int feed_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
    info->estimatedCost = 1e6;
    return SQLITE_OK;
}
int feed_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    auto* cursor = static_cast<FeedCursor*>(sqlite3_malloc(sizeof(FeedCursor)));
    if (cursor == nullptr) return SQLITE_NOMEM;
    *cursor = FeedCursor{};
    *out = &cursor->base;
    return SQLITE_OK;
}
int feed_close(sqlite3_vtab_cursor* cursor) {
    sqlite3_free(cursor);
    return SQLITE_OK;
}
int feed_filter(sqlite3_vtab_cursor* cursor, int, const char*, int, sqlite3_value**) {
    reinterpret_cast<FeedCursor*>(cursor)->at = 0;
    return SQLITE_OK;
}
int feed_next(sqlite3_vtab_cursor* cursor) {
    ++reinterpret_cast<FeedCursor*>(cursor)->at;
    return SQLITE_OK;
}
int feed_eof(sqlite3_vtab_cursor* cursor) {
    return current_feed == nullptr || reinterpret_cast<FeedCursor*>(cursor)->at >= current_feed->count;
}
int feed_column(sqlite3_vtab_cursor* cursor, sqlite3_context* context, int column) {
    const auto at = reinterpret_cast<FeedCursor*>(cursor)->at;
    if (current_feed == nullptr || column < 0 || column >= 5 || at >= current_feed->count) {
        sqlite3_result_null(context);
        return SQLITE_OK;
    }
    sqlite3_result_int64(context, current_feed->rows[at * current_feed->stride +
                                                     static_cast<std::size_t>(current_feed->map[static_cast<std::size_t>(column)])]);
    return SQLITE_OK;
}
int feed_rowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
    *rowid = static_cast<sqlite3_int64>(reinterpret_cast<FeedCursor*>(cursor)->at);
    return SQLITE_OK;
}

sqlite3_module make_feed_module() {
    sqlite3_module module{};
    module.iVersion = 0;
    module.xCreate = nullptr;  // eponymous only: used by its name, never created
    module.xConnect = feed_connect;
    module.xBestIndex = feed_best_index;
    module.xDisconnect = feed_disconnect;
    module.xDestroy = feed_disconnect;
    module.xOpen = feed_open;
    module.xClose = feed_close;
    module.xFilter = feed_filter;
    module.xNext = feed_next;
    module.xEof = feed_eof;
    module.xColumn = feed_column;
    module.xRowid = feed_rowid;
    return module;
}
const sqlite3_module feed_module = make_feed_module();

}  // namespace

int detail::register_quad_feed(sqlite3* db) {
    return sqlite3_create_module_v2(db, "glassbox_quad_feed", &feed_module, nullptr, nullptr);
}

namespace {

// Runs `sql` (an INSERT ... SELECT c0.. FROM glassbox_quad_feed) over `feed`.
Result<std::int64_t> run_feed(storage::Database& db, const char* sql, const Feed& feed) {
    auto st = db.prepare(sql);
    if (!st) return st.error();
    current_feed = &feed;
    auto r = st->run();
    current_feed = nullptr;
    if (!r) return r.error();
    return db.changes();
}

}  // namespace

Result<void> GraphStore::drop_stale_staging() {
    auto st = db_.prepare("SELECT DISTINCT load FROM graph_staged_quads WHERE staged_at < ?1");
    if (!st) return st.error();
    st->bind(1, unix_now() - kStaleStagingSeconds);
    std::vector<std::string> stale;
    for (;;) {
        auto row = st->step();
        if (!row) return row.error();
        if (!*row) break;
        stale.emplace_back(st->text(0));
    }
    st->reset();
    for (const auto& load : stale) {
        for (const char* sql : {"DELETE FROM graph_staged_quads WHERE load = ?1",
                                "DELETE FROM graph_staged_sources WHERE load = ?1"}) {
            auto del = db_.prepare(sql);
            if (!del) return del.error();
            del->bind(1, std::string_view{load});
            if (auto r = del->run(); !r) return r.error();
        }
    }
    return {};
}

Result<std::uint64_t> GraphStore::stage(std::string_view load, const SourceRecord& source,
                                        std::span<const Triple> triples) {
    if (auto r = check_load_name(load); !r) return r.error();
    if (source.uri.empty()) return make_error(ErrorType::kInvalidRequest, "source: empty uri");
    if (source.tier < 1 || source.tier > 4) {
        return make_error(ErrorType::kInvalidRequest, "source " + source.uri + ": tier " +
                                                          std::to_string(source.tier) + " is not in 1..4");
    }
    if (source.kind == SourceKind::kChunk && source.document_uri.empty()) {
        return make_error(ErrorType::kInvalidRequest, "source " + source.uri + ": a chunk needs its document_uri");
    }
    for (std::size_t i = 0; i < triples.size(); ++i) {
        if (auto why = detail::check_triple(triples[i]); !why.empty()) {
            return make_error(ErrorType::kInvalidRequest, "triple " + std::to_string(i) + " (" +
                                                              schema::to_ntriples(triples[i]).substr(0, 200) +
                                                              "): " + why);
        }
    }
    auto tx = storage::Transaction::begin(db_, storage::Transaction::Kind::kImmediate);
    if (!tx) return tx.error();
    const auto fail = [this](const base::Error& error) -> Result<std::uint64_t> {
        forget_cached_terms();  // ids cached meanwhile are rolled back with the transaction
        return error;
    };
    KnownTermsScope known{*this};
    if (auto r = sync_known_terms(); !r) return fail(r.error());
    // The load's number for this source (staged sources are registered at commit).
    std::int64_t n = 0;
    {
        auto st = db_.prepare("SELECT n FROM graph_staged_sources WHERE load = ?1 AND uri = ?2");
        if (!st) return fail(st.error());
        st->bind(1, load).bind(2, std::string_view{source.uri});
        auto row = st->step();
        if (!row) return fail(row.error());
        if (*row) n = st->int64(0);
    }
    if (n == 0) {
        auto count = db_.prepare("SELECT count(*) FROM graph_staged_sources WHERE load = ?1");
        if (!count) return fail(count.error());
        count->bind(1, load);
        auto row = count->step();
        if (!row) return fail(row.error());
        n = (*row ? count->int64(0) : 0) + 1;
        if (n == 1) {
            count->reset();
            if (auto r = drop_stale_staging(); !r) return fail(r.error());
        }
    }
    {
        auto st = db_.prepare(
            "INSERT INTO graph_staged_sources(load, uri, n, kind, document_uri, tier, loaded_at, media_type) "
            "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(load, uri) DO UPDATE SET kind = excluded.kind, "
            "document_uri = excluded.document_uri, tier = excluded.tier, loaded_at = excluded.loaded_at, "
            "media_type = excluded.media_type");
        if (!st) return fail(st.error());
        st->bind(1, load)
            .bind(2, std::string_view{source.uri})
            .bind(3, n)
            .bind(4, static_cast<std::int64_t>(source.kind))
            .bind(5, std::string_view{source.document_uri})
            .bind(6, static_cast<std::int64_t>(source.tier))
            .bind(7, std::string_view{source.loaded_at})
            .bind(8, std::string_view{source.media_type});
        if (auto r = st->run(); !r) return fail(r.error());
    }
    if (!triples.empty()) {
        std::string blob;
        blob.reserve(triples.size() * kStagedQuadBytes);
        StatementMemo memo;
        for (const auto& triple : triples) {
            auto ids = intern_statement(triple, memo);
            if (!ids) return fail(ids.error());
            for (const auto value : {(*ids)[0], (*ids)[1], (*ids)[2], (*ids)[3], n}) put_i64(blob, value);
        }
        auto st = db_.prepare(
            "INSERT INTO graph_staged_quads(load, statements, staged_at, quads) VALUES(?1, ?2, ?3, ?4)");
        if (!st) return fail(st.error());
        st->bind(1, load)
            .bind(2, static_cast<std::int64_t>(triples.size()))
            .bind(3, unix_now())
            .bind_blob(4, std::string_view{blob});
        if (auto r = st->run(); !r) return fail(r.error());
    }
    if (auto r = tx->commit(); !r) return fail(r.error());
    return static_cast<std::uint64_t>(triples.size());
}

Result<void> GraphStore::abort_staged(std::string_view load) {
    if (auto r = check_load_name(load); !r) return r.error();
    auto tx = storage::Transaction::begin(db_, storage::Transaction::Kind::kImmediate);
    if (!tx) return tx.error();
    for (const char* sql :
         {"DELETE FROM graph_staged_quads WHERE load = ?1", "DELETE FROM graph_staged_sources WHERE load = ?1"}) {
        auto del = db_.prepare(sql);
        if (!del) return del.error();
        del->bind(1, load);
        if (auto r = del->run(); !r) return r.error();
    }
    return tx->commit();
}

Result<InsertCounts> GraphStore::commit_staged(std::string_view load) {
    if (auto r = check_load_name(load); !r) return r.error();
    auto tx = storage::Transaction::begin(db_, storage::Transaction::Kind::kImmediate);
    if (!tx) return tx.error();
    InsertCounts counts;
    // The load's sources, registered now: local number -> source id.
    std::unordered_map<std::int64_t, std::int64_t> source_ids;
    {
        std::vector<std::pair<std::int64_t, SourceRecord>> staged;
        auto st = db_.prepare(
            "SELECT n, uri, kind, document_uri, tier, loaded_at, media_type FROM graph_staged_sources "
            "WHERE load = ?1 ORDER BY n");
        if (!st) return st.error();
        st->bind(1, load);
        for (;;) {
            auto row = st->step();
            if (!row) return row.error();
            if (!*row) break;
            SourceRecord record;
            record.uri = st->text(1);
            record.kind = static_cast<SourceKind>(std::clamp<std::int64_t>(st->int64(2), 0, 2));
            record.document_uri = st->text(3);
            record.tier = static_cast<std::uint32_t>(st->int64(4));
            record.loaded_at = st->text(5);
            record.media_type = st->text(6);
            staged.emplace_back(st->int64(0), std::move(record));
        }
        st->reset();
        for (const auto& [n, record] : staged) {
            auto id = register_source(record);
            if (!id) return id.error();
            source_ids.emplace(n, *id);
        }
    }
    std::uint64_t statements = 0;
    bool fresh = false;  // no quad stored yet: the first group cannot meet a present one
    {
        auto st = db_.prepare("SELECT NOT EXISTS (SELECT 1 FROM graph_quads)");
        if (!st) return st.error();
        auto row = st->step();
        if (!row) return row.error();
        fresh = *row && st->int64(0) == 1;
    }
    {
        std::vector<StagedQuad> group;
        auto raw = db_.prepare_once("SELECT statements, quads FROM graph_staged_quads WHERE load = ?1 ORDER BY id");
        if (!raw) return raw.error();
        storage::Statement st(db_, raw->get());
        st.bind(1, load);
        for (;;) {
            auto row = st.step();
            if (!row) return row.error();
            if (!*row) break;
            const auto bytes = st.blob(1);
            if (bytes.size() % kStagedQuadBytes != 0 ||
                bytes.size() / kStagedQuadBytes != static_cast<std::uint64_t>(st.int64(0))) {
                return make_error(ErrorType::kInternal, "graph store: a staged batch of load " + std::string(load) +
                                                            " is damaged");
            }
            for (std::size_t at = 0; at < bytes.size(); at += kStagedQuadBytes) {
                const std::byte* q = bytes.data() + at;
                const auto source = source_ids.find(get_i64(q + 32));
                if (source == source_ids.end()) {
                    return make_error(ErrorType::kInternal,
                                      "graph store: a staged quad of load " + std::string(load) + " has no source");
                }
                group.push_back({get_i64(q), get_i64(q + 8), get_i64(q + 16), get_i64(q + 24), source->second});
                ++statements;
            }
            if (group.size() >= std::max<std::size_t>(1, options_.staged_commit_group)) {
                if (auto r = commit_group(group, counts, fresh); !r) return r.error();
                fresh = false;
            }
        }
        if (auto r = commit_group(group, counts, fresh); !r) return r.error();
    }
    for (const char* sql :
         {"DELETE FROM graph_staged_quads WHERE load = ?1", "DELETE FROM graph_staged_sources WHERE load = ?1"}) {
        auto del = db_.prepare(sql);
        if (!del) return del.error();
        del->bind(1, load);
        if (auto r = del->run(); !r) return r.error();
    }
    if (auto r = drop_stale_staging(); !r) return r.error();
    if (auto r = tx->commit(); !r) return r.error();
    counts.already_present = statements - counts.added;
    return counts;
}

// Writes one group of staged quads: SPO in key order (the first source of a new fact is its
// lowest source id, i.e. the load's first file that has it), links for every further source,
// then the new quads into POS and OSP, each sorted into its own key order and written by one
// INSERT ... SELECT from the feed. When the graph held no quad before (`fresh`), no quad of the
// group can be present, and SPO too is written from the feed.
namespace {

// The new quads of a staged commit, sorted into POS and OSP key order.
struct SortedOrders {
    std::vector<detail::Quad> pos;
    std::vector<detail::Quad> osp;
};

SortedOrders sort_orders(std::vector<detail::Quad> rows) {
    // OSP on a thread of its own (a copy), POS here (the rows themselves): both at once.
    auto osp = std::async(std::launch::async, [copy = rows]() mutable {
        std::sort(copy.begin(), copy.end(), [](const detail::Quad& a, const detail::Quad& b) {
            return std::tie(a.o, a.s, a.p, a.g) < std::tie(b.o, b.s, b.p, b.g);
        });
        return copy;
    });
    std::sort(rows.begin(), rows.end(), [](const detail::Quad& a, const detail::Quad& b) {
        return std::tie(a.p, a.o, a.s, a.g) < std::tie(b.p, b.o, b.s, b.g);
    });
    return SortedOrders{std::move(rows), osp.get()};
}

}  // namespace

Result<void> GraphStore::commit_group(std::vector<StagedQuad>& group, InsertCounts& counts, bool fresh) {
    // The feed reads both as arrays of int64 rows.
    static_assert(sizeof(StagedQuad) == 5 * sizeof(std::int64_t));
    static_assert(sizeof(detail::Quad) == 4 * sizeof(std::int64_t));
    if (group.empty()) return {};
    std::sort(group.begin(), group.end(), [](const StagedQuad& a, const StagedQuad& b) {
        return std::tie(a.s, a.p, a.o, a.g, a.src) < std::tie(b.s, b.p, b.o, b.g, b.src);
    });
    std::vector<detail::Quad> added;
    added.reserve(group.size());
    // When the group is all new, sorting the new quads into POS and OSP order runs beside the
    // SPO writes; an early return waits for it (the future's destructor).
    std::future<SortedOrders> orders;
    const auto same_quad = [](const StagedQuad& a, const StagedQuad& b) {
        return a.s == b.s && a.p == b.p && a.o == b.o && a.g == b.g;
    };
    const auto link = [this](const StagedQuad& q, std::int64_t source) -> Result<void> {
        auto st = db_.prepare(
            "INSERT OR IGNORE INTO graph_fact_sources(s, p, o, g, source) VALUES(?1, ?2, ?3, ?4, ?5)");
        if (!st) return st.error();
        st->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g).bind(5, source);
        return st->run();
    };
    if (fresh) {
        // Deduplicated in place: the first of each run of equal quads (its lowest source) stays.
        std::vector<std::pair<std::size_t, std::int64_t>> links;  // (index in the kept rows, source)
        std::size_t kept = 0;
        for (std::size_t i = 0; i < group.size();) {
            std::size_t end = i + 1;
            while (end < group.size() && same_quad(group[i], group[end])) ++end;
            for (std::size_t k = i + 1; k < end; ++k) {
                if (group[k].src != group[k - 1].src) links.emplace_back(kept, group[k].src);
            }
            group[kept++] = group[i];
            i = end;
        }
        group.resize(kept);
        // The other two orders are sorted on a second core while SPO is written.
        for (const auto& q : group) added.push_back({q.s, q.p, q.o, q.g});
        orders = std::async(std::launch::async, sort_orders, std::move(added));
        Feed feed{reinterpret_cast<const std::int64_t*>(group.data()), group.size(), 5, {0, 1, 2, 3, 4}};
        auto n = run_feed(db_, "INSERT INTO graph_quads(s, p, o, g, src) SELECT c0, c1, c2, c3, c4 FROM glassbox_quad_feed",
                          feed);
        if (!n) return n.error();
        if (static_cast<std::size_t>(*n) != group.size()) {
            return make_error(ErrorType::kInternal, "graph store: a staged commit wrote " + std::to_string(*n) +
                                                        " of " + std::to_string(group.size()) + " new quads");
        }
        counts.added += group.size();
        for (const auto& [index, source] : links) {
            if (auto r = link(group[index], source); !r) return r;
        }
    } else {
        auto insert_quad =
            db_.prepare("INSERT OR IGNORE INTO graph_quads(s, p, o, g, src) VALUES(?1, ?2, ?3, ?4, ?5)");
        if (!insert_quad) return insert_quad.error();
        for (std::size_t i = 0; i < group.size();) {
            std::size_t end = i + 1;
            while (end < group.size() && same_quad(group[i], group[end])) ++end;
            const StagedQuad& q = group[i];
            insert_quad->reset();
            insert_quad->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g).bind(5, q.src);
            if (auto r = insert_quad->run(); !r) return r.error();
            std::int64_t first_source = q.src;
            if (db_.changes() == 1) {
                ++counts.added;
                added.push_back({q.s, q.p, q.o, q.g});
            } else {
                auto st = db_.prepare("SELECT src FROM graph_quads WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
                if (!st) return st.error();
                st->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g);
                auto row = st->step();
                if (!row) return row.error();
                if (*row) first_source = st->int64(0);
            }
            for (std::size_t k = i; k < end; ++k) {
                if (group[k].src == first_source || (k > i && group[k].src == group[k - 1].src)) continue;
                if (auto r = link(group[k], group[k].src); !r) return r;
            }
            i = end;
        }
    }
    group.clear();
    // POS then OSP: sorted into the order's key, written by one statement each.
    const SortedOrders sorted = orders.valid() ? orders.get() : sort_orders(std::move(added));
    Feed pos{reinterpret_cast<const std::int64_t*>(sorted.pos.data()), sorted.pos.size(), 4, {1, 2, 0, 3, 3}};
    if (auto r = run_feed(db_, "INSERT OR IGNORE INTO graph_pos(p, o, s, g) SELECT c0, c1, c2, c3 FROM glassbox_quad_feed",
                          pos);
        !r) {
        return r.error();
    }
    Feed osp{reinterpret_cast<const std::int64_t*>(sorted.osp.data()), sorted.osp.size(), 4, {2, 0, 1, 3, 3}};
    if (auto r = run_feed(db_, "INSERT OR IGNORE INTO graph_osp(o, s, p, g) SELECT c0, c1, c2, c3 FROM glassbox_quad_feed",
                          osp);
        !r) {
        return r.error();
    }
    return {};
}

}  // namespace glassbox::store
