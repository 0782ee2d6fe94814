// `glassbox collections list|show|create|set|delete`: the collections of the knowledge store as
// things a user manages (docs/collections.md), through the `store` service.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/render/render_text.hpp"
#include "cli/render/table_render.hpp"
#include "cli/store_stats_table.hpp"
#include "schema/freshness.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"

// A namespace of its own: the unity build puts this file beside other commands' anonymous
// namespaces (dump_json, ListOptions, ...).
namespace glassbox::cli::collections {
namespace {

using nlohmann::json;
using render::detail::escape_controls;

json store_call(const ClientOptions& client, const json& body) {
    return call_for_object(client, schema::services::kStore, body);
}

// ---- list -----------------------------------------------------------------------------------

struct ListOptions {
    ClientOptions client;
};

void print_table(const schema::CollectionList& list) {
    std::vector<render::TableRow> rows{{"Collections", {}},
                                       {"",
                                        {"facts", "entities", "documents", "chunks", "vectors",
                                         "bytes on disk", "last loaded", "max age", "stale"}}};
    for (const auto& c : list.collections) {
        rows.push_back({c.collection,
                        {with_commas(c.facts), with_commas(c.entities), with_commas(c.documents),
                         with_commas(c.chunks), with_commas(c.entity_vectors + c.chunk_vectors),
                         with_commas(c.bytes_on_disk), c.last_loaded.empty() ? "-" : c.last_loaded,
                         c.max_age.empty() ? "-" : c.max_age,
                         c.max_age.empty() ? "-" : with_commas(c.stale_sources)}});
    }
    std::cout << render::render_rows(rows);
}

void run_list(const ListOptions& options) {
    const json reply = store_call(options.client, json{{"op", "collections"}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto list = decoded_or_exit<schema::CollectionList>(reply);
    if (list.collections.empty()) {
        std::cout << "(no collections: glassbox load rdf|docs FILE --collection NAME makes one)"
                  << std::endl;
        return;
    }
    print_table(list);
    if (list.truncated) std::cout << "(more collections than one answer lists)\n";
    std::cout << std::flush;
}

// ---- show -----------------------------------------------------------------------------------

struct ShowOptions {
    ClientOptions client;
    std::string name;
};

schema::StoreStats fetch_stats(const ClientOptions& client, const std::string& name) {
    json body = schema::encode(schema::StoreStatsRequest{name});
    body["op"] = "stats";
    return decoded_or_exit<schema::StoreStats>(store_call(client, body));
}

void run_show(const ShowOptions& options) {
    const schema::StoreStats stats = fetch_stats(options.client, options.name);
    if (options.client.json) {
        std::cout << dump_json(schema::encode(stats)) << std::endl;
        return;
    }
    std::cout << render::render_rows(store_stats_rows(stats)) << std::flush;
}

// ---- create, set ----------------------------------------------------------------------------

struct SetOptions {
    ClientOptions client;
    std::string name;
    std::string max_age;  // a duration, "none", or "" (create without one)
    bool create = false;
};

// The duration is checked here first (InvalidRequest, exit 2, nothing sent); the store checks it
// again.
void run_set(const SetOptions& options) {
    if (!options.max_age.empty() && options.max_age != "none") {
        if (auto age = schema::parse_max_age(options.max_age); !age) exit_with_error(age.error());
    }
    json body =
        schema::encode(schema::CollectionSetRequest{options.name, options.max_age, options.create});
    body["op"] = "collection-set";
    const json reply = store_call(options.client, body);
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto summary = decoded_or_exit<schema::CollectionSummary>(reply);
    std::cout << "collection \"" << escape_controls(summary.collection, false) << "\": ";
    if (summary.max_age.empty()) {
        std::cout << "no revalidation age" << std::endl;
        return;
    }
    std::cout << "max age " << summary.max_age << ", " << with_commas(summary.stale_sources)
              << (summary.stale_sources == 1 ? " source" : " sources") << " past it" << std::endl;
}

// ---- delete ---------------------------------------------------------------------------------

struct DeleteOptions {
    ClientOptions client;
    std::string name;
    bool yes = false;
};

// "1,234 facts, 6 documents, 18 chunks, 228 vectors, 1.2 MiB on disk"
std::string what_it_holds(std::uint64_t facts, std::uint64_t documents, std::uint64_t chunks,
                          std::uint64_t vectors, std::uint64_t bytes) {
    return with_commas(facts) + (facts == 1 ? " fact, " : " facts, ") + with_commas(documents) +
           (documents == 1 ? " document, " : " documents, ") + with_commas(chunks) +
           (chunks == 1 ? " chunk, " : " chunks, ") + with_commas(vectors) +
           (vectors == 1 ? " vector, " : " vectors, ") + human_bytes(bytes) + " on disk";
}

// Asks on the terminal; anything but y / yes keeps the collection.
bool confirmed(const std::string& question) {
    std::cerr << question << " [y/N] " << std::flush;
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    return answer == "y" || answer == "Y" || answer == "yes" || answer == "YES" || answer == "Yes";
}

void run_delete(const DeleteOptions& options) {
    // What it holds first: an unknown name is NotFound (exit 2) before anything is asked.
    const schema::StoreStats stats = fetch_stats(options.client, options.name);
    const std::string name = escape_controls(stats.collection, false);
    const std::string holds =
        what_it_holds(stats.quads, stats.documents, stats.chunks,
                      stats.entity_vectors + stats.chunk_vectors, stats.bytes_on_disk);
    if (!options.yes) {
        if (::isatty(STDIN_FILENO) != 1) {
            std::cerr << "refusing to delete collection \"" << name << "\" (" << holds
                      << ") without confirmation: stdin is not a terminal; pass --yes to delete it"
                      << std::endl;
            throw CLI::RuntimeError(2);
        }
        if (!confirmed("Delete collection \"" + name + "\" and everything in it: " + holds + "?")) {
            std::cerr << "nothing was deleted" << std::endl;
            throw CLI::RuntimeError(1);
        }
    }
    const json reply = store_call(
        options.client, json{{"op", "collection-delete"}, {"collection", stats.collection}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto gone = decoded_or_exit<schema::CollectionDeleted>(reply).removed;
    std::cout << "deleted collection \"" << escape_controls(gone.collection, false)
              << "\": removed "
              << what_it_holds(gone.facts, gone.documents, gone.chunks,
                               gone.entity_vectors + gone.chunk_vectors, gone.bytes_on_disk)
              << std::endl;
}

}  // namespace
}  // namespace glassbox::cli::collections

namespace glassbox::cli {

void add_collections_command(CLI::App& app) {
    using namespace collections;  // NOLINT(google-build-using-namespace): this file's own helpers
    auto* collections = app.add_subcommand(
        "collections",
        "The knowledge store's collections: list them, show one's counts, create one, set its "
        "revalidation age, delete one");
    collections->require_subcommand(1);

    auto [list_cmd, list] = add_command<ListOptions>(
        *collections, "list",
        "Every collection: facts, entities, documents, chunks, vectors, size, last load", run_list);
    add_client_options(*list_cmd, list->client);

    auto [show_cmd, show] = add_command<ShowOptions>(
        *collections, "show",
        "One collection's counts, with facts, documents and chunks per data tier", run_show);
    show_cmd->add_option("name", show->name, "The collection")->required();
    add_client_options(*show_cmd, show->client);

    auto [create_cmd, create] = add_command<SetOptions>(
        *collections, "create",
        "Create an empty collection (a load creates one too), with --max-age its revalidation age",
        run_set);
    create->create = true;
    create_cmd->add_option("name", create->name, "The collection")->required();
    create_cmd->add_option("--max-age", create->max_age,
                           "Revalidation age: a source older than this is stale (90d, 12h, 2w)");
    add_client_options(*create_cmd, create->client);

    auto [set_cmd, set] = add_command<SetOptions>(
        *collections, "set", "Set an existing collection's revalidation age (--max-age)", run_set);
    set_cmd->add_option("name", set->name, "The collection")->required();
    set_cmd
        ->add_option("--max-age", set->max_age,
                     "Revalidation age (90d, 12h, 2w: 1-9 digits then s, m, h, d or w), or none")
        ->required();
    add_client_options(*set_cmd, set->client);

    auto [delete_cmd, remove] = add_command<DeleteOptions>(
        *collections, "delete",
        "Delete a collection whole (graph, documents, chunks, vectors): says what it removes and "
        "asks first (y/N), or --yes",
        run_delete);
    delete_cmd->add_option("name", remove->name, "The collection")->required();
    delete_cmd->add_flag("-y,--yes", remove->yes,
                         "Delete without asking (needed when stdin is not a terminal)");
    add_client_options(*delete_cmd, remove->client);
}

}  // namespace glassbox::cli
