// Loading knowledge into the store over the bus (ingest/load.hpp): moved here from cli/ so
// `glassbox load` and the gateway's uploads run the same checks and the same staged load.
#include "ingest/load.hpp"

#include <deque>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "loader/document_reader.hpp"
#include "loader/source_date.hpp"
#include "schema/collection_name.hpp"
#include "schema/explain_uris.hpp"
#include "schema/freshness.hpp"
#include "schema/indexed_quads.hpp"
#include "schema/json_fast.hpp"
#include "schema/services.hpp"

namespace glassbox::ingest {
namespace {

namespace fs = std::filesystem;
using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;
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
        if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' ||
            c == '\f') {
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
        case schema::Term::Kind::kIri:
            return term.as_iri().value.size();
        case schema::Term::Kind::kBlankNode:
            return term.as_blank().id.size();
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

}  // namespace

// A statement whose N-Quads text, as the JSON string it travels in, passes what one request
// may carry: refused where it stands in its file, before anything is sent (issue 16: a 50 MB
// literal used to reach the broker and come back as a misleading error).
std::optional<std::string> statement_too_large(const schema::Triple& triple) {
    // An escape takes at most 6 bytes per byte (\u00XX): most statements are decided here.
    const std::size_t raw = term_text_bytes(triple.s) + term_text_bytes(triple.p) +
                            term_text_bytes(triple.o) + (triple.graph ? triple.graph->size() : 0);
    if (raw * 6 + 64 <= kMaxLoadTextJsonBytes) return std::nullopt;
    std::string text;
    loader::write_nquads(std::span<const schema::Triple>(&triple, 1), text);
    const std::size_t bytes = json_string_bytes(text);
    if (bytes <= kMaxLoadTextJsonBytes) return std::nullopt;
    return "statement too large to load: " + std::to_string(bytes) +
           " bytes as N-Quads text in JSON, above the " + std::to_string(kMaxLoadTextJsonBytes) +
           " bytes one load request may carry (the broker's " +
           "max_message_bytes is 16 MiB by default); shorten its literal or load it as a document";
}

namespace {

std::string now_datetime() { return base::format_xsd_datetime(std::chrono::system_clock::now()); }

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sends store requests with up to kMaxInFlight outstanding; each FINAL body goes to `on_final`.
// The first error (a store error, the bus, a deadline) is kept and ends the load.
class Pipeline {
public:
    Pipeline(const bus::BusClientConfig& config, std::chrono::milliseconds timeout,
             std::function<void(const json&)> on_final)
        : bus_(config), timeout_(timeout), on_final_(std::move(on_final)) {}

    Result<void> send(const json& body) {
        return send_text(body.dump(-1, ' ', false, json::error_handler_t::replace));
    }

