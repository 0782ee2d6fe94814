// Reads documents for `glassbox load docs`: .txt, .md and .jsonl files, or a folder of them
// (recursive), one document at a time, with their URIs, titles and full texts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::loader {

// Document URIs:
//  - a .txt or .md file: its file:// URI (absolute, lexically normal path; every byte outside
//    RFC 3986 unreserved characters and '/' percent-encoded), e.g. file:///data/my%20notes.md;
//  - a line of a .jsonl file: urn:glassbox:doc:<doc_id percent-encoded the same way, '/' too>.
// Chunk URIs: the document's URI + "#chunk-<ordinal>" (ordinal from 0). The store names chunks
// (store::chunk_uri); the fragment cannot clash with the document part, where '#' is encoded.
inline constexpr std::string_view kDocumentUrnPrefix = "urn:glassbox:doc:";

// "file://" + the absolute, lexically normal path, percent-encoded.
std::string file_uri(const std::filesystem::path& path);
// kDocumentUrnPrefix + the percent-encoded doc_id.
std::string jsonl_document_uri(std::string_view doc_id);

// Formats, chosen by extension (case-insensitive).
inline constexpr std::string_view kMediaTypeText = "text/plain";         // .txt; and .jsonl texts
inline constexpr std::string_view kMediaTypeMarkdown = "text/markdown";  // .md, .markdown

struct ReadDocument {
    std::string uri;
    // .txt: the first non-empty line; .md: the first "# " heading outside code fences, else the
    // first non-empty line; .jsonl: "title" when present and non-empty, else the doc_id. Trimmed
    // and cut to ReadOptions::max_title_chars characters; the file name when nothing else.
    std::string title;
    std::string text;            // valid UTF-8; a leading byte-order mark removed
    std::string media_type;      // kMediaTypeText or kMediaTypeMarkdown
    std::filesystem::path path;  // the file read (as found under the given path)
    std::uint64_t line = 0;      // the .jsonl line (from 1); 0 for a whole file
};

// Called for each file or folder entry left out of a folder read, with why ("hidden",
// "unsupported extension", "not a regular file").
using SkipFn = std::function<void(const std::filesystem::path& path, std::string_view why)>;
// Called with each document, in order. An error stops the read and is returned by it.
using DocumentFn = std::function<base::Result<void>(ReadDocument&& document)>;

struct ReadOptions {
    std::size_t max_title_chars = 200;
    // A file (.txt/.md) or .jsonl line larger than this is an error naming it (memory stays
    // bounded: .jsonl files are streamed line by line, whatever their size).
    std::size_t max_document_bytes = std::size_t{64} << 20;
    SkipFn on_skip;  // may be empty
};

struct ReadSummary {
    std::uint64_t files = 0;      // files read
    std::uint64_t documents = 0;  // documents passed to on_document
    std::uint64_t skipped = 0;    // entries passed to on_skip
    bool operator==(const ReadSummary&) const = default;
};

// Reads `path`: a supported file, or a folder walked recursively in sorted (byte-wise path)
// order, where hidden entries (names starting with '.') and unsupported extensions are skipped
// with a note. Errors (kNotFound for a missing path, kInvalidRequest otherwise) name the file —
// and the line, for invalid UTF-8 or a bad .jsonl line (not JSON, not an object, doc_id or text
// missing, empty or not a string, title not a string), with why. Documents before the error
// have already been passed on. A named file with an unsupported extension is an error.
base::Result<ReadSummary> read_documents(const std::filesystem::path& path,
                                         const ReadOptions& options, const DocumentFn& on_document);

}  // namespace glassbox::loader
