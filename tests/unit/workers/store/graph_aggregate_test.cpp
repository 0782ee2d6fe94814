// Tests for the store's aggregate and predicates operations on both backends: counts, filters on
// numbers and years, min/max, order, limits, the scan bound and malformed queries.
#include "workers/store/graph_aggregate.hpp"

#include <gtest/gtest.h>

#include "schema/vocabulary.hpp"
#include "tests/support/knowledge_site.hpp"
#include "tests/unit/workers/store/graph_store_fixture.hpp"
#include "tests/unit/workers/store/graph_terms.hpp"

namespace glassbox::store {
namespace {

using namespace graph_terms;
using nlohmann::json;
using schema::typed_literal;
namespace vocab = schema::vocab;

const std::string kXsd(vocab::kXsdNs);

class GraphAggregateTest : public testing::GraphStoreFixture {
protected:
    void SetUp() override {
        GraphStoreFixture::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        SourceRecord record{"file:///sample.ttl", SourceKind::kFile, {}, 1, {}, {}};
        auto id = store_->register_source(record);
        ASSERT_TRUE(id) << id.error().message;
        const Term label = iri(std::string(vocab::kRdfsLabel));
        const Term type = iri(std::string(vocab::kRdfType));
        std::vector<Triple> t;
        const auto named = [&](const std::string& local, const std::string& name) {
            t.push_back(make_triple(ex(local), label, literal(name)));
        };
        named("builtBy", "was built by");
        named("yearBuilt", "was built in year");
        named("Ship", "ship");
        named("Light", "lighthouse");
        named("Halden", "Halden Ironworks");
        named("Brenn", "Brenn Shipyard");
        const std::vector<std::tuple<std::string, std::string, std::string>> ships = {
            {"Petrel", "Halden", "1903"},
            {"GoodHope", "Halden", "1884"},
            {"Curlew", "Brenn", "1898"},
            {"Gannet", "Brenn", "1907"},
            {"Sealark", "Brenn", "1880"}};
        for (const auto& [ship, yard, year] : ships) {
            named(ship, ship);
            t.push_back(make_triple(ex(ship), type, ex("Ship")));
            t.push_back(make_triple(ex(ship), ex("builtBy"), ex(yard)));
            t.push_back(
                make_triple(ex(ship), ex("yearBuilt"), typed_literal(year, kXsd + "gYear")));
        }
        // A lens built by Halden that is not a ship; an age written as a name ("23").
        t.push_back(make_triple(ex("Lens"), ex("builtBy"), ex("Halden")));
        t.push_back(make_triple(ex("Northcape"), type, ex("Light")));
        t.push_back(
            make_triple(ex("Northcape"), ex("height"), typed_literal("41.5", kXsd + "decimal")));
        t.push_back(make_triple(ex("Player"), ex("is_aged"), ex("23")));
        named("23", "23");
        auto counts = store_->insert(*id, t);
        ASSERT_TRUE(counts) << counts.error().message;
    }

    json run(const json& body, const AggregateBounds& bounds = {}) {
        auto q = schema::decode_aggregate_query(body);
        EXPECT_TRUE(q) << q.error().message;
        if (!q) return json();
        auto out = run_aggregate(*store_, *q, bounds);
        EXPECT_TRUE(out) << out.error().message;
        return out ? *out : json();
    }

