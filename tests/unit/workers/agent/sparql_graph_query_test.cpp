// Tests for graph-query's SPARQL path on a scripted engine: SPARQL JSON results made into the
// store's reply (rows with labels picked as the store picks them, a count's values, the facts of
// each row, min/max keeping the extreme, the rows past the limit counted) and engine errors passed
// on. The same path against a real Virtuoso: tests/integration/graph_query_sparql_test.cpp.
#include "workers/agent/sparql_graph_query.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

namespace glassbox::agent {
namespace {

using nlohmann::json;

json uri(const std::string& value) { return {{"type", "uri"}, {"value", value}}; }
json year(const std::string& value) {
    return {{"type", "typed-literal"},
            {"datatype", "http://www.w3.org/2001/XMLSchema#gYear"},
            {"value", value}};
}
json number(double value) {
    return {{"type", "typed-literal"},
            {"datatype", "http://www.w3.org/2001/XMLSchema#double"},
            {"value", std::to_string(value)}};
}
json lang_label(const std::string& value, const std::string& lang) {
    json out = {{"type", "literal"}, {"value", value}};
    if (!lang.empty()) out["xml:lang"] = lang;
    return out;
}
json results(json bindings) {
    return {{"head", {{"vars", json::array()}}}, {"results", {{"bindings", std::move(bindings)}}}};
}

// Answers each query by its form (labels; solutions and counts by their limits; else the
// query's rows); records every query.
class ScriptedEngine : public SparqlEngine {
public:
    json main, counted, solutions, labels;
    std::optional<base::Error> fail;
    std::vector<std::string> asked;

