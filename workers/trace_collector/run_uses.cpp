// The usage index: what a run used, gathered from the scanned triples of its events, written
// for the run and its top-level run, and read by `list`'s usage filters.
#include "workers/trace_collector/run_uses.hpp"

#include <algorithm>
#include <cctype>

#include "base/fnv.hpp"
#include "schema/json_cursor.hpp"
#include "schema/nquads.hpp"
#include "schema/term_text.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::trace::detail {

using base::ErrorType;
using base::make_error;
using base::Result;
using storage::sql::Connection;
using storage::sql::Row;

namespace v = schema::vocab;

// SQLite: a run's run_uses row (its batches' uses and, for a top-level run, its sub-runs',
// merged) has the id session << kDocBits, so a match gives the session without a lookup.
constexpr int kDocBits = 10;
// A filter matching at least this many runs walks the newest-first page index, checking each
// run, instead of reading every match and sorting them (as `search` does, trace_queries.cpp).
constexpr std::int64_t kManyMatches = 5000;
// Bytes of question and answer text kept per run for `list --text`.
constexpr std::size_t kMaxRunTextBytes = std::size_t{2} * 1024;
// The parent chain followed to a run's top-level run.
constexpr int kMaxParentDepth = 32;

std::int64_t use_key(char kind, std::string_view value) {
    const char k[1] = {kind};
    const std::uint64_t hash = base::fnv1a64(value, base::fnv1a64(std::string_view(k, 1)));
    return static_cast<std::int64_t>(hash);
}

std::string fact_value(const schema::Term& s, const schema::Term& p, const schema::Term& o) {
    return schema::to_ntriples(s) + " " + schema::to_ntriples(p) + " " + schema::to_ntriples(o);
}

namespace {

base::Error bad_fact(std::string_view text, const std::string& why) {
    return make_error(
        ErrorType::kInvalidRequest,
        "a fact must be \"S P O\" (N-Triples terms, or IRIs and a plain literal): \"" +
            std::string(text.substr(0, 200)) + "\": " + why);
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    return text;
}

// The next whitespace-separated word of `text`, removed from it.
std::string_view next_word(std::string_view& text) {
    text = trim(text);
    const auto end = std::min(text.size(), text.find_first_of(" \t\r\n"));
    const auto word = text.substr(0, end);
    text.remove_prefix(end);
    return word;
}

// A bare word as an IRI term ("<…>" or "urn:x"); nullopt when it is neither.
std::optional<schema::Term> bare_iri(std::string_view word) {
    if (word.size() > 2 && word.front() == '<' && word.back() == '>')
        word = word.substr(1, word.size() - 2);
    if (word.find(':') == std::string_view::npos ||
        word.find_first_of("<>\" ") != std::string_view::npos)
        return std::nullopt;
    return schema::iri(word);
}

}  // namespace

Result<std::string> parse_fact(std::string_view text) {
    const std::string_view whole = trim(text);
    if (whole.empty()) return bad_fact(text, "it is empty");
    if (auto line = schema::parse_nquads_line(std::string(whole) + " .", 1); line && *line) {
        const schema::Triple& t = **line;
        if (t.graph && !t.graph->empty()) return bad_fact(text, "a graph is not part of a fact");
        return fact_value(t.s, t.p, t.o);
    }
    std::string_view rest = whole;
    const auto s = bare_iri(next_word(rest));
    const auto p = bare_iri(next_word(rest));
    rest = trim(rest);
    if (!s || !p) return bad_fact(text, "its subject and predicate must be IRIs");
    if (rest.empty()) return bad_fact(text, "it has no object");
    std::optional<schema::Term> o;
    if (rest.front() == '"' || rest.front() == '<' || rest.rfind("_:", 0) == 0) {
        auto term = schema::parse_nquads_term(rest, 1);
        if (!term) return bad_fact(text, term.error().message);
        o = std::move(term).value();
    } else if (rest.find_first_of(" \t") == std::string_view::npos) {
        o = bare_iri(rest);
    }
    if (!o) o = schema::literal(rest);
    return fact_value(*s, *p, *o);
}

// ---- gathering ------------------------------------------------------------------------------

