// The knowledge-graph store on SQLite or PostgreSQL: the quad tables and their orders, inserting,
// matching, stats and the provenance export; terms, sources, labels and staged loads have files
// of their own.
#include "workers/store/graph_store.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "base/time_format.hpp"
#include "schema/vocabulary.hpp"
#include "storage/feed_rows.hpp"
#include "workers/store/staged_load.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;
using detail::StoredKind;
using schema::Term;
using schema::Triple;

// ---- opening -------------------------------------------------------------------------------

namespace {

// What only PostgreSQL keeps beside the tables both engines share, created or brought up to date
// in create_schema's transaction.
Result<void> create_postgres_only_tables(storage::sql::Connection& db) {
    // A staged batch is kept uncompressed (EXTERNAL): pglz gains little on packed integer ids and
    // cost over 100 ms per batch of 50,000 quads (bench_graph --postgres). Older collections are
    // altered once; the catalog is read first, since the ALTER takes an exclusive lock. A role
    // that may not alter the table leaves it compressed, which is only slower.
    if (auto r = db.exec(
            "DO $$BEGIN IF (SELECT attstorage FROM pg_attribute WHERE attrelid = "
            "'graph_staged_quads'::regclass AND attname = 'quads') <> 'e' THEN ALTER TABLE "
            "graph_staged_quads ALTER COLUMN quads SET STORAGE EXTERNAL; END IF; EXCEPTION WHEN "
            "insufficient_privilege THEN NULL; END$$");
        !r) {
        return r.error();
    }
    return {};
}

// The collection's change number (graph_version, moved by note_graph_change in every write
// transaction) and the number its SPARQL mirror last sent (sparql_mirrored; sparql_mirror.hpp).
// A new collection's number starts at the time in microseconds, not 0, so a collection deleted
// and made again under the same name never repeats a number its mirror recorded.
Result<void> create_change_tables(storage::sql::Connection& db) {
    const auto start = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    std::string sql =
        "CREATE TABLE IF NOT EXISTS graph_version(id BIGINT PRIMARY KEY, n BIGINT NOT NULL, "
        "writer BIGINT NOT NULL); INSERT INTO graph_version(id, n, writer) VALUES(1, ";
    sql.append(std::to_string(start));
    sql.append(
        ", 0) ON CONFLICT DO NOTHING; CREATE TABLE IF NOT EXISTS sparql_mirrored(id BIGINT "
        "PRIMARY KEY, version BIGINT NOT NULL)");
    return db.exec(sql);
}

}  // namespace

GraphStore::GraphStore(storage::sql::Connection& db, GraphStoreOptions options)
    : db_(db),
      options_(options),
      dictionary_(db, options_.term_cache_entries, options_.known_term_limit,
                  options_.decode_cache_entries),
      labels_(options_.label_cache_entries) {}

Result<std::unique_ptr<GraphStore>> GraphStore::open(storage::sql::Connection& db,
                                                     GraphStoreOptions options) {
    std::unique_ptr<GraphStore> store(new GraphStore(db, options));
    if (auto r = store->create_schema(); !r) return r.error();
    if (auto r = store->migrate_index_tables(); !r) return r.error();
    // Registering again on the same connection (another GraphStore) replaces it with itself.
    if (auto r = storage::sql::register_row_feed(db, kQuadFeedTable); !r) return r.error();
    return store;
}

Result<void> GraphStore::create_schema() {
    // Quads are WITHOUT ROWID with integer columns: graph_quads is the SPO order (with `src`),
    // graph_pos and graph_osp the POS and OSP orders of the same quads, each its own table so a
    // staged load can write each order in key order (a secondary index can only be written in
    // the table's order, i.e. at random, or rebuilt whole). `src` is the first source of a fact
    // (most facts have one); further sources go to graph_fact_sources. GSPO is an index that
    // holds named graphs only (g = 0 is the default graph, which SPO already orders), so a
    // default-graph quad is three B-tree entries, not four. On PostgreSQL the same tables are
    // ordinary heaps with these primary keys (ddl_for), created under the writer lock so that two
    // workers opening a new collection at once do not race (its DDL is transactional).
    static const std::string_view kSchema = R"sql(
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
  source_date TEXT NOT NULL DEFAULT '',
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
CREATE TABLE IF NOT EXISTS graph_unembedded_entities(
  id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS graph_sources(
  id INTEGER PRIMARY KEY,
  uri TEXT NOT NULL UNIQUE,
  kind INTEGER NOT NULL,
  document_uri TEXT NOT NULL,
  tier INTEGER NOT NULL,
  loaded_at TEXT NOT NULL,
  media_type TEXT NOT NULL,
  source_date TEXT NOT NULL DEFAULT '');
)sql";
    if (db_.dialect() == storage::sql::Dialect::kSqlite) {
        if (auto r = db_.exec(kSchema); !r) return r;
        return create_change_tables(db_);
    }
    auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    if (auto r = db_.exec(storage::sql::ddl_for(db_.dialect(), kSchema)); !r) return r.error();
    if (auto r = create_change_tables(db_); !r) return r.error();
    if (auto r = create_postgres_only_tables(db_); !r) return r.error();
    return tx->commit();
}

// Files written before graph_pos / graph_osp existed kept those orders as indexes of
// graph_quads: copy them into the tables (in key order) and drop the indexes, once.
Result<void> GraphStore::migrate_index_tables() {
    // PostgreSQL collections were created with the tables.
    if (db_.dialect() != storage::sql::Dialect::kSqlite) return {};
    const auto has_old_index = [this]() -> Result<bool> {
        auto st = db_.prepare(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
            "('graph_quads_pos', 'graph_quads_osp')");
        if (!st) return st.error();
        auto count = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        if (!count) return count.error();
        return count->value_or(0) > 0;
    };
    auto old = has_old_index();
    if (!old) return old.error();
    if (!*old) return {};
    auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    old = has_old_index();  // another process may have migrated meanwhile
    if (!old) return old.error();
    if (!*old) return {};
    if (auto r =
            db_.exec("DELETE FROM graph_pos; DELETE FROM graph_osp;"
                     "INSERT INTO graph_pos(p, o, s, g) SELECT p, o, s, g FROM graph_quads ORDER "
                     "BY p, o, s, g;"
                     "INSERT INTO graph_osp(o, s, p, g) SELECT o, s, p, g FROM graph_quads ORDER "
                     "BY o, s, p, g;"
                     "DROP INDEX IF EXISTS graph_quads_pos; DROP INDEX IF EXISTS graph_quads_osp;");
        !r) {
        return r.error();
    }
    return tx->commit();
}

// ---- sources -------------------------------------------------------------------------------

Result<std::int64_t> GraphStore::register_source(const SourceRecord& source) {
    // A write transaction (on PostgreSQL only the writer lock keeps another process from taking
    // the same next id meanwhile) that also moves the change number: the source's tier and dates
    // are part of what the collection states (its SPARQL mirror sends them).
    const auto store_and_note = [&]() -> Result<std::int64_t> {
        auto id = store_source(db_, source);
        if (!id) return id;
        if (auto r = note_graph_change(db_); !r) return r.error();
        return id;
    };
    if (db_.in_transaction()) return store_and_note();
    auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    auto id = store_and_note();
    if (!id) return id;
    if (auto r = tx->commit(); !r) return r.error();
    return id;
}

