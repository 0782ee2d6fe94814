// The trace store's reads for the `trace` service: resolving a session id, list (filters,
// keyset pages, bounded counts), show (a session with its subtraces), export and stats.
#include "workers/trace_collector/trace_store.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <variant>

#include "base/ascii.hpp"
#include "base/spelling.hpp"
#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/run_uses.hpp"
#include "workers/trace_collector/trace_costs.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using detail::to_ms;
using nlohmann::json;
using storage::sql::Connection;
using storage::sql::Row;
using storage::sql::Statement;

namespace {

constexpr int kMaxShowDepth = 32;
constexpr std::size_t kMaxAmbiguousListed = 10;

// LIKE pattern for a substring, with the pattern characters escaped by '\'.
std::string like_pattern(std::string_view text) {
    std::string out = "%";
    for (const char c : text) {
        if (c == '%' || c == '_' || c == '\\') out += '\\';
        out += c;
    }
    out += '%';
    return out;
}

bool is_uuid_prefix(std::string_view id) {
    if (id.empty() || id.size() > 36) return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) || c == '-';
    });
}

}  // namespace

namespace {

// Column 13 counts the session's direct sub-runs (an index seek on sessions_sub_parent), the last
// its evaluations (a seek on evaluations_session: only evaluated rows read them).
constexpr const char* kSummaryColumns =
    "id, uri, kind, question, parent, started, ended, status, service, worker, events, "
    "last_event_at, error, "
    "(SELECT COUNT(*) FROM sessions sub WHERE sub.parent = sessions.uri), collection, tokens_in, "
    "tokens_out, pinned, (SELECT COUNT(*) FROM evaluations ev WHERE ev.session = sessions.id), "
    "(SELECT COUNT(*) FROM invalidations iv WHERE iv.session = sessions.id), sampling";
constexpr int kEvaluationsColumn = 18;
constexpr int kAffectedColumn = 19;  // the knowledge changes that affected it (issue 36)
constexpr int kSamplingColumn = 20;  // the sampling pass's decision (docs/traces.md, "Sampling")

// A run's tokens with its sub-runs' (their own sub-runs too), read after the page: each seek is
// on sessions_sub_parent.
constexpr const char* kRunTokens =
    "WITH RECURSIVE tree(uri, tin, tout) AS (SELECT uri, tokens_in, tokens_out FROM sessions WHERE "
    "id = ?1 "
    "UNION ALL SELECT s.uri, s.tokens_in, s.tokens_out FROM sessions s JOIN tree ON s.parent = "
    "tree.uri) "
    "SELECT COALESCE(SUM(tin), 0), COALESCE(SUM(tout), 0) FROM tree";

std::string effective_status(std::string_view stored, std::int64_t last_event_at,
                             std::int64_t cutoff) {
    if (stored == "running" && last_event_at < cutoff) return "incomplete";
    return std::string(stored);
}

// The time before which a running session's last event makes it incomplete.
std::int64_t incomplete_cutoff(const StoreConfig& config, WallClock::time_point now) {
    return to_ms(now) -
           std::chrono::duration_cast<std::chrono::milliseconds>(config.incomplete_after).count();
}

json optional_time(const Row& q, int column) {
    if (q.is_null(column)) return nullptr;
    return base::format_xsd_datetime_ms(q.int64(column));
}

json summary_of(const Row& q, std::int64_t cutoff) {
    json s = json::object();
    s["session"] = std::string(q.text(1));
    s["kind"] = q.is_null(2) ? json(nullptr) : json(std::string(q.text(2)));
    s["question"] = q.is_null(3) ? json(nullptr) : json(std::string(q.text(3)));
    s["parent"] = q.is_null(4) ? json(nullptr) : json(std::string(q.text(4)));
    s["started"] = optional_time(q, 5);
    s["ended"] = optional_time(q, 6);
    s["duration_ms"] = (q.is_null(5) || q.is_null(6))
                           ? json(nullptr)
                           : json(std::max<std::int64_t>(0, q.int64(6) - q.int64(5)));
    s["status"] = effective_status(q.text(7), q.int64(11), cutoff);
    s["service"] = q.is_null(8) ? json(nullptr) : json(std::string(q.text(8)));
    s["worker"] = q.is_null(9) ? json(nullptr) : json(std::string(q.text(9)));
    s["events"] = q.int64(10);
    if (!q.is_null(12)) s["error"] = std::string(q.text(12));
    s["subtraces"] = q.int64(13);
    s["collection"] = q.is_null(14) ? json(nullptr) : json(std::string(q.text(14)));
    s["input_tokens"] = q.int64(15);
    s["output_tokens"] = q.int64(16);
    s["pinned"] = q.int64(17) != 0;
    s["evaluations"] = json::array();
    s["affected"] = q.int64(kAffectedColumn);
    if (!q.is_null(kSamplingColumn) && q.text(kSamplingColumn) == "summarised") s["summary"] = true;
    return s;
}

// Fills a summary's evaluations (summary_of leaves them empty) when the session has some.
Result<void> add_evaluations(Connection& db, std::int64_t id, std::int64_t count, json& summary) {
    if (count == 0) return {};
    auto evaluations = detail::session_evaluations(db, id);
    if (!evaluations) return evaluations.error();
    summary["evaluations"] = std::move(evaluations).value();
    return {};
}

// Adds the sub-runs' tokens to a summary's (the run's own are in it) when it has sub-runs.
Result<void> add_subrun_tokens(Connection& db, std::int64_t id, json& summary) {
    if (summary["subtraces"].get<std::int64_t>() == 0) return {};
    auto q = db.prepare(kRunTokens);
    if (!q) return q.error();
    q->bind(1, id);
    auto read = q->first([&](const Row& row) {
        summary["input_tokens"] = row.int64(0);
        summary["output_tokens"] = row.int64(1);
        return true;
    });
    if (!read) return read.error();
    return {};
}

// Adds what the run's and its sub-runs' model calls cost to a summary (docs/traces.md, "Cost").
Result<void> add_cost(Connection& db, std::int64_t id, json& summary) {
    return detail::add_run_cost(db, id, summary["subtraces"].get<std::int64_t>() > 0, summary);
}

using Binding = std::variant<std::int64_t, std::string>;

void bind_all(Statement& q, const std::vector<Binding>& bindings) {
    int index = 1;
    for (const auto& b : bindings) {
        if (const auto* i = std::get_if<std::int64_t>(&b)) {
            q.bind(index++, *i);
        } else {
            q.bind(index++, std::string_view{std::get<std::string>(b)});
        }
    }
}

// A list cursor: "<started>.<id>" of the last session a page listed.
std::string make_cursor(std::int64_t started, std::int64_t id) {
    return std::to_string(started) + "." + std::to_string(id);
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_cursor(std::string_view text) {
    const auto dot = text.find('.', 1);
    if (dot == std::string_view::npos) return std::nullopt;
    std::int64_t started = 0;
    std::int64_t id = 0;
    const auto parse = [](std::string_view part, std::int64_t& out) {
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
        return ec == std::errc{} && end == part.data() + part.size() && !part.empty();
    };
    if (!parse(text.substr(0, dot), started) || !parse(text.substr(dot + 1), id))
        return std::nullopt;
    return std::pair{started, id};
}

// Runs `body` inside one read transaction, so a multi-statement read sees one snapshot.
template <typename F>
auto in_read_transaction(Connection& db, F&& body) -> decltype(body()) {
    auto transaction = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kRead);
    if (!transaction) return transaction.error();
    auto result = body();
    (void)transaction->commit();
    return result;
}

}  // namespace