    static json slot(const std::string& local) { return "<http://example.org/" + local + ">"; }
};

std::vector<std::string> labels_of(const json& rows, const std::string& var) {
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r["bindings"][var]["label"].get<std::string>());
    return out;
}

TEST_P(GraphAggregateTest, CountsTheDistinctValuesOfAJoinAndCitesEveryFact) {
    const json out = run(
        {{"match",
          {{{"s", "?ship"}, {"p", slot("builtBy")}, {"o", slot("Halden")}},
           {{"s", "?ship"}, {"p", "<" + std::string(vocab::kRdfType) + ">"}, {"o", slot("Ship")}}}},
         {"aggregate", {{"fn", "count"}, {"var", "?ship"}}}});
    ASSERT_EQ(out["rows"].size(), 1u);
    EXPECT_EQ(out["rows"][0]["value"], 2);  // the lens is not a ship
    EXPECT_EQ(out["rows"][0]["values"].size(), 2u);
    EXPECT_EQ(out["rows"][0]["facts"].size(), 4u);
    EXPECT_FALSE(out["truncated"].get<bool>());
    EXPECT_NE(out["sparql"].get<std::string>().find("COUNT(DISTINCT ?ship)"), std::string::npos);
}

TEST_P(GraphAggregateTest, GroupsCountPerBuilderOrderedByTheCount) {
    const json out = run(
        {{"match",
          {{{"s", "?ship"}, {"p", slot("builtBy")}, {"o", "?yard"}},
           {{"s", "?ship"}, {"p", "<" + std::string(vocab::kRdfType) + ">"}, {"o", slot("Ship")}}}},
         {"group_by", {"?yard"}},
         {"aggregate", {{"fn", "count"}, {"var", "?ship"}}},
         {"order_by", {{"var", "value"}, {"dir", "desc"}}}});
    ASSERT_EQ(out["rows"].size(), 2u);
    EXPECT_EQ(labels_of(out["rows"], "?yard"),
              (std::vector<std::string>{"Brenn Shipyard", "Halden Ironworks"}));
    EXPECT_EQ(out["rows"][0]["value"], 3);
    EXPECT_EQ(out["rows"][1]["value"], 2);
}

TEST_P(GraphAggregateTest, FiltersYearsAsValuesAndOrdersThem) {
    const json out = run({{"match", {{{"s", "?ship"}, {"p", slot("yearBuilt")}, {"o", "?year"}}}},
                          {"filter", {{{"var", "?year"}, {"cmp", "<"}, {"value", "1900"}}}},
                          {"order_by", {{"var", "?year"}, {"dir", "asc"}}}});
    EXPECT_EQ(labels_of(out["rows"], "?ship"),
              (std::vector<std::string>{"Sealark", "GoodHope", "Curlew"}));
    ASSERT_EQ(out["rows"][0]["facts"].size(), 1u);
    EXPECT_EQ(out["rows"][0]["facts"][0]["text"], "Sealark was built in year 1880");
}

TEST_P(GraphAggregateTest, PlanOnlyRepliesTheResolvedQueryWithItsLabels) {
    const json body = {{"collection", "default"},
                       {"match", {{{"s", "?ship"}, {"p", slot("builtBy")}, {"o", slot("Halden")}}}},
                       {"aggregate", {{"fn", "count"}, {"var", "?ship"}}}};
    auto q = schema::decode_aggregate_query(body);
    ASSERT_TRUE(q);
    auto plan = plan_aggregate(*store_, *q);
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_FALSE(plan->contains("rows"));  // planned, not run
    auto again = schema::decode_aggregate_query((*plan)["query"]);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, *q);
    ASSERT_EQ((*plan)["labels"].size(), 2u);
    EXPECT_EQ((*plan)["labels"][0]["label"], "was built by");
    EXPECT_EQ((*plan)["labels"][1]["label"], "Halden Ironworks");
    EXPECT_EQ((*plan)["sparql"], schema::to_sparql(*q));
}

TEST_P(GraphAggregateTest, MinAndMaxKeepTheFactsOfTheExtreme) {
    const json min = run({{"match", {{{"s", "?ship"}, {"p", slot("yearBuilt")}, {"o", "?year"}}}},
                          {"aggregate", {{"fn", "min"}, {"var", "?year"}}}});
    EXPECT_EQ(min["rows"][0]["value"], 1880);
    ASSERT_EQ(min["rows"][0]["facts"].size(), 1u);
    EXPECT_EQ(min["rows"][0]["facts"][0]["text"], "Sealark was built in year 1880");
    const json max = run({{"match", {{{"s", "?ship"}, {"p", slot("yearBuilt")}, {"o", "?year"}}}},
                          {"aggregate", {{"fn", "max"}, {"var", "?year"}}}});
    EXPECT_EQ(max["rows"][0]["value"], 1907);
    const json avg = run({{"match", {{{"s", "?ship"}, {"p", slot("yearBuilt")}, {"o", "?year"}}}},
                          {"aggregate", {{"fn", "sum"}, {"var", "?year"}}}});
    EXPECT_EQ(avg["rows"][0]["value"], 1903 + 1884 + 1898 + 1907 + 1880);
}

