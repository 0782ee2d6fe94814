// http/sparql_query_form.hpp: the form of a request read after its prologue, what the gateway
// refuses updates by.
#include "http/sparql_query_form.hpp"

#include <gtest/gtest.h>

namespace glassbox::http {
namespace {

TEST(SparqlQueryForm, ReadsTheKeywordAfterThePrologue) {
    EXPECT_EQ(sparql_form("SELECT * WHERE { ?s ?p ?o }"), SparqlForm::kSelect);
    EXPECT_EQ(sparql_form("  select ?s {?s ?p ?o}"), SparqlForm::kSelect);
    EXPECT_EQ(sparql_form("SELECT*{?s ?p ?o}"), SparqlForm::kSelect);
    EXPECT_EQ(sparql_form("ASK{?s ?p ?o}"), SparqlForm::kAsk);
    EXPECT_EQ(sparql_form("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"), SparqlForm::kConstruct);
    EXPECT_EQ(sparql_form("DESCRIBE <urn:x>"), SparqlForm::kDescribe);
    // A '#' inside an IRI of the prologue is no comment; one outside is.
    EXPECT_EQ(sparql_form("PREFIX prov: <http://www.w3.org/ns/prov#>\n"
                          "# INSERT would be a comment here\n"
                          "BASE <http://example.org/#>\n"
                          "prefix : <urn:x#> SELECT ?s WHERE { ?s ?p ?o }"),
              SparqlForm::kSelect);
}

TEST(SparqlQueryForm, UpdatesAndAnythingElseAreNotQueries) {
    for (const char* update :
         {"INSERT DATA { <urn:a> <urn:b> <urn:c> }", "delete where { ?s ?p ?o }",
          "PREFIX gb: <https://glassbox.dev/ns#>\nDROP GRAPH <urn:g>", "CLEAR ALL",
          "LOAD <http://example.org/x.ttl>", "WITH <urn:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
          "CREATE GRAPH <urn:g>", "COPY <urn:a> TO <urn:b>", "MOVE DEFAULT TO <urn:b>",
          "ADD <urn:a> TO <urn:b>"})
        EXPECT_EQ(sparql_form(update), SparqlForm::kUpdate) << update;
    for (const char* other : {"", "   # only a comment", "PREFIX p:", "PREFIX p: <urn:x",
                              "{ ?s ?p ?o }", "SELECTED ?x"})
        EXPECT_EQ(sparql_form(other), SparqlForm::kUnknown) << other;
}

}  // namespace
}  // namespace glassbox::http