Result<std::string> TraceStore::resolve_session(std::string_view id) {
    if (id.empty()) return make_error(ErrorType::kInvalidRequest, "an empty session id");
    {
        auto exact = db_->prepare("SELECT uri FROM sessions WHERE uri = ?1");
        if (!exact) return exact.error();
        exact->bind(1, id);
        auto found = exact->first([](const Row& row) { return std::string(row.text(0)); });
        if (!found) return found.error();
        if (*found) return std::move(**found);
    }
    std::string prefix = base::ascii_lower(id);
    // A session URI of a run also names its UUID: accept urn:glassbox:<uuid>:question forms.
    if (const auto run = schema::explain::RunUris::from_uri(prefix)) prefix = run->uuid();
    if (!is_uuid_prefix(prefix))
        return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
    auto q = db_->prepare(
        "SELECT uri FROM sessions WHERE uuid >= ?1 AND uuid < ?2 ORDER BY uuid LIMIT ?3");
    if (!q) return q.error();
    // '~' sorts after every hex digit and '-': [prefix, prefix~) is exactly the prefix's range.
    q->bind(1, std::string_view{prefix})
        .bind(2, std::string_view{prefix + "~"})
        .bind(3, static_cast<std::int64_t>(kMaxAmbiguousListed + 1));
    auto found = q->collect([](const Row& row) { return std::string(row.text(0)); });
    if (!found) return found.error();
    const std::vector<std::string>& matches = *found;
    if (matches.empty()) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
    if (matches.size() == 1) return matches.front();
    std::string message = "ambiguous id " + std::string(id) + " matches";
    for (std::size_t i = 0; i < std::min(matches.size(), kMaxAmbiguousListed); ++i)
        message += " " + matches[i];
    if (matches.size() > kMaxAmbiguousListed) message += " …";
    return make_error(ErrorType::kInvalidRequest, message);
}

