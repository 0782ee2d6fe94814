// Aggregates and filters over the graph: a nested-loop join of the query's patterns through
// GraphStore::match, then filters, groups, the aggregate, order and limit (graph_aggregate.hpp).
#include "workers/store/graph_aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/ascii.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using schema::Term;
using schema::Triple;

namespace {

// One partial answer of the join: its variables' terms and the facts that bound them.
struct Solution {
    std::map<std::string, Term> bind;
    std::vector<Triple> facts;
};

std::string term_key(const Term& term) {
    if (term.is_iri()) return "i" + term.as_iri().value;
    if (term.is_literal()) {
        const auto& l = term.as_literal();
        return "l" + l.value + "\x1f" + l.datatype + "\x1f" + l.language;
    }
    return "?" + schema::encode(term).dump();
}

std::optional<double> text_value(std::string_view text) {
    return schema::aggregate_text_value(text);
}

std::string lower_text(std::string_view text) { return base::ascii_lower(std::string(text)); }

// The labels of every term the solutions hold, by key.
class BoundLabels {
public:
    void note(const Term& term) {
        if (index_.emplace(term_key(term), terms_.size()).second) terms_.push_back(term);
    }
    base::Result<void> read(GraphStore& graph) {
        if (terms_.empty()) return {};
        auto labels = graph.labels(terms_, std::size_t{8} << 20);
        if (!labels) return std::move(labels).error();
        labels_ = std::move(*labels);
        return {};
    }
    const std::string& of(const Term& term) const {
        static const std::string kNone;
        const auto it = index_.find(term_key(term));
        return it == index_.end() || it->second >= labels_.size() ? kNone : labels_[it->second];
    }
    std::optional<double> value(const Term& term) const { return comparable_value(term, of(term)); }

private:
    std::vector<Term> terms_;
    std::map<std::string, std::size_t> index_;
    std::vector<std::string> labels_;
};

// The join: patterns taken most-bound first, each matched once per solution and alternative.
class Join {
public:
    Join(GraphStore& graph, const AggregateBounds& bounds, const std::function<bool()>& stop)
        : graph_(graph), bounds_(bounds), stop_(stop) {}

    base::Result<std::vector<Solution>> run(const std::vector<schema::AggregatePattern>& patterns) {
        std::vector<Solution> solutions(1);
        std::vector<bool> done(patterns.size(), false);
        std::set<std::string> bound;
        for (std::size_t step = 0; step < patterns.size() && !solutions.empty(); ++step) {
            const std::size_t next = pick(patterns, done, bound);
            done[next] = true;
            auto extended = extend(solutions, patterns[next]);
            if (!extended) return std::move(extended).error();
            solutions = std::move(*extended);
            for (const auto* slot : {&patterns[next].s, &patterns[next].p, &patterns[next].o})
                if (slot->is_var()) bound.insert(slot->var);
            if (truncated) break;
        }
        if (truncated) solutions.clear();
        return solutions;
    }

    std::size_t scanned = 0;
    bool truncated = false;

private:
    static std::size_t pick(const std::vector<schema::AggregatePattern>& patterns,
                            const std::vector<bool>& done, const std::set<std::string>& bound) {
        std::size_t best = 0;
        int best_score = -1;
        for (std::size_t i = 0; i < patterns.size(); ++i) {
            if (done[i]) continue;
            int score = 0;
            for (const auto* slot : {&patterns[i].s, &patterns[i].p, &patterns[i].o})
                score += !slot->is_var() || bound.count(slot->var)
                             ? (slot == &patterns[i].p ? 1 : 2)
                             : 0;
            if (score > best_score) best = i, best_score = score;
        }
        return best;
    }

    // The slot's candidates under a solution: its bound term, its alternatives, or "any".
    static std::vector<std::optional<Term>> choices(const schema::PatternSlot& slot,
                                                    const Solution& s) {
        if (!slot.is_var()) return {slot.terms.begin(), slot.terms.end()};
        const auto it = s.bind.find(slot.var);
        if (it != s.bind.end()) return {it->second};
        if (!slot.terms.empty()) return {slot.terms.begin(), slot.terms.end()};
        return {std::nullopt};
    }

    base::Result<std::vector<Solution>> extend(const std::vector<Solution>& solutions,
                                               const schema::AggregatePattern& pattern) {
        std::vector<Solution> out;
        for (const auto& s : solutions) {
            if (stop_ && stop_()) return make_error(ErrorType::kCancelled, "aggregate: stopped");
            for (const auto& sv : choices(pattern.s, s))
                for (const auto& pv : choices(pattern.p, s))
                    for (const auto& ov : choices(pattern.o, s)) {
                        if (auto r = match_into(s, pattern, {sv, pv, ov, std::nullopt}, out); !r)
                            return r.error();
                        if (truncated) return out;
                    }
        }
        return out;
    }

