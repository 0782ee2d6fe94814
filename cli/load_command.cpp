// `glassbox load rdf|docs`: the options, progress lines and totals of a load; the load
// itself (checks, staged load, batches, indexing) is ingest/load.hpp, shared with the gateway.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/change_report.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/settings.hpp"
#include "ingest/load.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

struct LoadOptions {
    ClientOptions client;
    std::vector<std::string> paths;
    ingest::LoadSettings settings;
};

// A stage of the load as a progress line on stderr.
class ProgressStage : public ingest::Stage {
public:
    ProgressStage(const std::string& label, const std::string& unit, std::uint64_t total, bool show)
        : progress_(label, unit, total, show) {}
    void set_total(std::uint64_t total) override { progress_.set_total(total); }
    void update(std::uint64_t done) override { progress_.update(done); }
    void finish(const std::string& note) override { progress_.finish(note); }

private:
    Progress progress_;
};

class ProgressObserver : public ingest::LoadObserver {
public:
    // `report_skips`: docs name a skipped file only when they show progress; RDF always does.
    ProgressObserver(bool show, bool report_skips) : show_(show), report_skips_(report_skips) {}
    std::unique_ptr<ingest::Stage> stage(const std::string& label, const std::string& unit,
                                         std::uint64_t total) override {
        return std::make_unique<ProgressStage>(label, unit, total, show_);
    }
    void skipped(const std::string& what) override {
        if (report_skips_) std::cerr << what << std::endl;
    }

private:
    bool show_;
    bool report_skips_;
};

std::vector<fs::path> paths_of(const LoadOptions& options) {
    return std::vector<fs::path>(options.paths.begin(), options.paths.end());
}

void print_totals(const LoadOptions& options, const ingest::LoadTotals& t, bool rdf) {
    if (options.client.json) {
        std::cout << ingest::totals_json(options.settings, t, rdf).dump() << std::endl;
        return;
    }
    const std::string collection =
        options.settings.collection.empty() ? "default" : options.settings.collection;
    if (rdf) {
        std::cout << "loaded " << with_commas(t.statements) << " statements from " << t.files
                  << (t.files == 1 ? " file" : " files") << " into collection " << collection
                  << ": " << with_commas(t.added) << " new facts, " << with_commas(t.present)
                  << " already present";
        if (t.skipped > 0) std::cout << ", " << with_commas(t.skipped) << " bad statements skipped";
        if (t.statements == 0) std::cout << " (the files hold no statements: nothing was loaded)";
    } else {
        std::cout << "loaded " << with_commas(t.documents) << " documents from " << t.files
                  << (t.files == 1 ? " file" : " files") << " into collection " << collection
                  << ": " << with_commas(t.documents_added) << " new, "
                  << with_commas(t.documents_replaced) << " replaced, "
                  << with_commas(t.documents_unchanged) << " unchanged; " << with_commas(t.chunks)
                  << " chunks written";
        if (t.documents == 0) std::cout << " (the files hold no documents: nothing was loaded)";
    }
    std::cout << " in " << format_seconds(t.seconds);
    if (rdf && t.seconds > 0) {
        std::cout << " ("
                  << with_commas(
                         static_cast<std::uint64_t>(static_cast<double>(t.statements) / t.seconds))
                  << " statements/s)";
    }
    std::cout << "; indexed " << with_commas(t.entities_indexed) << " entities and "
              << with_commas(t.chunks_indexed + t.chunks_embedded) << " chunks" << std::endl;
}

void load_rdf(LoadOptions& options) {
    options.settings.timeout = options.client.timeout();
    if (options.settings.replace) options.settings.actor = os_user_name();
    ProgressObserver observer(!options.client.json, true);
    auto totals = ingest::load_rdf(options.client.bus_config(), options.settings, paths_of(options),
                                   observer);
    if (!totals) exit_with_error(totals.error());
    print_totals(options, *totals, true);
    if (totals->change && !options.client.json) std::cout << change_report(*totals->change);
    std::cout << std::flush;
}

void load_docs(LoadOptions& options) {
    options.settings.timeout = options.client.timeout();
    ProgressObserver observer(!options.client.json, !options.client.json);
    auto totals = ingest::load_docs(options.client.bus_config(), options.settings,
                                    paths_of(options), observer);
    if (!totals) exit_with_error(totals.error());
    print_totals(options, *totals, false);
}

void add_common(CLI::App& sub, LoadOptions& options) {
    add_setting_option(sub, "client.collection", "--collection");
    sub.add_option(
           "--tier", options.settings.tier,
           "Data tier of these sources: 1 authoritative, 2 verified, 3 crowd-sourced, 4 inferred")
        ->capture_default_str()
        ->check(CLI::Range(1, 4));
    sub.add_flag("--no-index", options.settings.no_index,
                 "Do not embed and index new entities and chunks afterwards");
    add_client_options(sub, options.client, 120'000);
}

}  // namespace

void add_load_command(CLI::App& app) {
    auto* command =
        app.add_subcommand("load", "Load knowledge into the store: RDF files or documents");
    command->require_subcommand(1);

    auto rdf = std::make_shared<LoadOptions>();
    auto* rdf_cmd = command->add_subcommand(
        "rdf",
        "Load N-Triples, N-Quads, Turtle or TriG files (each checked whole first: a syntax error "
        "loads nothing)");
    rdf_cmd->add_option("files", rdf->paths, "RDF files")->required();
    rdf_cmd->add_option("--graph", rdf->settings.graph,
                        "Put default-graph statements into this named graph (an IRI)");
    rdf_cmd->add_option("--format", rdf->settings.format,
                        "ntriples|nquads|turtle|trig (default: from the extension)");
    rdf_cmd->add_flag("--lenient", rdf->settings.lenient,
                      "Skip bad statements (each reported) instead of loading nothing");
    rdf_cmd->add_flag("--replace", rdf->settings.replace,
                      "Each file replaces what an earlier load of it put in: facts no longer in "
                      "it go, unchanged ones stay (one transaction, recorded as a trace)");
    rdf_cmd
        ->add_option("--batch-size", rdf->settings.batch_size,
                     "Statements per request to the store")
        ->capture_default_str()
        ->check(CLI::Range(1, 1'000'000));
    add_common(*rdf_cmd, *rdf);
    rdf_cmd->callback([rdf] {
        rdf->settings.collection = settings().text("client.collection");
        load_rdf(*rdf);
    });

    auto docs = std::make_shared<LoadOptions>();
    auto* docs_cmd = command->add_subcommand("docs",
                                             "Load .txt, .md and .jsonl ({doc_id, title, text} per "
                                             "line) files or folders; chunk, embed, index");
    docs_cmd->add_option("paths", docs->paths, "Files or folders (read recursively)")->required();
    docs_cmd->add_option("--chunk-size", docs->settings.chunk_size, "Characters per chunk, at most")
        ->capture_default_str()
        ->check(CLI::Range(1, 1'000'000));
    docs_cmd
        ->add_option("--overlap", docs->settings.overlap,
                     "Characters repeated from the previous chunk, about")
        ->capture_default_str()
        ->check(CLI::Range(0, 999'999));
    docs_cmd->add_option("--date", docs->settings.date,
                         "The documents' own date (2024-03-01 or an xsd:dateTime): their "
                         "freshness is judged from it, not from when they were loaded");
    add_common(*docs_cmd, *docs);
    docs_cmd->callback([docs] {
        docs->settings.collection = settings().text("client.collection");
        load_docs(*docs);
    });
}

}  // namespace glassbox::cli