// A kind to list by that no stored run has but that is a near miss of an engine's service name
// or a stored kind is a typo, refused with the nearest (issue 31: "graphrag" listed nothing,
// silently). A kind near none of them may be a service whose first run is still to come: it
// lists nothing, as before.
Result<void> TraceStore::check_kind(const std::string& kind) {
    namespace s = schema::services;
    std::vector<std::string> kinds{std::string(s::kQuery), std::string(s::kGraphRag),
                                   std::string(s::kDocumentRag), std::string(s::kAgent),
                                   std::string(s::kEcho)};
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return {};
    auto q = db_->prepare("SELECT DISTINCT kind FROM sessions WHERE kind IS NOT NULL LIMIT 1000");
    if (!q) return q.error();
    bool stored_kind = false;
    auto read = q->each([&](const Row& row) {
        std::string stored(row.text(0));
        stored_kind = stored == kind;
        if (!stored_kind && std::find(kinds.begin(), kinds.end(), stored) == kinds.end())
            kinds.push_back(std::move(stored));
        return !stored_kind;
    });
    if (!read) return read.error();
    if (stored_kind) return {};
    const auto near = base::nearest_name(kind, kinds);
    if (!near) return {};
    std::string listed;
    for (const auto& k : kinds) listed += (listed.empty() ? "" : ", ") + k;
    return make_error(ErrorType::kInvalidRequest,
                      "no run is of kind \"" + base::printable_utf8(kind.substr(0, 100)) +
                          "\" (did you mean " + *near + "?); the kinds are " + listed);
}

namespace {

// A WHERE clause and its parameters, numbered ?1 … in the order they are added.
struct SqlFilter {
    std::vector<std::string> where;
    std::vector<Binding> bindings;