    base::Result<void> match_into(const Solution& s, const schema::AggregatePattern& pattern,
                                  const schema::TriplePattern& tp, std::vector<Solution>& out) {
        const std::size_t room = bounds_.max_scanned - std::min(bounds_.max_scanned, scanned);
        const auto limit = static_cast<std::uint32_t>(
            std::min<std::size_t>({room + 1, kMaxMatchLimit, bounds_.max_scanned + 1}));
        auto found = graph_.match(tp, limit);
        if (!found) return std::move(found).error();
        scanned += found->size();
        if (scanned > bounds_.max_scanned || found->size() >= kMaxMatchLimit) {
            truncated = true;
            return {};
        }
        for (auto& t : *found) {
            Solution next = s;
            if (!bind(next, pattern.s, t.s) || !bind(next, pattern.p, t.p) ||
                !bind(next, pattern.o, t.o))
                continue;
            next.facts.push_back(std::move(t));
            out.push_back(std::move(next));
            if (out.size() > bounds_.max_solutions) {
                truncated = true;
                return {};
            }
        }
        return {};
    }

    // Binds the slot's variable (false when the same variable already holds another term).
    static bool bind(Solution& s, const schema::PatternSlot& slot, const Term& term) {
        if (!slot.is_var()) return true;
        const auto [it, fresh] = s.bind.emplace(slot.var, term);
        return fresh || term_key(it->second) == term_key(term);
    }

    GraphStore& graph_;
    const AggregateBounds& bounds_;
    const std::function<bool()>& stop_;
};

bool passes_filter(const schema::AggregateFilter& f, const Term& term, const BoundLabels& labels) {
    const auto value = labels.value(term);
    std::optional<double> wanted;
    if (f.value.is_number()) wanted = f.value.get<double>();
    if (f.value.is_string()) wanted = text_value(f.value.get<std::string>());
    if (value && wanted) {
        const double a = *value;
        const double b = *wanted;
        if (f.cmp == "<") return a < b;
        if (f.cmp == "<=") return a <= b;
        if (f.cmp == ">") return a > b;
        if (f.cmp == ">=") return a >= b;
        if (f.cmp == "=") return std::abs(a - b) < 1e-9;
        return std::abs(a - b) >= 1e-9;
    }
    if (f.cmp != "=" && f.cmp != "!=") return false;  // an order needs two values
    const std::string text = f.value.is_string() ? f.value.get<std::string>() : f.value.dump();
    const bool same =
        lower_text(labels.of(term)) == lower_text(text) ||
        (term.is_iri() && (term.as_iri().value == text || "<" + term.as_iri().value + ">" == text));
    return f.cmp == "=" ? same : !same;
}

// One reply row: its bindings (projected), the facts behind it, its aggregate.
struct ResultRow {
    std::map<std::string, Term> bind;
    std::vector<Triple> facts;
    std::optional<double> value;
    std::vector<Term> values;  // a count's distinct values
};

void add_facts(ResultRow& row, const std::vector<Triple>& facts) {
    for (const auto& f : facts)
        if (std::find(row.facts.begin(), row.facts.end(), f) == row.facts.end())
            row.facts.push_back(f);
}

// The aggregate of one group's solutions; min and max keep the facts of the solutions at it.
ResultRow aggregate_group(const schema::AggregateQuery& q,
                          const std::vector<const Solution*>& group, const BoundLabels& labels) {
    ResultRow row;
    for (const auto& v : q.group_by) row.bind[v] = group.front()->bind.at(v);
    std::set<std::string> seen;
    double sum = 0;
    std::size_t n = 0;
    std::optional<double> best;
    for (const auto* s : group) {
        const Term& term = s->bind.at(q.aggregate_var);
        if (q.aggregate == "count") {
            if (seen.insert(term_key(term)).second) row.values.push_back(term);
            add_facts(row, s->facts);
            continue;
        }
        const auto v = labels.value(term);
        if (!v) continue;
        sum += *v;
        ++n;
        const bool better = !best || (q.aggregate == "min" ? *v < *best : *v > *best);
        if ((q.aggregate == "min" || q.aggregate == "max") && better) {
            best = *v;
            row.facts.clear();
        }
        if (q.aggregate == "sum" || q.aggregate == "avg" || std::abs(*v - *best) < 1e-9)
            add_facts(row, s->facts);
    }
    if (q.aggregate == "count") row.value = static_cast<double>(row.values.size());
    if (q.aggregate == "sum") row.value = sum;
    if (q.aggregate == "avg" && n > 0) row.value = sum / static_cast<double>(n);
    if (q.aggregate == "min" || q.aggregate == "max") row.value = best;
    return row;
}

std::vector<ResultRow> shape_rows(const schema::AggregateQuery& q,
                                  const std::vector<const Solution*>& kept,
                                  const BoundLabels& labels) {
    std::vector<ResultRow> rows;
    std::map<std::string, std::size_t> index;
    if (q.aggregate.empty()) {
        for (const auto* s : kept) {
            std::string key;
            for (const auto& [v, t] : s->bind) key += term_key(t) + "\x1e";
            const auto [it, fresh] = index.emplace(key, rows.size());
            if (fresh) rows.push_back(ResultRow{s->bind, {}, std::nullopt, {}});
            add_facts(rows[it->second], s->facts);
        }
        return rows;
    }
    std::vector<std::vector<const Solution*>> groups;
    for (const auto* s : kept) {
        std::string key;
        for (const auto& v : q.group_by) key += term_key(s->bind.at(v)) + "\x1e";
        const auto [it, fresh] = index.emplace(key, groups.size());
        if (fresh) groups.emplace_back();
        groups[it->second].push_back(s);
    }
    for (const auto& g : groups) rows.push_back(aggregate_group(q, g, labels));
    if (groups.empty() && q.group_by.empty())
        rows.push_back(
            ResultRow{{}, {}, q.aggregate == "count" ? std::optional(0.0) : std::nullopt, {}});
    return rows;
}

void order_rows(const schema::AggregateQuery& q, std::vector<ResultRow>& rows,
                const BoundLabels& labels) {
    if (q.order_by.empty()) return;
    const auto key = [&](const ResultRow& r) -> std::pair<std::optional<double>, std::string> {
        if (q.order_by == "value") return {r.value, {}};
        const auto it = r.bind.find(q.order_by);
        if (it == r.bind.end()) return {std::nullopt, {}};
        return {labels.value(it->second), lower_text(labels.of(it->second))};
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const ResultRow& a, const ResultRow& b) {
        const auto ka = key(a);
        const auto kb = key(b);
        if (ka.first && kb.first)
            return q.descending ? *ka.first > *kb.first : *ka.first < *kb.first;
        if (ka.first || kb.first) return ka.first.has_value();  // values before non-values
        return q.descending ? ka.second > kb.second : ka.second < kb.second;
    });
}

