// Affected answers (issue 36, docs/traces.md "Affected answers"): when a knowledge change's
// trace ends, every stored top-level run that used a fact or source it removed gets an
// invalidation row; the runs' own triples are never rewritten.
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "base/time_format.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"
#include "workers/trace_collector/run_uses.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace::detail {

using base::Result;
using nlohmann::json;
using storage::sql::Connection;
using storage::sql::Row;

namespace v = schema::vocab;

namespace {

// What a change run's triples say (schema::vocab's knowledge-change terms).
struct Change {
    std::string uri;
    bool is_change = false;
    std::string kind;
    bool listed = true;  // gb:removedListed
    std::optional<std::int64_t> ended;
    std::vector<std::string> removed_facts;  // their nodes
    std::set<std::string> removed_sources;
    std::set<std::string> used_sources;  // prov:used
    std::map<std::string, std::array<std::optional<schema::Term>, 3>> parts;
};

void learn(Change& c, const schema::Triple& t) {
    if (!t.s.is_iri() || !t.p.is_iri()) return;
    const std::string& s = t.s.as_iri().value;
    const std::string& p = t.p.as_iri().value;
    const bool run = s == c.uri;
    if (run && p == v::kRdfType && t.o.is_iri() && t.o.as_iri().value == v::kKnowledgeChange) {
        c.is_change = true;
    } else if (run && p == v::kChangeKind && t.o.is_literal()) {
        c.kind = t.o.as_literal().value;
    } else if (run && p == v::kRemovedListed && t.o.is_literal()) {
        c.listed = t.o.as_literal().value != "false";
    } else if (run && p == v::kProvEndedAtTime && t.o.is_literal()) {
        c.ended = base::parse_xsd_datetime_ms(t.o.as_literal().value);
    } else if (run && p == v::kRemovedFact && t.o.is_iri()) {
        c.removed_facts.push_back(t.o.as_iri().value);
    } else if (run && p == v::kRemovedSource && t.o.is_iri()) {
        c.removed_sources.insert(t.o.as_iri().value);
    } else if (run && p == v::kProvUsed && t.o.is_iri()) {
        c.used_sources.insert(t.o.as_iri().value);
    } else if (p == v::kRdfSubject || p == v::kRdfPredicate || p == v::kRdfObject) {
        c.parts[s][p == v::kRdfSubject ? 0 : p == v::kRdfPredicate ? 1 : 2] = t.o;
    }
}

// Calls `fn` with each stored triple of session row `session`, long literals re-inlined.
template <typename Fn>
Result<void> each_triple(Connection& db, std::int64_t session, Fn&& fn) {
    TripleBlobReader reader;
    return each_stored_record(db, reader, session,
                              [&](std::int64_t, const StoredTriple& record) -> Result<bool> {
                                  auto value = triple_json(db, record);
                                  if (!value) return value.error();
                                  if (auto triple = schema::decode_triple(*value); triple)
                                      fn(*triple);
                                  return true;
                              });
}

// The change run's stored triples read back.
Result<Change> read_change(Connection& db, std::int64_t session, std::string uri) {
    Change c;
    c.uri = std::move(uri);
    auto read = each_triple(db, session, [&](const schema::Triple& t) { learn(c, t); });
    if (!read) return read.error();
    return c;
}

// Session row `session` and every run below it: a sub-run's parent is a step of its caller,
// whose URIs share the caller's prefix "urn:glassbox:<uuid>:".
Result<std::vector<std::int64_t>> run_tree(Connection& db, std::int64_t session) {
    std::vector<std::int64_t> tree{session};
    auto q = db.prepare(
        "SELECT s.id FROM sessions s JOIN sessions c ON c.id = ?1 WHERE c.uuid IS NOT NULL AND "
        "s.parent >= 'urn:glassbox:' || c.uuid || ':' AND s.parent < 'urn:glassbox:' || c.uuid "
        "|| ';'");
    if (!q) return q.error();
    for (std::size_t i = 0; i < tree.size() && tree.size() < 256; ++i) {
        q->bind(1, tree[i]);
        auto read = q->each([&](const Row& row) { tree.push_back(row.int64(0)); });
        q->reset();
        if (!read) return read.error();
    }
    return tree;
}

// The facts a run's answer rests on: the statements its citations (gb:supportedBy,
// gb:shortAnswerSupportedBy) name, in the run or its sub-runs. std::nullopt when the run cites
// nothing: then every fact it selected counts.
Result<std::optional<std::set<std::string>>> cited_facts(Connection& db, std::int64_t session) {
    auto tree = run_tree(db, session);
    if (!tree) return tree.error();
    std::set<std::string> cited;
    std::map<std::string, std::array<std::optional<schema::Term>, 3>> parts;
    for (const std::int64_t run : *tree) {
        auto read = each_triple(db, run, [&](const schema::Triple& t) {
            if (!t.s.is_iri() || !t.p.is_iri()) return;
            const std::string& p = t.p.as_iri().value;
            if ((p == v::kSupportedBy || p == v::kShortAnswerSupportedBy) && t.o.is_iri()) {
                cited.insert(t.o.as_iri().value);
            } else if (p == v::kRdfSubject || p == v::kRdfPredicate || p == v::kRdfObject) {
                parts[t.s.as_iri().value][p == v::kRdfSubject     ? 0
                                          : p == v::kRdfPredicate ? 1
                                                                  : 2] = t.o;
            }
        });
        if (!read) return read.error();
    }
    if (cited.empty()) return std::optional<std::set<std::string>>{};
    std::set<std::string> facts;
    for (const auto& node : cited) {
        const auto found = parts.find(node);
        if (found == parts.end()) continue;
        const auto& [s, p, o] = found->second;
        if (s && p && o) facts.insert(fact_value(*s, *p, *o));
    }
    return std::optional<std::set<std::string>>{std::move(facts)};
}

// What one affected run matched.
struct Matched {
    std::set<std::string> facts;
    std::set<std::string> sources;
};

// Where a change happened: its run, when it ended, and its collection (nullopt: unknown).
struct ChangeScope {
    std::int64_t change = 0;
    std::optional<std::int64_t> before;
    std::optional<std::string> collection;
};

// The top-level runs other than the change (started before it ended) that used (kind, value)
// in the change's collection: the same fact or document in another collection is another
// collection's knowledge (a run whose collection is unknown is counted).
Result<void> match_use(Connection& db, const ChangeScope& scope, char kind,
                       const std::string& value, bool as_fact,
                       std::map<std::int64_t, Matched>& out) {
    const UseCondition used =
        use_condition(kind, value, db.dialect() == storage::sql::Dialect::kPostgres);
    std::string sql =
        "SELECT id FROM sessions WHERE parent IS NULL AND id <> ?1 AND (CAST(?2 AS "
        "BIGINT) IS NULL OR started <= ?2) AND (CAST(?4 AS TEXT) IS NULL OR collection IS NULL "
        "OR collection = ?4) AND " +
        used.sql;
    sql.replace(sql.find("{}"), 2, "?3");
    auto q = db.prepare(sql);
    if (!q) return q.error();
    q->bind(1, scope.change)
        .bind(2, scope.before)
        .bind(3, std::get<std::string>(used.bindings.at(0)))
        .bind(4, scope.collection);
    return q->each([&](const Row& row) {
        auto& m = out[row.int64(0)];
        (as_fact ? m.facts : m.sources).insert(value);
    });
}

// Narrows each run's matched facts to those its answer cites (cited_facts); a run left with
// neither a fact nor a source is not affected. A fact the engine kept but the answer did not
// rest on does not make the answer affected.
Result<void> keep_cited(Connection& db, std::map<std::int64_t, Matched>& affected) {
    for (auto it = affected.begin(); it != affected.end();) {
        Matched& m = it->second;
        if (!m.facts.empty()) {
            auto cited = cited_facts(db, it->first);
            if (!cited) return cited.error();
            if (*cited) std::erase_if(m.facts, [&](const auto& f) { return !(*cited)->count(f); });
        }
        it = m.facts.empty() && m.sources.empty() ? affected.erase(it) : std::next(it);
    }
    return {};
}

Result<void> insert_invalidations(Connection& db, const Change& c, std::int64_t at,
                                  const std::map<std::int64_t, Matched>& affected) {
    auto insert = db.prepare(
        "INSERT INTO invalidations(session, change, at, kind, facts, sources) VALUES(?1, ?2, ?3, "
        "?4, ?5, ?6) ON CONFLICT(session, change) DO NOTHING");
    if (!insert) return insert.error();
    for (const auto& [session, m] : affected) {
        const std::string facts =
            json(std::vector<std::string>(m.facts.begin(), m.facts.end())).dump();
        const std::string sources =
            json(std::vector<std::string>(m.sources.begin(), m.sources.end())).dump();
        insert->bind(1, session)
            .bind(2, std::string_view{c.uri})
            .bind(3, at)
            .bind(4, std::string_view{c.kind})
            .bind(5, std::string_view{facts})
            .bind(6, std::string_view{sources});
        auto r = insert->run();
        insert->reset();
        if (!r) return r;
    }
    return {};
}

}  // namespace