    std::string param(Binding b) {
        bindings.push_back(std::move(b));
        return "?" + std::to_string(bindings.size());
    }
    std::string clause() const {
        std::string out;
        for (std::size_t i = 0; i < where.size(); ++i)
            out += (i == 0 ? " WHERE " : " AND ") + where[i];
        return out;
    }
};

// The condition for a status filter: "running" and "incomplete" split the stored running
// sessions at the cutoff.
Result<void> add_status_filter(SqlFilter& filter, const std::string& s, std::int64_t cutoff) {
    if (s == "complete" || s == "error") {
        filter.where.push_back("status = " + filter.param(s));
    } else if (s == "running") {
        filter.where.push_back("status = 'running' AND last_event_at >= " + filter.param(cutoff));
    } else if (s == "incomplete") {
        filter.where.push_back("status = 'running' AND last_event_at < " + filter.param(cutoff));
    } else {
        return make_error(
            ErrorType::kInvalidRequest,
            "\"status\" must be running, complete, error or incomplete, not \"" + s + "\"");
    }
    return {};
}

// The evaluated filter, then the conditions of the usage filters (what the runs used, their
// text, whether a change affected them: run_uses.hpp), their "{}" numbered as the filter's
// parameters.
Result<void> add_use_filters(SqlFilter& filter, const ListQuery& query, Connection& db) {
    if (query.evaluated) filter.where.push_back("id IN (SELECT session FROM evaluations)");
    auto uses = detail::use_conditions(db, query);
    if (!uses) return uses.error();
    for (auto& condition : *uses) {
        std::string sql;
        std::size_t next = 0;
        for (std::size_t at = 0; at < condition.sql.size(); ++at) {
            if (condition.sql.compare(at, 2, "{}") == 0) {
                sql += filter.param(std::move(condition.bindings[next++]));
                ++at;
            } else {
                sql += condition.sql[at];
            }
        }
        filter.where.push_back(std::move(sql));
    }
    return {};
}

// How many sessions match the filter: exactly, or counting up to `cap` only (then a total above
// it is reported as the cap, not exact).
struct SessionCount {
    std::int64_t total = 0;
    bool exact = true;
};

Result<SessionCount> count_sessions(Connection& db, const std::string& clause,
                                    const std::vector<Binding>& filter_bindings,
                                    std::optional<std::int64_t> cap) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    std::vector<Binding> count_bindings = filter_bindings;
    std::string sql = "SELECT COUNT(*) FROM sessions" + clause;
    if (cap) {
        // Counting stops one past the cap: reaching it means "at least cap".
        count_bindings.emplace_back(*cap == kMax ? kMax : *cap + 1);
        sql = "SELECT COUNT(*) FROM (SELECT 1 FROM sessions" + clause + " LIMIT ?" +
              std::to_string(count_bindings.size()) + ") AS capped";
    }
    auto count = db.prepare(sql);
    if (!count) return count.error();
    bind_all(*count, count_bindings);
    auto n = count->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    SessionCount out{n->value_or(0), true};
    if (cap && out.total > *cap) out = SessionCount{*cap, false};
    return out;
}

// One page of session summaries (with their sub-runs' tokens) and the cursor of the next page,
// null when the page is the last.
struct SessionPage {
    json sessions = json::array();
    json next = nullptr;
};

Result<SessionPage> read_page(Connection& db, const std::string& sql,
                              const std::vector<Binding>& bindings, std::int64_t limit,
                              std::int64_t cutoff) {
    auto select = db.prepare(sql);
    if (!select) return select.error();
    bind_all(*select, bindings);
    SessionPage page;
    // Of the sessions listed, for their sub-runs' tokens and their evaluations.
    std::vector<std::int64_t> ids;
    std::vector<std::int64_t> evaluation_counts;
    // The cursor of the last session listed; empty if it has no start time (never the case once
    // a batch committed), which ends the paging.
    std::string last;
    auto read = select->each([&](const Row& row) {
        if (static_cast<std::int64_t>(page.sessions.size()) == limit) {
            if (!last.empty()) page.next = last;
            return false;
        }
        page.sessions.push_back(summary_of(row, cutoff));
        ids.push_back(row.int64(0));
        evaluation_counts.push_back(row.int64(kEvaluationsColumn));
        last = row.is_null(5) ? std::string{} : make_cursor(row.int64(5), row.int64(0));
        return true;
    });
    if (!read) return read.error();
    select->reset();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (auto added = add_subrun_tokens(db, ids[i], page.sessions[i]); !added)
            return added.error();
        if (auto added = add_cost(db, ids[i], page.sessions[i]); !added) return added.error();
        if (auto added = add_evaluations(db, ids[i], evaluation_counts[i], page.sessions[i]);
            !added)
            return added.error();
    }
    return page;
}

// SQLite: the MATCH phrase with which the trigram index (sessions_search) narrows a question
// search to its candidates, or nullopt when the scan in page order is the better plan: a needle
// under 3 characters has no trigram, and one that many questions hold is found in the first rows of
// the page index, where the index would hand over (and the page sort) every match. The LIKE stays
// beside it: the index finds a superset (it folds case beyond ASCII), the LIKE keeps the search
// what it always was.
constexpr std::int64_t kSearchIndexMax = 5000;

