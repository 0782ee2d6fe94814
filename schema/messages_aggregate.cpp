// The aggregate query's codec and its SPARQL form (schema/messages_aggregate.hpp).
#include "schema/messages_aggregate.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>

#include "base/ascii.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

base::Error invalid(const std::string& why) {
    return base::Error{ErrorType::kInvalidRequest, "aggregate: " + why};
}

bool valid_var(std::string_view name) {
    if (name.size() < 2 || name.size() > 64 || name.front() != '?') return false;
    return std::all_of(name.begin() + 1, name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    });
}

base::Result<Term> decode_slot_term(const json& value, const std::string& where) {
    if (value.is_string()) {
        const auto text = value.get<std::string>();
        if (text.size() > 2 && text.front() == '<' && text.back() == '>')
            return Term(Iri{text.substr(1, text.size() - 2)});
        return invalid(where + ": expected \"?var\", \"<IRI>\", a term or a list of terms");
    }
    auto term = decode_term(value, where);
    if (!term) return invalid(term.error().message);
    return term;
}

base::Result<PatternSlot> decode_slot(const json& value, const std::string& where) {
    PatternSlot slot;
    if (value.is_string() && value.get<std::string>().starts_with("?")) {
        slot.var = value.get<std::string>();
        if (!valid_var(slot.var))
            return invalid(where + ": a variable is ? and 1 to 63 of A-Z a-z 0-9 _");
        return slot;
    }
    if (value.is_object() && value.contains("var")) {
        // A variable restricted to listed terms (SPARQL's VALUES ?x { … }).
        auto var = decode_slot(value["var"], where + ".var");
        if (!var) return std::move(var).error();
        if (!var->is_var()) return invalid(where + ".var: expected \"?name\"");
        auto terms = decode_slot(value.value("values", json()), where + ".values");
        if (!terms || terms->is_var() || !value["values"].is_array())
            return invalid(where + ".values: expected a list of terms");
        slot.var = var->var;
        slot.terms = std::move(terms->terms);
        return slot;
    }
    if (value.is_array()) {
        if (value.empty() || value.size() > kMaxAggregateAlternatives)
            return invalid(where + ": a list of 1 to " + std::to_string(kMaxAggregateAlternatives) +
                           " terms");
        for (std::size_t i = 0; i < value.size(); ++i) {
            auto term = decode_slot_term(value[i], where + "[" + std::to_string(i) + "]");
            if (!term) return std::move(term).error();
            slot.terms.push_back(std::move(*term));
        }
        return slot;
    }
    auto term = decode_slot_term(value, where);
    if (!term) return std::move(term).error();
    slot.terms.push_back(std::move(*term));
    return slot;
}

base::Result<void> decode_match(const json& body, AggregateQuery& q, std::set<std::string>& vars) {
    const auto match = body.find("match");
    if (match == body.end() || !match->is_array() || match->empty() ||
        match->size() > kMaxAggregatePatterns)
        return invalid("\"match\" must be a list of 1 to " + std::to_string(kMaxAggregatePatterns) +
                       " triple patterns");
    for (std::size_t i = 0; i < match->size(); ++i) {
        const json& entry = (*match)[i];
        const std::string where = "match[" + std::to_string(i) + "]";
        if (!entry.is_object()) return invalid(where + ": expected {\"s\", \"p\", \"o\"}");
        AggregatePattern pattern;
        for (auto [key, slot] :
             {std::pair{"s", &pattern.s}, std::pair{"p", &pattern.p}, std::pair{"o", &pattern.o}}) {
            const auto it = entry.find(key);
            if (it == entry.end()) return invalid(where + ": needs \"" + key + "\"");
            auto decoded = decode_slot(*it, where + "." + key);
            if (!decoded) return std::move(decoded).error();
            *slot = std::move(*decoded);
            if (slot->is_var()) vars.insert(slot->var);
        }
        q.match.push_back(std::move(pattern));
    }
    return {};
}

