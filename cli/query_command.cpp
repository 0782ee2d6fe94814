// `glassbox query triples|chunks` and `glassbox graph stats`: read the knowledge store through
// the `store` service (and `embeddings` for vector search), as a user or a script would.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/render/table_render.hpp"
#include "cli/settings.hpp"
#include "cli/store_stats_table.hpp"
#include "cli/term_arg.hpp"
#include "loader/rdf_reader.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;

// ---- query triples --------------------------------------------------------------------------

struct TriplesOptions {
    ClientOptions client;
    std::string s, p, o, g, collection;
    std::uint32_t limit = 100;
};

void run_triples(const TriplesOptions& options) {
    schema::TriplesQuery query;
    if (!options.s.empty()) query.s = parse_term_arg(options.s, "-s", false);
    if (!options.p.empty()) query.p = parse_term_arg(options.p, "-p", false);
    if (!options.o.empty()) query.o = parse_term_arg(options.o, "-o", true);
    if (query.s && query.s->is_literal()) {
        exit_with_error(make_error(ErrorType::kInvalidRequest,
                                   "-s must be an IRI or a blank node, not a literal"));
    }
    if (query.p && !query.p->is_iri()) {
        exit_with_error(make_error(ErrorType::kInvalidRequest, "-p must be an IRI"));
    }
    if (!options.g.empty()) query.g = options.g == "default" ? "" : options.g;
    query.limit = options.limit;
    query.collection = options.collection;
    json body = schema::encode(query);
    body["op"] = "triples";
    std::vector<schema::Triple> triples;
    for (const auto& reply : call_or_exit(options.client, schema::services::kStore, body)) {
        auto part = schema::decode<schema::TriplesResponse>(reply);
        if (!part) exit_with_error(part.error());
        triples.insert(triples.end(), part->triples.begin(), part->triples.end());
    }
    if (options.client.json) {
        std::cout << dump_json(schema::encode(schema::TriplesResponse{triples})) << std::endl;
        return;
    }
    for (const auto& t : triples) std::cout << schema::to_nquads(t) << '\n';
    std::cerr << triples.size() << (triples.size() == 1 ? " triple" : " triples");
    if (triples.size() == options.limit) std::cerr << " (the limit; --limit N for more)";
    std::cerr << std::endl;
}

// ---- query chunks ---------------------------------------------------------------------------

struct ChunksOptions {
    ClientOptions client;
    std::string text, mode = "hybrid", collection;
    std::uint32_t limit = 10;
};

std::vector<std::vector<double>> embed_query(const ChunksOptions& options) {
    auto replies = call_or_exit(options.client, schema::services::kEmbeddings,
                                schema::encode(schema::EmbeddingsRequest{{options.text}}));
    auto embedded = schema::decode<schema::EmbeddingsResponse>(replies.back());
    if (!embedded) exit_with_error(embedded.error());
    return embedded->vectors;
}

std::string snippet(const std::string& text, std::size_t max_bytes) {
    std::string out;
    for (char c : text) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
    if (out.size() <= max_bytes) return out;
    std::size_t cut = max_bytes;
    // Never cut inside a UTF-8 sequence.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    return out.substr(0, cut) + "…";
}

void run_chunks(const ChunksOptions& options) {
    json body;
    if (options.mode == "keyword") {
        body = schema::encode(
            schema::ChunkKeywordQuery{options.text, options.limit, options.collection});
        body["op"] = "chunks-keyword";
    } else if (options.mode == "vector") {
        body = schema::encode(schema::DocumentEmbeddingsQuery{embed_query(options), options.limit,
                                                              options.collection});
        body["op"] = "chunks-vector";
    } else {
        body = schema::encode(schema::HybridChunkQuery{options.text, embed_query(options),
                                                       options.limit, options.collection});
        body["op"] = "chunks-hybrid";
    }
    auto matches = schema::decode<schema::ChunkMatchResponse>(
        call_or_exit(options.client, schema::services::kStore, body).back());
    if (!matches) exit_with_error(matches.error());
    schema::ChunkFetchRequest fetch;
    fetch.collection = options.collection;
    for (const auto& m : matches->chunks) fetch.chunk_ids.push_back(m.chunk_id);
    std::vector<schema::Chunk> chunks;
    if (!fetch.chunk_ids.empty()) {
        json fetch_body = schema::encode(fetch);
        fetch_body["op"] = "chunks-fetch";
        auto fetched = schema::decode<schema::ChunkFetchResponse>(
            call_or_exit(options.client, schema::services::kStore, fetch_body).back());
        if (!fetched) exit_with_error(fetched.error());
        chunks = std::move(fetched->chunks);
    }
    const auto chunk_of = [&](const std::string& id) -> const schema::Chunk* {
        for (const auto& c : chunks) {
            if (c.chunk_id == id) return &c;
        }
        return nullptr;
    };
    if (options.client.json) {
        json out = json::array();
        for (const auto& m : matches->chunks) {
            json item{{"chunk_id", m.chunk_id}, {"score", m.score}};
            if (const auto* c = chunk_of(m.chunk_id)) {
                item["document_id"] = c->document_id;
                item["document_title"] = c->document_title;
                item["tier"] = c->tier;
                item["char_offset"] = c->char_offset;
                item["char_length"] = c->char_length;
                item["text"] = c->text;
            }
            out.push_back(std::move(item));
        }
        std::cout << dump_json(json{{"mode", options.mode}, {"chunks", out}}) << std::endl;
        return;
    }
    if (matches->chunks.empty()) {
        std::cout << "no chunks match" << std::endl;
        return;
    }
    int rank = 0;
    for (const auto& m : matches->chunks) {
        ++rank;
        char score[32];
        std::snprintf(score, sizeof score, "%.4f", m.score);
        std::cout << rank << ". " << score << "  " << m.chunk_id << '\n';
        if (const auto* c = chunk_of(m.chunk_id)) {
            std::cout << "   " << (c->document_title.empty() ? c->document_id : c->document_title)
                      << " (tier " << c->tier << ", characters " << c->char_offset << "-"
                      << c->char_offset + c->char_length << ")\n   " << snippet(c->text, 200)
                      << '\n';
        }
    }
    std::cout << std::flush;
}