Result<std::optional<std::string>> search_candidates(Connection& db, std::string_view needle) {
    std::size_t characters = 0;
    for (const char c : needle) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (characters < 3) return std::optional<std::string>{};
    std::string phrase = "\"";
    for (const char c : needle) phrase += c == '"' ? std::string("\"\"") : std::string(1, c);
    phrase += '"';
    auto probe = db.prepare(
        "SELECT COUNT(*) FROM (SELECT 1 FROM sessions_search WHERE sessions_search MATCH ?1 "
        "LIMIT ?2)");
    if (!probe) return probe.error();
    probe->bind(1, phrase).bind(2, kSearchIndexMax);
    auto n = probe->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    if (n->value_or(0) >= kSearchIndexMax) return std::optional<std::string>{};
    return std::optional<std::string>{std::move(phrase)};
}

// A question search: LIKE, case-insensitive (SQLite's LIKE is, for ASCII; PostgreSQL's ILIKE,
// whose planner takes the trigram index sessions_question_trgm when the search is selective),
// and on SQLite the trigram index's candidates when they are few (search_candidates).
Result<void> add_search_filter(SqlFilter& filter, Connection& db, const std::string& search) {
    const bool postgres = db.dialect() == storage::sql::Dialect::kPostgres;
    filter.where.push_back("question" + std::string(postgres ? " ILIKE " : " LIKE ") +
                           filter.param(like_pattern(search)) + " ESCAPE '\\'");
    if (postgres) return {};
    auto candidates = search_candidates(db, search);
    if (!candidates) return candidates.error();
    if (*candidates) {
        filter.where.push_back(
            "id IN (SELECT rowid FROM sessions_search WHERE sessions_search MATCH " +
            filter.param(**candidates) + ")");
    }
    return {};
}

// The list's clause for its count: the count has no order to keep, so a usage filter's matches
// drive it even where the page walks the page index instead ("+id IN …", run_uses.cpp).
std::string driven_by_matches(std::string clause) {
    for (std::size_t at = 0; (at = clause.find("+id IN (", at)) != std::string::npos;)
        clause.erase(at, 1);
    return clause;
}

}  // namespace

Result<json> TraceStore::list(const ListQuery& query, WallClock::time_point now) {
    const std::int64_t cutoff = incomplete_cutoff(config_, now);
    SqlFilter filter;
    auto uses = add_use_filters(filter, query, *db_);
    if (!uses) return uses.error();
    // SQLite, with a usage filter: the runs it matches are the candidates (rowid lookups, or the
    // newest-first page walked when it matches many), so collection, kind and status are checked
    // per candidate ("+": no index) rather than walking that column's whole index.
    const bool by_use = !filter.where.empty() && db_->dialect() == storage::sql::Dialect::kSqlite;
    const std::size_t use_filters = filter.where.size();
    if (query.collection) filter.where.push_back("collection = " + filter.param(*query.collection));
    if (query.kind) {
        if (auto known = check_kind(*query.kind); !known) return known.error();
        filter.where.push_back("kind = " + filter.param(*query.kind));
    }
    if (query.status) {
        if (auto r = add_status_filter(filter, *query.status, cutoff); !r) return r.error();
    }
    if (by_use) {
        for (std::size_t i = use_filters; i < filter.where.size(); ++i)
            filter.where[i].insert(0, "+");
    }
    if (query.since_ms) filter.where.push_back("started >= " + filter.param(*query.since_ms));
    if (query.until_ms) filter.where.push_back("started < " + filter.param(*query.until_ms));
    if (query.search) {
        if (auto r = add_search_filter(filter, *db_, *query.search); !r) return r.error();
    }
    if (query.parent) {
        auto parent = resolve_session(*query.parent);
        if (!parent) return parent.error();
        filter.where.push_back("parent = " + filter.param(*parent));
    } else if (!query.include_subtraces) {
        filter.where.push_back("parent IS NULL");
    }
    std::string clause = filter.clause();
    const std::string count_clause = driven_by_matches(clause);

    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    const std::int64_t limit = std::max<std::int64_t>(query.limit, 0);
    const std::int64_t offset = std::max<std::int64_t>(query.offset, 0);
    const std::int64_t page_end = offset > kMax - limit ? kMax : offset + limit;
    auto count = count_sessions(*db_, count_clause, filter.bindings,
                                query.exact_total
                                    ? std::nullopt
                                    : std::optional(std::max(config_.list_count_limit, page_end)));
    if (!count) return count.error();

    if (query.after) {
        const auto cursor = parse_cursor(*query.after);
        if (!cursor) {
            return make_error(
                ErrorType::kInvalidRequest,
                "\"after\" must be the \"next\" cursor of an earlier list reply, not \"" +
                    query.after->substr(0, 60) + "\"");
        }
        // A row value: the planner seeks the page index to the cursor instead of skipping rows.
        const std::string started = filter.param(cursor->first);
        const std::string id = filter.param(cursor->second);
        clause += (filter.where.empty() ? " WHERE " : " AND ") +
                  ("(started, id) < (" + started + ", " + id + ")");
    }
    // One row more than the page says whether a next page exists.
    const std::string limit_param = filter.param(limit == kMax ? kMax : limit + 1);
    const std::string offset_param = filter.param(offset);
    auto page = read_page(*db_,
                          std::string("SELECT ") + kSummaryColumns + " FROM sessions" + clause +
                              " ORDER BY started DESC, id DESC LIMIT " + limit_param + " OFFSET " +
                              offset_param,
                          filter.bindings, limit, cutoff);
    if (!page) return page.error();
    return json{{"sessions", std::move(page->sessions)},
                {"total", count->total},
                {"total_exact", count->exact},
                {"limit", query.limit},
                {"offset", query.offset},
                {"next", std::move(page->next)}};
}