base::Result<void> decode_filters(const json& body, AggregateQuery& q,
                                  const std::set<std::string>& vars) {
    const auto filters = body.find("filter");
    if (filters == body.end() || filters->is_null()) return {};
    if (!filters->is_array() || filters->size() > kMaxAggregateFilters)
        return invalid("\"filter\" must be a list of at most " +
                       std::to_string(kMaxAggregateFilters) + " {\"var\", \"cmp\", \"value\"}");
    static const std::set<std::string> kCmps = {"<", "<=", ">", ">=", "=", "!="};
    for (std::size_t i = 0; i < filters->size(); ++i) {
        const json& f = (*filters)[i];
        const std::string where = "filter[" + std::to_string(i) + "]";
        if (!f.is_object() || !f.contains("var") || !f["var"].is_string() || !f.contains("cmp") ||
            !f["cmp"].is_string() || !f.contains("value"))
            return invalid(where + ": expected {\"var\", \"cmp\", \"value\"}");
        AggregateFilter filter{f["var"].get<std::string>(), f["cmp"].get<std::string>(),
                               f["value"]};
        if (!vars.count(filter.var))
            return invalid(where + ".var: " + filter.var + " is not bound by \"match\"");
        if (!kCmps.count(filter.cmp))
            return invalid(where + ".cmp: expected one of < <= > >= = !=");
        if (!filter.value.is_number() && !filter.value.is_string())
            return invalid(where + ".value: expected a number or a string");
        q.filter.push_back(std::move(filter));
    }
    return {};
}

base::Result<void> decode_shape(const json& body, AggregateQuery& q,
                                const std::set<std::string>& vars) {
    if (const auto g = body.find("group_by"); g != body.end() && !g->is_null()) {
        if (!g->is_array()) return invalid("\"group_by\" must be a list of variables");
        for (const json& v : *g) {
            if (!v.is_string() || !vars.count(v.get<std::string>()))
                return invalid("group_by: every entry must be a variable \"match\" binds");
            q.group_by.push_back(v.get<std::string>());
        }
    }
    if (const auto a = body.find("aggregate"); a != body.end() && !a->is_null()) {
        if (!a->is_object() || !a->contains("fn") || !(*a)["fn"].is_string())
            return invalid("\"aggregate\" must be {\"fn\", \"var\"}");
        q.aggregate = (*a)["fn"].get<std::string>();
        static const std::set<std::string> kFns = {"count", "min", "max", "sum", "avg"};
        if (!kFns.count(q.aggregate))
            return invalid("aggregate.fn: expected count, min, max, sum or avg");
        q.aggregate_var = a->value("var", json("")).is_string() ? a->value("var", "") : "";
        if (!vars.count(q.aggregate_var))
            return invalid("aggregate.var: expected a variable \"match\" binds");
    }
    if (const auto o = body.find("order_by"); o != body.end() && !o->is_null()) {
        if (!o->is_object() || !o->contains("var") || !(*o)["var"].is_string())
            return invalid("\"order_by\" must be {\"var\", \"dir\"}");
        q.order_by = (*o)["var"].get<std::string>();
        if (q.order_by == "value" ? q.aggregate.empty() : !vars.count(q.order_by))
            return invalid(
                "order_by.var: a variable \"match\" binds, or \"value\" with an aggregate");
        const std::string dir =
            o->value("dir", json("asc")).is_string() ? o->value("dir", "asc") : std::string("?");
        if (dir != "asc" && dir != "desc") return invalid("order_by.dir: expected asc or desc");
        q.descending = dir == "desc";
    }
    if (const auto l = body.find("limit"); l != body.end() && !l->is_null()) {
        if (!l->is_number_integer() || l->get<std::int64_t>() < 1 ||
            l->get<std::int64_t>() > kMaxAggregateLimit)
            return invalid("\"limit\" must be an integer from 1 to " +
                           std::to_string(kMaxAggregateLimit));
        q.limit = static_cast<std::uint32_t>(l->get<std::int64_t>());
    }
    return {};
}

json encode_slot(const PatternSlot& slot) {
    if (slot.is_var() && !slot.terms.empty()) {
        json values = json::array();
        for (const auto& t : slot.terms) values.push_back(encode(t));
        return {{"var", slot.var}, {"values", std::move(values)}};
    }
    if (slot.is_var()) return slot.var;
    if (slot.terms.size() == 1) return encode(slot.terms.front());
    json list = json::array();
    for (const auto& t : slot.terms) list.push_back(encode(t));
    return list;
}

}  // namespace

base::Result<AggregateQuery> decode_aggregate_query(const json& body) {
    if (!body.is_object()) return invalid("the body must be a JSON object");
    AggregateQuery q;
    if (const auto c = body.find("collection"); c != body.end() && c->is_string())
        q.collection = c->get<std::string>();
    std::set<std::string> vars;
    if (auto r = decode_match(body, q, vars); !r) return r.error();
    if (auto r = decode_filters(body, q, vars); !r) return r.error();
    if (auto r = decode_shape(body, q, vars); !r) return r.error();
    return q;
}