// ---- the term dictionary -------------------------------------------------------------------

void GraphStore::forget_cached_terms() noexcept { dictionary_.forget_cached_terms(); }

Result<std::optional<std::int64_t>> GraphStore::find_term(const Term& term) {
    return dictionary_.lookup_id(term);
}

Result<std::vector<Term>> GraphStore::terms(std::span<const std::int64_t> ids) {
    // PostgreSQL: the uncached ones read by one statement, not a round trip each.
    if (auto r = dictionary_.prefetch_terms(ids); !r) return r.error();
    std::vector<Term> out;
    out.reserve(ids.size());
    for (const auto id : ids) {
        auto term = dictionary_.decode(id);
        if (!term) return term.error();
        out.push_back(std::move(*term));
    }
    return out;
}

// ---- inserting -----------------------------------------------------------------------------

Result<InsertCounts> GraphStore::insert(std::int64_t source_id, std::span<const Triple> triples,
                                        TransactionMode mode) {
    // Everything is checked before anything is written.
    if (auto r = detail::check_triples(triples); !r) return r.error();
    if (mode == TransactionMode::kOwn) {
        auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
        if (!tx) return tx.error();
        TermDictionary::KnownTermsScope known{dictionary_};
        if (auto r = dictionary_.sync_known_terms(); !r) return r.error();
        auto counts = insert_rows(source_id, triples);
        // Even with nothing added: a fact already present may have gained this source.
        if (counts) {
            if (auto r = note_graph_change(db_); !r) counts = r.error();
        }
        if (counts) {
            if (auto r = tx->commit(); !r) {
                dictionary_.forget_cached_terms();
                return r.error();
            }
            return counts;
        }
        dictionary_.forget_cached_terms();  // ids cached during the call are rolled back with it
        return counts;
    }
    if (auto r = db_.exec("SAVEPOINT graph_insert"); !r) return r.error();
    dictionary_.set_caching(false);
    auto counts = insert_rows(source_id, triples);
    if (counts) {
        if (auto r = note_graph_change(db_); !r) counts = r.error();
    }
    dictionary_.set_caching(true);
    if (!counts) {
        (void)db_.exec("ROLLBACK TO graph_insert; RELEASE graph_insert");
        return counts;
    }
    if (auto r = db_.exec("RELEASE graph_insert"); !r) return r.error();
    return counts;
}

Result<InsertCounts> GraphStore::insert_rows(std::int64_t source_id,
                                             std::span<const Triple> triples) {
    {
        auto st = db_.prepare("SELECT 1 FROM graph_sources WHERE id = ?1");
        if (!st) return st.error();
        st->bind(1, source_id);
        auto found = st->first([](const storage::sql::Row&) { return true; });
        if (!found) return found.error();
        if (!*found) {
            return make_error(ErrorType::kNotFound, "graph store: no source with id " +
                                                        std::to_string(source_id) +
                                                        " (register it first)");
        }
    }
    if (db_.dialect() != storage::sql::Dialect::kSqlite)
        return insert_rows_by_sets(source_id, triples);
    std::vector<detail::Quad> quads;
    quads.reserve(triples.size());
    TermDictionary::StatementMemo memo;
    for (const auto& triple : triples) {
        auto ids = dictionary_.intern_statement(triple, memo);
        if (!ids) return ids.error();
        quads.push_back({(*ids)[0], (*ids)[1], (*ids)[2], (*ids)[3]});
    }
    // Key order makes the primary-key inserts append-like and groups the index writes.
    std::sort(quads.begin(), quads.end());
    const auto unique_end = std::unique(quads.begin(), quads.end());
    InsertCounts counts;
    counts.already_present =
        static_cast<std::uint64_t>(quads.end() - unique_end);  // repeats in the call
    quads.erase(unique_end, quads.end());

    // Prepared once for the loop (finding a cached statement hashes its SQL text).
    auto insert_quad = db_.prepare(
        "INSERT INTO graph_quads(s, p, o, g, src) VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT DO "
        "NOTHING");
    if (!insert_quad) return insert_quad.error();
    auto insert_pos = db_.prepare(
        "INSERT INTO graph_pos(p, o, s, g) VALUES(?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING");
    if (!insert_pos) return insert_pos.error();
    auto insert_osp = db_.prepare(
        "INSERT INTO graph_osp(o, s, p, g) VALUES(?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING");
    if (!insert_osp) return insert_osp.error();
    storage::sql::Statement& pos = *insert_pos;
    storage::sql::Statement& osp = *insert_osp;
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
        auto first_source = first_source_of(db_, q.s, q.p, q.o, q.g);
        if (!first_source) return first_source.error();
        if (first_source->value_or(0) == source_id) continue;
        if (auto r = link_fact_source(db_, q.s, q.p, q.o, q.g, source_id); !r) return r.error();
    }
    return counts;
}

