// The aggregate query's codec and its SPARQL form (schema/messages_aggregate.hpp).
#include "schema/messages_aggregate.hpp"

#include <algorithm>
#include <set>

#include "schema/term_json.hpp"

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

std::string sparql_term(const Term& term) {
    if (term.is_iri()) return "<" + term.as_iri().value + ">";
    if (term.is_literal()) {
        const auto& l = term.as_literal();
        std::string text = json(l.value).dump();
        if (!l.language.empty()) return text + "@" + l.language;
        if (!l.datatype.empty()) return text + "^^<" + l.datatype + ">";
        return text;
    }
    return "[]";
}

std::string upper(std::string text) {
    for (char& c : text)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return text;
}

std::string sparql_value(const json& value) {
    if (value.is_number()) return value.dump();
    return json(value.get<std::string>()).dump();
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

std::string to_sparql(const AggregateQuery& q) {
    std::string select;
    std::set<std::string> vars;
    for (const auto& p : q.match)
        for (const auto* slot : {&p.s, &p.p, &p.o})
            if (slot->is_var()) vars.insert(slot->var);
    if (q.aggregate.empty()) {
        for (const auto& v : vars) select += (select.empty() ? "" : " ") + v;
    } else {
        for (const auto& v : q.group_by) select += v + " ";
        const std::string fn = q.aggregate == "count" ? "COUNT(DISTINCT " : "";
        select +=
            "(" + (fn.empty() ? upper(q.aggregate) + "(" : fn) + q.aggregate_var + ") AS ?value)";
    }
    std::string where;
    std::size_t values = 0;
    for (const auto& p : q.match) {
        std::string line;
        for (const auto* slot : {&p.s, &p.p, &p.o}) {
            if (slot->is_var()) {
                if (!slot->terms.empty()) {
                    std::string list;
                    for (const auto& t : slot->terms) list.append(" ").append(sparql_term(t));
                    where += "  VALUES " + slot->var + " {" + list + " }\n";
                }
                line += slot->var + " ";
            } else if (slot->terms.size() == 1) {
                line += sparql_term(slot->terms.front()) + " ";
            } else {
                const std::string v = "?alt" + std::to_string(values++);
                std::string list;
                for (const auto& t : slot->terms) list.append(" ").append(sparql_term(t));
                where.append("  VALUES ").append(v).append(" {").append(list).append(" }\n");
                line += v + " ";
            }
        }
        where += "  " + line + ".\n";
    }
    for (const auto& f : q.filter)
        where += "  FILTER(" + f.var + " " + f.cmp + " " + sparql_value(f.value) + ")\n";
    std::string text = "SELECT " + select + " WHERE {\n" + where + "}";
    if (!q.group_by.empty() && !q.aggregate.empty()) {
        text += " GROUP BY";
        for (const auto& v : q.group_by) text += " " + v;
    }
    if (!q.order_by.empty()) {
        const std::string key = q.order_by == "value" ? "?value" : q.order_by;
        text += std::string(" ORDER BY ") + (q.descending ? "DESC(" : "ASC(") + key + ")";
    }
    return text + " LIMIT " + std::to_string(q.limit);
}

}  // namespace glassbox::schema
