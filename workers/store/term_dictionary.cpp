// The graph store's term dictionary on SQLite or PostgreSQL: encoding terms to keys, interning,
// lookups, decoding, and the checks a term must pass to be stored.
#include "workers/store/term_dictionary.hpp"

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <utility>

#include "base/fnv.hpp"
#include "storage/feed_rows.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;
using schema::Term;
using schema::Triple;

namespace detail {

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
        if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')))
            return false;
    }
    for (const char c : iri) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20) return false;
        switch (c) {
            case '<':
            case '>':
            case '"':
            case '{':
            case '}':
            case '|':
            case '^':
            case '`':
            case '\\':
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
                return std::string(position) + ": \"" + term.as_iri().value +
                       "\" is not an absolute IRI";
            }
            return {};
        case Term::Kind::kBlankNode:
            if (position == "predicate") return "predicate: a blank node cannot be a predicate";
            if (term.as_blank().id.empty())
                return std::string(position) + ": blank node with an empty label";
            return {};
        case Term::Kind::kLiteral: {
            if (position != "object")
                return std::string(position) + ": a literal can only be an object";
            const auto& literal = term.as_literal();
            if (!literal.datatype.empty() && !literal.language.empty()) {
                return "object: literal \"" + literal.value.substr(0, 40) +
                       "\" has both datatype <" + literal.datatype + "> and language \"" +
                       literal.language + "\"";
            }
            if (!literal.datatype.empty() && !valid_iri(literal.datatype)) {
                return "object: literal datatype \"" + literal.datatype +
                       "\" is not an absolute IRI";
            }
            return {};
        }
        case Term::Kind::kTriple: {
            if (position == "predicate") return "predicate: a quoted triple cannot be a predicate";
            const Triple& inner = term.as_triple();
            for (const auto& [part, name] :
                 {std::pair{&inner.s, "subject"}, std::pair{&inner.p, "predicate"},
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
    if (triple.graph && !valid_iri(*triple.graph))
        return "graph: \"" + *triple.graph + "\" is not an absolute IRI";
    return {};
}

Result<void> check_triples(std::span<const Triple> triples) {
    for (std::size_t i = 0; i < triples.size(); ++i) {
        if (auto why = check_triple(triples[i]); !why.empty()) {
            return make_error(ErrorType::kInvalidRequest,
                              "triple " + std::to_string(i) + " (" +
                                  schema::to_ntriples(triples[i]).substr(0, 200) + "): " + why);
        }
    }
    return {};
}

}  // namespace detail

using detail::StoredKind;

TermDictionary::TermDictionary(storage::sql::Connection& db, std::size_t term_cache_entries,
                               std::size_t known_term_limit, std::size_t decode_cache_entries)
    : db_(db),
      known_term_limit_(known_term_limit),
      term_ids_(term_cache_entries),
      known_hashes_(known_term_limit) {
    decoded_.capacity = decode_cache_entries;
}

void TermDictionary::forget_cached_terms() noexcept {
    term_ids_.clear();
    decoded_.clear();
    // A rolled-back insert's id may be given to another term later: synchronise from scratch.
    drop_known_terms();
}

void TermDictionary::drop_known_terms() noexcept {
    known_hashes_.clear();
    known_through_ = 0;
    known_ready_ = false;
}

Result<std::optional<std::int64_t>> TermDictionary::find_key(std::int64_t hash, int kind,
                                                             std::string_view value,
                                                             std::string_view qualifier,
                                                             const std::int64_t* parts) {
    // Static: prepare() finds its cached statement by the text, built once here, not per term.
    static const std::string kSql =
        "SELECT id, kind, value, qualifier, qs, qp, qo FROM graph_terms WHERE hash = ?1";
    auto st = db_.prepare(kSql);
    if (!st) return st.error();
    st->bind(1, hash);
    std::optional<std::int64_t> found;
    auto read = st->each([&](const storage::sql::Row& row) {
        if (row.int64(1) != kind || row.text(2) != value || row.text(3) != qualifier) return true;
        if (parts != nullptr &&
            (row.int64(4) != parts[0] || row.int64(5) != parts[1] || row.int64(6) != parts[2])) {
            return true;
        }
        found = row.int64(0);
        return false;
    });
    if (!read) return read.error();
    return found;
}

Result<std::int64_t> TermDictionary::largest_term_id() {
    auto st = db_.prepare("SELECT max(id) FROM graph_terms");
    if (!st) return st.error();
    auto max = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!max) return max.error();
    return max->value_or(0);  // NULL (no term) reads as 0
}

