// Chunking: split text into non-blank pieces (paragraph > sentence > word > characters), then pack
// them greedily into chunks with a word-aligned overlap.
#include "loader/chunker.hpp"

#include <algorithm>
#include <string>

namespace glassbox::loader {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

bool is_continuation(unsigned char byte) noexcept { return (byte & 0xC0U) == 0x80U; }

// Byte length of the (well-formed) code point starting at `p`.
std::size_t code_point_length(std::string_view text, std::size_t p) noexcept {
    const auto lead = static_cast<unsigned char>(text[p]);
    if (lead < 0x80U) return 1;
    if (lead < 0xE0U) return 2;
    if (lead < 0xF0U) return 3;
    return 4;
}

std::size_t previous_code_point(std::string_view text, std::size_t p) noexcept {
    do {
        --p;
    } while (p > 0 && is_continuation(static_cast<unsigned char>(text[p])));
    return p;
}

// Whitespace: ASCII white space and the Unicode White_Space code points (NEL, NBSP, the U+2000
// spaces, line and paragraph separators, ideographic space), so a chunk never starts or ends
// with any of them.
bool is_space_at(std::string_view text, std::size_t p) noexcept {
    const auto b0 = static_cast<unsigned char>(text[p]);
    if (b0 < 0x80U) return b0 == ' ' || (b0 >= '\t' && b0 <= '\r');
    const auto b1 = static_cast<unsigned char>(text[p + 1]);
    if (b0 == 0xC2U) return b1 == 0x85U || b1 == 0xA0U;
    if (b0 == 0xE1U) return b1 == 0x9AU && static_cast<unsigned char>(text[p + 2]) == 0x80U;
    if (b0 == 0xE2U) {
        const auto b2 = static_cast<unsigned char>(text[p + 2]);
        if (b1 == 0x80U) return b2 <= 0x8AU || b2 == 0xA8U || b2 == 0xA9U || b2 == 0xAFU;
        return b1 == 0x81U && b2 == 0x9FU;
    }
    if (b0 == 0xE3U) return b1 == 0x80U && static_cast<unsigned char>(text[p + 2]) == 0x80U;
    return false;
}

// A piece of text that will not be split further: [begin, end) in bytes, and in code points.
struct Piece {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::uint64_t char_begin = 0;
    std::uint64_t char_end = 0;
};

class Splitter {
public:
    Splitter(std::string_view text, std::size_t size) : text_(text), size_(size) {}

    std::vector<Piece> split() {
        // Paragraphs: runs of lines with something other than white space.
        std::size_t p = 0;
        while (p < text_.size()) {
            const std::size_t begin = skip_space(p, text_.size());
            if (begin == text_.size()) break;
            std::size_t line_end = text_.find('\n', begin);
            std::size_t paragraph_end =
                line_end == std::string_view::npos ? text_.size() : line_end;
            while (line_end != std::string_view::npos) {
                const std::size_t next_line = line_end + 1;
                const std::size_t next_end_raw = text_.find('\n', next_line);
                const std::size_t next_end =
                    next_end_raw == std::string_view::npos ? text_.size() : next_end_raw;
                if (skip_space(next_line, next_end) == next_end)
                    break;  // a blank line (or the end)
                paragraph_end = next_end;
                line_end = next_end_raw;
            }
            add_paragraph(begin, trim_end(begin, paragraph_end));
            p = paragraph_end;
        }
        return std::move(pieces_);
    }

private:
    std::size_t skip_space(std::size_t p, std::size_t end) const noexcept {
        while (p < end && is_space_at(text_, p)) p += code_point_length(text_, p);
        return p;
    }

    std::size_t trim_end(std::size_t begin, std::size_t end) const noexcept {
        while (end > begin) {
            const std::size_t last = previous_code_point(text_, end);
            if (!is_space_at(text_, last)) break;
            end = last;
        }
        return end;
    }

    // The code point index of byte `p`, counted on from the last call (pieces start in text order,
    // so the whole text is counted once).
    std::uint64_t char_at(std::size_t p) noexcept {
        cursor_chars_ += count_code_points(text_.substr(cursor_, p - cursor_));
        cursor_ = p;
        return cursor_chars_;
    }

    void add(std::size_t begin, std::size_t end, std::uint64_t char_begin, std::uint64_t char_end) {
        pieces_.push_back(Piece{begin, end, char_begin, char_end});
    }

    // [begin, end) is trimmed and non-empty in each of these.
    void add_paragraph(std::size_t begin, std::size_t end) {
        const std::uint64_t char_begin = char_at(begin);
        const std::uint64_t char_end =
            char_begin + count_code_points(text_.substr(begin, end - begin));
        if (char_end - char_begin <= size_) return add(begin, end, char_begin, char_end);
        std::size_t sentence = begin;
        std::size_t p = begin;
        while (p < end) {
            const std::size_t boundary = sentence_end_after(p, end);
            if (boundary == std::string_view::npos) {
                p += code_point_length(text_, p);
                continue;
            }
            add_sentence(sentence, trim_end(sentence, boundary));
            sentence = skip_space(boundary, end);
            p = sentence;
        }
        if (sentence < end) add_sentence(sentence, end);
    }