namespace {

// Each stored triple of a session in event order, its text re-inlined: fn(seq, triple) returns
// base::Result<bool> (false stops).
template <typename Fn>
Result<void> each_stored_triple(Connection& db, TripleBlobReader& reader, std::int64_t session,
                                Fn&& fn) {
    return detail::each_stored_record(
        db, reader, session, [&](std::int64_t seq, const StoredTriple& record) -> Result<bool> {
            auto triple = detail::triple_json(db, record);
            if (!triple) return triple.error();
            return fn(seq, std::move(triple).value());
        });
}

// The ids a statement reads in its first column.
Result<std::vector<std::int64_t>> read_ids(Statement& q) {
    return q.collect([](const Row& row) { return row.int64(0); });
}

Result<json> show_session(Connection& db, TripleBlobReader& reader, std::int64_t id,
                          std::int64_t cutoff, int depth, std::set<std::int64_t>& seen) {
    seen.insert(id);
    json out = json::object();
    std::string uri;
    std::int64_t evaluations = 0;
    {
        auto q =
            db.prepare(std::string("SELECT ") + kSummaryColumns + " FROM sessions WHERE id = ?1");
        if (!q) return q.error();
        q->bind(1, id);
        auto found = q->first([&](const Row& row) {
            out["session"] = summary_of(row, cutoff);
            uri = row.text(1);
            evaluations = row.int64(kEvaluationsColumn);
            return true;
        });
        if (!found) return found.error();
        if (!*found)
            return make_error(ErrorType::kNotFound, "no trace with row id " + std::to_string(id));
    }
    if (auto added = add_subrun_tokens(db, id, out["session"]); !added) return added.error();
    if (auto added = add_cost(db, id, out["session"]); !added) return added.error();
    if (auto added = add_evaluations(db, id, evaluations, out["session"]); !added)
        return added.error();
    json events = json::array();
    std::map<std::int64_t, std::size_t> by_seq;
    {
        auto q = db.prepare(
            "SELECT seq, explain_id, state, received FROM events WHERE session = ?1 ORDER BY seq");
        if (!q) return q.error();
        q->bind(1, id);
        auto read = q->each([&](const Row& row) {
            by_seq[row.int64(0)] = events.size();
            events.push_back({{"seq", row.int64(0)},
                              {"explain_id", std::string(row.text(1))},
                              {"state", std::string(row.text(2))},
                              {"received", base::format_xsd_datetime_ms(row.int64(3))},
                              {"triples", json::array()}});
        });
        if (!read) return read.error();
    }
    auto triples =
        each_stored_triple(db, reader, id, [&](std::int64_t seq, json triple) -> Result<bool> {
            const auto found = by_seq.find(seq);
            if (found != by_seq.end())
                events[found->second]["triples"].push_back(std::move(triple));
            return true;
        });
    if (!triples) return triples.error();
    auto costs = detail::event_costs(db, id);
    if (!costs) return costs.error();
    for (auto& [seq, calls] : *costs) {
        if (const auto found = by_seq.find(seq); found != by_seq.end())
            events[found->second]["costs"] = std::move(calls);
    }
    out["events"] = std::move(events);
    json subtraces = json::array();
    if (depth < kMaxShowDepth) {
        std::vector<std::int64_t> children;
        {
            auto q = db.prepare("SELECT id FROM sessions WHERE parent = ?1 ORDER BY started, id");
            if (!q) return q.error();
            q->bind(1, std::string_view{uri});
            auto ids = read_ids(*q);
            if (!ids) return ids.error();
            for (const auto child : *ids) {
                if (seen.count(child) == 0) children.push_back(child);
            }
        }
        for (const auto child : children) {
            auto nested = show_session(db, reader, child, cutoff, depth + 1, seen);
            if (!nested) return nested.error();
            subtraces.push_back(std::move(nested).value());
        }
    }
    out["subtraces"] = std::move(subtraces);
    return out;
}

}  // namespace