Result<void> TermDictionary::sync_known_terms() {
    known_ready_ = false;
    if (known_term_limit_ == 0) return {};
    auto largest = largest_term_id();
    if (!largest) return largest.error();
    const std::int64_t max_id = *largest;
    // Ids are never deleted, so the largest is about the count: too many, and the set is not kept.
    if (max_id > static_cast<std::int64_t>(known_term_limit_)) {
        drop_known_terms();
        return {};
    }
    if (max_id > known_through_) {
        // The first time, the hash index alone (smaller than the table); then the new rows by id.
        // (INDEXED BY is SQLite's; PostgreSQL's planner chooses an index-only scan itself.)
        const bool lite = db_.dialect() == storage::sql::Dialect::kSqlite;
        const char* sql = known_through_ != 0 ? "SELECT hash FROM graph_terms WHERE id > ?1"
                          : lite ? "SELECT hash FROM graph_terms INDEXED BY graph_terms_hash"
                                 : "SELECT hash FROM graph_terms";
        auto st = db_.prepare(sql);
        if (!st) return st.error();
        if (known_through_ != 0) st->bind(1, known_through_);
        bool overflowed = false;
        auto read = st->each([&](const storage::sql::Row& row) {
            overflowed = !known_hashes_.insert(static_cast<std::uint64_t>(row.int64(0)));
            return !overflowed;
        });
        if (!read) return read.error();
        if (overflowed) {
            drop_known_terms();
            return {};
        }
        known_through_ = max_id;
    }
    known_ready_ = true;
    return {};
}

namespace detail {

SimpleKey encode_simple(const Term& term, std::string& key) {
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
            return {lang ? StoredKind::kLangLiteral : StoredKind::kTypedLiteral, literal.value,
                    qualifier};
        }
        case Term::Kind::kTriple:
            break;
    }
    return {StoredKind::kQuoted, {}, {}};
}

}  // namespace detail

namespace {

using detail::encode_simple;

void encode_quoted(const std::int64_t* parts, std::string& key) {
    key.clear();
    key.push_back('T');
    for (int i = 0; i < 3; ++i) {
        if (i > 0) key.push_back(' ');
        detail::append_id(key, parts[i]);
    }
}

}  // namespace

Result<std::int64_t> TermDictionary::intern_key(std::string& key, int kind, std::string_view value,
                                                std::string_view qualifier,
                                                const std::int64_t* parts) {
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
        auto inserted = insert_key(hash, kind, value, qualifier, parts);
        if (!inserted) return inserted.error();
        id = *inserted;
    }
    if (caching_) term_ids_.put(key, static_cast<std::uint64_t>(hash), id);
    return id;
}

Result<std::int64_t> TermDictionary::insert_key(std::int64_t hash, int kind, std::string_view value,
                                                std::string_view qualifier,
                                                const std::int64_t* parts) {
    static const std::string kSql =
        // The next id as SQLite's rowid gives it (largest + 1), written out so that PostgreSQL,
        // under the same writer lock, numbers terms the same way.
        "INSERT INTO graph_terms(id, hash, kind, value, qualifier, qs, qp, qo) VALUES((SELECT "
        "COALESCE(MAX(id), 0) + 1 FROM graph_terms), ?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id";
    auto st = db_.prepare(kSql);
    if (!st) return st.error();
    // An empty view may have no data pointer, which SQLite would store as NULL.
    const auto not_null = [](std::string_view text) {
        return text.empty() ? std::string_view{""} : text;
    };
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
    auto inserted = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!inserted) return inserted.error();
    if (!*inserted)
        return make_error(ErrorType::kInternal, "graph store: a term insert returned no id");
    const std::int64_t id = **inserted;
    if (known_ready_) {
        if (known_hashes_.insert(static_cast<std::uint64_t>(hash))) {
            known_through_ = id;
        } else {
            drop_known_terms();  // past the limit: stop keeping the set
        }
    }
    return id;
}

