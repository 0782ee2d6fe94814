// Labels of graph terms: the best rdfs:label of a set of ids in one statement, the fallback
// names, and the entity list with labels.
#include "workers/store/graph_labels.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "schema/vocabulary.hpp"
#include "storage/sqlite_connection.hpp"
#include "workers/store/store_bounds.hpp"

namespace glassbox::store {

using base::Result;
using detail::StoredKind;
using schema::Term;

namespace {

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
    if (kind == StoredKind::kLangLiteral) {
        if (language.size() >= 2 && (language[0] == 'e' || language[0] == 'E') &&
            (language[1] == 'n' || language[1] == 'N')) {
            return language.size() == 2 ? 0 : (language[2] == '-' ? 1 : 3);
        }
        return 3;
    }
    return 2;
}

// The id of rdfs:label, or -1 when the store has never seen it.
Result<std::int64_t> label_predicate_id(TermDictionary& dictionary) {
    auto id = dictionary.lookup_id(Term(schema::Iri{std::string(schema::vocab::kRdfsLabel)}));
    if (!id) return id.error();
    return id->value_or(-1);
}

// Adds the best rdfs:label of each id that has one to `best`, in one statement for the set.
Result<void> read_best_labels(storage::sql::Connection& db, std::int64_t label_id,
                              const std::vector<std::int64_t>& ids,
                              std::unordered_map<std::int64_t, std::string>& best);

// The best rdfs:label of each id: from the cache, the rest in one statement for the whole set
// (and then cached, a missing label too).
Result<std::unordered_map<std::int64_t, std::string>> best_labels(
    storage::sql::Connection& db, LabelCache& cache, std::int64_t label_id,
    const std::vector<std::int64_t>& ids) {
    std::unordered_map<std::int64_t, std::string> best;
    if (label_id < 0 || ids.empty()) return best;
    auto usable = cache.sync(db);
    if (!usable) return usable.error();
    if (!*usable) {
        if (auto r = read_best_labels(db, label_id, ids, best); !r) return r.error();
        return best;
    }
    std::vector<std::int64_t> unknown;
    for (const auto id : ids) {
        if (const auto* cached = cache.find(id)) {
            if (*cached) best.try_emplace(id, **cached);
        } else {
            unknown.push_back(id);
        }
    }
    if (unknown.empty()) return best;
    auto read = read_best_labels(db, label_id, unknown, best);
    if (!read) return read.error();
    for (const auto id : unknown) {
        const auto it = best.find(id);
        cache.put(id, it == best.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    return best;
}

Result<void> read_best_labels(storage::sql::Connection& db, std::int64_t label_id,
                              const std::vector<std::int64_t>& ids,
                              std::unordered_map<std::int64_t, std::string>& best) {
    // The set as one bound value: a JSON array SQLite's json_each reads, a bigint[] literal on
    // PostgreSQL.
    const bool lite = db.dialect() == storage::sql::Dialect::kSqlite;
    std::string array(1, lite ? '[' : '{');
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) array.push_back(',');
        detail::append_id(array, ids[i]);
    }
    array.push_back(lite ? ']' : '}');
    static const std::string kLabelsOf =
        " CROSS JOIN graph_quads AS q CROSS JOIN graph_terms AS t "
        "WHERE q.s = j.value AND q.p = ?2 AND t.id = q.o AND t.kind IN (2, 3)";
    static const std::string kSqlite =
        "SELECT q.s, t.kind, t.value, t.qualifier FROM json_each(?1) AS j" + kLabelsOf;
    static const std::string kPostgres =
        "SELECT q.s, t.kind, t.value, t.qualifier FROM unnest(?1::bigint[]) AS j(value)" +
        kLabelsOf;
    auto st = db.prepare(lite ? kSqlite : kPostgres);
    if (!st) return st.error();
    st->bind(1, std::string_view{array}).bind(2, label_id);
    std::unordered_map<std::int64_t, int> rank;
    auto read = st->each([&](const storage::sql::Row& row) {
        const auto id = row.int64(0);
        const int kind = static_cast<int>(row.int64(1));
        const int r =
            label_rank(kind, kind == StoredKind::kLangLiteral ? row.text(3) : std::string_view{});
        const auto value = row.text(2);
        auto [it, inserted] = rank.try_emplace(id, r);
        // Ties go to the smallest value, so the answer does not depend on storage order.
        if (inserted || r < it->second || (r == it->second && value < std::string_view{best[id]})) {
            it->second = r;
            best[id] = std::string(value);
        }
    });
    if (!read) return read.error();
    return {};
}

std::string fallback_label(const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            return local_name(term.as_iri().value);
        case Term::Kind::kLiteral:
            return term.as_literal().value;
        default:
            return schema::to_ntriples(term);
    }
}

}  // namespace