// ---- graph stats ----------------------------------------------------------------------------

struct StatsOptions {
    ClientOptions client;
    std::string collection;
};

// Every collection past its revalidation age: one with a max_age and sources older than it.
std::vector<schema::CollectionSummary> stale_collections(const ClientOptions& client) {
    const auto list = decoded_or_exit<schema::CollectionList>(
        call_for_object(client, schema::services::kStore, json{{"op", "collections"}}));
    std::vector<schema::CollectionSummary> stale;
    for (const auto& c : list.collections) {
        if (!c.max_age.empty() && c.stale_sources > 0) stale.push_back(c);
    }
    return stale;
}

void run_stats(const StatsOptions& options) {
    json body = schema::encode(schema::StoreStatsRequest{options.collection});
    body["op"] = "stats";
    auto stats = schema::decode<schema::StoreStats>(
        call_or_exit(options.client, schema::services::kStore, body).back());
    if (!stats) exit_with_error(stats.error());
    const auto stale = stale_collections(options.client);
    if (options.client.json) {
        json out = schema::encode(*stats);
        out["stale_collections"] = json::array();
        for (const auto& c : stale) {
            out["stale_collections"].push_back(json{{"collection", c.collection},
                                                    {"max_age", c.max_age},
                                                    {"stale_sources", c.stale_sources}});
        }
        std::cout << dump_json(out) << std::endl;
        return;
    }
    auto rows = store_stats_rows(*stats);
    // Under Freshness when there is none; else a section of their own, one row each.
    if (stale.empty()) {
        rows.push_back({"stale collections", {"none"}});
    } else {
        rows.push_back({"Stale collections", {}});
    }
    for (const auto& c : stale) {
        rows.push_back(
            {c.collection,
             {with_commas(c.stale_sources) + (c.stale_sources == 1 ? " source" : " sources") +
              " past max age " + c.max_age}});
    }
    std::cout << render::render_rows(rows) << std::flush;
}

}  // namespace

void add_query_command(CLI::App& app) {
    auto* command =
        app.add_subcommand("query", "Query the knowledge store: triple patterns or chunks");
    command->require_subcommand(1);

    auto triples = std::make_shared<TriplesOptions>();
    auto* t =
        command->add_subcommand("triples",
                                "Triples matching a pattern (absent positions match anything), "
                                "as N-Quads lines");
    t->add_option("-s,--subject", triples->s, "Subject: <IRI>, a bare IRI, or _:blank");
    t->add_option("-p,--predicate", triples->p, "Predicate IRI");
    t->add_option("-o,--object", triples->o,
                  "Object: <IRI>, \"literal\", \"text\"@en, \"5\"^^<datatype>, or bare text");
    t->add_option("-g,--graph", triples->g,
                  "Named graph IRI, or 'default' for the default graph only");
    t->add_option("--limit", triples->limit, "Most triples to return (the store caps it at 10,000)")
        ->capture_default_str()
        ->check(CLI::Range(1, 10'000));
    add_setting_option(*t, "client.collection", "--collection");
    add_client_options(*t, triples->client);
    t->callback([triples] {
        triples->collection = settings().text("client.collection");
        run_triples(*triples);
    });

    auto chunks = std::make_shared<ChunksOptions>();
    auto* c = command->add_subcommand(
        "chunks", "Document chunks for a text: vector, keyword (BM25) or hybrid search");
    c->add_option("text", chunks->text, "What to look for")->required();
    c->add_option("--mode", chunks->mode,
                  "vector | keyword | hybrid (reciprocal rank fusion of both)")
        ->capture_default_str()
        ->check(CLI::IsMember({"vector", "keyword", "hybrid"}));
    c->add_option("--limit", chunks->limit, "Most chunks to return")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    add_setting_option(*c, "client.collection", "--collection");
    add_client_options(*c, chunks->client);
    c->callback([chunks] {
        chunks->collection = settings().text("client.collection");
        run_chunks(*chunks);
    });
}

void add_graph_command(CLI::App& app) {
    auto* command = app.add_subcommand("graph", "About the knowledge store");
    command->require_subcommand(1);
    auto stats = std::make_shared<StatsOptions>();
    auto* s = command->add_subcommand(
        "stats", "Counts of facts, terms, sources per tier, documents, chunks, vectors");
    add_setting_option(*s, "client.collection", "--collection");
    add_client_options(*s, stats->client);
    s->callback([stats] {
        stats->collection = settings().text("client.collection");
        run_stats(*stats);
    });
}

}  // namespace glassbox::cli