Result<std::vector<std::int64_t>> TermDictionary::intern_batch(const TermBatch& batch) {
    const auto& terms = batch.terms();
    std::vector<std::int64_t> ids(terms.size(), 0);
    // The cache first, its slots fetched a few terms ahead (most probes miss the CPU's caches).
    constexpr std::size_t kAhead = 8;
    std::vector<std::uint32_t> missed;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        if (i + kAhead < terms.size()) term_ids_.prefetch(terms[i + kAhead].hash);
        if (const auto cached = term_ids_.find(batch.key(terms[i]), terms[i].hash)) {
            ids[i] = *cached;
        } else {
            missed.push_back(static_cast<std::uint32_t>(i));
        }
    }
    // Then the file, for a term whose hash it may hold; the rest are new.
    std::vector<std::uint32_t> fresh;
    if (db_.dialect() != storage::sql::Dialect::kSqlite) {
        if (auto r = find_batch_keys(batch, missed, ids, fresh); !r) return r.error();
        if (auto r = insert_new_terms(batch, fresh, ids); !r) return r.error();
        return ids;
    }
    for (const auto i : missed) {
        const auto& term = terms[i];
        const auto hash = static_cast<std::int64_t>(term.hash);
        if (!known_ready_ || known_hashes_.maybe_contains(term.hash)) {
            auto found = find_key(hash, term.kind, term.value, term.qualifier, nullptr);
            if (!found) return found.error();
            if (*found) {
                ids[i] = **found;
                if (caching_) term_ids_.put(batch.key(term), term.hash, ids[i]);
                continue;
            }
        }
        fresh.push_back(i);
    }
    if (auto r = insert_new_terms(batch, fresh, ids); !r) return r.error();
    return ids;
}

Result<void> TermDictionary::find_batch_keys(const TermBatch& batch,
                                             std::span<const std::uint32_t> missed,
                                             std::vector<std::int64_t>& ids,
                                             std::vector<std::uint32_t>& fresh) {
    // A server is a round trip away: the terms whose hash the file may hold are looked up by one
    // statement per slice (their hashes as an array), not one each.
    constexpr std::size_t kSlice = 10'000;
    const auto& terms = batch.terms();
    std::vector<std::uint32_t> asked;
    for (const auto i : missed) {
        if (!known_ready_ || known_hashes_.maybe_contains(terms[i].hash)) {
            asked.push_back(i);
        } else {
            fresh.push_back(i);
        }
    }
    static const std::string kSql =
        "SELECT id, hash, kind, value, qualifier FROM graph_terms WHERE hash = ANY(?1::bigint[])";
    std::unordered_multimap<std::int64_t, std::uint32_t> by_hash;
    std::string array;
    for (std::size_t first = 0; first < asked.size(); first += kSlice) {
        const std::size_t last = std::min(asked.size(), first + kSlice);
        by_hash.clear();
        array = "{";
        for (std::size_t k = first; k < last; ++k) {
            const auto hash = static_cast<std::int64_t>(terms[asked[k]].hash);
            if (k != first) array.push_back(',');
            detail::append_id(array, hash);
            by_hash.emplace(hash, asked[k]);
        }
        array.push_back('}');
        auto st = db_.prepare(kSql);
        if (!st) return st.error();
        st->bind_static(1, array);
        auto read = st->each([&](const storage::sql::Row& row) {
            const auto [begin, end] = by_hash.equal_range(row.int64(1));
            for (auto it = begin; it != end; ++it) {
                const auto& term = terms[it->second];
                if (row.int64(2) == term.kind && row.text(3) == term.value &&
                    row.text(4) == term.qualifier)
                    ids[it->second] = row.int64(0);
            }
        });
        if (!read) return read.error();
    }
    // The found ones cached; the rest are new, still in the order of their first occurrence.
    for (const auto i : asked) {
        if (ids[i] == 0) {
            fresh.push_back(i);
        } else if (caching_) {
            term_ids_.put(batch.key(terms[i]), terms[i].hash, ids[i]);
        }
    }
    std::sort(fresh.begin(), fresh.end());
    return {};
}