// PostgreSQL, where each statement is a round trip: the batch's distinct terms interned at once
// (TermBatch; statement by statement only when it holds a quoted triple) and the quads written
// as a staged commit writes a group, by a few statements for the whole call.
Result<InsertCounts> GraphStore::insert_rows_by_sets(std::int64_t source_id,
                                                     std::span<const Triple> triples) {
    auto batch = TermBatch::build(triples);
    if (!batch) return batch.error();
    StagedLoads::StagedQuads group;
    group.reserve(triples.size());
    if (batch->by_statement()) {
        TermDictionary::StatementMemo memo;
        for (const auto& triple : triples) {
            auto ids = dictionary_.intern_statement(triple, memo);
            if (!ids) return ids.error();
            group.push_back({(*ids)[0], (*ids)[1], (*ids)[2], (*ids)[3], source_id});
        }
    } else {
        auto ids = dictionary_.intern_batch(*batch);
        if (!ids) return ids.error();
        const auto id_of = [&ids](std::uint32_t at) {
            return at == TermBatch::kDefaultGraph ? std::int64_t{0} : (*ids)[at];
        };
        for (const auto& at : batch->statements())
            group.push_back({id_of(at[0]), id_of(at[1]), id_of(at[2]), id_of(at[3]), source_id});
    }
    InsertCounts counts;
    StagedLoads writer(db_, dictionary_, options_.staged_commit_group);
    if (auto r = writer.commit_group(group, counts, false); !r) return r.error();
    counts.already_present = triples.size() - counts.added;
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
// needs no further lookup; SQLite's CROSS JOIN keeps the quad table the outer loop (PostgreSQL
// has no such hint and no CROSS JOIN with ON: its planner picks the loop from the key).
struct MatchOrder {
    const char* table = "graph_quads";
    const char* order = "q.s, q.p, q.o, q.g";
};

MatchOrder match_order(const BoundPattern& b) {
    if (b.s) {
        if (b.o && !b.p) return {"graph_osp", "q.o, q.s, q.p, q.g"};
    } else if (b.p) {
        return {"graph_pos", "q.p, q.o, q.s, q.g"};
    } else if (b.o) {
        return {"graph_osp", "q.o, q.s, q.p, q.g"};
    } else if (b.g && *b.g != 0) {
        return {"graph_quads", "q.g, q.s, q.p, q.o"};
    }
    return {};
}

// The WHERE clause of a pattern (match_sql's and count_sql's) and its placeholders, numbered
// in the order the bound positions come (bind_pattern's order), with no gap: PostgreSQL cannot
// type a parameter the statement does not use.
std::string match_where(const BoundPattern& b, int& placeholders) {
    std::string where;
    const auto add = [&](bool bound, const char* condition, bool numbered) {
        if (!bound) return;
        where += where.empty() ? " WHERE " : " AND ";
        where += condition;
        if (numbered) where += std::to_string(++placeholders);
    };
    add(b.s.has_value(), "q.s = ?", true);
    add(b.p.has_value(), "q.p = ?", true);
    add(b.o.has_value(), "q.o = ?", true);
    add(b.g.has_value(), "q.g = ?", true);
    // Lets the planner use the partial GSPO index, which holds named graphs only.
    add(b.g.has_value() && *b.g != 0, "q.g != 0", false);
    return where;
}

std::string match_sql(const BoundPattern& b, bool limited, storage::sql::Dialect dialect) {
    const auto [table, order] = match_order(b);
    std::string sql = "SELECT q.s, q.p, q.o, q.g, t.kind, t.value, t.qualifier";
    if (dialect == storage::sql::Dialect::kSqlite) {
        sql += " FROM ";
        sql += table;
        sql += " AS q CROSS JOIN graph_terms AS t ON t.id = q.o";
    } else {
        // The subject's and predicate's terms too (columns 7-12, kSubjectColumn): a server is a
        // round trip away, and decoding them one by one would cost one per distinct term.
        sql += ", ts.kind, ts.value, ts.qualifier, tp.kind, tp.value, tp.qualifier FROM ";
        sql += table;
        sql +=
            " AS q JOIN graph_terms AS t ON t.id = q.o JOIN graph_terms AS ts ON ts.id = q.s JOIN "
            "graph_terms AS tp ON tp.id = q.p";
    }
    int placeholders = 0;
    sql += match_where(b, placeholders);
    sql += " ORDER BY ";
    sql += order;
    if (limited) sql += " LIMIT ?" + std::to_string(placeholders + 1);
    return sql;
}

// Which positions a pattern binds, and whether a named graph: what match_sql's text depends on
// (below kMatchShapes).
std::size_t match_shape(const BoundPattern& b) {
    return (b.s ? 1u : 0u) | (b.p ? 2u : 0u) | (b.o ? 4u : 0u) | (b.g ? 8u : 0u) |
           (b.g && *b.g != 0 ? 16u : 0u);
}

// The number of a pattern's matches up to a limit (the last placeholder), read from the key
// order's table alone: no term joined, no row decoded.
std::string count_sql(const BoundPattern& b) {
    int placeholders = 0;
    const std::string where = match_where(b, placeholders);
    return std::string("SELECT count(*) FROM (SELECT 1 FROM ") + match_order(b).table + " AS q" +
           where + " LIMIT ?" + std::to_string(placeholders + 1) + ")";
}

// The term whose kind, value and qualifier are the row's columns first.. first + 2; nullopt for
// a quoted triple (its parts are ids) or a kind decode() reports.
std::optional<Term> stored_term(const storage::sql::Row& row, int first) {
    switch (row.int64(first)) {
        case StoredKind::kIri:
            return Term(schema::Iri{std::string(row.text(first + 1))});
        case StoredKind::kBlank:
            return Term(schema::BlankNode{std::string(row.text(first + 1))});
        case StoredKind::kTypedLiteral:
            return Term(schema::Literal{
                std::string(row.text(first + 1)), std::string(row.text(first + 2)), {}});
        case StoredKind::kLangLiteral:
            return Term(schema::Literal{
                std::string(row.text(first + 1)), {}, std::string(row.text(first + 2))});
        default:
            return std::nullopt;
    }
}

// Where match_sql's PostgreSQL rows carry the subject's term (the predicate's follows it).
constexpr int kSubjectColumn = 7;

// PostgreSQL: the patterns of one shape (the same positions bound, the `shape`th of a batch)
// as part of one statement: the bound ids as arrays (?first …, one per bound position, in
// s p o g order), each pattern's rows read by a LATERAL subquery with match_sql's table, order
// and limit (the next placeholder). The rows are the quad's ids, the pattern's 1-based place in
// the arrays (kPlaceColumn) and the shape (kShapeColumn); the order of rows is not kept (the
// caller sorts each pattern's). Ids only: each key order's table answers from its index alone,
// and the terms are decoded from the cache, the missing ones read in one go.
std::string batch_sql(const BoundPattern& b, int first, std::size_t shape) {
    const auto [table, order] = match_order(b);
    std::string arrays;
    std::string names;
    std::string where;
    int n = first;
    const std::pair<bool, const char*> positions[4] = {{b.s.has_value(), "s"},
                                                       {b.p.has_value(), "p"},
                                                       {b.o.has_value(), "o"},
                                                       {b.g.has_value(), "g"}};
    for (const auto& [bound, name] : positions) {
        if (!bound) continue;
        arrays += (n > first ? ", ?" : "?") + std::to_string(n) + "::bigint[]";
        ++n;
        names += std::string(name) + ", ";
        where += std::string(where.empty() ? " WHERE " : " AND ") + "q." + name + " = b." + name;
    }
    if (n == first) {  // no position bound: the array only counts the patterns
        arrays = "?" + std::to_string(n) + "::bigint[]";
        ++n;
        names = "unused, ";
    }
    if (b.g && *b.g != 0) where += " AND q.g != 0";
    return "SELECT q.s, q.p, q.o, q.g, b.k, " + std::to_string(shape) + " FROM unnest(" + arrays +
           ") WITH ORDINALITY AS b(" + names + "k) CROSS JOIN LATERAL (SELECT q.s, q.p, q.o, q.g " +
           "FROM " + table + " AS q" + where + " ORDER BY " + order + " LIMIT ?" +
           std::to_string(n) + ") AS q";
}

constexpr int kPlaceColumn = 4;
constexpr int kShapeColumn = 5;

// Binds batch_sql's arrays for the patterns `members` (all of one shape) from placeholder
// `next` on; returns the next placeholder number. `arrays` keeps the bound texts alive until the
// statement is reset.
int bind_batch(storage::sql::Statement& st, const std::vector<std::optional<BoundPattern>>& bound,
               const std::vector<std::size_t>& members, std::array<std::string, 4>& arrays,
               int next) {
    const BoundPattern& shape = *bound[members.front()];
    const std::optional<std::int64_t> BoundPattern::*positions[4] = {
        &BoundPattern::s, &BoundPattern::p, &BoundPattern::o, &BoundPattern::g};
    const int first = next;
    for (std::size_t c = 0; c < 4; ++c) {
        const bool any_bound = (shape.*positions[c]).has_value();
        if (!any_bound && !(c == 3 && next == first)) continue;
        std::string& array = arrays[c];
        array = "{";
        for (std::size_t k = 0; k < members.size(); ++k) {
            if (k > 0) array.push_back(',');
            detail::append_id(array, (bound[members[k]].value().*positions[c]).value_or(0));
        }
        array.push_back('}');
        st.bind_static(next++, array);
    }
    return next;
}

// Sorts a pattern's quads into the key order of the table that answered it (match_order).
void sort_in_key_order(std::vector<detail::Quad>& quads, const BoundPattern& b) {
    const std::string_view order = match_order(b).order;
    const auto key = [order](const detail::Quad& q) {
        if (order.starts_with("q.p")) return std::tuple(q.p, q.o, q.s, q.g);
        if (order.starts_with("q.o")) return std::tuple(q.o, q.s, q.p, q.g);
        if (order.starts_with("q.g")) return std::tuple(q.g, q.s, q.p, q.o);
        return std::tuple(q.s, q.p, q.o, q.g);
    };
    std::sort(quads.begin(), quads.end(),
              [&key](const detail::Quad& a, const detail::Quad& b2) { return key(a) < key(b2); });
}

// Binds the pattern's bound positions as match_sql numbers them; returns the next number.
int bind_pattern(storage::sql::Statement& st, const BoundPattern& b) {
    int next = 1;
    for (const auto& id : {b.s, b.p, b.o, b.g}) {
        if (id) st.bind(next++, *id);
    }
    return next;
}

}  // namespace