TEST_P(GraphAggregateTest, NamesThatReadAsNumbersCompareAsNumbers) {
    const json out = run({{"match", {{{"s", "?p"}, {"p", slot("is_aged")}, {"o", "?age"}}}},
                          {"filter", {{{"var", "?age"}, {"cmp", ">="}, {"value", 23}}}}});
    EXPECT_EQ(out["rows"].size(), 1u);
    const json none = run({{"match", {{{"s", "?p"}, {"p", slot("is_aged")}, {"o", "?age"}}}},
                           {"filter", {{{"var", "?age"}, {"cmp", ">"}, {"value", 23}}}}});
    EXPECT_TRUE(none["rows"].empty());
}

TEST_P(GraphAggregateTest, AlternativesAndLimitsAndTheScanBound) {
    const json alternatives = run(
        {{"match",
          {{{"s", "?x"}, {"p", json::array({slot("height"), slot("yearBuilt")})}, {"o", "?v"}}}},
         {"order_by", {{"var", "?v"}, {"dir", "desc"}}},
         {"limit", 2}});
    EXPECT_EQ(labels_of(alternatives["rows"], "?x"),
              (std::vector<std::string>{"Gannet", "Petrel"}));
    EXPECT_EQ(alternatives["total_rows"], 6);
    AggregateBounds tight;
    tight.max_scanned = 3;
    const json cut =
        run({{"match", {{{"s", "?ship"}, {"p", slot("yearBuilt")}, {"o", "?year"}}}}}, tight);
    EXPECT_TRUE(cut["truncated"].get<bool>());
    EXPECT_TRUE(cut["rows"].empty());
}

TEST_P(GraphAggregateTest, PredicatesAreListedWithTheirLabels) {
    auto out = list_predicates(*db_, *store_, 100);
    ASSERT_TRUE(out) << out.error().message;
    std::vector<std::string> labels;
    for (const auto& p : (*out)["predicates"]) labels.push_back(p["label"]);
    EXPECT_NE(std::find(labels.begin(), labels.end(), "was built by"), labels.end());
    EXPECT_EQ(std::find(labels.begin(), labels.end(), "label"), labels.end());
    auto one = list_predicates(*db_, *store_, 1);
    ASSERT_TRUE(one);
    EXPECT_TRUE((*one)["truncated"].get<bool>());
}

GLASSBOX_KNOWLEDGE_BACKENDS(GraphAggregateTest);

TEST(AggregateQueryDecode, MalformedQueriesAreInvalidRequestsNamingTheField) {
    const auto error_of = [](const json& body) {
        auto q = schema::decode_aggregate_query(body);
        EXPECT_FALSE(q) << body.dump();
        if (q) return std::string();
        EXPECT_EQ(q.error().type, base::ErrorType::kInvalidRequest);
        return q.error().message;
    };
    const json pattern = {{"s", "?x"}, {"p", "<http://e/p>"}, {"o", "?y"}};
    EXPECT_NE(error_of({{"match", json::array()}}).find("match"), std::string::npos);
    EXPECT_NE(error_of({{"match", {pattern, pattern, pattern, pattern}}}).find("1 to 3"),
              std::string::npos);
    EXPECT_NE(
        error_of({{"match", {{{"s", "?x"}, {"p", "built"}, {"o", "?y"}}}}}).find("match[0].p"),
        std::string::npos);
    EXPECT_NE(
        error_of({{"match", {pattern}}, {"filter", {{{"var", "?z"}, {"cmp", "<"}, {"value", 1}}}}})
            .find("?z"),
        std::string::npos);
    EXPECT_NE(
        error_of({{"match", {pattern}}, {"filter", {{{"var", "?y"}, {"cmp", "~"}, {"value", 1}}}}})
            .find("cmp"),
        std::string::npos);
    EXPECT_NE(error_of({{"match", {pattern}}, {"aggregate", {{"fn", "median"}, {"var", "?y"}}}})
                  .find("fn"),
              std::string::npos);
    EXPECT_NE(error_of({{"match", {pattern}}, {"limit", 0}}).find("limit"), std::string::npos);
    EXPECT_NE(error_of({{"match", {pattern}}, {"order_by", {{"var", "value"}}}}).find("order_by"),
              std::string::npos);
}