void UseScan::see(const ScannedTriple& t, std::string& scratch) {
    if (t.s.kind != ScannedKind::kIri || t.p.kind != ScannedKind::kIri) return;
    // Its own buffer: `scratch` is reused for the other terms below (one allocation only for an
    // escaped predicate).
    std::string p_scratch;
    const std::string_view p = t.p.value.value(p_scratch);
    const bool iri_object = t.o.kind == ScannedKind::kIri;
    const bool literal_object = t.o.kind == ScannedKind::kLiteral;
    const auto add = [&](char kind, std::string value) {
        if (!value.empty() && value.size() <= kMaxUseValueBytes)
            uses_.emplace(kind, std::move(value));
    };
    if (p == v::kSelectedEdge && iri_object) {
        const std::string node = t.o.value.str();
        selected_.insert(node);
        chosen_.insert(node);
    } else if (p == v::kRetrievedChunk && iri_object) {
        chosen_.insert(t.o.value.str());
    } else if (p == v::kRdfSubject || p == v::kRdfPredicate || p == v::kRdfObject) {
        if (selected_.empty()) return;
        const std::string node = t.s.value.str();
        if (selected_.count(node) == 0) return;
        schema::JsonCursor cursor(t.object_text);
        schema::Term object;
        if (!schema::read_json_term(cursor, object) || object.is_triple()) return;
        Parts& parts = parts_[node];
        (p == v::kRdfSubject     ? parts.s
         : p == v::kRdfPredicate ? parts.p
                                 : parts.o) = std::move(object);
    } else if ((p == v::kSourceDocument || p == v::kSourceChunk) && iri_object) {
        if (chosen_.count(t.s.value.str()) == 0) return;
        add(p == v::kSourceDocument ? use_kind::kDocument : use_kind::kChunk, t.o.value.str());
    } else if (p == v::kModelName && literal_object) {
        add(use_kind::kModel, t.o.value.str());
    } else if (p == v::kAction && literal_object) {
        add(use_kind::kTool, t.o.value.str());
    } else if (p == v::kCollection && literal_object) {
        add(use_kind::kCollection, t.o.value.str());
    } else if (p == v::kSeedEntity && iri_object) {
        add(use_kind::kEntity, t.o.value.str());
    } else if ((p == v::kQuery || p == v::kAnswerText) && literal_object) {
        if (text_.size() < kMaxRunTextBytes) {
            text_ += text_.empty() ? "" : "\n";
            text_ += t.o.value.value(scratch).substr(0, kMaxRunTextBytes);
        }
    }
}

void UseScan::finish(RunUses& out) {
    for (auto& [node, parts] : parts_) {
        if (!parts.s || !parts.p || !parts.o) continue;
        std::string fact = fact_value(*parts.s, *parts.p, *parts.o);
        if (fact.size() <= kMaxUseValueBytes) out.uses.emplace(use_kind::kFact, std::move(fact));
        for (const auto* end : {&*parts.s, &*parts.o}) {
            if (end->is_iri()) out.uses.emplace(use_kind::kEntity, end->as_iri().value);
        }
    }
    out.uses.merge(uses_);
    if (!text_.empty() && out.text.size() < kMaxRunTextBytes)
        out.text += (out.text.empty() ? "" : "\n") + text_;
    selected_.clear();
    chosen_.clear();
    parts_.clear();
    uses_.clear();
    text_.clear();
}

// ---- writing --------------------------------------------------------------------------------

namespace {

// The top-level run of session row `session` as its stored parent chain goes (itself when it
// has no parent, or the highest ancestor stored so far).
Result<std::int64_t> top_level_of(Connection& db, std::int64_t session) {
    auto q = db.prepare(
        "WITH RECURSIVE up(id, parent, depth) AS (SELECT id, parent, 0 FROM sessions WHERE id = "
        "?1 UNION ALL SELECT s.id, s.parent, up.depth + 1 FROM sessions s JOIN up ON s.uri = "
        "up.parent WHERE up.depth < ?2) SELECT id FROM up ORDER BY depth DESC LIMIT 1");
    if (!q) return q.error();
    q->bind(1, session).bind(2, static_cast<std::int64_t>(kMaxParentDepth));
    auto top = q->first([](const Row& row) { return row.int64(0); });
    if (!top) return top.error();
    return top->value_or(session);
}

// The hash of a use as an FTS5 term: 16 lowercase hex digits.
std::string term_of(std::int64_t key) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(16, '0');
    auto bits = static_cast<std::uint64_t>(key);
    for (int i = 15; i >= 0; --i, bits >>= 4) out[static_cast<std::size_t>(i)] = kHex[bits & 15];
    return out;
}

