// The graph-query tool's SPARQL path: the query, the solutions behind its rows and their labels,
// read from the engine and shaped as the store's `aggregate` reply (sparql_graph_query.hpp).
#include "workers/agent/sparql_graph_query.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::agent {

using nlohmann::json;
using schema::Term;
using schema::Triple;

namespace {

std::string text_field(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A SPARQL 1.1 JSON results term (Virtuoso also writes "typed-literal").
std::optional<Term> term_of(const json& b) {
    if (!b.is_object()) return std::nullopt;
    const std::string type = text_field(b, "type");
    const std::string value = text_field(b, "value");
    if (type == "uri") return schema::iri(value);
    if (type == "bnode") return schema::blank(value);
    if (type != "literal" && type != "typed-literal") return std::nullopt;
    if (const std::string dt = text_field(b, "datatype"); !dt.empty())
        return schema::typed_literal(value, dt);
    if (const std::string lang = text_field(b, "xml:lang"); !lang.empty())
        return schema::lang_literal(value, lang);
    return schema::literal(value);
}

std::string key_of(const Term& term) { return schema::encode(term).dump(); }

const json& bindings_of(const json& results) {
    static const json kNone = json::array();
    if (!results.is_object()) return kNone;
    const auto r = results.find("results");
    if (r == results.end() || !r->is_object()) return kNone;
    const auto b = r->find("bindings");
    return b != r->end() && b->is_array() ? *b : kNone;
}

std::optional<double> number_in(const json& binding, const std::string& var) {
    if (!binding.is_object()) return std::nullopt;
    const auto it = binding.find(var.substr(1));
    if (it == binding.end()) return std::nullopt;
    const auto term = term_of(*it);
    if (!term || !term->is_literal()) return std::nullopt;
    return schema::aggregate_text_value(term->as_literal().value);
}

using Solution = std::map<std::string, Term>;  // "?var" → term

Solution solution_of(const json& binding) {
    Solution s;
    if (!binding.is_object()) return s;
    for (const auto& [var, b] : binding.items())
        if (auto term = term_of(b)) s.emplace("?" + var, std::move(*term));
    return s;
}

struct Row {
    Solution bind;
    std::optional<double> value;
    std::vector<Term> values;  // a count's distinct values
    std::set<std::string> value_keys;
    std::vector<Triple> facts;
};

std::vector<std::string> pattern_vars(const schema::AggregateQuery& q) {
    std::set<std::string> vars;
    for (const auto& p : q.match)
        for (const auto* slot : {&p.s, &p.p, &p.o})
            if (slot->is_var()) vars.insert(slot->var);
    return {vars.begin(), vars.end()};
}

// The variables that tell a row's solutions apart: a group's, or every one of a plain row.
std::vector<std::string> key_vars(const schema::AggregateQuery& q) {
    return q.aggregate.empty() ? pattern_vars(q) : q.group_by;
}

std::optional<std::string> row_key(const Solution& s, const std::vector<std::string>& vars) {
    std::string key;
    for (const auto& v : vars) {
        const auto it = s.find(v);
        if (it == s.end()) return std::nullopt;
        key.append(key_of(it->second)).append("\x1e");
    }
    return key;
}

std::vector<Row> rows_of(const schema::AggregateQuery& q, const json& bindings) {
    std::vector<Row> rows;
    const auto keys = key_vars(q);
    for (const json& b : bindings) {
        Row row;
        const Solution s = solution_of(b);
        for (const auto& v : keys)
            if (const auto it = s.find(v); it != s.end()) row.bind.emplace(v, it->second);
        if (!q.aggregate.empty()) row.value = number_in(b, "?value");
        rows.push_back(std::move(row));
    }
    return rows;
}

// VALUES (?a ?b) { (…) … } of the rows' keys ("" when there is nothing to restrict, or a key a
// query cannot name: a blank node).
std::string values_block(const std::vector<Row>& rows, const std::vector<std::string>& vars) {
    if (vars.empty()) return {};
    std::string text = "VALUES (";
    for (const auto& v : vars) text.append(v == vars.front() ? "" : " ").append(v);
    text.append(") {");
    for (const auto& r : rows) {
        text.append(" (");
        for (const auto& v : vars) {
            const auto it = r.bind.find(v);
            if (it == r.bind.end() || it->second.is_blank()) return {};
            text.append(v == vars.front() ? "" : " ").append(schema::sparql_term(it->second));
        }
        text.append(")");
    }
    return text + " }";
}

// Pattern `i` with a solution's terms (nullopt when one is missing).
std::optional<Triple> fact_of(const schema::AggregateQuery& q, std::size_t i, const Solution& s) {
    const auto& p = q.match[i];
    std::vector<Term> terms;
    for (const auto& [slot, position] :
         {std::pair{&p.s, 's'}, std::pair{&p.p, 'p'}, std::pair{&p.o, 'o'}}) {
        if (!slot->is_var() && slot->terms.size() == 1) {
            terms.push_back(slot->terms.front());
            continue;
        }
        const auto it =
            s.find(slot->is_var() ? slot->var : schema::aggregate_slot_var(i, position));
        if (it == s.end()) return std::nullopt;
        terms.push_back(it->second);
    }
    return schema::make_triple(terms[0], terms[1], terms[2]);
}

// The facts behind each row and a count's values, from the solutions of the rows' keys; min and
// max keep the solutions at the extreme. Returns the number of solutions read.
base::Result<std::size_t> cite_rows(SparqlEngine& engine, const schema::AggregateQuery& q,
                                    std::string_view graph, const SparqlAggregateBounds& bounds,
                                    std::vector<Row>& rows) {
    if (rows.empty() ||
        (!q.aggregate.empty() && q.aggregate != "count" && !rows.front().value && rows.size() == 1))
        return std::size_t{0};
    const auto keys = key_vars(q);
    const std::string restrict = values_block(rows, keys);
    auto found =
        engine.select(schema::to_sparql_solutions(q, graph, restrict, bounds.max_solutions));
    if (!found) return std::move(found).error();
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (auto key = row_key(rows[i].bind, keys)) index.emplace(*key, i);
    const bool extreme = q.aggregate == "min" || q.aggregate == "max";
    const std::string num_var =
        "?gb_" + q.aggregate_var.substr(std::min<std::size_t>(1, q.aggregate_var.size())) + "_num";
    const json& solutions = bindings_of(*found);
    for (const json& b : solutions) {
        const Solution s = solution_of(b);
        const auto key = row_key(s, keys);
        const auto at = key ? index.find(*key) : index.end();
        if (at == index.end()) continue;
        Row& row = rows[at->second];
        if (extreme) {
            const auto v = number_in(b, num_var);
            if (!v || !row.value || std::abs(*v - *row.value) >= 1e-9) continue;
        }
        if (q.aggregate == "count") {
            const auto it = s.find(q.aggregate_var);
            if (it != s.end() && row.values.size() < bounds.values_per_row &&
                row.value_keys.insert(key_of(it->second)).second)
                row.values.push_back(it->second);
        }
        for (std::size_t i = 0; i < q.match.size(); ++i) {
            auto fact = fact_of(q, i, s);
            if (fact && row.facts.size() < bounds.facts_per_row &&
                std::find(row.facts.begin(), row.facts.end(), *fact) == row.facts.end())
                row.facts.push_back(std::move(*fact));
        }
    }
    return solutions.size();
}

std::string local_name(std::string_view iri) {
    while (!iri.empty()) {
        const auto cut = iri.find_last_of("#/:");
        if (cut == std::string_view::npos) return std::string(iri);
        if (cut + 1 < iri.size()) return std::string(iri.substr(cut + 1));
        iri.remove_suffix(1);
    }
    return {};
}

// Lower is better, as the store ranks labels: "en", "en-…", no language, any other.
int label_rank(const Term& label) {
    if (!label.is_literal()) return 4;
    const std::string& lang = label.as_literal().language;
    if (lang.empty()) return 2;
    if (lang.size() >= 2 && (lang[0] == 'e' || lang[0] == 'E') &&
        (lang[1] == 'n' || lang[1] == 'N'))
        return lang.size() == 2 ? 0 : (lang[2] == '-' ? 1 : 3);
    return 3;
}

// The labels of the IRIs shown, read from the engine in batches.
class EngineLabels {
public:
    void note(const Term& term) {
        if (term.is_iri()) iris_.insert(term.as_iri().value);
    }
    base::Result<void> read(SparqlEngine& engine, std::string_view graph, std::size_t per_query) {
        std::vector<std::string> all(iris_.begin(), iris_.end());
        for (std::size_t from = 0; from < all.size(); from += per_query) {
            std::string q = "SELECT ?s ?l";
            if (!graph.empty()) q.append(" FROM <").append(graph).append(">");
            q.append(" WHERE { VALUES ?s {");
            for (std::size_t i = from; i < all.size() && i < from + per_query; ++i)
                q.append(" <").append(all[i]).append(">");
            q.append(" } ?s <").append(schema::vocab::kRdfsLabel).append("> ?l }");
            auto found = engine.select(q);
            if (!found) return std::move(found).error();
            for (const json& b : bindings_of(*found)) keep(b);
        }
        return {};
    }
    std::string of(const Term& term) const {
        if (term.is_iri()) {
            const auto it = best_.find(term.as_iri().value);
            return it != best_.end() ? it->second.second : local_name(term.as_iri().value);
        }
        if (term.is_literal()) return term.as_literal().value;
        return schema::to_ntriples(term);
    }

private:
    void keep(const json& b) {
        const auto s = term_of(b.value("s", json()));
        const auto l = term_of(b.value("l", json()));
        if (!s || !s->is_iri() || !l || !l->is_literal()) return;
        const int rank = label_rank(*l);
        const std::string& value = l->as_literal().value;
        auto [it, fresh] = best_.try_emplace(s->as_iri().value, rank, value);
        if (!fresh &&
            (rank < it->second.first || (rank == it->second.first && value < it->second.second)))
            it->second = {rank, value};
    }

    std::set<std::string> iris_;
    std::map<std::string, std::pair<int, std::string>> best_;
};

json term_json(const Term& term, const EngineLabels& labels) {
    return {{"term", schema::encode(term)}, {"label", labels.of(term)}};
}

json row_json(const Row& row, const EngineLabels& labels) {
    json bindings = json::object();
    for (const auto& [v, t] : row.bind) bindings[v] = term_json(t, labels);
    json out = {{"bindings", std::move(bindings)}};
    if (row.value) out["value"] = *row.value;
    if (!row.values.empty()) {
        json values = json::array();
        for (const auto& v : row.values) values.push_back(term_json(v, labels));
        out["values"] = std::move(values);
    }
    json facts = json::array();
    for (const auto& f : row.facts)
        facts.push_back({{"triple", schema::encode(f)},
                         {"text", labels.of(f.s) + " " + labels.of(f.p) + " " + labels.of(f.o)}});
    out["facts"] = std::move(facts);
    return out;
}

}  // namespace

base::Result<json> run_sparql_aggregate(SparqlEngine& engine, const schema::AggregateQuery& q,
                                        std::string_view graph,
                                        const SparqlAggregateBounds& bounds) {
    const std::string text = schema::to_sparql(q, graph);
    auto main = engine.select(text);
    if (!main) return std::move(main).error();
    std::vector<Row> rows = rows_of(q, bindings_of(*main));
    std::size_t total = rows.size();
    if (rows.size() >= q.limit && q.limit < schema::kMaxAggregateLimit) {
        // Rows past the limit are counted, as the store counts them (up to the largest limit).
        schema::AggregateQuery all = q;
        all.order_by.clear();
        all.limit = schema::kMaxAggregateLimit;
        auto counted = engine.select(schema::to_sparql(all, graph));
        if (!counted) return std::move(counted).error();
        total = std::max(total, bindings_of(*counted).size());
    }
    auto solutions = cite_rows(engine, q, graph, bounds, rows);
    if (!solutions) return std::move(solutions).error();
    EngineLabels labels;
    for (const auto& r : rows) {
        for (const auto& [v, t] : r.bind) labels.note(t);
        for (const auto& t : r.values) labels.note(t);
        for (const auto& f : r.facts)
            for (const auto* t : {&f.s, &f.p, &f.o}) labels.note(*t);
    }
    if (auto read = labels.read(engine, graph, bounds.labels_per_query); !read) return read.error();
    json out_rows = json::array();
    for (const auto& r : rows) out_rows.push_back(row_json(r, labels));
    return json{{"rows", std::move(out_rows)}, {"total_rows", total},
                {"solutions", *solutions},     {"scanned", 0},
                {"truncated", false},          {"sparql", text}};
}

}  // namespace glassbox::agent