json encode(const AggregateQuery& q) {
    json body = {{"collection", q.collection}};
    json match = json::array();
    for (const auto& p : q.match)
        match.push_back(
            {{"s", encode_slot(p.s)}, {"p", encode_slot(p.p)}, {"o", encode_slot(p.o)}});
    body["match"] = std::move(match);
    if (!q.filter.empty()) {
        json filters = json::array();
        for (const auto& f : q.filter)
            filters.push_back({{"var", f.var}, {"cmp", f.cmp}, {"value", f.value}});
        body["filter"] = std::move(filters);
    }
    if (!q.group_by.empty()) body["group_by"] = q.group_by;
    if (!q.aggregate.empty()) body["aggregate"] = {{"fn", q.aggregate}, {"var", q.aggregate_var}};
    if (!q.order_by.empty())
        body["order_by"] = {{"var", q.order_by}, {"dir", q.descending ? "desc" : "asc"}};
    body["limit"] = q.limit;
    return body;
}

namespace {

// How the SPARQL form reads a variable's value (aggregate_text_value in SPARQL): the text, then a
// number, else a date's year with its fraction, else unbound (?gb_none is never bound).
constexpr std::string_view kNumberRegex =
    "^ *[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)? *$";
constexpr std::string_view kDateRegex =
    "^[0-9]{4}(-(0[1-9]|1[0-2])([^-].*|-.?|-(0[1-9]|[12][0-9]|3[01]).*)?)?$";
constexpr std::string_view kLocalName = "^.*[#/:]([^#/:]+)[#/:]*$";
constexpr std::string_view kXsdPrologue = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n";

std::string sparql_string(std::string_view text) { return json(std::string(text)).dump(); }

// "?ship" → "?gb_ship_<what>".
std::string helper_var(const std::string& var, std::string_view what) {
    std::string out = "?gb_";
    out.append(var.substr(1)).append("_").append(what);
    return out;
}

// A double as a SPARQL literal that reads back as the same double.
std::string double_literal(double value) {
    std::array<char, 64> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    std::string text(buf.data(), ec == std::errc() ? end : buf.data());
    if (text.find_first_of("eE") == std::string::npos) text += "e0";
    return text;
}

// The variables read as values: filtered, ordered (without an aggregate), or aggregated by a
// function of values.
std::set<std::string> valued_vars(const AggregateQuery& q) {
    std::set<std::string> vars;
    for (const auto& f : q.filter) vars.insert(f.var);
    if (q.aggregate.empty() && !q.order_by.empty()) vars.insert(q.order_by);
    if (!q.aggregate.empty() && q.aggregate != "count") vars.insert(q.aggregate_var);
    return vars;
}

// ?gb_<var>_text and ?gb_<var>_num of one variable.
std::string value_binds(const std::string& var) {
    const std::string label = helper_var(var, "label");
    const std::string text = helper_var(var, "text");
    std::string out;
    out.append("  OPTIONAL { ").append(var).append(" <").append(vocab::kRdfsLabel).append("> ");
    out.append(label).append(" }\n");
    out.append("  BIND(IF(isIRI(").append(var).append("), STR(COALESCE(").append(label);
    out.append(", REPLACE(STR(").append(var).append("), ").append(sparql_string(kLocalName));
    out.append(", \"$1\"))), STR(").append(var).append(")) AS ").append(text).append(")\n");
    const std::string len = "STRLEN(" + text + ")";
    std::string date = "xsd:double(SUBSTR(" + text + ", 1, 4))";
    date.append(" + IF(").append(len).append(" >= 7, (xsd:double(SUBSTR(").append(text);
    date.append(", 6, 2)) - 1) / 12, 0) + IF(").append(len).append(" >= 10 && SUBSTR(");
    date.append(text).append(", 8, 1) = \"-\", (xsd:double(SUBSTR(").append(text);
    date.append(", 9, 2)) - 1) / 372, 0)");
    out.append("  BIND(IF(REGEX(").append(text).append(", ").append(sparql_string(kNumberRegex));
    out.append("), xsd:double(REPLACE(").append(text).append(", \" \", \"\")), IF(REGEX(");
    out.append(text).append(", ").append(sparql_string(kDateRegex)).append("), ").append(date);
    out.append(", ?gb_none)) AS ").append(helper_var(var, "num")).append(")\n");
    return out;
}

// FILTER(?var cmp value) as the store evaluates it (graph_aggregate.cpp passes_filter).
std::string filter_text(const AggregateFilter& f) {
    const std::string num = helper_var(f.var, "num");
    std::optional<double> wanted;
    if (f.value.is_number()) wanted = f.value.get<double>();
    if (f.value.is_string()) wanted = aggregate_text_value(f.value.get<std::string>());
    const std::string text = f.value.is_string() ? f.value.get<std::string>() : f.value.dump();
    std::string same = "(LCASE(" + helper_var(f.var, "text") + ") = ";
    same.append(sparql_string(base::ascii_lower(text))).append(" || (isIRI(").append(f.var);
    const bool bracketed = text.size() > 2 && text.front() == '<' && text.back() == '>';
    same.append(") && STR(").append(f.var).append(") = ");
    same.append(sparql_string(bracketed ? text.substr(1, text.size() - 2) : text)).append("))");
    std::string cond;
    if (wanted && f.cmp != "=" && f.cmp != "!=") {
        cond = "BOUND(" + num + ") && " + num + " " + f.cmp + " " + double_literal(*wanted);
    } else if (wanted) {
        cond = "IF(BOUND(" + num + "), ABS(" + num + " - " + double_literal(*wanted) + ") ";
        cond.append(f.cmp == "=" ? "< 1e-9, " : ">= 1e-9, ").append(f.cmp == "=" ? "" : "!");
        cond.append(same).append(")");
    } else if (f.cmp == "=" || f.cmp == "!=") {
        cond = (f.cmp == "=" ? "" : "!") + same;
    } else {
        cond = "false";  // an order needs two values
    }
    return "  FILTER(" + cond + ")\n";
}

// The VALUES blocks and triple patterns of `match`.
std::string patterns_text(const AggregateQuery& q) {
    std::string where;
    for (std::size_t i = 0; i < q.match.size(); ++i) {
        const auto& p = q.match[i];
        std::string line;
        for (const auto& [slot, position] :
             {std::pair{&p.s, 's'}, std::pair{&p.p, 'p'}, std::pair{&p.o, 'o'}}) {
            std::string var = slot->var;
            if (!slot->is_var() && slot->terms.size() == 1) {
                line.append(sparql_term(slot->terms.front())).append(" ");
                continue;
            }
            if (!slot->is_var()) var = aggregate_slot_var(i, position);
            if (!slot->terms.empty()) {
                where.append("  VALUES ").append(var).append(" {");
                for (const auto& t : slot->terms) where.append(" ").append(sparql_term(t));
                where.append(" }\n");
            }
            line.append(var).append(" ");
        }
        where.append("  ").append(line).append(".\n");
    }
    return where;
}

// The WHERE group's content: patterns, value reads, filters (and, for a function of values, only
// the solutions that have one).
std::string where_body(const AggregateQuery& q) {
    std::string where = patterns_text(q);
    for (const auto& v : valued_vars(q)) where += value_binds(v);
    for (const auto& f : q.filter) where += filter_text(f);
    if (!q.aggregate.empty() && q.aggregate != "count")
        where.append("  FILTER(BOUND(").append(helper_var(q.aggregate_var, "num")).append("))\n");
    return where;
}

// ORDER BY keys of a variable read as a value: values first, then the value, then the text.
std::string order_keys(const std::string& var, bool descending) {
    const std::string dir = descending ? "DESC(" : "ASC(";
    const std::string num = helper_var(var, "num");
    return "ASC(IF(BOUND(" + num + "), 0, 1)) " + dir + num + ") " + dir + "LCASE(" +
           helper_var(var, "text") + "))";
}

std::string from_clause(std::string_view graph) {
    return graph.empty() ? std::string() : "FROM <" + std::string(graph) + ">\n";
}

std::string pattern_vars(const AggregateQuery& q) {
    std::set<std::string> vars;
    for (const auto& p : q.match)
        for (const auto* slot : {&p.s, &p.p, &p.o})
            if (slot->is_var()) vars.insert(slot->var);
    std::string out;
    for (const auto& v : vars) out.append(out.empty() ? "" : " ").append(v);
    return out;
}

std::string aggregate_select(const AggregateQuery& q) {
    std::string select;
    for (const auto& v : q.group_by) select.append(v).append(" ");
    std::string fn = q.aggregate;
    for (char& c : fn) c = static_cast<char>(c - 'a' + 'A');
    if (q.aggregate == "count")
        return select + "(COUNT(DISTINCT " + q.aggregate_var + ") AS ?value)";
    return select + "(" + fn + "(" + helper_var(q.aggregate_var, "num") + ") AS ?value)";
}

std::string group_clause(const AggregateQuery& q) {
    std::string out;
    if (!q.group_by.empty()) out = " GROUP BY";
    for (const auto& v : q.group_by) out.append(" ").append(v);
    return out;
}

}  // namespace