std::size_t term_wire_bytes(const Term& term) noexcept {
    // {"t":"i","i":""} and the like: about 20 bytes of keys and punctuation per term.
    constexpr std::size_t kTermOverhead = 20;
    switch (term.kind()) {
        case Term::Kind::kIri:
            return kTermOverhead + term.as_iri().value.size();
        case Term::Kind::kBlankNode:
            return kTermOverhead + term.as_blank().id.size();
        case Term::Kind::kLiteral: {
            const auto& l = term.as_literal();
            return 2 * kTermOverhead + l.value.size() + l.datatype.size() + l.language.size();
        }
        case Term::Kind::kTriple:
            return kTermOverhead + triple_wire_bytes(term.as_triple());
    }
    return kTermOverhead;
}

std::size_t triple_wire_bytes(const Triple& triple) noexcept {
    // {"s":…,"p":…,"o":…,"g":""},
    constexpr std::size_t kTripleOverhead = 32;
    return kTripleOverhead + term_wire_bytes(triple.s) + term_wire_bytes(triple.p) +
           term_wire_bytes(triple.o) + (triple.graph ? triple.graph->size() : 0);
}

Result<std::vector<Triple>> GraphStore::match(const schema::TriplePattern& pattern,
                                              std::uint32_t limit, MatchBudget* budget) {
    return match_rows(pattern, limit, budget);
}

Result<std::vector<std::vector<Triple>>> GraphStore::match_batch(
    std::span<const schema::TriplePattern> patterns, std::uint32_t limit_per_pattern,
    MatchBudget* budget, std::vector<std::vector<std::int64_t>>* ids, FirstRows* first_rows) {
    storage::sql::ReadScope snapshot(db_);  // every pattern read from one snapshot, one read lock
    if (first_rows != nullptr) {
        first_rows->counts.clear();
        first_rows->counts.reserve(patterns.size());
    }
    if (db_.dialect() != storage::sql::Dialect::kSqlite)
        return match_batch_by_sets(patterns, limit_per_pattern, budget, ids, first_rows);
    std::vector<std::vector<Triple>> results;
    results.reserve(patterns.size());
    if (ids != nullptr) {
        ids->clear();
        ids->reserve(patterns.size());
    }
    for (const auto& pattern : patterns) {
        if (budget != nullptr && budget->should_stop && budget->should_stop())
            budget->stopped = true;
        if (budget != nullptr && budget->exhausted()) break;
        auto found = match_rows(
            pattern, limit_per_pattern, budget, ids != nullptr ? &ids->emplace_back() : nullptr,
            first_rows != nullptr ? &first_rows->counts.emplace_back() : nullptr,
            first_rows != nullptr ? first_rows->rows : kMaxMatchLimit);
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

// A pattern's number of matches up to `limit` (count_sql).
Result<std::uint32_t> count_matches(storage::sql::Connection& db, const BoundPattern& b,
                                    std::uint32_t limit) {
    auto st = db.prepare(count_sql(b));
    if (!st) return st.error();
    st->bind(bind_pattern(*st, b), static_cast<std::int64_t>(limit));
    auto n = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!n) return n.error();
    return static_cast<std::uint32_t>(n->value_or(0));
}

}  // namespace

Result<std::vector<Triple>> GraphStore::match_rows(const schema::TriplePattern& pattern,
                                                   std::uint32_t limit, MatchBudget* budget,
                                                   std::vector<std::int64_t>* ids,
                                                   std::uint32_t* count, std::uint32_t rows) {
    if (limit == 0 || limit > kMaxMatchLimit) limit = kMaxMatchLimit;
    const std::uint32_t decoded = std::min(rows, limit);
    if (count != nullptr) *count = 0;
    auto bound = bind_ids(
        pattern, [this](const Term& t) { return dictionary_.lookup_id(t); },
        [this](const std::string& g) { return dictionary_.lookup_graph(g); });
    if (!bound) return bound.error();
    std::vector<Triple> out;
    if (!*bound) return out;
    // The statement's text built once per shape: a traversal asks hundreds of patterns alike.
    auto& sql = match_sql_by_shape_[match_shape(**bound)];
    if (sql.empty()) sql = match_sql(**bound, true, db_.dialect());
    auto st = db_.prepare(sql);
    if (!st) return st.error();
    const int limit_at = bind_pattern(*st, **bound);
    st->bind(limit_at, static_cast<std::int64_t>(decoded));
    RowMemo memo;
    auto read = st->each([&](const storage::sql::Row& row) -> Result<bool> {
        auto triple = decode_row(row, pattern, memo);
        if (!triple) return triple.error();
        const auto keep = [&] {
            if (ids != nullptr) ids->insert(ids->end(), {row.int64(0), row.int64(1), row.int64(2)});
            out.push_back(std::move(*triple));
        };
        if (budget != nullptr) {
            const std::size_t bytes = triple_wire_bytes(*triple);
            if (bytes > budget->bytes_left) {
                budget->over_bytes = true;
                return false;
            }
            budget->bytes_left -= bytes;
            if (budget->should_stop && out.size() % kBudgetCheckRows == kBudgetCheckRows - 1 &&
                budget->should_stop()) {
                budget->stopped = true;
                keep();
                return false;
            }
        }
        keep();
        return true;
    });
    if (!read) return read.error();
    if (count == nullptr) return out;
    *count = static_cast<std::uint32_t>(out.size());
    // Cut at `rows`: the matches past them up to the limit are counted, not decoded.
    if (out.size() == decoded && decoded < limit && (budget == nullptr || !budget->exhausted())) {
        auto counted = count_matches(db_, **bound, limit);
        if (!counted) return counted.error();
        *count = *counted;
    }
    return out;
}