// The hex terms of one SQLite run_uses row ("t1 t2 …") into `out`.
void add_terms(std::string_view terms, std::set<std::string>& out) {
    std::size_t at = 0;
    while (at < terms.size()) {
        const std::size_t end = std::min(terms.find(' ', at), terms.size());
        if (end > at) out.emplace(terms.substr(at, end - at));
        at = end + 1;
    }
}

// SQLite: the run's one row (at doc = session << kDocBits, holding `old_terms`) given `terms`:
// its full-text row deleted ('delete' with the old terms, as the row's DELETE trigger would),
// the row updated in place and its new full-text row added. No statement here needs a statement
// journal (single-row, by rowid, no trigger), so none opens a savepoint: SQLite 3.40's FTS5
// writes its pending terms out as a new segment at every savepoint of the transaction
// (fts5SavepointMethod → sqlite3Fts5StorageSync), which the DELETE's trigger made one segment
// per run per batch in each FTS5 table the batch had written, instead of one per commit.
Result<void> rewrite_sqlite_uses(Connection& db, std::int64_t session, const std::string& old_terms,
                                 const std::string& terms) {
    const std::int64_t doc = session << kDocBits;
    const std::pair<const char*, const std::string*> steps[] = {
        {"INSERT INTO run_uses_search(run_uses_search, rowid, terms) VALUES('delete', ?1, ?2)",
         &old_terms},
        {"UPDATE run_uses SET terms = ?2 WHERE doc = ?1", &terms},
        {"INSERT INTO run_uses_search(rowid, terms) VALUES(?1, ?2)", &terms}};
    for (const auto& [sql, text] : steps) {
        auto statement = db.prepare(sql);
        if (!statement) return statement.error();
        statement->bind(1, doc).bind(2, std::string_view{*text});
        auto r = statement->run();
        statement->reset();
        if (!r) return r;
    }
    return {};
}

// SQLite: the run's one run_uses row, its terms now `uses` and those it had. One row per run
// (doc = session << kDocBits), so that filters on several uses are one FTS5 query (`A AND B`,
// answered by intersecting the terms' doclists) rather than one materialised set per filter.
// An older store may hold several rows of a run: they are merged into one here.
Result<void> merge_sqlite_uses(Connection& db, std::int64_t session,
                               const std::set<std::pair<char, std::string>>& uses) {
    std::set<std::string> terms;
    for (const auto& [kind, value] : uses) terms.insert(term_of(use_key(kind, value)));
    auto old = db.prepare("SELECT doc, terms FROM run_uses WHERE session = ?1");
    if (!old) return old.error();
    old->bind(1, session);
    std::size_t rows = 0;
    std::optional<std::string> own_row;  // the terms of the run's one row at its own doc
    auto read = old->each([&](const Row& row) {
        ++rows;
        if (row.int64(0) == (session << kDocBits)) own_row = std::string(row.text(1));
        add_terms(row.text(1), terms);
    });
    old->reset();
    if (!read) return read.error();
    std::string list;
    for (const auto& t : terms) list.append(list.empty() ? "" : " ").append(t);
    if (rows == 1 && own_row) return rewrite_sqlite_uses(db, session, *own_row, list);
    if (rows > 0) {
        auto drop = db.prepare("DELETE FROM run_uses WHERE session = ?1");
        if (!drop) return drop.error();
        drop->bind(1, session);
        auto r = drop->run();
        drop->reset();
        if (!r) return r;
    }
    // The row and its full-text row (no trigger writes it: trace_store.cpp, kSearchTable).
    for (const char* sql : {"INSERT INTO run_uses(doc, session, terms) VALUES(?1 << ?3, ?1, ?2)",
                            "INSERT INTO run_uses_search(rowid, terms) VALUES(?1 << ?3, ?2)"}) {
        auto insert = db.prepare(sql);
        if (!insert) return insert.error();
        insert->bind(1, session)
            .bind(2, std::string_view{list})
            .bind(3, static_cast<std::int64_t>(kDocBits));
        auto r = insert->run();
        insert->reset();
        if (!r) return r;
    }
    return {};
}