std::string aggregate_slot_var(std::size_t pattern, char position) {
    return "?gb_alt" + std::to_string(pattern) + std::string(1, position);
}

std::string sparql_term(const Term& term) {
    if (term.is_iri()) return "<" + term.as_iri().value + ">";
    if (term.is_literal()) {
        const auto& l = term.as_literal();
        std::string text = sparql_string(l.value);
        if (!l.language.empty()) return text + "@" + l.language;
        if (!l.datatype.empty()) return text + "^^<" + l.datatype + ">";
        return text;
    }
    return "[]";
}

std::string to_sparql(const AggregateQuery& q, std::string_view graph) {
    const bool ordered_group =
        !q.aggregate.empty() && !q.order_by.empty() && q.order_by != "value" &&
        std::find(q.group_by.begin(), q.group_by.end(), q.order_by) != q.group_by.end();
    std::string text = valued_vars(q).empty() && !ordered_group ? "" : std::string(kXsdPrologue);
    const std::string body = where_body(q);
    if (q.aggregate.empty()) {
        text.append("SELECT DISTINCT ")
            .append(pattern_vars(q))
            .append("\n")
            .append(from_clause(graph));
        text.append("WHERE {\n").append(body).append("}");
        if (!q.order_by.empty())
            text.append(" ORDER BY ").append(order_keys(q.order_by, q.descending));
    } else if (ordered_group) {
        // Ordered by a group's variable: the groups first, then that variable's value.
        std::string outer;
        for (const auto& v : q.group_by) outer.append(v).append(" ");
        text.append("SELECT ").append(outer).append("?value\n").append(from_clause(graph));
        text.append("WHERE {\n  { SELECT ").append(aggregate_select(q)).append(" WHERE {\n");
        text.append(body).append("  }").append(group_clause(q)).append(" }\n");
        text.append(value_binds(q.order_by)).append("} ORDER BY ");
        text.append(order_keys(q.order_by, q.descending));
    } else {
        text.append("SELECT ").append(aggregate_select(q)).append("\n").append(from_clause(graph));
        text.append("WHERE {\n").append(body).append("}").append(group_clause(q));
        if (q.order_by == "value")
            text.append(" ORDER BY ").append(q.descending ? "DESC(?value)" : "ASC(?value)");
    }
    return text + " LIMIT " + std::to_string(q.limit);
}

