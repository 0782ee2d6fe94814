// Changing and retracting knowledge: a fact losing a source (removed with its last one, its
// first source promoted otherwise), forgetting a source, a fact or a document, and a replacing
// load's retraction of what its sources no longer state.
#include "workers/store/knowledge_change.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include "base/utf8.hpp"
#include "workers/store/graph_labels.hpp"
#include "workers/store/graph_sources.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

Result<std::vector<QuadIds>> collect_quads(storage::sql::Statement& st) {
    auto rows = st.collect([](const storage::sql::Row& row) {
        return QuadIds{row.int64(0), row.int64(1), row.int64(2), row.int64(3)};
    });
    if (!rows) return rows.error();
    std::sort(rows->begin(), rows->end());
    rows->erase(std::unique(rows->begin(), rows->end()), rows->end());
    return rows;
}

void bind_quad(storage::sql::Statement& st, const QuadIds& q) {
    st.bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g);
}

// The lowest further source of a fact other than `except` (graph_fact_sources), or 0.
Result<std::int64_t> other_source(storage::sql::Connection& db, const QuadIds& q,
                                  std::int64_t except) {
    auto st = db.prepare(
        "SELECT min(source) FROM graph_fact_sources WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4 "
        "AND source <> ?5");
    if (!st) return st.error();
    bind_quad(*st, q);
    st->bind(5, except);
    auto found = st->first([](const storage::sql::Row& row) {
        return row.is_null(0) ? std::int64_t{0} : row.int64(0);
    });
    if (!found) return found.error();
    return found->value_or(0);
}

Result<void> run_on_quad(storage::sql::Connection& db, const std::string& sql, const QuadIds& q,
                         std::optional<std::int64_t> fifth = std::nullopt) {
    auto st = db.prepare(sql);
    if (!st) return st.error();
    bind_quad(*st, q);
    if (fifth) st->bind(5, *fifth);
    return st->run();
}

// The uris of every source of a stored fact (its first, then the further ones).
Result<std::vector<std::string>> source_uris(storage::sql::Connection& db, const QuadIds& q) {
    auto st = db.prepare(
        "SELECT uri FROM graph_sources WHERE id IN (SELECT src FROM graph_quads WHERE s = ?1 AND "
        "p = ?2 AND o = ?3 AND g = ?4 UNION SELECT source FROM graph_fact_sources WHERE s = ?1 "
        "AND p = ?2 AND o = ?3 AND g = ?4) ORDER BY uri");
    if (!st) return st.error();
    bind_quad(*st, q);
    return st->collect([](const storage::sql::Row& row) { return std::string(row.text(0)); });
}

Result<void> delete_source_record(storage::sql::Connection& db, std::int64_t id) {
    auto st = db.prepare("DELETE FROM graph_sources WHERE id = ?1");
    if (!st) return st.error();
    st->bind(1, id);
    return st->run();
}

// Every fact of `source` loses it; then the source record goes.
Result<void> forget_source_facts(storage::sql::Connection& db, FactRetraction& retraction,
                                 std::int64_t source, const std::string& uri,
                                 KnowledgeChange& change) {
    auto facts = facts_of_source(db, source);
    if (!facts) return facts.error();
    for (const auto& q : *facts) {
        auto outcome = retraction.retract(q, source, uri);
        if (!outcome) return outcome.error();
    }
    change.removed_sources.push_back(uri);
    return delete_source_record(db, source);
}

}  // namespace

Result<std::vector<QuadIds>> facts_of_source(storage::sql::Connection& db, std::int64_t source) {
    // graph_quads has no index on src (a load would pay for one): a scan, which a change may take.
    auto st = db.prepare(
        "SELECT s, p, o, g FROM graph_quads WHERE src = ?1 UNION SELECT s, p, o, g FROM "
        "graph_fact_sources WHERE source = ?1");
    if (!st) return st.error();
    st->bind(1, source);
    return collect_quads(*st);
}