// What a batch saw `session` use, kept as this backend keeps it: SQLite, FTS5 terms in the run's
// one row (merge_sqlite_uses); PostgreSQL, a bigint[] under a GIN index, a row per batch (a GIN
// overlap per filter, intersected by the planner's bitmap AND).
Result<void> insert_uses(Connection& db, std::int64_t session,
                         const std::set<std::pair<char, std::string>>& uses) {
    if (db.dialect() != storage::sql::Dialect::kPostgres)
        return merge_sqlite_uses(db, session, uses);
    std::string list = "{";
    for (const auto& [kind, value] : uses)
        list.append(list.size() == 1 ? "" : ",").append(std::to_string(use_key(kind, value)));
    list += "}";
    auto insert =
        db.prepare("INSERT INTO run_uses(session, keys) VALUES(?1, CAST(?2 AS BIGINT[]))");
    if (!insert) return insert.error();
    insert->bind(1, session).bind(2, std::string_view{list});
    auto r = insert->run();
    insert->reset();
    return r;
}

// SQLite: the run's text and its full-text row (run_text_search, which no trigger keeps: the
// old text's row deleted, the whole new text's added).
Result<void> write_sqlite_run_text(Connection& db, std::int64_t session, const std::string& text) {
    auto read = db.prepare("SELECT body FROM run_text WHERE session = ?1");
    if (!read) return read.error();
    read->bind(1, session);
    auto old = read->first([](const Row& row) { return std::string(row.text(0)); });
    read->reset();
    if (!old) return old.error();
    const auto run = [&](const std::string& sql, std::string_view body) -> Result<void> {
        auto write = db.prepare(sql);
        if (!write) return write.error();
        write->bind(1, session).bind(2, body);
        auto r = write->run();
        write->reset();
        return r;
    };
    const std::string body = *old ? **old + " " + text : text;
    if (*old) {
        if (auto r = run("UPDATE run_text SET body = ?2 WHERE session = ?1", body); !r) return r;
        if (auto r = run("INSERT INTO run_text_search(run_text_search, rowid, body) "
                         "VALUES('delete', ?1, ?2)",
                         **old);
            !r)
            return r;
    } else if (auto r = run("INSERT INTO run_text(session, body) VALUES(?1, ?2)", body); !r) {
        return r;
    }
    return run("INSERT INTO run_text_search(rowid, body) VALUES(?1, ?2)", body);
}

Result<void> write_run_text(Connection& db, std::int64_t session, const std::string& text) {
    if (db.dialect() != storage::sql::Dialect::kPostgres)
        return write_sqlite_run_text(db, session, text);
    auto upsert = db.prepare(
        "INSERT INTO run_text(session, body) VALUES(?1, ?2) ON CONFLICT(session) DO UPDATE SET "
        "body = run_text.body || ' ' || excluded.body");
    if (!upsert) return upsert.error();
    upsert->bind(1, session).bind(2, std::string_view{text});
    return upsert->run();
}

}  // namespace

Result<void> write_run_uses(Connection& db, const std::map<std::int64_t, RunUses>& runs) {
    for (const auto& [session, run] : runs) {
        if (!run.text.empty()) {
            if (auto r = write_run_text(db, session, run.text); !r) return r;
        }
        if (run.uses.empty()) continue;
        auto top = top_level_of(db, session);
        if (!top) return top.error();
        if (auto r = insert_uses(db, session, run.uses); !r) return r;
        if (*top != session) {
            if (auto r = insert_uses(db, *top, run.uses); !r) return r;
        }
    }
    return {};
}

// ---- filters --------------------------------------------------------------------------------

