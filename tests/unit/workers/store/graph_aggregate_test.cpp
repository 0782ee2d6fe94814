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
    EXPECT_EQ(schema::to_sparql(*q),
              "SELECT ?x ?y WHERE {\n  ?x <http://e/year> ?y .\n  FILTER(?y >= 1860)\n} ORDER BY "
              "DESC(?y) LIMIT 5");
}

}  // namespace
}  // namespace glassbox::store