Result<std::int64_t> source_id_of(storage::sql::Connection& db, std::string_view uri) {
    auto st = db.prepare("SELECT id FROM graph_sources WHERE uri = ?1");
    if (!st) return st.error();
    st->bind(1, uri);
    auto id = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!id) return id.error();
    return id->value_or(0);
}

Result<FactRetraction::Outcome> FactRetraction::retract(const QuadIds& q, std::int64_t source,
                                                        const std::string& source_uri,
                                                        std::int64_t successor) {
    auto first = first_source_of(db_, q.s, q.p, q.o, q.g);
    if (!first) return first.error();
    if (!*first) return Outcome::kNotStored;
    if (**first != source) {
        if (auto r = run_on_quad(db_,
                                 "DELETE FROM graph_fact_sources WHERE s = ?1 AND p = ?2 AND o = "
                                 "?3 AND g = ?4 AND source = ?5",
                                 q, source);
            !r)
            return r.error();
        ++change_.facts_kept;
        return Outcome::kKept;
    }
    auto other = other_source(db_, q, source);
    if (!other) return other.error();
    if (*other == 0) *other = successor;
    if (*other != 0) {
        // Another source becomes the fact's first: the row stays, only its src changes.
        if (auto r = run_on_quad(
                db_,
                "UPDATE graph_quads SET src = ?5 WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4", q,
                *other);
            !r)
            return r.error();
        if (auto r = run_on_quad(db_,
                                 "DELETE FROM graph_fact_sources WHERE s = ?1 AND p = ?2 AND o = "
                                 "?3 AND g = ?4 AND source = ?5",
                                 q, *other);
            !r)
            return r.error();
        ++change_.facts_kept;
        return Outcome::kKept;
    }
    if (auto r = list_removed(q, {source_uri}); !r) return r.error();
    if (auto r = delete_rows(q); !r) return r.error();
    return Outcome::kRemoved;
}

Result<void> FactRetraction::remove(const QuadIds& q, std::vector<std::string> sources) {
    if (auto r = list_removed(q, std::move(sources)); !r) return r;
    return delete_rows(q);
}

Result<void> FactRetraction::list_removed(const QuadIds& q, std::vector<std::string> sources) {
    ++change_.facts_removed;
    touched_.push_back(q.s);
    touched_.push_back(q.o);
    if (change_.removed.size() >= kMaxListedRemovals) return {};
    RemovedFact removed;
    auto s = dictionary_.decode(q.s);
    if (!s) return s.error();
    auto p = dictionary_.decode(q.p);
    if (!p) return p.error();
    auto o = dictionary_.decode(q.o);
    if (!o) return o.error();
    removed.fact = schema::Triple{std::move(*s), std::move(*p), std::move(*o), std::nullopt};
    if (q.g != 0) {
        auto g = dictionary_.decode(q.g);
        if (!g) return g.error();
        if (g->is_iri()) removed.fact.graph = g->as_iri().value;
    }
    removed.sources = std::move(sources);
    change_.removed.push_back(std::move(removed));
    return {};
}

Result<void> FactRetraction::delete_rows(const QuadIds& q) {
    static const char* const kDeletes[] = {
        "DELETE FROM graph_quads WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4",
        "DELETE FROM graph_pos WHERE p = ?2 AND o = ?3 AND s = ?1 AND g = ?4",
        "DELETE FROM graph_osp WHERE o = ?3 AND s = ?1 AND p = ?2 AND g = ?4",
        "DELETE FROM graph_fact_sources WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4"};
    for (const char* sql : kDeletes) {
        if (auto r = run_on_quad(db_, sql, q); !r) return r;
    }
    return {};
}

