// The graph-query tool: a query written with names and relation words (by a model or the offline
// planner) made into the store's `aggregate` query — names resolved to IRIs as triples-query
// resolves them, relation words mapped onto the store's predicates — run, and its rows observed
// with the facts behind them (docs/agent.md §2). With a SPARQL engine configured the store only
// plans the query and the engine runs it (sparql_graph_query.hpp); the store's op answers when
// the engine fails.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "reasoner/reasoner.hpp"
#include "schema/collection_name.hpp"
#include "schema/messages_aggregate.hpp"
#include "schema/sparql_graphs.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"
#include "workers/agent/agent_tools.hpp"
#include "workers/agent/sparql_graph_query.hpp"

namespace glassbox::agent {

using nlohmann::json;

namespace {

// A predicate must match the relation words at least this well, and (unless widened) come closer
// than kPredicateMargin to the best match.
constexpr double kMinPredicateMatch = 0.45;
constexpr double kPredicateMargin = 0.05;
constexpr std::size_t kMaxPredicates = 8;

std::string query_dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void fail_query(ToolOutcome& out, const std::string& why) {
    out.error = true;
    out.observation = "error: " + why;
}

bool is_var(const json& slot) {
    return slot.is_string() && slot.get<std::string>().starts_with("?");
}
bool is_iri_text(const json& slot) {
    return slot.is_string() && slot.get<std::string>().starts_with("<");
}
bool is_type(const json& slot) {
    if (!slot.is_string()) return false;
    const std::string p = normalise_name(slot.get<std::string>());
    return p == "type" || p == "a" || p == "rdf:type" || p == "is a";
}

// The names of a query's subject and object slots, each once (classes apart: they must match a
// label exactly), and its relation phrases.
struct QueryNames {
    std::vector<std::string> names;
    std::set<std::string> classes;
    std::vector<std::string> phrases;
};

void note_name(QueryNames& n, const json& slot, bool is_class) {
    if (!slot.is_string() || is_var(slot) || is_iri_text(slot)) return;
    const std::string name = slot.get<std::string>();
    if (std::find(n.names.begin(), n.names.end(), name) == n.names.end()) n.names.push_back(name);
    if (is_class) n.classes.insert(name);
}

base::Result<QueryNames> names_of(const json& match) {
    QueryNames n;
    if (!match.is_array() || match.empty() || match.size() > schema::kMaxAggregatePatterns)
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "\"match\" must be a list of 1 to 3 {\"s\", \"p\", \"o\"}");
    for (const json& p : match) {
        if (!p.is_object() || !p.contains("s") || !p.contains("p") || !p.contains("o"))
            return base::make_error(base::ErrorType::kInvalidRequest,
                                    "each pattern of \"match\" needs \"s\", \"p\" and \"o\"");
        for (const char* key : {"s", "o"}) {
            const json& slot = p[key];
            if (slot.is_object() && slot.contains("values") && slot["values"].is_array()) {
                for (const json& v : slot["values"]) note_name(n, v, false);
            } else if (slot.is_array()) {
                for (const json& v : slot) note_name(n, v, false);
            } else {
                note_name(n, slot, std::string(key) == "o" && is_type(p["p"]));
            }
        }
        const json& pred = p["p"];
        if (pred.is_string() && !is_var(pred) && !is_iri_text(pred) && !is_type(pred))
            n.phrases.push_back(pred.get<std::string>());
    }
    return n;
}

// A slot with its names replaced by "<IRI>"s.
json resolved_slot(const json& slot, const std::map<std::string, std::string>& iris) {
    const auto one = [&](const json& v) -> json {
        if (!v.is_string() || is_var(v) || is_iri_text(v)) return v;
        const auto it = iris.find(v.get<std::string>());
        return it == iris.end() ? v : json("<" + it->second + ">");
    };
    if (slot.is_object() && slot.contains("values") && slot["values"].is_array()) {
        json out = slot;
        for (auto& v : out["values"]) v = one(v);
        return out;
    }
    if (slot.is_array()) {
        json out = json::array();
        for (const auto& v : slot) out.push_back(one(v));
        return out;
    }
    return one(slot);
}

// The predicates whose labels match `phrase`, best first: those within the margin of the best
// (every one above the floor when widened).
std::vector<std::pair<std::string, double>> matching_predicates(
    const std::string& phrase, const std::vector<std::pair<std::string, std::string>>& predicates,
    bool widen) {
    std::vector<std::pair<std::string, double>> scored;
    for (const auto& [iri, label] : predicates) {
        const double score = reasoner::relation_phrase_match(label, phrase);
        if (score >= kMinPredicateMatch) scored.emplace_back(iri, score);
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (!scored.empty() && !widen) {
        const double best = scored.front().second;
        std::erase_if(scored,
                      [&](const auto& s) { return s.second < best - kPredicateMargin + 1e-9; });
    }
    if (scored.size() > kMaxPredicates) scored.resize(kMaxPredicates);
    return scored;
}

// The observation: the SPARQL text, the row count and the rows as labels, as many rows as fit.
json observe_rows(const json& reply, std::size_t max_chars, std::size_t& shown) {
    json rows = json::array();
    std::size_t size = 200 + query_dump(reply.value("sparql", json(""))).size();
    shown = 0;
    const json all = reply.value("rows", json::array());
    for (const json& r : all) {
        json row = json::object();
        const json bindings = r.value("bindings", json::object());
        for (const auto& [var, b] : bindings.items()) row[var] = b.value("label", json(""));
        if (r.contains("value")) row["value"] = r["value"];
        if (r.contains("values")) {
            json values = json::array();
            for (const json& v : r["values"]) values.push_back(v.value("label", json("")));
            row["values"] = std::move(values);
        }
        const std::size_t row_size = query_dump(row).size() + 1;
        if (size + row_size > max_chars) break;
        size += row_size;
        rows.push_back(std::move(row));
        ++shown;
    }
    return rows;
}

using StoreCall = std::function<base::Result<runtime::CallResult>(std::string_view, json)>;

// A query's reply and, with an engine configured, how it was answered: {"engine"} naming the
// engine (with "mirror": the collection's version and the one mirrored, when the store says), or
// the store's own op after the engine failed ({"engine": "store (fallback)", "engine_error"}). An
// answer is never lost to an engine that is down.
struct QueryRun {
    json reply;
    json engine = json::object();
};

// The collection's change number and the one its mirrored graph was sent at (the engine may be
// behind when they differ), from the store's mirror stats; null when the store cannot say.
json mirror_note(const StoreCall& store, const std::string& collection) {
    auto stats = store("stats", json{{"sparql_mirror_only", true}});
    if (!stats || !stats->final.is_object()) return json();
    const json mirror = stats->final.value("sparql_mirror", json::object());
    if (!mirror.is_object() || !mirror.contains("collections") || !mirror["collections"].is_array())
        return json();
    for (const json& c : mirror["collections"])
        if (c.is_object() && c.value("name", json("")) == json(collection))
            return {{"version", c.value("version", json(0))},
                    {"mirrored", c.value("mirrored", json(0))}};
    return json();
}

base::Result<QueryRun> run_query(const json& body, const AgentConfig& config,
                                 const std::string& collection, const StoreCall& store) {
    if (!config.sparql) {
        auto reply = store("aggregate", body);
        if (!reply) return std::move(reply).error();
        return QueryRun{std::move(reply->final)};
    }
    // The store resolves and checks the query (its errors are the query's, not the engine's);
    // the engine runs it over the collection's mirrored graph.
    json plan = body;
    plan["plan_only"] = true;
    auto planned = store("aggregate", plan);
    if (!planned) return std::move(planned).error();
    auto query = schema::decode_aggregate_query(planned->final.value("query", json()));
    if (!query) return std::move(query).error();
    auto name = schema::validate_collection(collection);
    if (!name) return std::move(name).error();
    auto ran = run_sparql_aggregate(*config.sparql, *query, schema::collection_graph_iri(*name));
    if (ran) {
        json engine = {{"engine", config.sparql->name()}};
        if (json mirror = mirror_note(store, *name); !mirror.is_null())
            engine["mirror"] = std::move(mirror);
        return QueryRun{std::move(*ran), std::move(engine)};
    }
    json engine = {{"engine", "store (fallback)"},
                   {"engine_error", config.sparql->name() + ": " + ran.error().describe()}};
    auto reply = store("aggregate", body);
    if (!reply) return std::move(reply).error();
    return QueryRun{std::move(reply->final), std::move(engine)};
}

}  // namespace

void ToolRunner::run_graph_query(ToolOutcome& out) {
    const json& args = out.args;
    auto names = names_of(args.value("match", json()));
    if (!names) return fail_query(out, names.error().message);
    std::vector<bool> exact;
    auto iris = resolve(names->names, &exact);
    if (!iris) return fail_query(out, iris.error().describe());
    std::map<std::string, std::string> resolved;
    for (std::size_t i = 0; i < names->names.size(); ++i) {
        const std::string& name = names->names[i];
        if (names->classes.count(name) && !exact[i])
            return fail_query(out, "no class of the knowledge graph is named \"" + name + "\"");
        if ((*iris)[i].empty())
            return fail_query(out, "no entity of the knowledge graph matches \"" + name + "\"");
        resolved[name] = (*iris)[i];
    }
    std::vector<std::pair<std::string, std::string>> predicates;
    if (!names->phrases.empty()) {
        auto listed = store("predicates", json{{"limit", 2'000}});
        if (!listed) return fail_query(out, listed.error().describe());
        const json list = listed->final.value("predicates", json::array());
        for (const json& p : list) {
            auto term = schema::decode_term(p.value("term", json()));
            if (term && term->is_iri())
                predicates.emplace_back(term->as_iri().value, p.value("label", ""));
        }
    }
    json body = args;
    body.erase("widen");
    const bool widen = args.value("widen", false);
    json chosen = json::object();
    for (auto& p : body["match"]) {
        p["s"] = resolved_slot(p["s"], resolved);
        p["o"] = resolved_slot(p["o"], resolved);
        if (is_type(p["p"])) {
            p["p"] = "<" + std::string(schema::vocab::kRdfType) + ">";
        } else if (p["p"].is_string() && !is_var(p["p"]) && !is_iri_text(p["p"])) {
            const std::string phrase = p["p"].get<std::string>();
            const auto matched = matching_predicates(phrase, predicates, widen);
            if (matched.empty())
                return fail_query(out,
                                  "no predicate of the knowledge graph matches \"" + phrase + "\"");
            json list = json::array();
            for (const auto& [iri, score] : matched) list.push_back("<" + iri + ">");
            chosen[phrase] = list;
            p["p"] = list.size() == 1 ? list.front() : list;
        }
    }
    auto ran = run_query(body, config_, collection_,
                         [this](std::string_view op, json b) { return store(op, std::move(b)); });
    if (!ran) return fail_query(out, ran.error().describe());
    const json& r = ran->reply;
    if (r.value("truncated", false))
        return fail_query(out, "the query reads more of the graph than one request may (" +
                                   std::to_string(r.value("scanned", 0)) +
                                   " triples); narrow it with a name or a class");
    std::size_t shown = 0;
    json obs = ran->engine;
    obs.update({{"sparql", r.value("sparql", json(""))},
                {"row_count", r.value("total_rows", 0)},
                {"rows", observe_rows(r, config_.max_observation_chars, shown)}});
    if (!chosen.empty()) obs["predicates"] = std::move(chosen);
    const json rows = r.value("rows", json::array());
    if (shown < rows.size()) obs["rows_omitted"] = true;
    for (const json& row : rows) {
        const json facts = row.value("facts", json::array());
        for (const json& f : facts) {
            auto triple = schema::decode_triple(f.value("triple", json()));
            if (!triple) continue;
            ObservedFact fact;
            fact.triple = std::move(*triple);
            fact.text = f.value("text", "");
            fact.query = true;
            out.facts.push_back(std::move(fact));
        }
    }
    out.observation = query_dump(obs);
}

}  // namespace glassbox::agent