TEST(AggregateQueryDecode, RoundTripsAndReadsAsSparql) {
    const json body = {{"collection", "c"},
                       {"match", {{{"s", "?x"}, {"p", "<http://e/year>"}, {"o", "?y"}}}},
                       {"filter", {{{"var", "?y"}, {"cmp", ">="}, {"value", 1860}}}},
                       {"order_by", {{"var", "?y"}, {"dir", "desc"}}},
                       {"limit", 5}};
    auto q = schema::decode_aggregate_query(body);
    ASSERT_TRUE(q) << q.error().message;
    auto again = schema::decode_aggregate_query(schema::encode(*q));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *q);
    const std::string text = schema::to_sparql(*q, "urn:glassbox:collection:c");
    EXPECT_TRUE(
        text.starts_with("PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\nSELECT DISTINCT "
                         "?x ?y\nFROM <urn:glassbox:collection:c>\nWHERE {\n  ?x "
                         "<http://e/year> ?y .\n"))
        << text;
    EXPECT_NE(text.find("  FILTER(BOUND(?gb_y_num) && ?gb_y_num >= 1860e0)\n"), std::string::npos)
        << text;
    EXPECT_TRUE(
        text.ends_with("} ORDER BY ASC(IF(BOUND(?gb_y_num), 0, 1)) DESC(?gb_y_num) "
                       "DESC(LCASE(?gb_y_text)) LIMIT 5"))
        << text;
}

// The SPARQL form of one filter on ?y (the query: ?x <p> ?y).
std::string sparql_filter(const json& value, const std::string& cmp) {
    const json body = {{"match", {{{"s", "?x"}, {"p", "<http://e/p>"}, {"o", "?y"}}}},
                       {"filter", {{{"var", "?y"}, {"cmp", cmp}, {"value", value}}}}};
    auto q = schema::decode_aggregate_query(body);
    if (!q) return "error: " + q.error().message;
    const std::string text = schema::to_sparql(*q);
    const auto at = text.find("  FILTER(");
    return at == std::string::npos ? text : text.substr(at + 2, text.find('\n', at) - at - 2);
}

TEST(AggregateQuerySparql, EachFilterKindReadsAsTheStoreEvaluatesIt) {
    // An order on a number or a year: the variable's value, which must exist.
    EXPECT_EQ(sparql_filter(1860, "<"), "FILTER(BOUND(?gb_y_num) && ?gb_y_num < 1860e0)");
    EXPECT_EQ(sparql_filter("1860", "<="), "FILTER(BOUND(?gb_y_num) && ?gb_y_num <= 1860e0)");
    EXPECT_EQ(sparql_filter(41.5, ">"), "FILTER(BOUND(?gb_y_num) && ?gb_y_num > 41.5e0)");
    // A date reads as its year with the fraction the store gives it.
    EXPECT_EQ(sparql_filter("1871-05", ">="), sparql_filter(1871 + 4 / 12.0, ">="));
    EXPECT_EQ(sparql_filter("1871-05", ">="),
              "FILTER(BOUND(?gb_y_num) && ?gb_y_num >= 1871.3333333333333e0)");
    // = and != on a value: the value when the variable has one, else its text or IRI.
    EXPECT_EQ(sparql_filter(23, "="),
              "FILTER(IF(BOUND(?gb_y_num), ABS(?gb_y_num - 23e0) < 1e-9, (LCASE(?gb_y_text) = "
              "\"23\" || (isIRI(?y) && STR(?y) = \"23\"))))");
    EXPECT_EQ(sparql_filter(23, "!="),
              "FILTER(IF(BOUND(?gb_y_num), ABS(?gb_y_num - 23e0) >= 1e-9, !(LCASE(?gb_y_text) = "
              "\"23\" || (isIRI(?y) && STR(?y) = \"23\"))))");
    // = and != on a name: its text, case folded, or the IRI itself (bracketed or not).
    EXPECT_EQ(sparql_filter("Halden Ironworks", "="),
              "FILTER((LCASE(?gb_y_text) = \"halden ironworks\" || (isIRI(?y) && STR(?y) = "
              "\"Halden Ironworks\")))");
    EXPECT_EQ(sparql_filter("<http://e/Halden>", "!="),
              "FILTER(!(LCASE(?gb_y_text) = \"<http://e/halden>\" || (isIRI(?y) && STR(?y) = "
              "\"http://e/Halden\")))");
    // An order on a name that is no value holds for nothing, as in the store.
    EXPECT_EQ(sparql_filter("Halden", ">"), "FILTER(false)");
}