Result<void> FactRetraction::finish() {
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    auto st = db_.prepare(
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM graph_quads WHERE s = ?1) OR EXISTS (SELECT 1 "
        "FROM graph_osp WHERE o = ?1) THEN 1 ELSE 0 END");
    if (!st) return st.error();
    // An IRI left with no fact is noted: its vector goes, and if a later load states it again
    // the index op embeds it again (its id is below the index mark).
    auto note = db_.prepare(
        "INSERT INTO graph_unembedded_entities(id) SELECT id FROM graph_terms WHERE id = ?1 AND "
        "kind = 0 ON CONFLICT DO NOTHING");
    if (!note) return note.error();
    for (const auto id : touched_) {
        st->reset();
        st->bind(1, id);
        auto used = st->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
        if (!used) return used.error();
        if (used->value_or(false)) continue;
        change_.orphaned_entities.push_back(id);
        note->reset();
        note->bind(1, id);
        if (auto r = note->run(); !r) return r.error();
    }
    // Always: a change that removed no fact may still have removed a source record.
    return note_graph_change(db_);
}

Result<std::vector<Entity>> take_restored_entities(storage::sql::Connection& db,
                                                   TermDictionary& dictionary, std::size_t limit) {
    auto st = db.prepare(
        "SELECT u.id, t.value FROM graph_unembedded_entities AS u JOIN graph_terms AS t ON t.id = "
        "u.id WHERE EXISTS (SELECT 1 FROM graph_quads AS q WHERE q.s = u.id) OR EXISTS (SELECT 1 "
        "FROM graph_osp AS q WHERE q.o = u.id) ORDER BY u.id LIMIT ?1");
    if (!st) return st.error();
    st->bind(1, static_cast<std::int64_t>(limit));
    auto entities = st->collect([](const storage::sql::Row& row) {
        return Entity{row.int64(0), schema::Term(schema::Iri{std::string(row.text(1))}), {}};
    });
    if (!entities) return entities.error();
    st->reset();
    if (entities->empty()) return entities;
    auto forget = db.prepare("DELETE FROM graph_unembedded_entities WHERE id = ?1");
    if (!forget) return forget.error();
    for (const auto& entity : *entities) {
        forget->reset();
        forget->bind(1, entity.id);
        if (auto r = forget->run(); !r) return r.error();
    }
    if (auto r = label_entities(db, dictionary, *entities); !r) return r.error();
    return entities;
}

Result<void> retract_replaced(storage::sql::Connection& db, TermDictionary& dictionary,
                              std::span<const StagedFact> staged,
                              const std::unordered_map<std::int64_t, std::string>& uris,
                              KnowledgeChange& change) {
    FactRetraction retraction(db, dictionary, change);
    std::vector<StagedFact> by_quad(staged.begin(), staged.end());
    std::sort(by_quad.begin(), by_quad.end(), [](const StagedFact& a, const StagedFact& b) {
        return std::tie(a.q, a.source) < std::tie(b.q, b.source);
    });
    for (const auto& entry : uris) {
        const std::int64_t source = entry.first;
        const std::string& uri = entry.second;
        std::vector<QuadIds> now;
        for (const auto& f : staged) {
            if (f.source == source) now.push_back(f.q);
        }
        std::sort(now.begin(), now.end());
        now.erase(std::unique(now.begin(), now.end()), now.end());
        auto before = facts_of_source(db, source);
        if (!before) return before.error();
        // Another file of this load that states a fact this one drops takes the fact over: it
        // stays as it is instead of being removed and written again.
        const auto successor = [&](const QuadIds& q) {
            auto at =
                std::lower_bound(by_quad.begin(), by_quad.end(), q,
                                 [](const StagedFact& f, const QuadIds& key) { return f.q < key; });
            for (; at != by_quad.end() && at->q == q; ++at) {
                if (at->source != source) return at->source;
            }
            return std::int64_t{0};
        };
        SourceChange counts;
        counts.uri = uri;
        std::vector<QuadIds> gone;
        std::set_difference(before->begin(), before->end(), now.begin(), now.end(),
                            std::back_inserter(gone));
        counts.unchanged = before->size() - gone.size();
        counts.added = now.size() - counts.unchanged;
        for (const auto& q : gone) {
            auto outcome = retraction.retract(q, source, uri, successor(q));
            if (!outcome) return outcome.error();
            if (*outcome == FactRetraction::Outcome::kRemoved) ++counts.removed;
            if (*outcome == FactRetraction::Outcome::kKept) ++counts.kept;
        }
        change.facts_added += counts.added;
        change.facts_unchanged += counts.unchanged;
        change.used.push_back(uri);
        change.sources.push_back(std::move(counts));
    }
    std::sort(change.sources.begin(), change.sources.end(),
              [](const SourceChange& a, const SourceChange& b) { return a.uri < b.uri; });
    std::sort(change.used.begin(), change.used.end());
    return retraction.finish();
}