    // The same with the body already written as JSON text.
    Result<void> send_text(std::string_view body) {
        while (in_flight_.size() >= kMaxInFlight) {
            if (auto r = wait_one(); !r) return r;
        }
        auto id = bus_.send_raw(schema::services::kStore, body, timeout_);
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

// Indexing and a load's commit write much more than one batch: allow them far longer.
std::chrono::milliseconds long_timeout(const LoadSettings& settings) {
    return std::max(settings.timeout, std::chrono::milliseconds{600'000});
}

// After the data is in: embed and index what has no vector yet (entities, chunks).
Result<void> run_index(Pipeline& pipeline, const LoadSettings& settings, LoadTotals& totals,
                       LoadObserver& observer) {
    const auto start = Clock::now();
    auto progress = observer.stage("indexing", "vectors", 0);
    json body = schema::encode(schema::IndexRequest{settings.collection});
    body["op"] = "index";
    auto reply = pipeline.call(body, long_timeout(settings));
    if (!reply) {
        progress->finish();
        return make_error(reply.error().type, "the data is stored but indexing failed (" +
                                                  reply.error().message +
                                                  "); run the same load again to retry");
    }
    auto indexed = schema::decode<schema::IndexResponse>(*reply);
    if (!indexed) return indexed.error();
    totals.entities_indexed = indexed->entities_indexed;
    totals.chunks_indexed = indexed->chunks_indexed;
    totals.index_seconds = seconds_since(start);
    totals.index_model = indexed->model;
    totals.index_dim = indexed->dim;
    progress->update(indexed->entities_indexed + indexed->chunks_indexed);
    progress->finish(indexed->model.empty()
                         ? ""
                         : "model " + indexed->model + ", dim " + std::to_string(indexed->dim));
    return {};
}

// A name for one staged load: 128 random bits in hex.
std::string new_load_name() {
    std::random_device random;
    std::string name = "load-";
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 32; ++i) name.push_back(kHex[random() & 0xF]);
    return name;
}

// A load-triples body up to its batch (each batch of a file shares it): the collection, source,
// load and op as schema's codec writes them, then a comma. A batch's texts are escaped straight
// after it (no JSON tree holding megabytes of text to be dumped).
std::string load_body_prefix(const LoadSettings& settings, const schema::SourceInfo& source,
                             const std::string& load) {
    json body = schema::encode(schema::LoadTriplesRequest{settings.collection, source, ""});
    body.erase("nquads");
    body["op"] = "load-triples";
    body["load"] = load;
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    text.pop_back();  // the closing brace
    text += ',';
    return text;
}

// What send_batch reuses from one batch to the next.
struct BatchBuffers {
    schema::IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    std::string nquads;
    std::string body;
};

// Sends one batch of statements as N-Quads text: one request, unless its text would pass the
// broker's message limit. `prefix` is load_body_prefix()'s.
Result<void> send_nquads_batch(Pipeline& pipeline, const std::string& prefix,
                               std::span<const schema::Triple> batch, std::string& nquads,
                               std::string& body) {
    std::size_t first = 0;
    while (first < batch.size()) {
        nquads.clear();
        std::size_t json_bytes = 0;
        std::size_t end = first;
        // Statements are added while the text stays within the bound (each one alone fits:
        // check_statement refused any that does not).
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
        body.assign(prefix);
        body += "\"nquads\":";
        schema::append_json_string(body, nquads);
        body += '}';
        if (auto r = pipeline.send_text(body); !r) return r;
        first = end;
    }
    return {};
}

// Sends one batch of statements, dictionary-encoded (schema/indexed_quads.hpp: the store parses
// and checks each distinct term once, and fewer bytes travel), or as N-Quads text when that form
// cannot carry it (a quoted triple) or it would pass one request's bound.
Result<void> send_batch(Pipeline& pipeline, const std::string& prefix,
                        std::span<const schema::Triple> batch, BatchBuffers& buffers) {
    if (!buffers.writer.write(batch, buffers.terms, buffers.statements))
        return send_nquads_batch(pipeline, prefix, batch, buffers.nquads, buffers.body);
    std::string& body = buffers.body;
    body.assign(prefix);
    body += "\"terms\":";
    schema::append_json_string(body, buffers.terms);
    body += ",\"statements\":";
    schema::append_json_string(body, buffers.statements);
    body += '}';
    // The texts as JSON strings, measured once written (the keys and quotes not counted).
    if (body.size() - prefix.size() > kMaxLoadTextJsonBytes + 32)
        return send_nquads_batch(pipeline, prefix, batch, buffers.nquads, buffers.body);
    return pipeline.send_text(body);
}

}  // namespace

json totals_json(const LoadSettings& settings, const LoadTotals& t, bool rdf) {
    json out{{"collection", settings.collection.empty() ? "default" : settings.collection},
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
        if (t.change) out["change"] = schema::encode(*t.change);
    } else {
        out["documents"] = t.documents;
        out["documents_added"] = t.documents_added;
        out["documents_replaced"] = t.documents_replaced;
        out["documents_unchanged"] = t.documents_unchanged;
        out["chunks"] = t.chunks;
        out["chunks_embedded"] = t.chunks_embedded;
    }
    return out;
}

Result<void> check_settings(const LoadSettings& settings) {
    if (settings.tier < 1 || settings.tier > 4)
        return make_error(ErrorType::kInvalidRequest, "--tier must be 1..4");
    if (auto collection = schema::validate_collection(settings.collection); !collection)
        return collection.error();
    if (!settings.graph.empty()) {
        if (auto problem = schema::explain::iri_problem(settings.graph))
            return make_error(ErrorType::kInvalidRequest, "graph \"" +
                                                              base::printable_utf8(settings.graph) +
                                                              "\" is not an IRI: " + *problem);
    }
    return {};
}

// check_settings() and the chunking bounds of a documents load.
Result<void> check_docs_settings(const LoadSettings& settings) {
    if (auto checked = check_settings(settings); !checked) return checked.error();
    if (!settings.date.empty() && !schema::parse_source_date_ms(settings.date)) {
        return make_error(ErrorType::kInvalidRequest,
                          "--date \"" + settings.date +
                              "\" is neither a date (2024-03-01) nor an xsd:dateTime "
                              "(2024-03-01T12:00:00Z)");
    }
    if (settings.chunk_size == 0 || settings.overlap >= settings.chunk_size) {
        return make_error(ErrorType::kInvalidRequest,
                          "--overlap must be less than --chunk-size (and "
                          "--chunk-size at least 1)");
    }
    return {};
}

Result<loader::RdfReadOptions> rdf_options(const LoadSettings& settings, const fs::path& path) {
    loader::RdfReadOptions read;
    auto format = settings.format.empty() ? loader::format_from_path(path)
                                          : loader::format_from_name(settings.format);
    if (!format) return format.error();
    read.format = *format;
    read.lenient = settings.lenient;
    if (!settings.graph.empty()) read.graph = settings.graph;
    read.batch_size = settings.batch_size;
    read.check_statement = statement_too_large;
    if (!settings.source_iri.empty()) read.base_iri = settings.source_iri;
    return read;
}

namespace {

// Formats and files first: an unknown format or a missing file loads nothing (and is found
// before any file is read).
Result<void> check_rdf_files(const LoadSettings& settings, const std::vector<fs::path>& files) {
    for (const auto& path : files) {
        if (auto read = rdf_options(settings, path); !read) return read.error();
        std::error_code ec;
        if (!fs::exists(path, ec))
            return make_error(ErrorType::kNotFound,
                              base::printable_utf8(path.string()) + ": no such file");
    }
    return {};
}

// Where a file's facts come from: its file: URI (or the name it was given), its media type and
// tier, and when it was loaded.
schema::SourceInfo rdf_source(const LoadSettings& settings, const fs::path& path,
                              const loader::RdfReadOptions& read) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(path, ec);
    const bool named = !settings.source_iri.empty();
    return schema::SourceInfo{named ? settings.source_iri : loader::file_uri(absolute),
                              named ? path.filename().string() : path.string(),
                              std::string(loader::media_type(*read.format)), settings.tier,
                              now_datetime()};
}

// The IRI the reader resolves a file's relative IRIs against when it is given none.
std::string file_base_iri(const fs::path& path) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(path, ec);
    return loader::file_uri(ec ? path : absolute.lexically_normal());
}

// A file's source as its batches carry it. Its own date is found as the file is read: the
// batches from the one that states it on carry it (the store keeps it for the whole file).
class FileSource {
public:
    FileSource(const LoadSettings& settings, const fs::path& path,
               const loader::RdfReadOptions& read, const std::string& load)
        : settings_(settings),
          load_(load),
          source_(rdf_source(settings, path, read)),
          dated_({source_.uri, read.base_iri.empty() ? file_base_iri(path) : read.base_iri}),
          prefix_(load_body_prefix(settings, source_, load)) {}