namespace {

// Each pattern's rows (all of them, in order) cut by `limit` already, then by the budget as
// match_batch on SQLite cuts them: pattern by pattern, a stop check before each and every
// kBudgetCheckRows rows, the batch ending with the first row that does not fit.
std::vector<std::vector<Triple>> within_budget(std::vector<std::vector<Triple>>& rows,
                                               std::vector<std::vector<std::int64_t>>& row_ids,
                                               MatchBudget* budget,
                                               std::vector<std::vector<std::int64_t>>* ids) {
    std::vector<std::vector<Triple>> results;
    results.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (budget != nullptr && budget->should_stop && budget->should_stop())
            budget->stopped = true;
        if (budget != nullptr && budget->exhausted()) break;
        std::size_t kept = 0;
        for (; kept < rows[i].size(); ++kept) {
            if (budget == nullptr) {
                kept = rows[i].size();
                break;
            }
            const std::size_t bytes = triple_wire_bytes(rows[i][kept]);
            if (bytes > budget->bytes_left) {
                budget->over_bytes = true;
                break;
            }
            budget->bytes_left -= bytes;
            if (budget->should_stop && kept % kBudgetCheckRows == kBudgetCheckRows - 1 &&
                budget->should_stop()) {
                budget->stopped = true;
                ++kept;
                break;
            }
        }
        rows[i].resize(kept);
        results.push_back(std::move(rows[i]));
        if (ids != nullptr) {
            row_ids[i].resize(3 * kept);
            ids->push_back(std::move(row_ids[i]));
        }
    }
    return results;
}

// match_batch's `first_rows` on PostgreSQL: each pattern's count of quads (all read, up to
// the limit), then its first `rows` kept.
void keep_first_rows(std::vector<std::vector<detail::Quad>>& quads, GraphStore::FirstRows& first) {
    for (auto& found : quads) {
        first.counts.push_back(static_cast<std::uint32_t>(found.size()));
        if (found.size() > first.rows) found.resize(first.rows);
    }
}

// Every shape of a batch in one statement (UNION ALL): one round trip for the whole batch. Its
// text, and in `members` each shape's patterns in the statement's order.
std::string union_of_shapes(const std::map<std::string, std::vector<std::size_t>>& shapes,
                            const std::vector<std::optional<BoundPattern>>& bound,
                            std::vector<const std::vector<std::size_t>*>& members) {
    std::string sql;
    int next = 1;
    for (const auto& [key, group] : shapes) {
        const BoundPattern& b = *bound[group.front()];
        if (!sql.empty()) sql += " UNION ALL ";
        sql += batch_sql(b, next, members.size());
        next += std::max(1, static_cast<int>(b.s.has_value()) + b.p.has_value() + b.o.has_value() +
                                b.g.has_value()) +
                1;
        members.push_back(&group);
    }
    return sql;
}

}  // namespace

Result<std::vector<std::vector<Triple>>> GraphStore::match_batch_by_sets(
    std::span<const schema::TriplePattern> patterns, std::uint32_t limit, MatchBudget* budget,
    std::vector<std::vector<std::int64_t>>* ids, FirstRows* first_rows) {
    if (limit == 0 || limit > kMaxMatchLimit) limit = kMaxMatchLimit;
    if (ids != nullptr) ids->clear();
    // The patterns' terms looked up by one statement, then each pattern bound from the cache.
    std::vector<Term> graph_names;
    graph_names.reserve(patterns.size());
    std::vector<const Term*> terms;
    for (const auto& pattern : patterns) {
        for (const auto* term : {&pattern.s, &pattern.p, &pattern.o})
            if (term->has_value()) terms.push_back(&**term);
        if (pattern.g && !pattern.g->empty()) graph_names.push_back(schema::iri(*pattern.g));
    }
    for (const auto& name : graph_names) terms.push_back(&name);
    if (auto r = dictionary_.prefetch_ids(terms); !r) return r.error();
    std::vector<std::optional<BoundPattern>> bound(patterns.size());
    std::map<std::string, std::vector<std::size_t>> shapes;  // a shape's key -> its patterns
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        auto b = bind_ids(
            patterns[i], [this](const Term& t) { return dictionary_.lookup_id(t); },
            [this](const std::string& g) { return dictionary_.lookup_graph(g); });
        if (!b) return b.error();
        bound[i] = *b;
        if (*b) shapes[batch_sql(**b, 1, 0)].push_back(i);
    }
    std::vector<const std::vector<std::size_t>*> members;
    const std::string sql = union_of_shapes(shapes, bound, members);
    std::vector<std::vector<detail::Quad>> quads(patterns.size());
    std::vector<std::int64_t> seen_ids;
    if (!sql.empty()) {
        auto st = db_.prepare(sql);
        if (!st) return st.error();
        std::vector<std::array<std::string, 4>> arrays(members.size());
        int next = 1;
        for (std::size_t j = 0; j < members.size(); ++j) {
            next = bind_batch(*st, bound, *members[j], arrays[j], next);
            st->bind(next++, static_cast<std::int64_t>(limit));
        }
        auto read = st->each([&](const storage::sql::Row& row) -> Result<void> {
            const auto shape = static_cast<std::size_t>(row.int64(kShapeColumn));
            const auto place = static_cast<std::size_t>(row.int64(kPlaceColumn));
            if (shape >= members.size() || place < 1 || place > members[shape]->size())
                return make_error(ErrorType::kInternal, "graph store: a batch row out of place");
            const detail::Quad q{row.int64(0), row.int64(1), row.int64(2), row.int64(3)};
            quads[(*members[shape])[place - 1]].push_back(q);
            seen_ids.insert(seen_ids.end(), {q.s, q.p, q.o, q.g});
            return {};
        });
        if (!read) return read.error();
    }
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        if (bound[i]) sort_in_key_order(quads[i], *bound[i]);
    }
    if (first_rows != nullptr) keep_first_rows(quads, *first_rows);
    if (auto r = dictionary_.prefetch_terms(seen_ids); !r) return r.error();
    std::vector<std::vector<Triple>> rows(patterns.size());
    std::vector<std::vector<std::int64_t>> row_ids(patterns.size());
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        for (const auto& q : quads[i]) {
            auto triple = decode_quad(q, patterns[i]);
            if (!triple) return triple.error();
            rows[i].push_back(std::move(*triple));
            row_ids[i].insert(row_ids[i].end(), {q.s, q.p, q.o});
        }
    }
    auto results = within_budget(rows, row_ids, budget, ids);
    if (first_rows != nullptr) first_rows->counts.resize(results.size());
    return results;
}