Result<json> TraceStore::show(std::string_view id, WallClock::time_point now) {
    const std::int64_t cutoff = incomplete_cutoff(config_, now);
    return in_read_transaction(*db_, [&]() -> Result<json> {
        auto uri = resolve_session(id);
        if (!uri) return uri.error();
        std::int64_t row_id = 0;
        {
            auto q = db_->prepare("SELECT id FROM sessions WHERE uri = ?1");
            if (!q) return q.error();
            q->bind(1, std::string_view{*uri});
            auto found = q->first([](const Row& row) { return row.int64(0); });
            if (!found) return found.error();
            if (!*found) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
            row_id = **found;
        }
        std::set<std::int64_t> seen;
        TripleBlobReader reader;
        auto shown = show_session(*db_, reader, row_id, cutoff, 0, seen);
        if (!shown) return shown.error();
        auto affected = detail::session_invalidations(*db_, row_id);
        if (!affected) return affected.error();
        if (!affected->empty()) (*shown)["affected"] = std::move(affected).value();
        return shown;
    });
}

Result<ExportCounts> TraceStore::export_nquads(std::optional<std::int64_t> since_ms,
                                               std::optional<std::int64_t> until_ms,
                                               const NquadsSink& sink,
                                               std::size_t lines_per_chunk) {
    return in_read_transaction(*db_, [&]() -> Result<ExportCounts> {
        ExportCounts counts;
        std::vector<std::int64_t> sessions;
        {
            auto q = db_->prepare(
                "SELECT id FROM sessions WHERE started >= ?1 AND started < ?2 ORDER BY started, "
                "id");
            if (!q) return q.error();
            q->bind(1, since_ms.value_or(std::numeric_limits<std::int64_t>::min()))
                .bind(2, until_ms.value_or(std::numeric_limits<std::int64_t>::max()));
            auto ids = read_ids(*q);
            if (!ids) return ids.error();
            sessions = std::move(ids).value();
        }
        TripleBlobReader reader;
        std::string chunk;
        std::size_t lines = 0;
        const auto flush = [&]() -> bool {
            if (lines == 0) return true;
            const bool go_on = sink(chunk);
            chunk.clear();
            lines = 0;
            return go_on;
        };
        for (const auto id : sessions) {
            auto written =
                each_stored_triple(*db_, reader, id, [&](std::int64_t, const json& stored) {
                    auto triple = schema::decode_triple(stored);
                    if (!triple)
                        return Result<bool>(make_error(
                            ErrorType::kInternal, "trace store: a stored triple does not decode: " +
                                                      triple.error().message));
                    chunk += schema::to_nquads(*triple);
                    chunk += '\n';
                    ++counts.triples;
                    if (++lines >= lines_per_chunk && !flush()) {
                        return Result<bool>(make_error(ErrorType::kCancelled, "export stopped"));
                    }
                    return Result<bool>(true);
                });
            if (!written) return written.error();
            ++counts.sessions;
        }
        if (!flush()) return make_error(ErrorType::kCancelled, "export stopped");
        return counts;
    });
}

