// Loading knowledge into the store over the bus: RDF files as one staged load (a syntax error
// anywhere loads nothing), documents checked whole and then sent in batches, and the indexing
// that follows. `glassbox load` (cli/) and the gateway's uploads (gateway/) both run this, so
// the checks a file gets do not depend on how it came in.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "bus/bus_client.hpp"
#include "loader/chunker.hpp"
#include "loader/rdf_reader.hpp"
#include "schema/messages.hpp"

namespace glassbox::ingest {

struct LoadSettings {
    std::string collection;
    std::uint32_t tier = schema::kDefaultTier;
    bool no_index = false;
    // rdf
    std::string graph;
    std::string format;  // "" = from each file's extension
    bool lenient = false;
    std::size_t batch_size = loader::kDefaultRdfBatchSize;
    // docs
    std::size_t chunk_size = loader::kDefaultChunkSize;
    std::size_t overlap = loader::kDefaultChunkOverlap;
    // The documents' own date (xsd:date or xsd:dateTime; "" none), recorded beside loaded_at:
    // their freshness is judged from it (docs/knowledge.md §3).
    std::string date;
    // Each store request's deadline (indexing and the commit get at least 10 minutes).
    std::chrono::milliseconds timeout{120'000};
    // The IRI the file loaded is known by instead of its `file:` URI (the gateway's uploads,
    // `urn:glassbox:upload/<name>`, so the server path of a staged copy is never stored nor
    // shown): its source, the base of its relative IRIs, a text document's IRI; its file name
    // stands for its path. Empty: each file's own URI and path.
    std::string source_iri;
    // rdf: each file replaces what an earlier load of the same source put in (its facts no
    // longer in the file go; docs/knowledge.md, "Changing and retracting knowledge"), and the
    // change is recorded as a trace naming `actor` (who asked; the CLI sends the OS user name).
    bool replace = false;
    std::string actor;
};

// What a load ended with.
struct LoadTotals {
    std::uint64_t files = 0;
    std::uint64_t statements = 0;
    std::uint64_t added = 0;
    std::uint64_t present = 0;
    std::uint64_t skipped = 0;
    std::uint64_t documents = 0;
    std::uint64_t documents_added = 0;
    std::uint64_t documents_replaced = 0;
    std::uint64_t documents_unchanged = 0;
    std::uint64_t chunks = 0;
    std::uint64_t chunks_embedded = 0;
    std::uint64_t entities_indexed = 0;
    std::uint64_t chunks_indexed = 0;
    double seconds = 0;
    double index_seconds = 0;
    std::string index_model;  // the embedding model indexing used, and its dimension
    std::uint32_t index_dim = 0;
    // A replacing load: what the replacement did, and its trace.
    std::optional<schema::KnowledgeChangeSummary> change;
};

// One stage of a load as its caller shows it (the CLI draws a progress line; the gateway
// shows nothing). Every method has a do-nothing default.
class Stage {
public:
    virtual ~Stage() = default;
    virtual void set_total(std::uint64_t /*total*/) {}
    virtual void update(std::uint64_t /*done*/) {}
    virtual void finish(const std::string& /*note*/ = {}) {}
};

class LoadObserver {
public:
    virtual ~LoadObserver() = default;
    // A stage begins: `label` (a file's name, "committing", "documents", "indexing"), `unit`.
    virtual std::unique_ptr<Stage> stage(const std::string& /*label*/, const std::string& /*unit*/,
                                         std::uint64_t /*total*/) {
        return std::make_unique<Stage>();
    }
    // A statement skipped by --lenient, or a file skipped by the document reader, described
    // ("<where>: <why> (skipped)").
    virtual void skipped(const std::string& /*what*/) {}
};

// The totals as `glassbox load --json` prints them (and the gateway's upload answers).
nlohmann::json totals_json(const LoadSettings& settings, const LoadTotals& totals, bool rdf);

// A statement whose N-Quads text would pass what one load request may carry, described; else
// nullopt (the RDF reader's check_statement).
std::optional<std::string> statement_too_large(const schema::Triple& triple);

// The settings checked before any file is read: the tier (1-4), the collection's name
// (schema/collection_name.hpp), the graph an absolute IRI. A load calls it first; the gateway
// also before it stages an upload.
base::Result<void> check_settings(const LoadSettings& settings);

// The reader options for `path` under `settings` (its format from --format or the extension).
base::Result<loader::RdfReadOptions> rdf_options(const LoadSettings& settings,
                                                 const std::filesystem::path& path);

// Loads the RDF files as one staged load: on any error nothing is loaded, and the error says
// so. Every file's format is settled before any is read.
base::Result<LoadTotals> load_rdf(const bus::BusClientConfig& bus, const LoadSettings& settings,
                                  const std::vector<std::filesystem::path>& files,
                                  LoadObserver& observer);

// Loads documents (files or folders): every one is read and chunked first, so a bad file or
// line loads nothing.
base::Result<LoadTotals> load_docs(const bus::BusClientConfig& bus, const LoadSettings& settings,
                                   const std::vector<std::filesystem::path>& paths,
                                   LoadObserver& observer);

}  // namespace glassbox::ingest