Result<void> TermDictionary::prefetch_ids(std::span<const Term* const> terms) {
    if (!caching_ || db_.dialect() == storage::sql::Dialect::kSqlite) return {};
    struct Wanted {
        std::string key;
        std::uint64_t hash;
        detail::SimpleKey fields;
    };
    std::vector<Wanted> wanted;
    std::unordered_map<std::int64_t, std::size_t> by_hash;  // a colliding second key is left out
    std::string array = "{";
    for (const Term* term : terms) {
        if (term->is_triple()) continue;
        Wanted w;
        w.fields = encode_simple(*term, w.key);
        w.hash = static_cast<std::uint64_t>(detail::key_hash(w.key));
        if (term_ids_.find(w.key, w.hash)) continue;
        if (!by_hash.emplace(static_cast<std::int64_t>(w.hash), wanted.size()).second) continue;
        if (array.size() > 1) array.push_back(',');
        detail::append_id(array, static_cast<std::int64_t>(w.hash));
        wanted.push_back(std::move(w));
    }
    if (wanted.empty()) return {};
    array.push_back('}');
    static const std::string kSql =
        "SELECT id, hash, kind, value, qualifier FROM graph_terms WHERE hash = ANY(?1::bigint[])";
    auto st = db_.prepare(kSql);
    if (!st) return st.error();
    st->bind_static(1, array);
    std::vector<std::int64_t> found(wanted.size(), 0);
    auto read = st->each([&](const storage::sql::Row& row) {
        const auto it = by_hash.find(row.int64(1));
        if (it == by_hash.end()) return;
        const auto& fields = wanted[it->second].fields;
        if (row.int64(2) == fields.kind && row.text(3) == fields.value &&
            row.text(4) == fields.qualifier)
            found[it->second] = row.int64(0);
    });
    if (!read) return read.error();
    for (std::size_t i = 0; i < wanted.size(); ++i) {
        if (found[i] != 0) term_ids_.put(wanted[i].key, wanted[i].hash, found[i]);
    }
    return {};
}