TEST(AggregateQuerySparql, ValuesAreReadFromTheTextLabelOrLocalName) {
    const std::string text = sparql_filter(1860, "<");
    auto q = schema::decode_aggregate_query(
        {{"match", {{{"s", "?x"}, {"p", "<http://e/p>"}, {"o", "?y"}}}},
         {"filter", {{{"var", "?y"}, {"cmp", "<"}, {"value", 1860}}}}});
    ASSERT_TRUE(q);
    const std::string all = schema::to_sparql(*q);
    EXPECT_NE(all.find("OPTIONAL { ?y <http://www.w3.org/2000/01/rdf-schema#label> ?gb_y_label }"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("BIND(IF(isIRI(?y), STR(COALESCE(?gb_y_label, REPLACE(STR(?y), "),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("AS ?gb_y_num)"), std::string::npos) << all;
    EXPECT_EQ(schema::aggregate_text_value(" +41.5 "), 41.5);
    EXPECT_EQ(schema::aggregate_text_value("1871"), 1871.0);
    EXPECT_EQ(schema::aggregate_text_value("1871-05"), 1871 + 4 / 12.0);
    EXPECT_EQ(schema::aggregate_text_value("1871-05-03T10:00:00Z"), 1871 + 4 / 12.0 + 2 / 372.0);
    EXPECT_FALSE(schema::aggregate_text_value("1871-13"));
    EXPECT_FALSE(schema::aggregate_text_value("Halden"));
}

TEST(AggregateQuerySparql, AggregatesGroupsAndAlternatives) {
    auto q = schema::decode_aggregate_query(
        {{"match",
          {{{"s", "?ship"}, {"p", {"<http://e/builtBy>", "<http://e/madeBy>"}}, {"o", "?yard"}},
           {{"s", "?ship"}, {"p", "<http://e/year>"}, {"o", "?y"}}}},
         {"group_by", {"?yard"}},
         {"aggregate", {{"fn", "min"}, {"var", "?y"}}},
         {"order_by", {{"var", "value"}, {"dir", "asc"}}},
         {"limit", 3}});
    ASSERT_TRUE(q) << q.error().message;
    const std::string text = schema::to_sparql(*q);
    EXPECT_NE(text.find("SELECT ?yard (MIN(?gb_y_num) AS ?value)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  VALUES ?gb_alt0p { <http://e/builtBy> <http://e/madeBy> }\n  ?ship "
                        "?gb_alt0p ?yard .\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  FILTER(BOUND(?gb_y_num))\n"), std::string::npos) << text;
    EXPECT_TRUE(text.ends_with("} GROUP BY ?yard ORDER BY ASC(?value) LIMIT 3")) << text;
    const std::string cited =
        schema::to_sparql_solutions(*q, "urn:g", "VALUES (?yard) { (<http://e/Brenn>) }", 50);
    EXPECT_NE(cited.find("SELECT DISTINCT ?ship ?y ?yard ?gb_alt0p ?gb_y_num\nFROM <urn:g>\nWHERE "
                         "{\n  VALUES (?yard) { (<http://e/Brenn>) }\n"),
              std::string::npos)
        << cited;
    EXPECT_TRUE(cited.ends_with("} LIMIT 50")) << cited;
    // Ordered by a group's variable: the groups in a subquery, that variable read outside.
    q->aggregate = "count";
    q->aggregate_var = "?ship";
    q->order_by = "?yard";
    const std::string by_group = schema::to_sparql(*q);
    EXPECT_NE(by_group.find("{ SELECT ?yard (COUNT(DISTINCT ?ship) AS ?value) WHERE {"),
              std::string::npos)
        << by_group;
    EXPECT_TRUE(
        by_group.ends_with("ORDER BY ASC(IF(BOUND(?gb_yard_num), 0, 1)) ASC(?gb_yard_num) "
                           "ASC(LCASE(?gb_yard_text)) LIMIT 3"))
        << by_group;
}

}  // namespace
}  // namespace glassbox::store