namespace {

// Runs `body` in a write transaction; a failure rolls it back (and drops the ids cached meanwhile).
template <typename Body>
Result<KnowledgeChange> in_write_transaction(storage::sql::Connection& db,
                                             TermDictionary& dictionary, std::string_view kind,
                                             Body&& body) {
    auto tx = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    KnowledgeChange change;
    change.kind = std::string(kind);
    FactRetraction retraction(db, dictionary, change);
    Result<void> done = body(retraction, change);
    if (done) done = retraction.finish();
    if (done) done = tx->commit();
    if (!done) {
        dictionary.forget_cached_terms();
        return done.error();
    }
    return change;
}

std::string shown(std::string_view uri) { return base::printable_utf8(uri.substr(0, 300)); }

}  // namespace

Result<KnowledgeChange> forget_source(storage::sql::Connection& db, TermDictionary& dictionary,
                                      std::string_view uri) {
    return in_write_transaction(
        db, dictionary, kChangeForgetSource,
        [&](FactRetraction& retraction, KnowledgeChange& change) -> Result<void> {
            auto id = source_id_of(db, uri);
            if (!id) return id.error();
            if (*id == 0) {
                return make_error(ErrorType::kNotFound,
                                  "no source " + shown(uri) +
                                      " in this collection (a document's URI: forget document)");
            }
            change.used.emplace_back(uri);
            return forget_source_facts(db, retraction, *id, std::string(uri), change);
        });
}

namespace {

// The ids of a fact's terms; nullopt when one is not stored (then neither is the fact).
Result<std::optional<QuadIds>> fact_ids(TermDictionary& dictionary, const schema::Triple& fact) {
    QuadIds q;
    const std::pair<const schema::Term*, std::int64_t*> parts[] = {
        {&fact.s, &q.s}, {&fact.p, &q.p}, {&fact.o, &q.o}};
    for (const auto& [term, id] : parts) {
        auto found = dictionary.lookup_id(*term);
        if (!found) return found.error();
        if (!*found) return std::optional<QuadIds>{};
        *id = **found;
    }
    auto graph = dictionary.lookup_graph(fact.graph.value_or(""));
    if (!graph) return graph.error();
    if (!*graph) return std::optional<QuadIds>{};
    q.g = **graph;
    return std::optional<QuadIds>{q};
}

}  // namespace

std::string fact_text(const schema::Triple& fact) {
    std::string text = schema::to_ntriples(fact.s) + " " + schema::to_ntriples(fact.p) + " " +
                       schema::to_ntriples(fact.o);
    if (fact.graph) text += " " + schema::to_ntriples(schema::Term(schema::Iri{*fact.graph}));
    return text;
}

