// `glassbox load rdf|docs`: reads knowledge from files and sends it, in batches, to the `store`
// service through the broker — the same against a local home or a remote deployment.
#include <chrono>
#include <deque>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/bus_client.hpp"
#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "loader/chunker.hpp"
#include "loader/document_reader.hpp"
#include "loader/rdf_reader.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using base::ErrorType;
using base::make_error;
using base::Result;
using Clock = std::chrono::steady_clock;

// Batches in flight at once: the next one is read and encoded while the store writes the last.
constexpr std::size_t kMaxInFlight = 2;
// A load-triples request's N-Quads text, measured as the JSON string it travels as, stays under
// this (the broker refuses messages above its max_message_bytes, 16 MiB by default): a batch of
// long literals goes out as several requests.
constexpr std::size_t kMaxLoadTextJsonBytes = 12u << 20;

// The bytes `text` takes inside a JSON string (quotes not counted).
std::size_t json_string_bytes(std::string_view text) {
    std::size_t bytes = text.size();
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
            bytes += 1;
        } else if (u < 0x20) {
            bytes += 5;  // \u00XX
        }
    }
    return bytes;
}

// Bytes of a term's strings (what its N-Quads text holds before escapes and punctuation).
std::size_t term_text_bytes(const schema::Term& term) {
    switch (term.kind()) {
        case schema::Term::Kind::kIri: return term.as_iri().value.size();
        case schema::Term::Kind::kBlankNode: return term.as_blank().id.size();
        case schema::Term::Kind::kLiteral: {
            const auto& l = term.as_literal();
            return l.value.size() + l.datatype.size() + l.language.size();
        }
        case schema::Term::Kind::kTriple: {
            const auto& t = term.as_triple();
            return term_text_bytes(t.s) + term_text_bytes(t.p) + term_text_bytes(t.o);
        }
    }
    return 0;
}

// A statement whose N-Quads text, as the JSON string it travels in, passes what one request
// may carry: refused where it stands in its file, before anything is sent (issue 16: a 50 MB
// literal used to reach the broker and come back as a misleading error).
std::optional<std::string> statement_too_large(const schema::Triple& triple) {
    // An escape takes at most 6 bytes per byte (\u00XX): most statements are decided here.
    const std::size_t raw = term_text_bytes(triple.s) + term_text_bytes(triple.p) + term_text_bytes(triple.o) +
                            (triple.graph ? triple.graph->size() : 0);
    if (raw * 6 + 64 <= kMaxLoadTextJsonBytes) return std::nullopt;
    std::string text;
    loader::write_nquads(std::span<const schema::Triple>(&triple, 1), text);
    const std::size_t bytes = json_string_bytes(text);
    if (bytes <= kMaxLoadTextJsonBytes) return std::nullopt;
    return "statement too large to load: " + std::to_string(bytes) + " bytes as N-Quads text in JSON, above the " +
           std::to_string(kMaxLoadTextJsonBytes) + " bytes one load request may carry (the broker's " +
           "max_message_bytes is 16 MiB by default); shorten its literal or load it as a document";
}

struct LoadOptions {
    ClientOptions client;
    std::vector<std::string> paths;
    std::string collection;
    std::uint32_t tier = schema::kDefaultTier;
    bool no_index = false;
    // rdf
    std::string graph;
    std::string format;
    bool lenient = false;
    std::size_t batch_size = loader::kDefaultRdfBatchSize;
    // docs
    std::size_t chunk_size = loader::kDefaultChunkSize;
    std::size_t overlap = loader::kDefaultChunkOverlap;
};

std::string now_datetime() { return base::format_xsd_datetime(std::chrono::system_clock::now()); }

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sends store requests with up to kMaxInFlight outstanding; each FINAL body goes to `on_final`.
// The first error (a store error, the bus, a deadline) is kept and ends the load.
class Pipeline {
public:
    Pipeline(const ClientOptions& options, std::function<void(const json&)> on_final)
        : bus_(options.bus_config()), timeout_(options.timeout()), on_final_(std::move(on_final)) {}

    Result<void> send(const json& body) {
        while (in_flight_.size() >= kMaxInFlight) {
            if (auto r = wait_one(); !r) return r;
        }
        auto id = bus_.send(schema::services::kStore, body, timeout_);
        if (!id) return id.error();
        in_flight_.push_back(*id);
        return {};
    }

    Result<void> drain() {
        while (!in_flight_.empty()) {
            if (auto r = wait_one(); !r) return r;
        }
        return {};
    }