json term_json(const Term& term, const BoundLabels& labels) {
    return {{"term", schema::encode(term)}, {"label", labels.of(term)}};
}

json row_json(const ResultRow& row, const BoundLabels& labels, const AggregateBounds& bounds) {
    json bindings = json::object();
    for (const auto& [v, t] : row.bind) bindings[v] = term_json(t, labels);
    json out = {{"bindings", std::move(bindings)}};
    if (row.value) out["value"] = *row.value;
    if (!row.values.empty()) {
        json values = json::array();
        for (std::size_t i = 0; i < row.values.size() && i < bounds.values_per_row; ++i)
            values.push_back(term_json(row.values[i], labels));
        out["values"] = std::move(values);
    }
    json facts = json::array();
    for (std::size_t i = 0; i < row.facts.size() && i < bounds.facts_per_row; ++i) {
        const auto& f = row.facts[i];
        facts.push_back({{"triple", schema::encode(f)},
                         {"text", labels.of(f.s) + " " + labels.of(f.p) + " " + labels.of(f.o)}});
    }
    out["facts"] = std::move(facts);
    return out;
}

}  // namespace

std::optional<double> comparable_value(const Term& term, std::string_view label) {
    if (term.is_literal()) {
        const auto& l = term.as_literal();
        const std::string_view dt = l.datatype;
        const std::string xsd(schema::vocab::kXsdNs);
        if (dt == xsd + "gYear" || dt == xsd + "date" || dt == xsd + "dateTime" ||
            dt == xsd + "gYearMonth")
            return schema::aggregate_date_value(l.value);
        return text_value(l.value);
    }
    if (term.is_iri()) return text_value(label);
    return std::nullopt;
}

