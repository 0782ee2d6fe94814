// Splits a document's text into overlapping chunks for retrieval: paragraphs first, then
// sentences, then words, then (one enormous word) characters — never inside a UTF-8 sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "base/utf8.hpp"

namespace glassbox::loader {

// Characters = Unicode code points throughout (the unit of schema::Chunk::char_offset).
inline constexpr std::size_t kDefaultChunkSize = 1000;    // characters per chunk, at most
inline constexpr std::size_t kDefaultChunkOverlap = 100;  // characters shared by neighbours, about

struct ChunkOptions {
    // The most characters a chunk holds; at least 1.
    std::size_t size = kDefaultChunkSize;
    // About how many characters a chunk repeats from the end of the one before it: the overlap
    // starts at the first word boundary at most `overlap` characters before the chunk's own
    // text (so it is never more than `overlap`, and 0 when no boundary lies that close); less
    // when the chunk's first piece is nearly `size` long, so no chunk exceeds `size`; never
    // reaching back past the previous chunk's start. Must be less than `size`.
    std::size_t overlap = kDefaultChunkOverlap;
};

// A chunk as a slice of the text: text.substr(byte_offset, byte_length) is the chunk, and it
// starts at code point char_offset and holds char_length code points. A chunk never starts or
// ends with whitespace.
struct ChunkSpan {
    std::uint64_t char_offset = 0;
    std::uint64_t char_length = 0;
    std::size_t byte_offset = 0;
    std::size_t byte_length = 0;
    bool operator==(const ChunkSpan&) const = default;
};

// The chunks of `utf8_text`, in order. Pieces (paragraphs separated by blank lines; a paragraph
// longer than `size` split into sentences; a sentence longer than `size` into words; a word
// longer than `size` at code-point boundaries) are packed greedily into chunks of at most `size`
// characters, each chunk after the first starting with its overlap. Whitespace-only or empty
// text gives no chunks. Invalid UTF-8, size 0 or overlap >= size is kInvalidRequest.
base::Result<std::vector<ChunkSpan>> chunk_text(std::string_view utf8_text,
                                                const ChunkOptions& options = {});

// The project's UTF-8 checks (schema/utf8.hpp), named here too for the loader's callers.
using base::count_code_points;
using base::find_invalid_utf8;

}  // namespace glassbox::loader