    // load_body_prefix() of the batch, with the date this batch or an earlier one stated.
    const std::string& prefix_for(std::span<const schema::Triple> batch) {
        dated_.scan(batch);
        if (dated_.date() != source_.date) {
            source_.date = dated_.date();
            prefix_ = load_body_prefix(settings_, source_, load_);
        }
        return prefix_;
    }

private:
    const LoadSettings& settings_;
    const std::string& load_;
    schema::SourceInfo source_;
    loader::SourceDateFinder dated_;
    std::string prefix_;
};

// load-commit of a staged load: what it added and found present go into `totals`.
Result<void> commit_load(Pipeline& pipeline, const LoadSettings& settings, const std::string& load,
                         std::uint64_t staged, LoadTotals& totals, LoadObserver& observer) {
    auto committing = observer.stage("committing", "statements", staged);
    json body{{"op", "load-commit"}, {"collection", settings.collection}, {"load", load}};
    if (settings.replace) {
        body["replace"] = true;
        body["actor"] = settings.actor;
    }
    auto reply = pipeline.call(body, long_timeout(settings));
    if (!reply) {
        committing->finish();
        return reply.error();
    }
    auto counts = schema::decode<schema::LoadTriplesResponse>(*reply);
    if (!counts) return counts.error();
    totals.added = counts->added;
    totals.present = counts->present;
    if (const auto change = reply->find("change"); change != reply->end()) {
        auto summary = schema::decode<schema::KnowledgeChangeSummary>(*change);
        if (!summary) return summary.error();
        totals.change = std::move(*summary);
    }
    committing->update(staged);
    committing->finish();
    return {};
}

}  // namespace

// Every file goes to the store as one staged load: its batches are staged as they are read
// (the store interns their terms meanwhile) and become visible together at load-commit, so a
// syntax error anywhere, a failed request or an interrupted run loads nothing (load-abort drops
// what was staged; a load never committed is dropped by the store after a day).
Result<LoadTotals> load_rdf(const bus::BusClientConfig& bus, const LoadSettings& settings,
                            const std::vector<fs::path>& files, LoadObserver& observer) {
    if (auto checked = check_settings(settings); !checked) return checked.error();
    if (auto checked = check_rdf_files(settings, files); !checked) return checked.error();

    LoadTotals totals;
    const auto start = Clock::now();
    Pipeline pipeline(bus, settings.timeout, [](const json&) {});
    const std::string load = new_load_name();
    std::uint64_t staged = 0;
    // Best effort: a load never committed is invisible anyway, and dropped by the store later.
    const auto give_up = [&](base::Error error) -> base::Error {
        json abort{{"op", "load-abort"}, {"collection", settings.collection}, {"load", load}};
        (void)pipeline.call(abort, std::chrono::milliseconds{10'000});
        error.message += " (nothing was loaded)";
        return error;
    };
    for (const auto& path : files) {
        const auto read = *rdf_options(settings, path);
        FileSource file(settings, path, read, load);
        auto progress =
            observer.stage(base::printable_utf8(path.filename().string()), "statements", 0);
        std::uint64_t sent = 0;
        std::uint64_t bytes_read = 0;
        std::uint64_t bytes_total = 0;
        BatchBuffers buffers;
        auto result = loader::read_rdf(
            path, read,
            [&](std::span<const schema::Triple> batch) -> Result<void> {
                if (auto r = send_batch(pipeline, file.prefix_for(batch), batch, buffers); !r)
                    return r;
                sent += batch.size();
                staged += batch.size();
                // The total, estimated from the share of the file read so far.
                if (bytes_read > 0 && bytes_total >= bytes_read) {
                    progress->set_total(static_cast<std::uint64_t>(
                        static_cast<double>(sent) * static_cast<double>(bytes_total) /
                        static_cast<double>(bytes_read)));
                }
                progress->update(sent);
                return {};
            },
            [&](const loader::RdfIssue& issue) {
                observer.skipped(issue.describe() + " (skipped)");
            },
            [&](std::uint64_t done, std::uint64_t total) {
                bytes_read = done;
                bytes_total = total;
            });
        if (result) {
            if (auto r = pipeline.drain(); !r) result = r.error();
        }
        if (!result) {
            progress->finish();
            return give_up(result.error());
        }
        totals.files += 1;
        totals.statements += result->statements;
        totals.skipped += result->skipped;
        progress->set_total(result->statements);
        progress->finish(result->statements == 0 ? "no statements (empty file)" : "");
    }
    if (staged > 0) {
        if (auto committed = commit_load(pipeline, settings, load, staged, totals, observer);
            !committed)
            return give_up(committed.error());
    }
    totals.seconds = seconds_since(start);
    // Nothing staged, nothing new to index (and a new collection was never created: indexing
    // it would be NotFound).
    if (!settings.no_index && staged > 0) {
        if (auto r = run_index(pipeline, settings, totals, observer); !r) return r.error();
    }
    return totals;
}

namespace {

// Documents per load-documents request, and the most text one request carries.
constexpr std::size_t kDocumentsPerRequest = 64;
constexpr std::size_t kBytesPerRequest = 4u << 20;

// How many documents `paths` hold, each read and chunked once: a bad file or line is the error
// (with its place), before anything is sent.
Result<std::uint64_t> count_documents(const std::vector<fs::path>& paths,
                                      const loader::ReadOptions& read,
                                      const loader::ChunkOptions& chunking) {
    std::uint64_t total = 0;
    for (const auto& given : paths) {
        auto checked =
            loader::read_documents(given, read, [&](loader::ReadDocument&& doc) -> Result<void> {
                auto spans = loader::chunk_text(doc.text, chunking);
                if (!spans) {
                    return make_error(
                        spans.error().type,
                        base::printable_utf8(doc.path.string()) +
                            (doc.line > 0 ? ":" + std::to_string(doc.line) : "") + ": " +
                            spans.error().message,
                        base::ErrorPlace{base::printable_utf8(doc.path.string()), doc.line, 0});
                }
                ++total;
                return {};
            });
        if (!checked) return checked.error();
    }
    return total;
}

// One document as the store loads it: its IRI (a text file's file: URI, a .jsonl line's own id,
// or the name it was given), title, source and chunks.
schema::DocumentLoad document_load(loader::ReadDocument&& doc,
                                   const std::vector<loader::ChunkSpan>& spans,
                                   const LoadSettings& settings, const std::string& loaded_at) {
    schema::DocumentLoad load;
    const bool named = !settings.source_iri.empty();
    if (named && doc.uri == loader::file_uri(doc.path)) doc.uri = settings.source_iri;
    load.uri = doc.uri;
    load.title = doc.title;
    load.source =
        schema::SourceInfo{doc.uri, named ? doc.path.filename().string() : doc.path.string(),
                           doc.media_type, settings.tier, loaded_at};
    load.source.date = settings.date;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        const auto& span = spans[i];
        load.chunks.push_back(
            schema::ChunkLoad{static_cast<std::uint32_t>(i), span.char_offset, span.char_length,
                              doc.text.substr(span.byte_offset, span.byte_length)});
    }
    load.text = std::move(doc.text);
    return load;
}

}  // namespace

Result<LoadTotals> load_docs(const bus::BusClientConfig& bus, const LoadSettings& settings,
                             const std::vector<fs::path>& paths, LoadObserver& observer) {
    if (auto checked = check_docs_settings(settings); !checked) return checked.error();
    loader::ChunkOptions chunking{settings.chunk_size, settings.overlap};
    loader::ReadOptions read;
    read.on_skip = [&observer](const fs::path& path, std::string_view why) {
        observer.skipped(path.string() + ": skipped (" + std::string(why) + ")");
    };

    // Every path is read and chunked once first: a bad file or line loads nothing.
    auto total_documents = count_documents(paths, read, chunking);
    if (!total_documents) return total_documents.error();

    LoadTotals totals;
    const auto start = Clock::now();
    Pipeline pipeline(bus, settings.timeout, [&totals](const json& body) {
        if (auto r = schema::decode<schema::LoadDocumentsResponse>(body)) {
            totals.documents_added += r->documents_added;
            totals.documents_replaced += r->documents_replaced;
            totals.documents_unchanged += r->documents_unchanged;
            totals.chunks += r->chunks_written;
            totals.chunks_embedded += r->chunks_embedded;
        }
    });
    auto progress = observer.stage("documents", "documents", *total_documents);
    schema::LoadDocumentsRequest batch;
    batch.collection = settings.collection;
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
        progress->update(totals.documents);
        return sent;
    };
    for (const auto& given : paths) {
        loader::ReadOptions quiet = read;
        quiet.on_skip = {};
        auto summary =
            loader::read_documents(given, quiet, [&](loader::ReadDocument&& doc) -> Result<void> {
                auto spans = loader::chunk_text(doc.text, chunking);
                if (!spans) return spans.error();
                schema::DocumentLoad load =
                    document_load(std::move(doc), *spans, settings, loaded_at);
                batch_bytes += load.text.size() * 2;
                batch.documents.push_back(std::move(load));
                if (batch.documents.size() >= kDocumentsPerRequest ||
                    batch_bytes >= kBytesPerRequest)
                    return flush();
                return {};
            });
        if (summary) totals.files += summary->files;
        Result<void> done = summary ? flush() : Result<void>(summary.error());
        if (done) done = pipeline.drain();
        if (!done) {
            progress->finish();
            auto error = done.error();
            if (totals.documents > 0) {
                error.message += " (" + std::to_string(totals.documents) +
                                 " documents were sent before this; loading is idempotent: run the "
                                 "same load again)";
            }
            return error;
        }
    }
    totals.seconds = seconds_since(start);
    progress->finish();
    // No document sent, nothing new to index (see load_rdf).
    if (!settings.no_index && totals.documents > 0) {
        if (auto r = run_index(pipeline, settings, totals, observer); !r) return r.error();
    }
    return totals;
}

}  // namespace glassbox::ingest