Result<void> note_graph_change(storage::sql::Connection& db) {
    // SQLite's LabelCache goes by data_version; the number is the collection's change number
    // there (sparql_mirror.hpp), so it moves on both engines.
    auto st = db.prepare(db.dialect() == storage::sql::Dialect::kSqlite
                             ? "UPDATE graph_version SET n = n + 1 WHERE id = 1"
                             : "UPDATE graph_version SET n = n + 1, writer = CAST(txid_current() "
                               "AS BIGINT) WHERE id = 1");
    if (!st) return st.error();
    return st->run();
}

Result<bool> LabelCache::sync_postgres(storage::sql::Connection& db) {
    auto st = db.prepare(
        "SELECT n, writer, current_setting('transaction_read_only') FROM graph_version WHERE id = "
        "1");
    if (!st) return st.error();
    std::int64_t version = -1;
    std::int64_t writer = -1;
    bool read_only = false;
    auto found = st->first([&](const storage::sql::Row& row) {
        version = row.int64(0);
        writer = row.int64(1);
        read_only = row.text(2) == "on";
        return true;
    });
    if (!found) return found.error();
    // Inside a write transaction what is read may be rolled back (and a rollback undoes the
    // mark with it): neither served from the cache nor kept.
    if (!*found || (db.in_transaction() && !read_only)) return false;
    // The writer's transaction id tells apart two marks of the same count (one rolled back).
    if (version != version_ || writer != writer_) {
        entries_.clear();
        version_ = version;
        writer_ = writer;
    }
    return true;
}

Result<bool> LabelCache::sync(storage::sql::Connection& connection) {
    auto* lite = storage::SqliteConnection::of(connection);
    if (lite == nullptr) return sync_postgres(connection);
    auto& db = lite->database();
    if (db.in_write_transaction()) return false;
    auto version = db.data_version();
    if (!version) return version.error();
    const auto changes = db.total_changes();
    if (*version != data_version_ || changes != total_changes_) {
        entries_.clear();
        data_version_ = *version;
        total_changes_ = changes;
    }
    return true;
}

Result<std::vector<std::string>> read_labels(storage::sql::Connection& db,
                                             TermDictionary& dictionary, LabelCache& cache,
                                             std::span<const Term> terms, std::size_t max_bytes) {
    auto label_id = label_predicate_id(dictionary);
    if (!label_id) return label_id.error();
    std::vector<std::optional<std::int64_t>> term_ids(terms.size());
    std::vector<std::int64_t> wanted;
    if (*label_id >= 0) {
        // PostgreSQL: the terms' ids looked up by one statement, not a round trip each.
        std::vector<const Term*> named;
        for (const auto& term : terms) {
            if (!term.is_literal()) named.push_back(&term);
        }
        if (auto r = dictionary.prefetch_ids(named); !r) return r.error();
    }
    for (std::size_t i = 0; i < terms.size(); ++i) {
        if (terms[i].is_literal() || *label_id < 0) continue;
        auto id = dictionary.lookup_id(terms[i]);
        if (!id) return id.error();
        term_ids[i] = *id;
        if (*id) wanted.push_back(**id);
    }
    auto best = best_labels(db, cache, *label_id, wanted);
    if (!best) return best.error();
    std::vector<std::string> out;
    out.reserve(terms.size());
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        std::optional<std::string> label;
        if (term_ids[i]) {
            if (auto it = best->find(*term_ids[i]); it != best->end()) label = it->second;
        }
        if (!label) label = fallback_label(terms[i]);
        bytes += label->size() + 3;  // quotes and a comma
        if (bytes > max_bytes) {
            return reply_too_large(
                "labels", max_bytes, "max_reply_bytes",
                "reached at term " + std::to_string(i + 1) + " of " + std::to_string(terms.size()),
                "ask for fewer terms per request");
        }
        out.push_back(std::move(*label));
    }
    return out;
}

