// bench_json: the tree-free JSON readers (schema/json_fast decode_text, the trace collector's
// explain scan) against nlohmann::json::parse of the same text, measured in the same run.
//
// Texts: a triples-batch reply (50 results of 40 triples), an explain message of 400 triples
// (escapes, non-ASCII text, typed and language literals, quoted triples), a RAG explain chunk of
// 200 triples, an embeddings reply (64 vectors of 384 numbers), the store's entities-batch request
// (7 vectors of 384 numbers, graph RAG's per question). Each reader runs --rounds rounds
// of --iterations decodes; the table shows the median MB/s and its ratio to the DOM parse.
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_util.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "schema/vector_query_text.hpp"
#include "schema/vocabulary.hpp"
#include "workers/trace_collector/explain_scan.hpp"

namespace {

using namespace glassbox;
using bench::Clock;

std::vector<schema::Triple> make_triples(std::size_t n, std::mt19937_64& rng) {
    std::vector<schema::Triple> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string s =
            "urn:glassbox:00000000-0000-4000-8000-" + std::to_string(rng() % 1000);
        const auto p = schema::iri("urn:glassbox:p" + std::to_string(i % 13));
        schema::Term o;
        switch (i % 5) {
            case 0:
                o = schema::iri("urn:kg:entity_" + std::to_string(rng() % 100000));
                break;
            case 1:
                o = schema::literal("a label \"quoted\"\twith é and 🚀 " + std::to_string(i));
                break;
            case 2:
                o = schema::typed_literal(std::to_string(rng() % 100000), schema::kXsdInteger);
                break;
            case 3:
                o = schema::lang_literal(std::string(120, 'w') + " text", "en");
                break;
            default:
                o = schema::quoted(schema::make_triple(schema::iri(s), p, schema::literal("x")));
        }
        out.push_back(schema::make_triple(schema::iri(s), p, std::move(o)));
    }
    return out;
}

struct Reader {
    std::string name;
    std::string text;
    std::function<bool(const std::string&)> read;
};

std::vector<Reader> readers(std::mt19937_64& rng) {
    std::vector<Reader> out;
    schema::TriplesBatchResponse batch;
    for (int i = 0; i < 50; ++i) batch.results.push_back(make_triples(40, rng));
    out.push_back(
        {"decode_text<TriplesBatchResponse>", schema::encode_text(batch), [](const std::string& t) {
             return schema::decode_text<schema::TriplesBatchResponse>(t).ok();
         }});
    schema::ExplainMessage explain;
    explain.session = "urn:glassbox:00000000-0000-4000-8000-000000000001:question";
    explain.seq = 7;
    explain.service = "graph-rag";
    explain.worker = "graph-rag-1";
    explain.explain_id = "urn:glassbox:00000000-0000-4000-8000-000000000001:focus";
    explain.explain_triples = make_triples(400, rng);
    thread_local trace::ScannedExplain scanned;
    out.push_back({"trace::scan_explain", schema::encode_text(explain),
                   [](const std::string& t) { return trace::scan_explain(t, scanned); }});
    schema::RagResponse rag;
    rag.message_type = schema::RagMessageType::kExplain;
    rag.explain_id = explain.explain_id;
    rag.explain_graph = "urn:graph:retrieval";
    rag.explain_triples = make_triples(200, rng);
    out.push_back({"decode_text<RagResponse>", schema::encode_text(rag), [](const std::string& t) {
                       return schema::decode_text<schema::RagResponse>(t).ok();
                   }});
    schema::EmbeddingsResponse embeddings;
    embeddings.model = "bench-model";
    embeddings.dim = 384;
    std::normal_distribution<double> normal(0.0, 0.05);
    for (int v = 0; v < 64; ++v) {
        auto& vector = embeddings.vectors.emplace_back();
        for (int d = 0; d < 384; ++d) vector.push_back(normal(rng));
    }
    out.push_back({"decode_text<EmbeddingsResponse>", schema::encode_text(embeddings),
                   [](const std::string& t) {
                       return schema::decode_text<schema::EmbeddingsResponse>(t).ok();
                   }});
    schema::GraphEmbeddingsQuery query;
    query.collection = "pathquestion";
    query.limit = 30;
    query.vectors.assign(embeddings.vectors.begin(), embeddings.vectors.begin() + 7);
    auto body = schema::encode(query);
    body["op"] = "entities-batch";
    thread_local schema::VectorQueryText read;
    out.push_back({"read_vector_query (entities-batch)", schema::dump(body),
                   [](const std::string& t) { return schema::read_vector_query(t, read); }});
    return out;
}

// MB/s of `iterations` calls of `read` on `text`.
double rate(const std::string& text, int iterations,
            const std::function<bool(const std::string&)>& read) {
    const auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) {
        if (!read(text)) bench::fail("bench_json", "a reader refused its text");
    }
    const double ms = bench::ms_since(start);
    return static_cast<double>(text.size()) * iterations / (ms * 1000.0);
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 7;
    int iterations = 40;
    bench::Args args(argc, argv, "bench_json");
    while (args.next()) {
        if (args.arg() == "--rounds") {
            rounds = static_cast<int>(args.number());
        } else if (args.arg() == "--iterations") {
            iterations = static_cast<int>(args.number());
        } else {
            bench::fail("bench_json", "usage: bench_json [--rounds N] [--iterations N]");
        }
    }
    std::mt19937_64 rng(20261129);
    const auto dom = [](const std::string& t) {
        return !nlohmann::json::parse(t, nullptr, false).is_discarded();
    };
    std::cout << "| reader | text KB | median MB/s | DOM parse MB/s | reader/DOM |\n"
              << "|---|---:|---:|---:|---:|\n";
    for (const auto& r : readers(rng)) {
        std::vector<double> fast, tree;
        for (int round = 0; round < rounds; ++round) {
            fast.push_back(rate(r.text, iterations, r.read));
            tree.push_back(rate(r.text, iterations, dom));
        }
        const double f = bench::percentile(fast, 0.5);
        const double t = bench::percentile(tree, 0.5);
        std::cout << "| " << r.name << " | "
                  << bench::fmt(static_cast<double>(r.text.size()) / 1e3, 1) << " | "
                  << bench::fmt(f, 1) << " | " << bench::fmt(t, 1) << " | " << bench::fmt(f / t, 2)
                  << " |\n";
    }
    return 0;
}