Result<json> TraceStore::stats(WallClock::time_point now) {
    const std::int64_t cutoff = incomplete_cutoff(config_, now);
    return in_read_transaction(*db_, [&]() -> Result<json> {
        json out = json::object();
        const auto count = [&](const char* sql) -> Result<std::int64_t> {
            auto q = db_->prepare(sql);
            if (!q) return q.error();
            auto n = q->first([](const Row& row) { return row.int64(0); });
            if (!n) return n.error();
            return n->value_or(0);
        };
        const std::pair<const char*, const char*> counters[] = {
            {"sessions", "SELECT COUNT(*) FROM sessions"},
            {"events", "SELECT COUNT(*) FROM events"},
            {"triples", "SELECT COALESCE(SUM(triple_count), 0) FROM events"},
            {"texts", "SELECT COUNT(*) FROM texts"},
            {"quarantined", "SELECT COUNT(*) FROM quarantine"}};
        for (const auto& [name, sql] : counters) {
            auto n = count(sql);
            if (!n) return n.error();
            out[name] = *n;
        }
        json by_status = {{"running", 0}, {"complete", 0}, {"error", 0}, {"incomplete", 0}};
        auto q = db_->prepare(
            "SELECT CASE WHEN status = 'running' AND last_event_at < ?1 THEN 'incomplete' "
            "ELSE status END AS s, COUNT(*) FROM sessions GROUP BY s");
        if (!q) return q.error();
        q->bind(1, cutoff);
        auto read =
            q->each([&](const Row& row) { by_status[std::string(row.text(0))] = row.int64(1); });
        if (!read) return read.error();
        out["by_status"] = std::move(by_status);
        auto sampling = detail::sampling_stats(*db_, config_);
        if (!sampling) return sampling.error();
        out["sampling"] = std::move(sampling).value();
        auto bytes = stored_bytes();
        if (!bytes) return bytes.error();
        out["db_bytes"] = *bytes;
        auto costs = detail::cost_stats(*db_, config_.prices.currency);
        if (!costs) return costs.error();
        out["costs"] = std::move(costs).value();
        return out;
    });
}

Result<std::int64_t> TraceStore::stored_bytes() {
    if (db_->dialect() == storage::sql::Dialect::kSqlite) {
        std::error_code ec;
        std::int64_t bytes = 0;
        for (const char* suffix : {"", "-wal"}) {
            const auto size = std::filesystem::file_size(path_.string() + suffix, ec);
            if (!ec) bytes += static_cast<std::int64_t>(size);
        }
        return bytes;
    }
    // The tables with their indexes and TOAST data, as the server keeps them.
    auto q = db_->prepare(
        "SELECT CAST(COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS BIGINT) FROM pg_class c "
        "WHERE c.relkind IN ('r', 'p') AND c.relnamespace = CAST(current_schema() AS regnamespace) "
        "AND c.relname IN ('meta', 'sessions', 'events', 'texts', 'quarantine', 'turns', "
        "'conversations', 'evaluations')");
    if (!q) return q.error();
    auto n = q->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    return n->value_or(0);
}

namespace detail {

// A stored triple record as JSON, its stored text re-inlined into its object.
Result<json> triple_json(Connection& db, const StoredTriple& record) {
    // Stored text, read as untrusted as it arrived: a damaged file must not cost the stack.
    auto read = schema::parse_untrusted_json(record.triple);
    json t = read ? std::move(read).value() : json();
    if (!record.text_id) return t;
    auto text = stored_text(db, *record.text_id);
    if (!text) return text.error();
    if (*text && t.is_object() && t.contains("o") && t["o"].is_object())
        t["o"]["v"] = std::move(**text);
    return t;
}

Result<std::optional<std::string>> stored_text(Connection& db, std::int64_t id) {
    auto q = db.prepare("SELECT body FROM texts WHERE id = ?1");
    if (!q) return q.error();
    q->bind(1, id);
    return q->first([](const Row& row) { return std::string(row.text(0)); });
}

}  // namespace detail

}  // namespace glassbox::trace