Result<std::vector<std::string>> read_labels_of_stored(storage::sql::Connection& db,
                                                       TermDictionary& dictionary,
                                                       LabelCache& cache,
                                                       std::span<const std::int64_t> ids,
                                                       std::span<const Term* const> terms,
                                                       std::string_view op, std::size_t max_bytes) {
    auto label_id = label_predicate_id(dictionary);
    if (!label_id) return label_id.error();
    // As read_labels: literals are named by their value, never looked up.
    std::vector<std::int64_t> wanted;
    if (*label_id >= 0) {
        wanted.reserve(ids.size());
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (!terms[i]->is_literal()) wanted.push_back(ids[i]);
        }
        std::sort(wanted.begin(), wanted.end());
        wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    }
    auto best = best_labels(db, cache, *label_id, wanted);
    if (!best) return best.error();
    std::vector<std::string> out;
    out.reserve(terms.size());
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        const auto it = terms[i]->is_literal() ? best->end() : best->find(ids[i]);
        std::string label = it != best->end() ? it->second : fallback_label(*terms[i]);
        bytes += label.size() + 3;  // quotes and a comma
        if (bytes > max_bytes) {
            return reply_too_large(op, max_bytes, "max_reply_bytes",
                                   "its labels reached it at term " + std::to_string(i + 1) +
                                       " of " + std::to_string(terms.size()),
                                   "ask with a lower limit or fewer patterns per request");
        }
        out.push_back(std::move(label));
    }
    return out;
}

Result<std::vector<Entity>> read_entities_after(storage::sql::Connection& db,
                                                TermDictionary& dictionary, std::int64_t after_id,
                                                std::size_t limit) {
    std::vector<Entity> out;
    {
        auto st = db.prepare(
            "SELECT t.id, t.value FROM graph_terms AS t WHERE t.id > ?1 AND t.kind = 0 AND "
            "(EXISTS (SELECT 1 FROM graph_quads AS q WHERE q.s = t.id) OR "
            "EXISTS (SELECT 1 FROM graph_osp AS q WHERE q.o = t.id)) ORDER BY t.id LIMIT ?2");
        if (!st) return st.error();
        st->bind(1, after_id).bind(2, static_cast<std::int64_t>(limit));
        auto entities = st->collect([](const storage::sql::Row& row) {
            return Entity{row.int64(0), Term(schema::Iri{std::string(row.text(1))}), {}};
        });
        if (!entities) return entities.error();
        out = std::move(entities).value();
    }
    if (auto r = label_entities(db, dictionary, out); !r) return r.error();
    return out;
}

Result<void> label_entities(storage::sql::Connection& db, TermDictionary& dictionary,
                            std::vector<Entity>& out) {
    auto label_id = label_predicate_id(dictionary);
    if (!label_id) return label_id.error();
    std::vector<std::int64_t> ids;
    ids.reserve(out.size());
    for (const auto& entity : out) ids.push_back(entity.id);
    // Read once each while indexing: not through the cache, which they would only fill.
    std::unordered_map<std::int64_t, std::string> best;
    if (*label_id >= 0 && !ids.empty()) {
        if (auto r = read_best_labels(db, *label_id, ids, best); !r) return r.error();
    }
    for (auto& entity : out) {
        if (auto it = best.find(entity.id); it != best.end()) {
            entity.label = std::move(it->second);
        } else {
            entity.label = fallback_label(entity.term);
        }
    }
    return {};
}

}  // namespace glassbox::store