    // When a sentence ends with the code point at `p`: the end of the sentence (after closing
    // quotes and brackets); else npos. A line break ends a sentence too (lists, verse, headings).
    std::size_t sentence_end_after(std::size_t p, std::size_t end) const noexcept {
        const std::string_view rest = text_.substr(p, end - p);
        if (rest[0] == '\n') return p;
        bool needs_space = true;
        std::size_t q = p;
        if (rest[0] == '.' || rest[0] == '!' || rest[0] == '?') {
            q = p + 1;
        } else if (rest.starts_with("\xE3\x80\x82") || rest.starts_with("\xEF\xBC\x81") ||
                   rest.starts_with("\xEF\xBC\x9F")) {  // 。！？ end a sentence without a space
            q = p + 3;
            needs_space = false;
        } else if (rest.starts_with("\xE2\x80\xA6")) {  // …
            q = p + 3;
        } else {
            return std::string_view::npos;
        }
        for (;;) {  // closing quotes and brackets belong to the sentence
            const std::string_view after = text_.substr(q, end - q);
            if (!after.empty() &&
                (after[0] == '"' || after[0] == '\'' || after[0] == ')' || after[0] == ']')) {
                ++q;
            } else if (after.starts_with("\xE2\x80\x9D") || after.starts_with("\xE2\x80\x99") ||
                       after.starts_with("\xC2\xBB")) {  // ” ’ »
                q += after.starts_with("\xC2\xBB") ? 2 : 3;
            } else {
                break;
            }
        }
        if (q == end) return q;
        if (!needs_space || is_space_at(text_, q)) return q;
        return std::string_view::npos;
    }

    void add_sentence(std::size_t begin, std::size_t end) {
        if (begin >= end) return;
        const std::uint64_t char_begin = char_at(begin);
        const std::uint64_t char_end =
            char_begin + count_code_points(text_.substr(begin, end - begin));
        if (char_end - char_begin <= size_) return add(begin, end, char_begin, char_end);
        std::size_t p = begin;
        while (p < end) {
            const std::size_t word = skip_space(p, end);
            if (word == end) break;
            std::size_t word_end = word;
            while (word_end < end && !is_space_at(text_, word_end))
                word_end += code_point_length(text_, word_end);
            add_word(word, word_end);
            p = word_end;
        }
    }

    void add_word(std::size_t begin, std::size_t end) {
        std::uint64_t char_begin = char_at(begin);
        const std::uint64_t char_end =
            char_begin + count_code_points(text_.substr(begin, end - begin));
        if (char_end - char_begin <= size_) return add(begin, end, char_begin, char_end);
        // Last resort: `size` code points at a time.
        std::size_t p = begin;
        while (p < end) {
            std::size_t q = p;
            std::uint64_t n = 0;
            while (q < end && n < size_) {
                q += code_point_length(text_, q);
                ++n;
            }
            add(p, q, char_begin, char_begin + n);
            char_begin += n;
            p = q;
        }
    }

    std::string_view text_;
    std::size_t size_;
    std::vector<Piece> pieces_;
    std::size_t cursor_ = 0;
    std::uint64_t cursor_chars_ = 0;
};

// The earliest word start in [from_char, piece.char_begin) at or after byte `floor`, walking
// back from `piece`; nullopt when there is none.
std::optional<Piece> overlap_start(std::string_view text, const Piece& piece,
                                   std::uint64_t from_char, std::size_t floor) {
    std::optional<Piece> best;
    std::size_t p = piece.begin;
    std::uint64_t c = piece.char_begin;
    while (p > floor && c > from_char) {
        const std::size_t q = previous_code_point(text, p);
        --c;
        const bool word_start =
            !is_space_at(text, q) && (q == 0 || is_space_at(text, previous_code_point(text, q)));
        if (word_start && q >= floor) best = Piece{q, piece.end, c, piece.char_end};
        p = q;
    }
    return best;
}

}  // namespace

Result<std::vector<ChunkSpan>> chunk_text(std::string_view utf8_text, const ChunkOptions& options) {
    if (options.size == 0)
        return make_error(ErrorType::kInvalidRequest, "chunk size must be at least 1 character");
    if (options.overlap >= options.size) {
        return make_error(ErrorType::kInvalidRequest, "chunk overlap (" +
                                                          std::to_string(options.overlap) +
                                                          ") must be less than the chunk size (" +
                                                          std::to_string(options.size) + ")");
    }
    if (const auto bad = find_invalid_utf8(utf8_text)) {
        return make_error(ErrorType::kInvalidRequest,
                          "text is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
    }
    const std::vector<Piece> pieces = Splitter(utf8_text, options.size).split();

    std::vector<ChunkSpan> chunks;
    std::optional<Piece> previous;  // the previous chunk
    std::size_t i = 0;
    while (i < pieces.size()) {
        Piece chunk = pieces[i];
        if (previous && options.overlap > 0) {
            const std::uint64_t own = chunk.char_end - chunk.char_begin;
            const std::uint64_t allowed =
                std::min<std::uint64_t>(options.overlap, options.size - own);
            // Strictly after the previous chunk's start, so chunks always move forward.
            if (const auto start = overlap_start(
                    utf8_text, chunk, chunk.char_begin - std::min(allowed, chunk.char_begin),
                    previous->begin + 1)) {
                chunk.begin = start->begin;
                chunk.char_begin = start->char_begin;
            }
        }
        std::size_t j = i;
        while (j + 1 < pieces.size() && pieces[j + 1].char_end - chunk.char_begin <= options.size)
            ++j;
        chunk.end = pieces[j].end;
        chunk.char_end = pieces[j].char_end;
        chunks.push_back(ChunkSpan{chunk.char_begin, chunk.char_end - chunk.char_begin, chunk.begin,
                                   chunk.end - chunk.begin});
        previous = chunk;
        i = j + 1;
    }
    return chunks;
}

}  // namespace glassbox::loader
