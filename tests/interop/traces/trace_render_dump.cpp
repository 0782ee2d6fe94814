// Writes the builder-made `show` replies (echo, graph RAG with a sub-trace, hard literals) in every
// format of `glassbox traces show`, for check_renderers.py (rdflib, rapper, the PROV check).
//
// Usage: trace_render_dump OUT_DIR. For each fixture NAME: NAME.json (the reply), NAME.tree,
// NAME.ttl, NAME.nt, NAME.nq, NAME.jsonld; and expected.json: {NAME: {"triples": distinct
// (s,p,o) count, "quads": distinct quad count}}.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/render/trace_render.hpp"
#include "tests/unit/cli/trace_fixtures.hpp"

namespace {

using nlohmann::json;
namespace traces = glassbox::cli::render;
namespace schema = glassbox::schema;

// An echo trace whose question holds everything a writer must escape, and a very long text.
json hard_literals_reply() {
    std::string question =
        "quote \" backslash \\ newline \n cr \r tab \t bell \x07 unicode \u00e9\u4e2d\U0001F600 "
        "end";
    question += std::string(20'000, 'L');
    json reply =
        glassbox::testing::echo_show_reply("2e9f8c74-5160-4f3c-9e4d-7a0b9c8f6e5d", question);
    auto extra = [](const schema::Triple& t) { return schema::encode(t); };
    const std::string q = reply["session"]["session"];
    const auto g = std::string(schema::vocab::kRetrievalGraph);
    auto& triples = reply["events"][1]["triples"];
    triples.push_back(
        extra(schema::make_triple(schema::iri(q), schema::iri(schema::vocab::kRdfsLabel),
                                  schema::lang_literal("bonjour \"\u00e0\" tous", "fr-CA"), g)));
    triples.push_back(extra(schema::make_triple(
        schema::iri(q), schema::iri("urn:x:odd%20iri/with#frag"),
        schema::typed_literal("1965", "http://www.w3.org/2001/XMLSchema#gYear"), g)));
    triples.push_back(
        extra(schema::make_triple(schema::iri(q), schema::iri("https://glassbox.dev/ns#not.simple"),
                                  schema::blank("node1"), g)));
    triples.push_back(extra(schema::make_triple(
        schema::blank("node1"), schema::iri(schema::vocab::kRdfsComment), schema::literal(""), g)));
    triples.push_back(
        extra(schema::make_triple(schema::blank("node1"), schema::iri("https://glassbox.dev/ns#n"),
                                  schema::typed_literal("-12", schema::kXsdInteger), g)));
    triples.push_back(extra(schema::make_triple(schema::blank("node1"),
                                                schema::iri("https://glassbox.dev/ns#flag"),
                                                schema::xsd_boolean(true), g)));
    triples.push_back(
        extra(schema::make_triple(schema::blank("node1"), schema::iri("https://glassbox.dev/ns#d"),
                                  schema::xsd_decimal("12.50"), g)));
    return reply;
}

void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: trace_render_dump OUT_DIR\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const std::vector<std::pair<std::string, json>> fixtures = {
        {"echo",
         glassbox::testing::echo_show_reply("5f0c1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f", "ping")},
        {"graph_rag", glassbox::testing::graph_rag_show_reply()},
        {"hard_literals", hard_literals_reply()},
    };
    json expected = json::object();
    for (const auto& [name, reply] : fixtures) {
        auto trace = schema::decode<schema::TraceDetail>(reply);
        if (!trace) {
            std::cerr << name << ": " << trace.error().describe() << "\n";
            return 1;
        }
        const auto triples = traces::trace_triples(*trace);
        write(dir / (name + ".json"), reply.dump(2));
        traces::TreeOptions full;  // every fact with its sources, as `traces show --show-sources`
        full.full = true;
        full.show_sources = true;
        write(dir / (name + ".tree"), traces::render_tree(*trace, full));
        write(dir / (name + ".ttl"), traces::render_turtle(triples));
        write(dir / (name + ".nt"), traces::render_ntriples(triples));
        write(dir / (name + ".nq"), traces::render_nquads(triples));
        write(dir / (name + ".jsonld"), traces::render_jsonld(triples).dump(2));
        expected[name] = {{"triples", traces::distinct_triples(triples).size()},
                          {"quads", triples.size()}};
    }
    write(dir / "expected.json", expected.dump(2));
    return 0;
}