    // One request, waited for; its FINAL body.
    Result<json> call(const json& body, std::chrono::milliseconds timeout) {
        auto replies = bus_.call(schema::services::kStore, body, timeout);
        if (!replies) return std::move(replies).error();
        return replies->back().body;
    }

private:
    Result<void> wait_one() {
        const auto id = in_flight_.front();
        const auto wait = timeout_ + bus_.config().deadline_grace + std::chrono::seconds{1};
        for (;;) {
            auto reply = bus_.next(id, wait);
            if (!reply) return std::move(reply).error();
            if (reply->kind == bus::ReplyKind::kError) {
                in_flight_.pop_front();
                return *reply->error;
            }
            if (reply->kind == bus::ReplyKind::kFinal) {
                in_flight_.pop_front();
                on_final_(reply->body);
                return {};
            }
        }
    }

    bus::BusClient bus_;
    std::chrono::milliseconds timeout_;
    std::function<void(const json&)> on_final_;
    std::deque<bus::RequestId> in_flight_;
};

// What a load ended with, printed (or given as JSON) at the end.
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
};

// After the data is in: embed and index what has no vector yet (entities, chunks).
void run_index(Pipeline& pipeline, const LoadOptions& options, LoadTotals& totals) {
    const auto start = Clock::now();
    Progress progress("indexing", "vectors", 0, !options.client.json);
    json body = schema::encode(schema::IndexRequest{options.collection});
    body["op"] = "index";
    // Indexing embeds every new entity: allow it far longer than one batch.
    auto reply = pipeline.call(body, std::max(options.client.timeout(), std::chrono::milliseconds{600'000}));
    if (!reply) {
        progress.finish();
        exit_with_error(make_error(reply.error().type, "the data is stored but indexing failed (" +
                                                           reply.error().message +
                                                           "); run the same load again to retry"));
    }
    auto indexed = schema::decode<schema::IndexResponse>(*reply);
    if (!indexed) exit_with_error(indexed.error());
    totals.entities_indexed = indexed->entities_indexed;
    totals.chunks_indexed = indexed->chunks_indexed;
    totals.index_seconds = seconds_since(start);
    progress.update(indexed->entities_indexed + indexed->chunks_indexed);
    progress.finish(indexed->model.empty() ? "" : "model " + indexed->model + ", dim " + std::to_string(indexed->dim));
}

void print_totals(const LoadOptions& options, const LoadTotals& t, bool rdf) {
    if (options.client.json) {
        json out{{"collection", options.collection.empty() ? "default" : options.collection},
                 {"files", t.files},
                 {"seconds", t.seconds},
                 {"index_seconds", t.index_seconds},
                 {"entities_indexed", t.entities_indexed},
                 {"chunks_indexed", t.chunks_indexed}};
        if (rdf) {
            out["statements"] = t.statements;
            out["added"] = t.added;
            out["present"] = t.present;
            out["skipped"] = t.skipped;
        } else {
            out["documents"] = t.documents;
            out["documents_added"] = t.documents_added;
            out["documents_replaced"] = t.documents_replaced;
            out["documents_unchanged"] = t.documents_unchanged;
            out["chunks"] = t.chunks;
            out["chunks_embedded"] = t.chunks_embedded;
        }
        std::cout << out.dump() << std::endl;
        return;
    }
    const std::string collection = options.collection.empty() ? "default" : options.collection;
    if (rdf) {
        std::cout << "loaded " << with_commas(t.statements) << " statements from " << t.files
                  << (t.files == 1 ? " file" : " files") << " into collection " << collection << ": "
                  << with_commas(t.added) << " new facts, " << with_commas(t.present) << " already present";
        if (t.skipped > 0) std::cout << ", " << with_commas(t.skipped) << " bad statements skipped";
        if (t.statements == 0) std::cout << " (the files hold no statements: nothing was loaded)";
    } else {
        std::cout << "loaded " << with_commas(t.documents) << " documents from " << t.files
                  << (t.files == 1 ? " file" : " files") << " into collection " << collection << ": "
                  << with_commas(t.documents_added) << " new, " << with_commas(t.documents_replaced)
                  << " replaced, " << with_commas(t.documents_unchanged) << " unchanged; "
                  << with_commas(t.chunks) << " chunks written";
        if (t.documents == 0) std::cout << " (the files hold no documents: nothing was loaded)";
    }
    std::cout << " in " << format_seconds(t.seconds);
    if (rdf && t.seconds > 0) {
        std::cout << " (" << with_commas(static_cast<std::uint64_t>(static_cast<double>(t.statements) / t.seconds))
                  << " statements/s)";
    }
    std::cout << "; indexed " << with_commas(t.entities_indexed) << " entities and "
              << with_commas(t.chunks_indexed + t.chunks_embedded) << " chunks" << std::endl;
}

// ---- rdf ------------------------------------------------------------------------------------

loader::RdfReadOptions rdf_options(const LoadOptions& options, const fs::path& path) {
    loader::RdfReadOptions read;
    if (!options.format.empty()) {
        auto format = loader::format_from_name(options.format);
        if (!format) exit_with_error(format.error());
        read.format = *format;
    } else {
        auto format = loader::format_from_path(path);
        if (!format) exit_with_error(format.error());
        read.format = *format;
    }
    read.lenient = options.lenient;
    if (!options.graph.empty()) read.graph = options.graph;
    read.batch_size = options.batch_size;
    read.check_statement = statement_too_large;
    return read;
}

// A name for one staged load: 128 random bits in hex.
std::string new_load_name() {
    std::random_device random;
    std::string name = "load-";
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 32; ++i) name.push_back(kHex[random() & 0xF]);
    return name;
}

// Every file goes to the store as one staged load: its batches are staged as they are read
// (the store interns their terms meanwhile) and become visible together at load-commit, so a
// syntax error anywhere, a failed request or an interrupted run loads nothing (load-abort drops
// what was staged; a load never committed is dropped by the store after a day).
void load_rdf(const LoadOptions& options) {
    if (options.tier < 1 || options.tier > 4) {
        exit_with_error(make_error(ErrorType::kInvalidRequest, "--tier must be 1..4"));
    }
    const bool show = !options.client.json;
    // Formats first: an unknown one loads nothing (and is found before any file is read).
    std::vector<fs::path> files;
    for (const auto& given : options.paths) {
        const fs::path path(given);
        (void)rdf_options(options, path);
        std::error_code ec;
        if (!fs::exists(path, ec)) {
            exit_with_error(make_error(ErrorType::kNotFound, base::printable_utf8(given) + ": no such file"));
        }
        files.push_back(path);
    }

    LoadTotals totals;
    const auto start = Clock::now();
    Pipeline pipeline(options.client, [](const json&) {});
    const std::string load = new_load_name();
    std::uint64_t staged = 0;
    // Best effort: a load never committed is invisible anyway, and dropped by the store later.
    const auto give_up = [&](base::Error error) {
        json abort{{"op", "load-abort"}, {"collection", options.collection}, {"load", load}};
        (void)pipeline.call(abort, std::chrono::milliseconds{10'000});
        error.message += " (nothing was loaded)";
        exit_with_error(error);
    };
    for (const auto& path : files) {
        const auto read = rdf_options(options, path);
        std::error_code ec;
        const fs::path absolute = fs::absolute(path, ec);
        schema::SourceInfo source{loader::file_uri(absolute), path.string(),
                                  std::string(loader::media_type(*read.format)), options.tier, now_datetime()};
        Progress progress(base::printable_utf8(path.filename().string()), "statements", 0, show);
        std::uint64_t sent = 0;
        std::uint64_t bytes_read = 0;
        std::uint64_t bytes_total = 0;
        std::string nquads;
        auto result = loader::read_rdf(
            path, read,
            [&](std::span<const schema::Triple> batch) -> Result<void> {
                // One request per batch, unless its text would pass the broker's message limit.
                std::size_t first = 0;
                while (first < batch.size()) {
                    nquads.clear();
                    std::size_t json_bytes = 0;
                    std::size_t end = first;
                    // Statements are added while the text stays within the bound (each one
                    // alone fits: check_statement refused any that does not).
                    while (end < batch.size()) {
                        const std::size_t before = nquads.size();
                        loader::write_nquads(batch.subspan(end, 1), nquads);
                        const std::size_t bytes = json_string_bytes(std::string_view(nquads).substr(before));
                        if (end > first && json_bytes + bytes > kMaxLoadTextJsonBytes) {
                            nquads.resize(before);
                            break;
                        }
                        json_bytes += bytes;
                        ++end;
                    }
                    json body = schema::encode(schema::LoadTriplesRequest{options.collection, source, nquads});
                    body["op"] = "load-triples";
                    body["load"] = load;
                    if (auto r = pipeline.send(body); !r) return r;
                    first = end;
                }
                sent += batch.size();
                staged += batch.size();
                // The total, estimated from the share of the file read so far.
                if (bytes_read > 0 && bytes_total >= bytes_read) {
                    progress.set_total(static_cast<std::uint64_t>(static_cast<double>(sent) *
                                                                  static_cast<double>(bytes_total) /
                                                                  static_cast<double>(bytes_read)));
                }
                progress.update(sent);
                return {};
            },
            [&](const loader::RdfIssue& issue) { std::cerr << issue.describe() << " (skipped)" << std::endl; },
            [&](std::uint64_t done, std::uint64_t total) {
                bytes_read = done;
                bytes_total = total;
            });
        if (result) {
            if (auto r = pipeline.drain(); !r) result = r.error();
        }
        if (!result) {
            progress.finish();
            give_up(result.error());
        }
        totals.files += 1;
        totals.statements += result->statements;
        totals.skipped += result->skipped;
        progress.set_total(result->statements);
        if (result->statements == 0) {
            progress.finish("no statements (empty file)");
        } else {
            progress.finish();
        }
    }
    if (staged > 0) {
        Progress committing("committing", "statements", staged, show);
        json body{{"op", "load-commit"}, {"collection", options.collection}, {"load", load}};
        // One transaction writes the whole load: allow it far longer than one batch.
        auto reply = pipeline.call(body, std::max(options.client.timeout(), std::chrono::milliseconds{600'000}));
        if (!reply) {
            committing.finish();
            give_up(reply.error());
        }
        auto counts = schema::decode<schema::LoadTriplesResponse>(*reply);
        if (!counts) give_up(counts.error());
        totals.added = counts->added;
        totals.present = counts->present;
        committing.update(staged);
        committing.finish();
    }
    totals.seconds = seconds_since(start);
    // Nothing staged, nothing new to index (and a new collection was never created: indexing
    // it would be NotFound).
    if (!options.no_index && staged > 0) run_index(pipeline, options, totals);
    print_totals(options, totals, true);
}

// ---- docs -----------------------------------------------------------------------------------

// Documents per load-documents request, and the most text one request carries.
constexpr std::size_t kDocumentsPerRequest = 64;
constexpr std::size_t kBytesPerRequest = 4u << 20;

void load_docs(const LoadOptions& options) {
    if (options.tier < 1 || options.tier > 4) {
        exit_with_error(make_error(ErrorType::kInvalidRequest, "--tier must be 1..4"));
    }
    if (options.chunk_size == 0 || options.overlap >= options.chunk_size) {
        exit_with_error(make_error(ErrorType::kInvalidRequest, "--overlap must be less than --chunk-size (and "
                                                               "--chunk-size at least 1)"));
    }
    const bool show = !options.client.json;
    loader::ChunkOptions chunking{options.chunk_size, options.overlap};
    loader::ReadOptions read;
    read.on_skip = [show](const fs::path& path, std::string_view why) {
        if (show) std::cerr << path.string() << ": skipped (" << why << ")" << std::endl;
    };

    // Every path is read and chunked once first: a bad file or line loads nothing.
    std::uint64_t total_documents = 0;
    for (const auto& given : options.paths) {
        auto checked = loader::read_documents(given, read, [&](loader::ReadDocument&& doc) -> Result<void> {
            auto spans = loader::chunk_text(doc.text, chunking);
            if (!spans) {
                return make_error(spans.error().type, base::printable_utf8(doc.path.string()) +
                                                          (doc.line > 0 ? ":" + std::to_string(doc.line) : "") +
                                                          ": " + spans.error().message);
            }
            ++total_documents;
            return {};
        });
        if (!checked) exit_with_error(checked.error());
    }

    LoadTotals totals;
    const auto start = Clock::now();
    Pipeline pipeline(options.client, [&totals](const json& body) {
        if (auto r = schema::decode<schema::LoadDocumentsResponse>(body)) {
            totals.documents_added += r->documents_added;
            totals.documents_replaced += r->documents_replaced;
            totals.documents_unchanged += r->documents_unchanged;
            totals.chunks += r->chunks_written;
            totals.chunks_embedded += r->chunks_embedded;
        }
    });
    Progress progress("documents", "documents", total_documents, show);
    schema::LoadDocumentsRequest batch;
    batch.collection = options.collection;
    std::size_t batch_bytes = 0;
    const std::string loaded_at = now_datetime();
    const auto flush = [&]() -> Result<void> {
        if (batch.documents.empty()) return {};
        json body = schema::encode(batch);
        body["op"] = "load-documents";
        totals.documents += batch.documents.size();
        batch.documents.clear();
        batch_bytes = 0;
        auto sent = pipeline.send(body);
        progress.update(totals.documents);
        return sent;
    };
    for (const auto& given : options.paths) {
        loader::ReadOptions quiet = read;
        quiet.on_skip = {};
        auto summary = loader::read_documents(given, quiet, [&](loader::ReadDocument&& doc) -> Result<void> {
            auto spans = loader::chunk_text(doc.text, chunking);
            if (!spans) return spans.error();
            schema::DocumentLoad load;
            load.uri = doc.uri;
            load.title = doc.title;
            load.source = schema::SourceInfo{doc.uri, doc.path.string(), doc.media_type, options.tier, loaded_at};
            for (std::size_t i = 0; i < spans->size(); ++i) {
                const auto& span = (*spans)[i];
                load.chunks.push_back(schema::ChunkLoad{static_cast<std::uint32_t>(i), span.char_offset,
                                                        span.char_length,
                                                        doc.text.substr(span.byte_offset, span.byte_length)});
            }
            load.text = std::move(doc.text);
            batch_bytes += load.text.size() * 2;
            batch.documents.push_back(std::move(load));
            if (batch.documents.size() >= kDocumentsPerRequest || batch_bytes >= kBytesPerRequest) return flush();
            return {};
        });
        if (summary) totals.files += summary->files;
        Result<void> done = summary ? flush() : Result<void>(summary.error());
        if (done) done = pipeline.drain();
        if (!done) {
            progress.finish();
            auto error = done.error();
            if (totals.documents > 0) {
                error.message += " (" + std::to_string(totals.documents) +
                                 " documents were sent before this; loading is idempotent: run the same load again)";
            }
            exit_with_error(error);
        }
    }
    totals.seconds = seconds_since(start);
    progress.finish();
    // No document sent, nothing new to index (see load_rdf).
    if (!options.no_index && totals.documents > 0) run_index(pipeline, options, totals);
    print_totals(options, totals, false);
}

void add_common(CLI::App& sub, LoadOptions& options) {
    sub.add_option("--collection", options.collection, "Knowledge base to load into (default: default)")
        ->envname("GLASSBOX_COLLECTION");
    sub.add_option("--tier", options.tier,
                   "Data tier of these sources: 1 authoritative, 2 verified, 3 crowd-sourced, 4 inferred")
        ->capture_default_str()
        ->check(CLI::Range(1, 4));
    sub.add_flag("--no-index", options.no_index, "Do not embed and index new entities and chunks afterwards");
    add_client_options(sub, options.client, 120'000);
}

}  // namespace

void add_load_command(CLI::App& app) {
    auto* command = app.add_subcommand("load", "Load knowledge into the store: RDF files or documents");
    command->require_subcommand(1);

    auto rdf = std::make_shared<LoadOptions>();
    auto* rdf_cmd = command->add_subcommand(
        "rdf", "Load N-Triples, N-Quads, Turtle or TriG files (each checked whole first: a syntax error "
               "loads nothing)");
    rdf_cmd->add_option("files", rdf->paths, "RDF files")->required();
    rdf_cmd->add_option("--graph", rdf->graph, "Put default-graph statements into this named graph (an IRI)");
    rdf_cmd->add_option("--format", rdf->format, "ntriples|nquads|turtle|trig (default: from the extension)");
    rdf_cmd->add_flag("--lenient", rdf->lenient, "Skip bad statements (each reported) instead of loading nothing");
    rdf_cmd->add_option("--batch-size", rdf->batch_size, "Statements per request to the store")
        ->capture_default_str()
        ->check(CLI::Range(1, 1'000'000));
    add_common(*rdf_cmd, *rdf);
    rdf_cmd->callback([rdf] { load_rdf(*rdf); });

    auto docs = std::make_shared<LoadOptions>();
    auto* docs_cmd = command->add_subcommand(
        "docs", "Load .txt, .md and .jsonl ({doc_id, title, text} per line) files or folders; chunk, embed, index");
    docs_cmd->add_option("paths", docs->paths, "Files or folders (read recursively)")->required();
    docs_cmd->add_option("--chunk-size", docs->chunk_size, "Characters per chunk, at most")
        ->capture_default_str()
        ->check(CLI::Range(1, 1'000'000));
    docs_cmd->add_option("--overlap", docs->overlap, "Characters repeated from the previous chunk, about")
        ->capture_default_str()
        ->check(CLI::Range(0, 999'999));
    add_common(*docs_cmd, *docs);
    docs_cmd->callback([docs] { load_docs(*docs); });
}

}  // namespace glassbox::cli