    base::Result<json> select(std::string_view query) override {
        std::lock_guard lock(mutex_);
        asked.emplace_back(query);
        if (fail) return *fail;
        const std::string q(query);
        if (q.starts_with("SELECT ?s ?l")) return labels;
        if (q.ends_with("LIMIT 2000")) return solutions;  // the solutions behind the rows
        if (q.ends_with("LIMIT 1000")) return counted;    // the rows past the limit counted
        return main;
    }
    std::string name() const override { return "scripted"; }

private:
    std::mutex mutex_;
};

const std::string kEx = "http://e/";

schema::AggregateQuery query_of(const json& body) {
    auto q = schema::decode_aggregate_query(body);
    EXPECT_TRUE(q) << q.error().message;
    return q ? *q : schema::AggregateQuery{};
}

TEST(SparqlGraphQuery, PlainRowsComeWithLabelsAndTheirFacts) {
    ScriptedEngine engine;
    engine.main = results({{{"x", uri(kEx + "Sealark")}, {"y", year("1880")}},
                           {{"x", uri(kEx + "GoodHope")}, {"y", year("1884")}}});
    engine.solutions = engine.main;
    engine.labels = results({{{"s", uri(kEx + "Sealark")}, {"l", lang_label("Sealark", "")}},
                             {{"s", uri(kEx + "Sealark")}, {"l", lang_label("Seelerche", "de")}},
                             {{"s", uri(kEx + "yearBuilt")}, {"l", lang_label("year built", "en")}},
                             {{"s", uri(kEx + "yearBuilt")}, {"l", lang_label("b", "")}}});
    const auto q =
        query_of({{"match", {{{"s", "?x"}, {"p", "<" + kEx + "yearBuilt>"}, {"o", "?y"}}}},
                  {"filter", {{{"var", "?y"}, {"cmp", "<"}, {"value", 1900}}}},
                  {"order_by", {{"var", "?y"}, {"dir", "asc"}}},
                  {"limit", 5}});
    auto out = run_sparql_aggregate(engine, q, "urn:glassbox:collection:default");
    ASSERT_TRUE(out) << out.error().describe();
    ASSERT_EQ((*out)["rows"].size(), 2u) << out->dump();
    const json& first = (*out)["rows"][0];
    EXPECT_EQ(first["bindings"]["?x"]["label"], "Sealark");  // no language before German
    EXPECT_EQ(first["bindings"]["?y"]["label"], "1880");
    EXPECT_EQ((*out)["rows"][1]["bindings"]["?x"]["label"], "GoodHope");  // the local name
    ASSERT_EQ(first["facts"].size(), 1u);
    EXPECT_EQ(first["facts"][0]["text"], "Sealark year built 1880");  // English first
    EXPECT_EQ((*out)["total_rows"], 2);
    EXPECT_NE((*out)["sparql"].get<std::string>().find("FROM <urn:glassbox:collection:default>"),
              std::string::npos);
    ASSERT_EQ(engine.asked.size(), 3u);  // rows, their solutions, labels: fewer than the limit
    EXPECT_NE(engine.asked[1].find("VALUES (?x ?y) { (<http://e/Sealark> "
                                   "\"1880\"^^<http://www.w3.org/2001/XMLSchema#gYear>)"),
              std::string::npos)
        << engine.asked[1];
}

TEST(SparqlGraphQuery, ACountNamesItsValuesAndMinKeepsTheExtreme) {
    ScriptedEngine engine;
    engine.main = results({{{"yard", uri(kEx + "Brenn")}, {"value", number(2)}}});
    engine.solutions = results({{{"ship", uri(kEx + "Curlew")}, {"yard", uri(kEx + "Brenn")}},
                                {{"ship", uri(kEx + "Gannet")}, {"yard", uri(kEx + "Brenn")}},
                                {{"ship", uri(kEx + "Petrel")}, {"yard", uri(kEx + "Halden")}}});
    engine.labels = results(json::array());
    const auto count =
        query_of({{"match", {{{"s", "?ship"}, {"p", "<" + kEx + "builtBy>"}, {"o", "?yard"}}}},
                  {"group_by", {"?yard"}},
                  {"aggregate", {{"fn", "count"}, {"var", "?ship"}}},
                  {"limit", 1}});
    engine.counted = results({{{"yard", uri(kEx + "Brenn")}}, {{"yard", uri(kEx + "Halden")}}});
    auto out = run_sparql_aggregate(engine, count, "");
    ASSERT_TRUE(out) << out.error().describe();
    ASSERT_EQ((*out)["rows"].size(), 1u);
    EXPECT_EQ((*out)["rows"][0]["value"], 2.0);
    ASSERT_EQ((*out)["rows"][0]["values"].size(), 2u);  // Petrel is another group's
    EXPECT_EQ((*out)["rows"][0]["values"][1]["label"], "Gannet");
    EXPECT_EQ((*out)["total_rows"], 2);  // the rows filled the limit: counted

    ScriptedEngine extreme;
    extreme.main = results({{{"value", number(1880)}}});
    extreme.solutions =
        results({{{"x", uri(kEx + "Sealark")}, {"y", year("1880")}, {"gb_y_num", number(1880)}},
                 {{"x", uri(kEx + "Curlew")}, {"y", year("1898")}, {"gb_y_num", number(1898)}}});
    extreme.labels = results(json::array());
    const auto min =
        query_of({{"match", {{{"s", "?x"}, {"p", "<" + kEx + "yearBuilt>"}, {"o", "?y"}}}},
                  {"aggregate", {{"fn", "min"}, {"var", "?y"}}}});
    out = run_sparql_aggregate(extreme, min, "");
    ASSERT_TRUE(out) << out.error().describe();
    ASSERT_EQ((*out)["rows"][0]["facts"].size(), 1u) << out->dump();
    EXPECT_EQ((*out)["rows"][0]["facts"][0]["text"], "Sealark yearBuilt 1880");
}

TEST(SparqlGraphQuery, EngineErrorsArePassedOn) {
    ScriptedEngine engine;
    engine.fail = base::Error{base::ErrorType::kServiceUnavailable, "connection refused"};
    const auto q =
        query_of({{"match", {{{"s", "?x"}, {"p", "<" + kEx + "yearBuilt>"}, {"o", "?y"}}}}});
    auto out = run_sparql_aggregate(engine, q, "");
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().type, base::ErrorType::kServiceUnavailable);
}

}  // namespace
}  // namespace glassbox::agent
