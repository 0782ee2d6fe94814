// Tests for the chunker: the split hierarchy, UTF-8 safety, and properties over random texts.
#include "loader/chunker.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace glassbox::loader {
namespace {

bool is_ascii_space(char ch) { return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'; }

std::string slice(std::string_view text, const ChunkSpan& span) {
    return std::string(text.substr(span.byte_offset, span.byte_length));
}

std::vector<ChunkSpan> chunks_of(std::string_view text, ChunkOptions options) {
    auto chunks = chunk_text(text, options);
    EXPECT_TRUE(chunks.ok()) << chunks.error().message;
    return chunks.ok() ? *chunks : std::vector<ChunkSpan>{};
}

// Every property the header promises, for texts whose only white space is ASCII.
void expect_chunk_properties(std::string_view text, const ChunkOptions& options) {
    const auto chunks = chunks_of(text, options);
    std::vector<bool> covered(text.size(), false);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const ChunkSpan& c = chunks[i];
        SCOPED_TRACE("chunk " + std::to_string(i));
        ASSERT_LE(c.byte_offset + c.byte_length, text.size());
        const std::string piece = slice(text, c);
        ASSERT_FALSE(piece.empty());
        EXPECT_EQ(find_invalid_utf8(piece), std::nullopt) << "a chunk split a UTF-8 sequence";
        EXPECT_EQ(count_code_points(text.substr(0, c.byte_offset)), c.char_offset);
        EXPECT_EQ(count_code_points(piece), c.char_length);
        EXPECT_LE(c.char_length, options.size);
        EXPECT_FALSE(is_ascii_space(piece.front()));
        EXPECT_FALSE(is_ascii_space(piece.back()));
        for (std::size_t b = c.byte_offset; b < c.byte_offset + c.byte_length; ++b)
            covered[b] = true;
        if (i > 0) {
            const ChunkSpan& p = chunks[i - 1];
            EXPECT_GT(c.char_offset, p.char_offset);
            EXPECT_GT(c.char_offset + c.char_length, p.char_offset + p.char_length);
            const std::uint64_t previous_end = p.char_offset + p.char_length;
            const std::uint64_t overlap =
                previous_end > c.char_offset ? previous_end - c.char_offset : 0;
            EXPECT_LE(overlap, options.overlap);
            if (overlap > 0) {
                EXPECT_TRUE(is_ascii_space(text[c.byte_offset - 1]))
                    << "the overlap starts mid-word";
            }
        }
    }
    for (std::size_t b = 0; b < text.size(); ++b) {
        if (!covered[b]) {
            ASSERT_TRUE(is_ascii_space(text[b]))
                << "byte " << b << " of non-blank text is in no chunk";
        }
    }
}

TEST(Chunker, BlankTextHasNoChunks) {
    EXPECT_TRUE(chunks_of("", {}).empty());
    EXPECT_TRUE(chunks_of(" \n\t\r\n  \n", {}).empty());
    EXPECT_TRUE(chunks_of("\xC2\xA0\xE3\x80\x80\xE2\x80\xA8", {}).empty())
        << "NBSP, ideographic space, LS";
}

TEST(Chunker, ShortTextIsOneTrimmedChunk) {
    const std::string text = "\n\n  Hello, world. Second sentence.  \n";
    const auto chunks = chunks_of(text, {});
    ASSERT_EQ(chunks.size(), 1u);
    EXPECT_EQ(slice(text, chunks[0]), "Hello, world. Second sentence.");
    EXPECT_EQ(chunks[0].char_offset, 4u);
}

TEST(Chunker, ParagraphsAreKeptWholeWhenTheyFit) {
    std::string a;
    std::string b;
    for (int i = 0; i < 60; ++i) a += "alpha " + std::to_string(i) + ". ";
    for (int i = 0; i < 60; ++i) b += "beta " + std::to_string(i) + ". ";
    a.pop_back();
    b.pop_back();
    const std::string text = a + "\n \n" + b;
    const auto chunks = chunks_of(text, {.size = 1000, .overlap = 0});
    ASSERT_EQ(chunks.size(), 2u);
    EXPECT_EQ(slice(text, chunks[0]), a);
    EXPECT_EQ(slice(text, chunks[1]), b);
}

TEST(Chunker, LongParagraphSplitsAtSentenceEnds) {
    std::string text;
    for (int i = 0; i < 40; ++i) text += "Sentence number " + std::to_string(i) + " ends here. ";
    const auto chunks = chunks_of(text, {.size = 100, .overlap = 0});
    ASSERT_GT(chunks.size(), 5u);
    for (const auto& c : chunks) {
        const std::string piece = slice(text, c);
        EXPECT_TRUE(piece.starts_with("Sentence")) << piece;
        EXPECT_TRUE(piece.ends_with("here.")) << piece;
    }
}

TEST(Chunker, SentenceEndsKeepClosingQuotesAndCjkFullStops) {
    const std::string text =
        "He said \"stop.\" Then he left. \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x80\x82"
        "\xE6\x96\x87\xE3\x80\x82";  // 日本語。文。
    const auto chunks = chunks_of(text, {.size = 16, .overlap = 0});
    std::vector<std::string> pieces;
    for (const auto& c : chunks) pieces.push_back(slice(text, c));
    ASSERT_FALSE(pieces.empty());
    EXPECT_EQ(pieces[0], "He said \"stop.\"");
    EXPECT_EQ(pieces.back(),
              "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x80\x82\xE6\x96\x87\xE3\x80\x82");
}

TEST(Chunker, LongSentenceSplitsAtWords) {
    std::string text;
    for (int i = 0; i < 200; ++i) text += "word" + std::to_string(i) + (i % 7 == 0 ? ",  " : " ");
    const auto chunks = chunks_of(text, {.size = 60, .overlap = 0});
    ASSERT_GT(chunks.size(), 10u);
    for (const auto& c : chunks) {
        EXPECT_TRUE(c.byte_offset == 0 || is_ascii_space(text[c.byte_offset - 1]));
        const std::size_t end = c.byte_offset + c.byte_length;
        EXPECT_TRUE(end == text.size() || is_ascii_space(text[end]));
    }
    expect_chunk_properties(text, {.size = 60, .overlap = 0});
}

TEST(Chunker, EnormousWordSplitsAtCodePoints) {
    std::string text(2500, 'x');
    text += " ";
    for (int i = 0; i < 2500; ++i) text += "\xC3\xA9";  // é, 2 bytes
    text += " ";
    for (int i = 0; i < 1500; ++i) text += "\xF0\x9F\x98\x80";  // 😀, 4 bytes
    const auto chunks = chunks_of(text, {.size = 1000, .overlap = 100});
    ASSERT_EQ(chunks.size(), 3u + 3u + 2u);
    EXPECT_EQ(chunks[0].char_length, 1000u);
    EXPECT_EQ(chunks[2].char_length, 500u);
    EXPECT_EQ(chunks[3].char_offset, 2501u);
    EXPECT_EQ(chunks[3].byte_length, 2000u);
    expect_chunk_properties(text, {.size = 1000, .overlap = 100});
}

TEST(Chunker, NeighboursOverlapFromAWordStart) {
    std::string text;
    for (int i = 0; i < 300; ++i) text += "token" + std::to_string(i % 17) + " ";
    const ChunkOptions options{.size = 200, .overlap = 50};
    const auto chunks = chunks_of(text, options);
    ASSERT_GT(chunks.size(), 5u);
    for (std::size_t i = 1; i < chunks.size(); ++i) {
        const std::uint64_t previous_end = chunks[i - 1].char_offset + chunks[i - 1].char_length;
        ASSERT_LT(chunks[i].char_offset, previous_end) << "chunk " << i << " does not overlap";
        // Words are at most 8 characters, so a word start lies within any 9-character window.
        EXPECT_GE(previous_end - chunks[i].char_offset, 50u - 9u);
    }
    expect_chunk_properties(text, options);
}

TEST(Chunker, RejectsBadOptionsAndInvalidUtf8) {
    auto zero = chunk_text("text", {.size = 0, .overlap = 0});
    ASSERT_FALSE(zero.ok());
    EXPECT_EQ(zero.error().type, base::ErrorType::kInvalidRequest);
    auto overlap = chunk_text("text", {.size = 10, .overlap = 10});
    ASSERT_FALSE(overlap.ok());
    EXPECT_EQ(overlap.error().type, base::ErrorType::kInvalidRequest);
    auto invalid = chunk_text("abc \xE2\x82 def", {});
    ASSERT_FALSE(invalid.ok());
    EXPECT_EQ(invalid.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(invalid.error().message.find("byte 4"), std::string::npos) << invalid.error().message;
}

TEST(Chunker, FindsIllFormedUtf8) {
    EXPECT_EQ(find_invalid_utf8("plain \xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9"), std::nullopt);
    EXPECT_EQ(find_invalid_utf8("a\xC0\xAF"), 1u) << "overlong";
    EXPECT_EQ(find_invalid_utf8("ab\xE0\x80\xAF"), 2u) << "overlong 3-byte";
    EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u) << "surrogate";
    EXPECT_EQ(find_invalid_utf8("x\xF4\x90\x80\x80"), 1u) << "above U+10FFFF";
    EXPECT_EQ(find_invalid_utf8("xy\xE2\x82"), 2u) << "truncated";
    EXPECT_EQ(find_invalid_utf8("\x80"), 0u) << "stray continuation";
    EXPECT_EQ(find_invalid_utf8("\xFF"), 0u);
    EXPECT_EQ(count_code_points("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), 4u);
}

TEST(Chunker, PropertiesHoldOnRandomMultiByteTexts) {
    const std::vector<std::string> words = {"the",
                                            "a",
                                            "chunk",
                                            "caf\xC3\xA9",
                                            "na\xC3\xAFve",
                                            "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
                                            "\xF0\x9F\x98\x80",
                                            "\xD0\xBC\xD0\xB8\xD1\x80",
                                            "end.",
                                            "stop!",
                                            "why?",
                                            "\"quoted.\"",
                                            "(aside)",
                                            "\xE6\x96\x87\xE3\x80\x82",
                                            "long-hyphenated-compound-word",
                                            "x"};
    std::mt19937 random(20261122);
    for (int round = 0; round < 300; ++round) {
        std::string text;
        const int length = std::uniform_int_distribution<int>(0, 600)(random);
        for (int i = 0; i < length; ++i) {
            const int kind = std::uniform_int_distribution<int>(0, 99)(random);
            if (kind < 3) {
                text += "\n\n";
            } else if (kind < 6) {
                text += "\n";
            } else if (kind < 7) {
                text += std::string(std::uniform_int_distribution<std::size_t>(1, 90)(random), 'w');
            } else if (kind < 8) {
                text += "  \t";
            } else {
                text +=
                    words[std::uniform_int_distribution<std::size_t>(0, words.size() - 1)(random)];
                text += " ";
            }
        }
        const std::size_t size = std::uniform_int_distribution<std::size_t>(1, 300)(random);
        const std::size_t overlap = std::uniform_int_distribution<std::size_t>(0, size - 1)(random);
        SCOPED_TRACE("round " + std::to_string(round) + " size " + std::to_string(size) +
                     " overlap " + std::to_string(overlap));
        expect_chunk_properties(text, {.size = size, .overlap = overlap});
        if (testing::Test::HasFatalFailure()) return;
    }
}

TEST(Chunker, DefaultsPackNearlyFullChunks) {
    std::string text;
    for (int i = 0; i < 2000; ++i)
        text += "Word" + std::to_string(i % 50) + (i % 12 == 11 ? ". " : " ");
    const auto chunks = chunks_of(text, {});
    ASSERT_GT(chunks.size(), 10u);
    for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
        EXPECT_GT(chunks[i].char_length, kDefaultChunkSize * 8 / 10)
            << "chunk " << i << " is under-filled";
    }
    expect_chunk_properties(text, {});
}

}  // namespace
}  // namespace glassbox::loader