base::Result<json> run_aggregate(GraphStore& graph, const schema::AggregateQuery& q,
                                 const AggregateBounds& bounds, const std::function<bool()>& stop) {
    Join join(graph, bounds, stop);
    auto solutions = join.run(q.match);
    if (!solutions) return std::move(solutions).error();
    BoundLabels labels;
    for (const auto& s : *solutions) {
        for (const auto& [v, t] : s.bind) labels.note(t);
        for (const auto& f : s.facts) {
            labels.note(f.s);
            labels.note(f.p);
            labels.note(f.o);
        }
    }
    if (auto r = labels.read(graph); !r) return r.error();
    std::vector<const Solution*> kept;
    for (const auto& s : *solutions) {
        const bool ok = std::all_of(q.filter.begin(), q.filter.end(), [&](const auto& f) {
            return passes_filter(f, s.bind.at(f.var), labels);
        });
        if (ok) kept.push_back(&s);
    }
    auto rows = shape_rows(q, kept, labels);
    order_rows(q, rows, labels);
    json out_rows = json::array();
    for (std::size_t i = 0; i < rows.size() && i < q.limit; ++i)
        out_rows.push_back(row_json(rows[i], labels, bounds));
    return json{{"rows", std::move(out_rows)}, {"total_rows", rows.size()},
                {"solutions", kept.size()},    {"scanned", join.scanned},
                {"truncated", join.truncated}, {"sparql", schema::to_sparql(q)}};
}

base::Result<json> plan_aggregate(GraphStore& graph, const schema::AggregateQuery& q) {
    std::vector<Term> terms;
    const auto note = [&](const Term& t) {
        if (std::find(terms.begin(), terms.end(), t) == terms.end()) terms.push_back(t);
    };
    for (const auto& p : q.match)
        for (const auto* slot : {&p.s, &p.p, &p.o})
            for (const auto& t : slot->terms) note(t);
    auto labels = graph.labels(terms, std::size_t{1} << 20);
    if (!labels) return std::move(labels).error();
    json list = json::array();
    for (std::size_t i = 0; i < terms.size(); ++i)
        list.push_back({{"term", schema::encode(terms[i])}, {"label", (*labels)[i]}});
    return json{{"query", schema::encode(q)},
                {"labels", std::move(list)},
                {"sparql", schema::to_sparql(q)}};
}

base::Result<json> graph_query_op(KnowledgeBases& bases, std::string_view op, const json& body,
                                  const std::function<bool()>& stop,
                                  const AggregateBounds& bounds) {
    std::optional<schema::AggregateQuery> query;
    std::uint32_t limit = 500;
    std::string collection;
    if (op == kOpAggregate) {
        auto decoded = schema::decode_aggregate_query(body);
        if (!decoded) return std::move(decoded).error();
        query = std::move(*decoded);
        collection = query->collection;
    } else {
        if (const auto l = body.find("limit"); l != body.end() && !l->is_null()) {
            if (!l->is_number_integer() || l->get<std::int64_t>() < 1 ||
                l->get<std::int64_t>() > kMaxPredicatesLimit)
                return make_error(ErrorType::kInvalidRequest,
                                  "predicates: \"limit\" must be an integer from 1 to " +
                                      std::to_string(kMaxPredicatesLimit));
            limit = static_cast<std::uint32_t>(l->get<std::int64_t>());
        }
        if (const auto c = body.find("collection"); c != body.end() && c->is_string())
            collection = c->get<std::string>();
    }
    auto kb = bases.get(collection, false);
    if (!kb) return std::move(kb).error();
    auto held = (*kb)->lock();
    if (!held) return std::move(held).error();
    storage::sql::ReadScope snapshot((*kb)->db());
    if (query && body.value("plan_only", false)) return plan_aggregate((*kb)->graph(), *query);
    if (query) return run_aggregate((*kb)->graph(), *query, bounds, stop);
    return list_predicates((*kb)->db(), (*kb)->graph(), limit);
}

base::Result<json> list_predicates(storage::sql::Connection& db, GraphStore& graph,
                                   std::uint32_t limit) {
    std::vector<std::int64_t> ids;
    {
        auto st = db.prepare("SELECT DISTINCT p FROM graph_pos ORDER BY p LIMIT ?1");
        if (!st) return st.error();
        st->bind(1, static_cast<std::int64_t>(limit) + 1);
        auto read = st->collect([](const storage::sql::Row& row) { return row.int64(0); });
        if (!read) return read.error();
        ids = std::move(*read);
    }
    const bool truncated = ids.size() > limit;
    if (truncated) ids.resize(limit);
    auto terms = graph.terms(ids);
    if (!terms) return std::move(terms).error();
    std::vector<Term> kept;
    for (auto& t : *terms)
        if (!(t.is_iri() && t.as_iri().value == schema::vocab::kRdfsLabel))
            kept.push_back(std::move(t));
    auto labels = graph.labels(kept, std::size_t{4} << 20);
    if (!labels) return std::move(labels).error();
    json list = json::array();
    for (std::size_t i = 0; i < kept.size(); ++i)
        list.push_back({{"term", schema::encode(kept[i])}, {"label", (*labels)[i]}});
    return json{{"predicates", std::move(list)}, {"truncated", truncated}};
}

}  // namespace glassbox::store