Result<void> record_invalidations(Connection& db, std::int64_t session) {
    std::string uri;
    std::int64_t ended = 0;
    ChangeScope scope{session, std::nullopt, std::nullopt};
    {
        auto q = db.prepare(
            "SELECT uri, COALESCE(ended, last_event_at), collection FROM sessions WHERE id = ?1 "
            "AND kind = ?2 AND status = 'complete'");
        if (!q) return q.error();
        q->bind(1, session).bind(2, schema::services::kStore);
        auto found = q->first([&](const Row& row) {
            uri = std::string(row.text(0));
            ended = row.int64(1);
            if (!row.is_null(2)) scope.collection = std::string(row.text(2));
            return true;
        });
        if (!found) return found.error();
        if (!*found) return {};
    }
    auto change = read_change(db, session, uri);
    if (!change) return change.error();
    if (!change->is_change) return {};
    const std::optional<std::int64_t> before = change->ended.value_or(ended);
    scope.before = before;
    std::map<std::int64_t, Matched> affected;
    for (const auto& node : change->removed_facts) {
        const auto found = change->parts.find(node);
        if (found == change->parts.end()) continue;
        const auto& [s, p, o] = found->second;
        if (!s || !p || !o) continue;
        const std::string fact = fact_value(*s, *p, *o);
        if (auto r = match_use(db, scope, use_kind::kFact, fact, true, affected); !r) return r;
    }
    std::set<std::string> sources = change->removed_sources;
    if (!change->listed) sources.insert(change->used_sources.begin(), change->used_sources.end());
    for (const auto& source : sources) {
        for (const char kind : {use_kind::kDocument, use_kind::kChunk}) {
            if (auto r = match_use(db, scope, kind, source, false, affected); !r) return r;
        }
    }
    if (auto r = keep_cited(db, affected); !r) return r;
    return insert_invalidations(db, *change, *before, affected);
}

Result<json> session_invalidations(Connection& db, std::int64_t session) {
    auto q = db.prepare(
        "SELECT change, at, kind, facts, sources FROM invalidations WHERE session = ?1 ORDER BY "
        "at, change");
    if (!q) return q.error();
    q->bind(1, session);
    json out = json::array();
    auto read = q->each([&](const Row& row) {
        const auto list = [](std::string_view text) {
            auto parsed = schema::parse_untrusted_json(text);
            return parsed && parsed->is_array() ? std::move(parsed).value() : json::array();
        };
        out.push_back(json{{"change", std::string(row.text(0))},
                           {"at", base::format_xsd_datetime_ms(row.int64(1))},
                           {"kind", std::string(row.text(2))},
                           {"facts", list(row.text(3))},
                           {"sources", list(row.text(4))}});
    });
    if (!read) return read.error();
    return out;
}

}  // namespace glassbox::trace::detail