namespace {

// "id IN (the sessions of the run_uses rows holding the hash of (kind, value) for any of
// `kinds`)": an FTS5 match on SQLite, a GIN array overlap on PostgreSQL.
UseCondition uses_any(std::string_view kinds, const std::string& value, bool postgres) {
    UseCondition c;
    if (postgres) {
        std::string list = "{";
        for (const char kind : kinds)
            list += (list.size() == 1 ? "" : ",") + std::to_string(use_key(kind, value));
        c.sql = "id IN (SELECT session FROM run_uses WHERE keys && CAST({} AS BIGINT[]))";
        c.bindings.emplace_back(list + "}");
        return c;
    }
    std::string match;
    for (const char kind : kinds)
        match += (match.empty() ? "\"" : " OR \"") + term_of(use_key(kind, value)) + "\"";
    c.sql = "id IN (SELECT rowid >> " + std::to_string(kDocBits) +
            " FROM run_uses_search WHERE run_uses_search MATCH {})";
    c.bindings.emplace_back(match);
    return c;
}

// SQLite: when the FTS5 `table` matches `match` in kManyMatches rows or more, `condition`
// becomes "+id IN …": the planner then walks the page index newest first and checks each run
// against the matches, stopping at the page's end, instead of reading and sorting every match.
Result<void> prefer_page_order(Connection& db, const char* table, const std::string& match,
                               UseCondition& condition) {
    auto probe = db.prepare(std::string("SELECT COUNT(*) FROM (SELECT 1 FROM ") + table +
                            " WHERE " + table + " MATCH ?1 LIMIT ?2)");
    if (!probe) return probe.error();
    probe->bind(1, std::string_view{match}).bind(2, kManyMatches);
    auto n = probe->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    if (n->value_or(0) >= kManyMatches) condition.sql = "+" + condition.sql;
    return {};
}

// SQLite: the usage filters (each an FTS5 match on run_uses_search) as ONE condition, their
// matches joined with AND: a run's uses are one row, so FTS5 finds the runs with all of them by
// intersecting doclists, where a set per filter read every match of each (a model 200,000 runs
// used: 80 ms at 1,000,000 runs, three such filters 320 ms).
Result<void> combine_use_matches(Connection& db, std::vector<UseCondition>& conditions) {
    std::string match;
    std::size_t first = conditions.size();
    for (std::size_t i = 0; i < conditions.size(); ++i) {
        if (conditions[i].sql.find("run_uses_search") == std::string::npos) continue;
        const auto& one = std::get<std::string>(conditions[i].bindings.at(0));
        match.append(match.empty() ? "(" : " AND (").append(one).append(")");
        if (first == conditions.size()) first = i;
    }
    if (first == conditions.size()) return {};
    UseCondition combined = conditions[first];
    combined.bindings.at(0) = match;
    std::erase_if(conditions, [](const UseCondition& c) {
        return c.sql.find("run_uses_search") != std::string::npos;
    });
    if (auto r = prefer_page_order(db, "run_uses_search", match, combined); !r) return r;
    conditions.push_back(std::move(combined));
    return {};
}

// The words of `text` as an FTS5 query: each a quoted token, all of them required.
std::string fts_words(std::string_view text) {
    std::string out;
    std::string word;
    const auto flush = [&] {
        if (word.empty()) return;
        out += (out.empty() ? "\"" : " \"") + word + "\"";
        word.clear();
    };
    for (const char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80))
            word += c;
        else
            flush();
    }
    flush();
    return out;
}

}  // namespace

UseCondition use_condition(char kind, const std::string& value, bool postgres) {
    return uses_any(std::string_view(&kind, 1), value, postgres);
}

Result<std::vector<UseCondition>> use_conditions(Connection& db, const ListQuery& query) {
    const bool postgres = db.dialect() == storage::sql::Dialect::kPostgres;
    std::vector<UseCondition> out;
    if (query.uses_source) out.push_back(uses_any("d", *query.uses_source, postgres));
    if (query.uses_document) out.push_back(uses_any("dc", *query.uses_document, postgres));
    if (query.entity) out.push_back(uses_any("e", *query.entity, postgres));
    if (query.model) out.push_back(uses_any("m", *query.model, postgres));
    if (query.uses_fact) {
        auto fact = parse_fact(*query.uses_fact);
        if (!fact) return fact.error();
        out.push_back(uses_any("f", *fact, postgres));
    }
    if (query.text) {
        const std::string words = fts_words(*query.text);
        if (words.empty())
            return make_error(ErrorType::kInvalidRequest, "\"text\" must hold at least one word");
        UseCondition c;
        if (postgres) {
            c.sql =
                "id IN (SELECT session FROM run_text WHERE to_tsvector('simple', body) @@ "
                "plainto_tsquery('simple', {}))";
            c.bindings.emplace_back(*query.text);
        } else {
            c.sql = "id IN (SELECT rowid FROM run_text_search WHERE run_text_search MATCH {})";
            c.bindings.emplace_back(words);
            if (auto r = prefer_page_order(db, "run_text_search", words, c); !r) return r.error();
        }
        out.push_back(std::move(c));
    }
    if (!postgres) {
        if (auto r = combine_use_matches(db, out); !r) return r.error();
    }
    if (query.affected)
        out.push_back(UseCondition{"id IN (SELECT session FROM invalidations)", {}});
    return out;
}

}  // namespace glassbox::trace::detail