Result<Triple> GraphStore::decode_quad(const detail::Quad& q,
                                       const schema::TriplePattern& pattern) {
    Triple triple;
    const std::tuple<const std::optional<Term>*, std::int64_t, Term*> parts[3] = {
        {&pattern.s, q.s, &triple.s}, {&pattern.p, q.p, &triple.p}, {&pattern.o, q.o, &triple.o}};
    for (const auto& [bound, id, out] : parts) {
        if (bound->has_value()) {
            *out = **bound;
            continue;
        }
        auto term = dictionary_.decode(id);
        if (!term) return term.error();
        *out = std::move(*term);
    }
    if (q.g != 0) {
        auto graph = dictionary_.decode(q.g);
        if (!graph) return graph.error();
        if (!graph->is_iri())
            return make_error(ErrorType::kInternal, "graph store: a graph name is not an IRI");
        triple.graph = graph->as_iri().value;
    }
    return triple;
}

Result<Triple> GraphStore::decode_row(const storage::sql::Row& st,
                                      const schema::TriplePattern& pattern, RowMemo& memo) {
    const std::int64_t s = st.int64(0);
    const std::int64_t p = st.int64(1);
    const std::int64_t o = st.int64(2);
    const std::int64_t g = st.int64(3);
    // A position the pattern binds is copied from it; any other is decoded, reusing the last
    // row's term while the id repeats (rows come in index order).
    // PostgreSQL's rows carry the subject's and predicate's terms (match_sql).
    const bool joined = db_.dialect() != storage::sql::Dialect::kSqlite;
    const auto fill = [&](const std::optional<Term>& bound, std::int64_t id, int column,
                          std::int64_t& memo_id, Term& memo_term, Term& out) -> Result<void> {
        if (bound) {
            out = *bound;
            return {};
        }
        if (memo_id != id) {
            auto term = joined ? stored_term(st, column) : std::nullopt;
            if (!term) {
                auto decoded = dictionary_.decode(id);
                if (!decoded) return decoded.error();
                term = std::move(*decoded);
            }
            memo_term = std::move(*term);
            memo_id = id;
        }
        out = memo_term;
        return {};
    };
    Triple triple;
    if (auto r = fill(pattern.s, s, kSubjectColumn, memo.s, memo.s_term, triple.s); !r)
        return r.error();
    if (auto r = fill(pattern.p, p, kSubjectColumn + 3, memo.p, memo.p_term, triple.p); !r)
        return r.error();
    if (pattern.o) {
        triple.o = *pattern.o;
    } else if (auto object = stored_term(st, 4)) {
        triple.o = std::move(*object);
    } else {  // a quoted triple (its parts are ids) or a kind decode() reports
        auto decoded = dictionary_.decode(o);
        if (!decoded) return decoded.error();
        triple.o = std::move(*decoded);
    }
    if (g != 0) {
        auto graph = dictionary_.decode(g);
        if (!graph) return graph.error();
        if (!graph->is_iri())
            return make_error(ErrorType::kInternal, "graph store: a graph name is not an IRI");
        triple.graph = graph->as_iri().value;
    }
    return triple;
}

Result<void> GraphStore::match_each(const schema::TriplePattern& pattern, std::size_t batch_size,
                                    const TripleBatchFn& on_batch) {
    if (batch_size == 0) batch_size = kDefaultStreamBatch;
    auto bound = bind_ids(
        pattern, [this](const Term& t) { return dictionary_.lookup_id(t); },
        [this](const std::string& g) { return dictionary_.lookup_graph(g); });
    if (!bound) return bound.error();
    if (!*bound) return {};
    // Its own statement (not the cached one), so the callback may run matches of the same shape.
    auto st = db_.prepare_once(match_sql(**bound, false, db_.dialect()));
    if (!st) return st.error();
    (void)bind_pattern(*st, **bound);
    std::vector<Triple> batch;
    batch.reserve(batch_size);
    RowMemo memo;
    bool stopped = false;
    auto read = st->each([&](const storage::sql::Row& row) -> Result<bool> {
        auto triple = decode_row(row, pattern, memo);
        if (!triple) return triple.error();
        batch.push_back(std::move(*triple));
        if (batch.size() < batch_size) return true;
        stopped = !on_batch(batch);
        batch.clear();
        return !stopped;
    });
    if (!read) return read;
    if (!stopped && !batch.empty()) (void)on_batch(batch);
    return {};
}

// ---- sources of a fact ---------------------------------------------------------------------