std::string to_sparql_solutions(const AggregateQuery& q, std::string_view graph,
                                std::string_view restrict, std::uint32_t limit) {
    std::string select = pattern_vars(q);
    for (std::size_t i = 0; i < q.match.size(); ++i) {
        const auto& p = q.match[i];
        for (const auto& [slot, position] :
             {std::pair{&p.s, 's'}, std::pair{&p.p, 'p'}, std::pair{&p.o, 'o'}})
            if (!slot->is_var() && slot->terms.size() > 1)
                select.append(" ").append(aggregate_slot_var(i, position));
    }
    if (q.aggregate == "min" || q.aggregate == "max")
        select.append(" ").append(helper_var(q.aggregate_var, "num"));
    std::string text = valued_vars(q).empty() ? "" : std::string(kXsdPrologue);
    text.append("SELECT DISTINCT ").append(select).append("\n").append(from_clause(graph));
    text.append("WHERE {\n");
    if (!restrict.empty()) text.append("  ").append(restrict).append("\n");
    text.append(where_body(q)).append("} LIMIT ").append(std::to_string(limit));
    return text;
}

std::optional<double> aggregate_date_value(std::string_view text) {
    const auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
        if (at + n > text.size()) return std::nullopt;
        int v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (text[i] < '0' || text[i] > '9') return std::nullopt;
            v = v * 10 + (text[i] - '0');
        }
        return v;
    };
    const auto year = digits(0, 4);
    if (!year) return std::nullopt;
    if (text.size() == 4) return *year;
    if (text.size() < 7 || text[4] != '-') return std::nullopt;
    const auto month = digits(5, 2);
    if (!month || *month < 1 || *month > 12) return std::nullopt;
    double value = *year + (*month - 1) / 12.0;
    if (text.size() >= 10 && text[7] == '-') {
        const auto day = digits(8, 2);
        if (!day || *day < 1 || *day > 31) return std::nullopt;
        value += (*day - 1) / 372.0;
    }
    return value;
}

std::optional<double> aggregate_text_value(std::string_view text) {
    std::string_view n = text;
    while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
    while (!n.empty() && n.back() == ' ') n.remove_suffix(1);
    if (!n.empty() && n.size() <= 40) {
        if (n.front() == '+') n.remove_prefix(1);
        double value = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), value);
        if (ec == std::errc() && end == n.data() + n.size() && std::isfinite(value)) return value;
    }
    return aggregate_date_value(text);
}

}  // namespace glassbox::schema
