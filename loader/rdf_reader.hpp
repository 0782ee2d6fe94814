// Reading RDF files (N-Triples, N-Quads, Turtle, TriG) through serd into batches of triples,
// and the N-Quads batch text the loader sends to the store service (write and parse).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"

namespace glassbox::loader {

// The syntaxes serd 0.30 reads. RDF 1.2 (quoted triples `<< s p o >>`, triple terms, base
// direction) is out of serd 0.30's reach: such input is a syntax error, so the reader never
// produces a schema::QuotedTriple. Compressed files (.gz) are not read: decompress first.
enum class RdfFormat { kNTriples, kNQuads, kTurtle, kTriG };

// "ntriples", "nquads", "turtle", "trig" (the names `--format` accepts first).
std::string_view to_string(RdfFormat format) noexcept;
// "application/n-triples", "application/n-quads", "text/turtle", "application/trig".
std::string_view media_type(RdfFormat format) noexcept;

// "ntriples"/"nt", "nquads"/"nq", "turtle"/"ttl", "trig" (case-insensitive). Anything else:
// kInvalidRequest naming the accepted names.
base::Result<RdfFormat> format_from_name(std::string_view name);
// By extension (case-insensitive): .nt, .nq, .ttl/.turtle, .trig. A .gz file or an unknown
// extension: kInvalidRequest saying so and how to name the format with --format.
base::Result<RdfFormat> format_from_path(const std::filesystem::path& path);

inline constexpr std::size_t kDefaultRdfBatchSize = 50'000;

struct RdfReadOptions {
    // Absent: from the file's extension (format_from_path).
    std::optional<RdfFormat> format;
    // false: the first syntax error ends the read with an error. true: a bad statement is
    // skipped, reported through on_issue, and reading goes on (see read_rdf).
    bool lenient = false;
    // Set: statements in the default graph go into this named graph (an IRI). Statements
    // already in a named graph (N-Quads, TriG) keep theirs.
    std::optional<std::string> graph;
    // Statements per on_batch call (the last batch may be smaller); 0 means the default.
    std::size_t batch_size = kDefaultRdfBatchSize;
    // Base IRI for relative IRIs until the file sets its own (@base / BASE). Empty: the
    // file's absolute file:// URI.
    std::string base_iri;
    // Set: asked about each statement as it is read; a message refuses it where it stands (the
    // loader refuses a statement too large for one request, issue 16). Strict mode ends the
    // read with "FILE:LINE: message" (Turtle and TriG: "FILE: near line L: message", L being
    // the line serd had read up to, at or after the statement's end); lenient mode skips it
    // as a bad statement.
    std::function<std::optional<std::string>(const schema::Triple&)> check_statement;
};

// A problem at a place in a file: a syntax error, invalid UTF-8, a skipped statement.
struct RdfIssue {
    std::string file;          // the path as given
    std::uint64_t line = 0;    // 1-based; 0 when serd gave no place (an undefined prefix)
    std::uint64_t column = 0;  // 1-based, in bytes; 0 when unknown
    std::string message;
    // "FILE:LINE:COLUMN: message", as compilers print it (editors jump to it).
    std::string describe() const;
    bool operator==(const RdfIssue&) const = default;
};

struct RdfReadStats {
    std::uint64_t statements = 0;  // delivered to on_batch
    std::uint64_t skipped = 0;     // bad statements left out (lenient only)
    std::uint64_t bytes = 0;       // bytes of the file read
    std::uint64_t issues = 0;      // on_issue calls (lenient only)
    bool operator==(const RdfReadStats&) const = default;
};

// Receives each full batch, then the last partial one. The span is valid only during the
// call (the reader reuses its storage). An error stops the read and read_rdf returns it.
using RdfBatchSink = std::function<base::Result<void>(std::span<const schema::Triple> batch)>;
using RdfIssueSink = std::function<void(const RdfIssue& issue)>;
// Called as the file is read, a page at a time; bytes_total is the file's size at open.
using RdfProgressSink = std::function<void(std::uint64_t bytes_read, std::uint64_t bytes_total)>;

// Streams `path` through serd in constant memory (the file is read a page at a time; at most
// one batch of triples is held) and delivers its statements in batches.
//
// Terms: IRIs are absolute (prefixed names and relative IRIs are expanded against the file's
// @prefix / @base, the default base being options.base_iri); literals are in schema's normal
// form (xsd:string becomes a simple literal; a language tag means rdf:langString); the graph
// of a quad is its IRI.
//
// Blank nodes are scoped per file: every label (written `_:x` or made by serd for `[]` and
// collections) is prefixed with "f" + 8 hex digits of a hash (FNV-1a 32) of the file's
// absolute path + "_", so `_:x` in two files are two nodes, while reading the same file again
// gives the same labels (a reload finds its facts present). A blank node used as a TriG graph
// name becomes the IRI "urn:glassbox:bnode:" + its scoped label (a graph is an IRI here).
//
// Errors (values, never exceptions):
// - missing file: kNotFound naming the path; unreadable (a directory, no permission):
//   kInvalidRequest naming the path and the system's reason;
// - unknown format: as format_from_path;
// - syntax error or invalid UTF-8 in a term (strict mode): kInvalidRequest
//   "FILE:LINE:COLUMN: message" for the first one (an undefined prefix, which serd leaves to
//   the caller and gives no place for: "FILE: undefined prefix 'ex:' in ex:name");
// - an N-Triples/N-Quads line longer than 64 MiB (lines are held whole): "FILE:LINE: ...";
// - an on_batch error: returned as is, after which nothing more is read.
// An empty file (or one with only comments/directives) gives zero statements and no error;
// the CLI should say so, e.g. "FILE: no statements (empty file)", and carry on.
//
// Lenient mode. serd 0.30's own recovery is not used: it patches invalid UTF-8 to U+FFFD and
// keeps the statement, and its N-Quads reader does not recover at all. Instead:
// - N-Triples and N-Quads are handed to serd a line at a time, so exactly the bad line is
//   skipped (a statement serd had emitted before finding a broken ending is taken back):
//   stats.skipped counts it and on_issue gets "FILE:LINE:COLUMN: message".
// - Turtle and TriG: after an error a new serd reader starts at the line after it (prefixes
//   and base are kept; generated blank nodes stay distinct). A statement may span lines, so
//   that line is often the middle of the same statement: the rest of it is reported as
//   further errors or, when a continuation line happens to parse, read on its own; the
//   statements of the bad `subject ... .` block that serd had emitted before the error are
//   kept, and inside a TriG `G { ... }` block the graph is lost for the remainder of the
//   block (its statements go to the default graph and the closing `}` is a further issue).
//   Treat lenient Turtle as best effort and prefer fixing the file.
// - A statement with an undefined prefix is skipped alone (an issue without a line).
base::Result<RdfReadStats> read_rdf(const std::filesystem::path& path,
                                    const RdfReadOptions& options, const RdfBatchSink& on_batch,
                                    const RdfIssueSink& on_issue = {},
                                    const RdfProgressSink& on_progress = {});

// Appends `batch` as N-Quads lines ("s p o [g] .\n") to `out`, in one reservation, each line as
// schema::append_nquads writes it (blank-node labels the grammar accepts are kept), so
// parse_nquads(write_nquads(b)) == b for every triple read_rdf produces (quoted triples aside:
// N-Quads 1.1 cannot carry them).
void write_nquads(std::span<const schema::Triple> batch, std::string& out);

// Parses an N-Quads batch (the store's side of write_nquads): schema::parse_nquads, which
// documents the result and the errors (kInvalidRequest "N-Quads LINE:COLUMN: message").
base::Result<std::vector<schema::Triple>> parse_nquads(std::string_view text);

// The same through serd, kept as the reference schema::parse_nquads is tested against.
// Blank-node labels are kept as written (no per-file scoping: the sender already scoped them).
// Any syntax error, invalid UTF-8 included: kInvalidRequest "LINE:COLUMN: message" for the
// first one.
base::Result<std::vector<schema::Triple>> parse_nquads_with_serd(std::string_view text);

}  // namespace glassbox::loader