Result<std::vector<SourceRecord>> GraphStore::sources_of(const Triple& fact) {
    std::vector<SourceRecord> out;
    schema::TriplePattern pattern{fact.s, fact.p, fact.o, fact.graph ? *fact.graph : std::string{}};
    auto bound = bind_ids(
        pattern, [this](const Term& t) { return dictionary_.lookup_id(t); },
        [this](const std::string& g) { return dictionary_.lookup_graph(g); });
    if (!bound) return bound.error();
    if (!*bound) return out;
    const BoundPattern& b = **bound;
    std::vector<std::int64_t> source_ids;
    {
        auto st = db_.prepare(
            "SELECT src FROM graph_quads WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
        if (!st) return st.error();
        (void)bind_pattern(*st, b);
        auto first = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        if (!first) return first.error();
        if (!*first) return out;
        source_ids.push_back(**first);
    }
    {
        auto st = db_.prepare(
            "SELECT source FROM graph_fact_sources WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
        if (!st) return st.error();
        (void)bind_pattern(*st, b);
        auto read =
            st->each([&](const storage::sql::Row& row) { source_ids.push_back(row.int64(0)); });
        if (!read) return read.error();
    }
    return read_sources(db_, source_ids);
}

namespace {

// The ids of the stored ones of `facts` as four bigint[] array texts (s, p, o, g, without their
// closing braces), the facts' terms looked up by one statement, then each fact bound from the
// cache; the result's k-th entry is the index in `facts` of the arrays' k-th element (a fact
// with a term the store lacks is not stored and gets none).
Result<std::vector<std::size_t>> stored_fact_ids(TermDictionary& dictionary,
                                                 std::span<const Triple> facts,
                                                 std::array<std::string, 4>& arrays) {
    std::vector<Term> graph_names;
    graph_names.reserve(facts.size());
    std::vector<const Term*> terms;
    terms.reserve(3 * facts.size() + facts.size());
    for (const auto& fact : facts) {
        terms.insert(terms.end(), {&fact.s, &fact.p, &fact.o});
        if (fact.graph && !fact.graph->empty()) graph_names.push_back(schema::iri(*fact.graph));
    }
    for (const auto& name : graph_names) terms.push_back(&name);
    if (auto r = dictionary.prefetch_ids(terms); !r) return r.error();
    std::vector<std::size_t> places;
    for (std::size_t i = 0; i < facts.size(); ++i) {
        const Triple& fact = facts[i];
        const schema::TriplePattern pattern{fact.s, fact.p, fact.o,
                                            fact.graph ? *fact.graph : std::string{}};
        auto bound = bind_ids(
            pattern, [&dictionary](const Term& t) { return dictionary.lookup_id(t); },
            [&dictionary](const std::string& g) { return dictionary.lookup_graph(g); });
        if (!bound) return bound.error();
        if (!*bound) continue;
        const BoundPattern& b = **bound;
        const std::int64_t ids[4] = {*b.s, *b.p, *b.o, *b.g};
        for (std::size_t c = 0; c < 4; ++c) {
            if (!places.empty()) arrays[c].push_back(',');
            detail::append_id(arrays[c], ids[c]);
        }
        places.push_back(i);
    }
    return places;
}

}  // namespace

Result<std::vector<std::vector<SourceRecord>>> GraphStore::sources_of_each(
    std::span<const Triple> facts, MatchBudget* budget) {
    storage::sql::ReadScope snapshot(db_);
    std::vector<std::vector<SourceRecord>> out(facts.size());
    const auto fits = [budget](const SourceRecord& source) {
        if (budget == nullptr) return true;
        const std::size_t bytes = source.uri.size() + source.document_uri.size() +
                                  source.loaded_at.size() + source.source_date.size();
        if (bytes > budget->bytes_left) {
            budget->over_bytes = true;
            return false;
        }
        budget->bytes_left -= bytes;
        return true;
    };
    if (db_.dialect() == storage::sql::Dialect::kSqlite) {
        for (std::size_t i = 0; i < facts.size(); ++i) {
            if (budget != nullptr && budget->should_stop && budget->should_stop()) {
                budget->stopped = true;
                return out;
            }
            auto sources = sources_of(facts[i]);
            if (!sources) return sources.error();
            for (auto& source : *sources) {
                if (!fits(source)) return out;
                out[i].push_back(std::move(source));
            }
        }
        return out;
    }
    // The stored facts' ids as four bigint[] arrays; places[k] is the fact of the k-th entry.
    std::array<std::string, 4> arrays{"{", "{", "{", "{"};
    auto stored = stored_fact_ids(dictionary_, facts, arrays);
    if (!stored) return stored.error();
    const std::vector<std::size_t>& places = *stored;
    if (places.empty()) return out;
    for (auto& array : arrays) array.push_back('}');
    // Each fact's first source (graph_quads.src) and its further ones, with their records; a
    // fact that is not stored has none.
    // kSourceColumns' names are graph_sources' alone here.
    static const std::string kSql =
        "SELECT b.k, " + std::string(kSourceColumns) +
        " FROM unnest(?1::bigint[], ?2::bigint[], ?3::bigint[], ?4::bigint[]) WITH ORDINALITY "
        "AS b(s, p, o, g, k) JOIN graph_quads AS q ON q.s = b.s AND q.p = b.p AND q.o = b.o AND "
        "q.g = b.g "
        "CROSS JOIN LATERAL (SELECT q.src AS id UNION ALL SELECT f.source FROM graph_fact_sources "
        "AS f WHERE f.s = q.s AND f.p = q.p AND f.o = q.o AND f.g = q.g) AS ids JOIN "
        "graph_sources AS r ON r.id = ids.id";
    auto st = db_.prepare(kSql);
    if (!st) return st.error();
    for (std::size_t c = 0; c < 4; ++c) st->bind_static(static_cast<int>(c + 1), arrays[c]);
    auto read = st->each([&](const storage::sql::Row& row) -> Result<bool> {
        const auto k = row.int64(0);
        if (k < 1 || static_cast<std::size_t>(k) > places.size())
            return make_error(ErrorType::kInternal, "graph store: a source row out of place");
        SourceRecord source = source_record_at(row, 1);
        if (!fits(source)) return false;
        out[places[static_cast<std::size_t>(k - 1)]].push_back(std::move(source));
        return true;
    });
    if (!read) return read.error();
    // As read_sources orders them: best tier first, then by uri.
    for (auto& sources : out) {
        std::sort(sources.begin(), sources.end(), [](const SourceRecord& a, const SourceRecord& b) {
            return std::tie(a.tier, a.uri) < std::tie(b.tier, b.uri);
        });
    }
    return out;
}

// ---- labels and entities -------------------------------------------------------------------

Result<std::vector<std::string>> GraphStore::labels(std::span<const Term> terms,
                                                    std::size_t max_bytes) {
    return read_labels(db_, dictionary_, labels_, terms, max_bytes);
}

Result<std::vector<std::string>> GraphStore::labels_of_stored(std::span<const std::int64_t> ids,
                                                              std::span<const Term* const> terms,
                                                              std::string_view op,
                                                              std::size_t max_bytes) {
    return read_labels_of_stored(db_, dictionary_, labels_, ids, terms, op, max_bytes);
}

Result<std::vector<Entity>> GraphStore::entities_after(std::int64_t after_id, std::size_t limit) {
    if (limit == 0 || limit > kMaxMatchLimit) limit = kMaxMatchLimit;
    return read_entities_after(db_, dictionary_, after_id, limit);
}

Result<std::vector<Entity>> GraphStore::entities_to_index(std::int64_t after_id,
                                                          std::size_t limit) {
    if (limit == 0 || limit > kMaxMatchLimit) limit = kMaxMatchLimit;
    auto restored = take_restored_entities(db_, dictionary_, limit);
    if (!restored || !restored->empty()) return restored;
    return read_entities_after(db_, dictionary_, after_id, limit);
}

// ---- staged (bulk) loads --------------------------------------------------------------------

Result<std::uint64_t> GraphStore::stage(std::string_view load, const SourceRecord& source,
                                        std::span<const Triple> triples) {
    return StagedLoads(db_, dictionary_, options_.staged_commit_group).stage(load, source, triples);
}

Result<std::uint64_t> GraphStore::stage(std::string_view load, const SourceRecord& source,
                                        const TermBatch& batch) {
    return StagedLoads(db_, dictionary_, options_.staged_commit_group).stage(load, source, batch);
}

Result<InsertCounts> GraphStore::commit_staged(std::string_view load) {
    return StagedLoads(db_, dictionary_, options_.staged_commit_group).commit(load);
}

Result<InsertCounts> GraphStore::commit_staged(std::string_view load, KnowledgeChange& change) {
    return StagedLoads(db_, dictionary_, options_.staged_commit_group).commit(load, &change);
}

Result<KnowledgeChange> GraphStore::forget_source(std::string_view uri) {
    return store::forget_source(db_, dictionary_, uri);
}

Result<KnowledgeChange> GraphStore::forget_fact(const Triple& fact) {
    return store::forget_fact(db_, dictionary_, fact);
}

Result<KnowledgeChange> GraphStore::forget_document(std::string_view uri) {
    return store::forget_document(db_, dictionary_, uri);
}

Result<void> GraphStore::abort_staged(std::string_view load) {
    return StagedLoads(db_, dictionary_, options_.staged_commit_group).abort(load);
}

// ---- stats ---------------------------------------------------------------------------------

Result<GraphStats> GraphStore::stats() {
    GraphStats stats;
    const auto count = [this](const std::string& sql) -> Result<std::uint64_t> {
        auto st = db_.prepare(sql);
        if (!st) return st.error();
        auto n = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        if (!n) return n.error();
        return static_cast<std::uint64_t>(n->value_or(0));
    };
    const std::pair<std::uint64_t*, const char*> counts[] = {
        {&stats.quads, "SELECT count(*) FROM graph_quads"},
        {&stats.subjects, "SELECT count(*) FROM (SELECT DISTINCT s FROM graph_quads) AS d"},
        {&stats.predicates, "SELECT count(*) FROM (SELECT DISTINCT p FROM graph_pos) AS d"},
        {&stats.objects, "SELECT count(*) FROM (SELECT DISTINCT o FROM graph_osp) AS d"},
        {&stats.terms, "SELECT count(*) FROM graph_terms"},
        {&stats.graphs,
         "SELECT count(*) FROM (SELECT DISTINCT g FROM graph_quads WHERE g != 0) AS d"},
        {&stats.sources, "SELECT count(*) FROM graph_sources"},
    };
    for (const auto& [slot, sql] : counts) {
        auto n = count(sql);
        if (!n) return n.error();
        *slot = *n;
    }
    {
        auto st = db_.prepare(
            "SELECT st.tier, count(*) FROM graph_quads AS q JOIN graph_sources AS st ON st.id = "
            "q.src "
            "GROUP BY st.tier");
        if (!st) return st.error();
        auto read = st->each([&](const storage::sql::Row& row) {
            const auto tier = row.int64(0);
            if (tier >= 1 && tier <= 4)
                stats.facts_per_tier[static_cast<std::size_t>(tier)] +=
                    static_cast<std::uint64_t>(row.int64(1));
        });
        if (!read) return read.error();
    }
    // A fact with further sources counts under its best tier: move it there.
    auto st = db_.prepare(
        "SELECT min(first.tier), min(more.tier) FROM graph_fact_sources AS f "
        "JOIN graph_quads AS q ON q.s = f.s AND q.p = f.p AND q.o = f.o AND q.g = f.g "
        "JOIN graph_sources AS first ON first.id = q.src JOIN graph_sources AS more ON more.id = "
        "f.source "
        "GROUP BY f.s, f.p, f.o, f.g");
    if (!st) return st.error();
    auto read = st->each([&](const storage::sql::Row& row) {
        const auto first = row.int64(0);
        const auto best = row.int64(1);
        if (best < first && first >= 1 && first <= 4 && best >= 1) {
            --stats.facts_per_tier[static_cast<std::size_t>(first)];
            ++stats.facts_per_tier[static_cast<std::size_t>(best)];
        }
    });
    if (!read) return read.error();
    return stats;
}

// ---- provenance export ---------------------------------------------------------------------

namespace {

// The facts of `table` with a source each; with `joined` (PostgreSQL) each row carries its three
// terms too (columns 4-12), since decoding them one by one would be a round trip each.
std::string provenance_sql(bool joined, const std::string& table, const char* source) {
    if (!joined) return "SELECT s, p, o, " + std::string(source) + " FROM " + table;
    return "SELECT f.s, f.p, f.o, f." + std::string(source) +
           ", ts.kind, ts.value, ts.qualifier, tp.kind, tp.value, tp.qualifier, tobj.kind, "
           "tobj.value, tobj.qualifier FROM " +
           table +
           " AS f JOIN graph_terms AS ts ON ts.id = f.s JOIN graph_terms AS tp ON tp.id = f.p "
           "JOIN graph_terms AS tobj ON tobj.id = f.o";
}

}  // namespace

Result<Triple> GraphStore::fact_of_row(const storage::sql::Row& row, bool joined) {
    Triple fact;
    Term* members[3] = {&fact.s, &fact.p, &fact.o};
    for (int i = 0; i < 3; ++i) {
        if (auto term = joined ? stored_term(row, 4 + 3 * i) : std::nullopt) {
            *members[i] = std::move(*term);
            continue;
        }
        auto term = dictionary_.decode(row.int64(i));
        if (!term) return term.error();
        *members[i] = std::move(*term);
    }
    return fact;
}

Result<void> GraphStore::export_provenance(std::size_t batch_size, const TripleBatchFn& on_batch) {
    namespace vocab = schema::vocab;
    if (batch_size == 0) batch_size = kDefaultStreamBatch;
    const std::string graph(vocab::kSourceGraph);
    const Term type = schema::iri(vocab::kRdfType);
    const Term entity = schema::iri(vocab::kProvEntity);
    const Term derived = schema::iri(vocab::kProvWasDerivedFrom);
    const Term tier = schema::iri(vocab::kDataTier);
    const Term generated = schema::iri(vocab::kProvGeneratedAtTime);
    const Term dated = schema::iri(vocab::kDctermsDate);
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
        auto st = db_.prepare_once(
            "SELECT id, uri, kind, document_uri, tier, loaded_at, source_date FROM graph_sources "
            "ORDER BY id");
        if (!st) return st.error();
        auto read = st->each([&](const storage::sql::Row& row) {
            if (stopped) return false;
            const std::string uri(row.text(1));
            source_uris.emplace(row.int64(0), uri);
            const Term subject = schema::iri(uri);
            batch.push_back(Triple{subject, type, entity, graph});
            const auto kind = row.int64(2);
            if (kind == static_cast<std::int64_t>(SourceKind::kDocument)) {
                batch.push_back(Triple{subject, type, schema::iri(vocab::kDocument), graph});
            } else if (kind == static_cast<std::int64_t>(SourceKind::kChunk)) {
                batch.push_back(Triple{subject, type, schema::iri(vocab::kChunk), graph});
                if (!row.text(3).empty())
                    batch.push_back(Triple{subject, derived, schema::iri(row.text(3)), graph});
            }
            batch.push_back(Triple{subject, tier, schema::xsd_integer(row.int64(4)), graph});
            if (!row.text(5).empty())
                batch.push_back(
                    Triple{subject, generated, schema::xsd_datetime(row.text(5)), graph});
            if (const auto date = row.text(6); !date.empty()) {
                // The source's own date (docs/knowledge.md §3), typed as what it is.
                batch.push_back(Triple{
                    subject, dated,
                    schema::typed_literal(date, base::is_xsd_datetime(date) ? schema::kXsdDateTime
                                                                            : schema::kXsdDate),
                    graph});
            }
            flush(false);
            return true;
        });
        if (!read) return read;
    }
    const bool joined = db_.dialect() != storage::sql::Dialect::kSqlite;
    for (const auto& sql : {provenance_sql(joined, "graph_quads", "src"),
                            provenance_sql(joined, "graph_fact_sources", "source")}) {
        if (stopped) return {};
        auto st = db_.prepare_once(sql);
        if (!st) return st.error();
        auto read = st->each([&](const storage::sql::Row& row) -> Result<bool> {
            const auto source = source_uris.find(row.int64(3));
            if (source == source_uris.end()) return true;
            auto fact = fact_of_row(row, joined);
            if (!fact) return fact.error();
            batch.push_back(Triple{schema::quoted(std::move(*fact)), derived,
                                   schema::iri(source->second), graph});
            flush(false);
            return !stopped;
        });
        if (!read) return read;
        if (stopped) return {};
    }
    flush(true);
    return {};
}

}  // namespace glassbox::store