Result<void> TermDictionary::prefetch_terms(std::span<const std::int64_t> ids) {
    if (!caching_ || db_.dialect() == storage::sql::Dialect::kSqlite) return {};
    std::vector<std::int64_t> missing;
    for (const auto id : ids) {
        if (id != 0 && decoded_.find(id) == nullptr) missing.push_back(id);
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    // More than the cache holds would push out what was just read.
    if (missing.empty() || missing.size() > decoded_.capacity) return {};
    std::string array = "{";
    for (std::size_t i = 0; i < missing.size(); ++i) {
        if (i > 0) array.push_back(',');
        detail::append_id(array, missing[i]);
    }
    array.push_back('}');
    static const std::string kSql =
        "SELECT id, kind, value, qualifier FROM graph_terms WHERE id = ANY(?1::bigint[])";
    auto st = db_.prepare(kSql);
    if (!st) return st.error();
    st->bind_static(1, array);
    return st->each([&](const storage::sql::Row& row) {
        std::string value(row.text(2));
        std::string qualifier(row.text(3));
        std::optional<Term> term;
        switch (row.int64(1)) {
            case StoredKind::kIri:
                term = Term(schema::Iri{std::move(value)});
                break;
            case StoredKind::kBlank:
                term = Term(schema::BlankNode{std::move(value)});
                break;
            case StoredKind::kTypedLiteral:
                term = Term(schema::Literal{std::move(value), std::move(qualifier), {}});
                break;
            case StoredKind::kLangLiteral:
                term = Term(schema::Literal{std::move(value), {}, std::move(qualifier)});
                break;
            default:  // quoted triples: decode() reads their parts
                return;
        }
        // The id of the term too: a term read here is often asked about next (the next hop's
        // patterns, the sources of the facts found), and ids are never reused.
        encode_simple(*term, key_buffer_);
        term_ids_.put(key_buffer_, static_cast<std::uint64_t>(detail::key_hash(key_buffer_)),
                      row.int64(0));
        decoded_.put(row.int64(0), std::move(*term));
    });
}

Result<void> TermDictionary::insert_new_terms(const TermBatch& batch,
                                              std::span<const std::uint32_t> fresh,
                                              std::vector<std::int64_t>& ids) {
    if (fresh.empty()) return {};
    if (!term_feed_registered_) {
        if (auto r = storage::sql::register_row_feed(db_, kTermFeedTable); !r) return r.error();
        term_feed_registered_ = true;
    }
    auto largest = largest_term_id();
    if (!largest) return largest.error();
    const std::int64_t max_id = *largest;
    // Ids in the order of first occurrence, as one statement at a time numbers them (max + 1 on):
    // ids order the store's answers (a hop's edges, an agent's facts), so a staged load must give
    // the same ids as a plain one. They are given explicitly, so that the ids cached below are
    // the ones written (a conflict fails the statement). Rows go in id order: the table is
    // appended to and stays dense; feeding them in hash order (the index's key order) measured
    // no faster on bench_load and left the table's pages a tenth emptier.
    constexpr std::size_t kStride = 3;  // id, hash, kind
    std::vector<std::int64_t> rows(fresh.size() * kStride);
    std::vector<std::string_view> texts(fresh.size() * storage::kRowFeedTextColumns);
    for (std::size_t k = 0; k < fresh.size(); ++k) {
        const auto& term = batch.terms()[fresh[k]];
        rows[k * kStride] = max_id + 1 + static_cast<std::int64_t>(k);
        rows[k * kStride + 1] = static_cast<std::int64_t>(term.hash);
        rows[k * kStride + 2] = term.kind;
        texts[k * 2] = term.value;
        texts[k * 2 + 1] = term.qualifier;
    }
    storage::Int64RowFeed feed{rows.data(), fresh.size(), kStride, {0, 1, 2, 0, 0}, texts.data()};
    // One statement: a failure leaves none of the batch's terms written (and none cached below).
    static const std::string kSql = std::string(
                                        "INSERT INTO graph_terms(id, hash, kind, value, "
                                        "qualifier) SELECT c0, c1, c2, t0, t1 FROM ") +
                                    kTermFeedTable;
    auto n = storage::sql::run_with_row_feed(db_, kTermFeedTable, kSql, feed);
    if (!n) return n.error();
    if (*n != static_cast<std::int64_t>(fresh.size())) {
        return make_error(ErrorType::kInternal, "graph store: inserted " + std::to_string(*n) +
                                                    " of " + std::to_string(fresh.size()) +
                                                    " new terms");
    }
    for (std::size_t k = 0; k < fresh.size(); ++k) {
        const auto& term = batch.terms()[fresh[k]];
        ids[fresh[k]] = max_id + 1 + static_cast<std::int64_t>(k);
        if (caching_) term_ids_.put(batch.key(term), term.hash, ids[fresh[k]]);
        if (!known_ready_) continue;
        if (known_hashes_.insert(term.hash)) {
            known_through_ = ids[fresh[k]];
        } else {
            drop_known_terms();  // past the limit: stop keeping the set
        }
    }
    return {};
}

Result<std::int64_t> TermDictionary::intern(const Term& term) {
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

Result<std::array<std::int64_t, 4>> TermDictionary::intern_statement(const Triple& triple,
                                                                     StatementMemo& memo) {
    const auto repeat = [this](const Term& term, const Term*& last,
                               std::int64_t& last_id) -> Result<std::int64_t> {
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

Result<std::optional<std::int64_t>> TermDictionary::lookup_id(const Term& term) {
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

Result<std::optional<std::int64_t>> TermDictionary::lookup_graph(const std::string& graph) {
    if (graph.empty()) return std::optional<std::int64_t>{0};
    return lookup_id(Term(schema::Iri{graph}));
}

Result<Term> TermDictionary::decode(std::int64_t id) {
    if (const auto* cached = decoded_.find(id)) return *cached;
    int kind = 0;
    std::string value;
    std::string qualifier;
    std::int64_t parts[3] = {0, 0, 0};
    {
        auto st =
            db_.prepare("SELECT kind, value, qualifier, qs, qp, qo FROM graph_terms WHERE id = ?1");
        if (!st) return st.error();
        st->bind(1, id);
        auto found = st->first([&](const storage::sql::Row& row) {
            kind = static_cast<int>(row.int64(0));
            value = row.text(1);
            qualifier = row.text(2);
            for (int i = 0; i < 3; ++i) parts[i] = row.int64(3 + i);
            return true;
        });
        if (!found) return found.error();
        if (!*found)
            return make_error(ErrorType::kNotFound,
                              "graph store: no term with id " + std::to_string(id));
    }  // released before recursing: a quoted triple's parts use the same statement
    Term term;
    switch (kind) {
        case StoredKind::kIri:
            term = schema::Iri{std::move(value)};
            break;
        case StoredKind::kBlank:
            term = schema::BlankNode{std::move(value)};
            break;
        case StoredKind::kTypedLiteral:
            term = schema::Literal{std::move(value), std::move(qualifier), {}};
            break;
        case StoredKind::kLangLiteral:
            term = schema::Literal{std::move(value), {}, std::move(qualifier)};
            break;
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
            return make_error(ErrorType::kInternal, "graph store: term " + std::to_string(id) +
                                                        " has unknown kind " +
                                                        std::to_string(kind));
    }
    if (caching_) decoded_.put(id, term);
    return term;
}

}  // namespace glassbox::store