Result<KnowledgeChange> forget_fact(storage::sql::Connection& db, TermDictionary& dictionary,
                                    const schema::Triple& fact) {
    return in_write_transaction(
        db, dictionary, kChangeForgetFact,
        [&](FactRetraction& retraction, KnowledgeChange&) -> Result<void> {
            auto ids = fact_ids(dictionary, fact);
            if (!ids) return ids.error();
            std::optional<std::int64_t> first;
            if (*ids) {
                auto stored = first_source_of(db, (*ids)->s, (*ids)->p, (*ids)->o, (*ids)->g);
                if (!stored) return stored.error();
                first = *stored;
            }
            if (!first) {
                std::string text = schema::to_nquads(fact);
                while (!text.empty() && (text.back() == '.' || text.back() == ' ')) text.pop_back();
                return make_error(
                    ErrorType::kNotFound,
                    "no fact " + base::printable_utf8(text.substr(0, 400)) + " in this collection");
            }
            auto sources = source_uris(db, **ids);
            if (!sources) return sources.error();
            return retraction.remove(**ids, std::move(*sources));
        });
}

namespace {

// The chunks of a stored document: (rowid, uri), in ordinal order.
Result<std::vector<std::pair<std::int64_t, std::string>>> document_chunks(
    storage::sql::Connection& db, std::int64_t document) {
    auto st = db.prepare("SELECT id, uri FROM chunks WHERE document_id = ?1 ORDER BY ordinal");
    if (!st) return st.error();
    st->bind(1, document);
    return st->collect([](const storage::sql::Row& row) {
        return std::pair<std::int64_t, std::string>(row.int64(0), std::string(row.text(1)));
    });
}

// Deletes the document row and its chunks (the keyword index follows the chunks); false when the
// document is not stored.
Result<bool> delete_document_rows(storage::sql::Connection& db, std::string_view uri,
                                  KnowledgeChange& change) {
    auto st = db.prepare("SELECT id FROM documents WHERE uri = ?1");
    if (!st) return st.error();
    st->bind(1, uri);
    auto id = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!id) return id.error();
    if (!*id) return false;
    auto chunks = document_chunks(db, **id);
    if (!chunks) return chunks.error();
    for (auto& [rowid, chunk] : *chunks) {
        change.removed_chunks.push_back(rowid);
        change.removed_sources.push_back(std::move(chunk));
    }
    for (const char* sql :
         {"DELETE FROM chunks WHERE document_id = ?1", "DELETE FROM documents WHERE id = ?1"}) {
        auto del = db.prepare(sql);
        if (!del) return del.error();
        del->bind(1, **id);
        if (auto r = del->run(); !r) return r.error();
    }
    return true;
}

}  // namespace

Result<KnowledgeChange> forget_document(storage::sql::Connection& db, TermDictionary& dictionary,
                                        std::string_view uri) {
    return in_write_transaction(
        db, dictionary, kChangeForgetDocument,
        [&](FactRetraction& retraction, KnowledgeChange& change) -> Result<void> {
            auto had_rows = delete_document_rows(db, uri, change);
            if (!had_rows) return had_rows.error();
            // The graph sources that are the document or one of its chunks.
            auto st = db.prepare(
                "SELECT id, uri FROM graph_sources WHERE uri = ?1 OR document_uri = ?1 ORDER BY "
                "uri");
            if (!st) return st.error();
            st->bind(1, uri);
            auto sources = st->collect([](const storage::sql::Row& row) {
                return std::pair<std::int64_t, std::string>(row.int64(0), std::string(row.text(1)));
            });
            if (!sources) return sources.error();
            st->reset();
            if (!*had_rows && sources->empty()) {
                return make_error(ErrorType::kNotFound,
                                  "no document " + shown(uri) + " in this collection");
            }
            change.used.emplace_back(uri);
            if (*had_rows) change.removed_sources.emplace_back(uri);
            for (const auto& [id, source] : *sources) {
                if (auto r = forget_source_facts(db, retraction, id, source, change); !r) return r;
            }
            auto& listed = change.removed_sources;
            std::sort(listed.begin(), listed.end());
            listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
            return Result<void>{};
        });
}

}  // namespace glassbox::store
