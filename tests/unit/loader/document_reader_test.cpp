// Tests for the document readers: formats, titles, URIs, folder walks, errors with file:line,
// streaming, and the HotpotQA corpus through the reader and the chunker.
#include "loader/document_reader.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "loader/chunker.hpp"

namespace glassbox::loader {
namespace {

namespace fs = std::filesystem;

// A unique folder under the system temp directory, removed with everything in it.
class TempDir {
public:
    TempDir() {
        const auto* info = testing::UnitTest::GetInstance()->current_test_info();
        path_ = fs::temp_directory_path() /
                ("gb-docreader-" + std::to_string(::getpid()) + "-" + info->name());
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }
    fs::path write(const fs::path& relative, std::string_view content) const {
        const fs::path file = path_ / relative;
        fs::create_directories(file.parent_path());
        std::ofstream(file, std::ios::binary) << content;
        return file;
    }

private:
    fs::path path_;
};

struct Collected {
    std::vector<ReadDocument> documents;
    std::vector<std::pair<fs::path, std::string>> skipped;
    base::Result<ReadSummary> summary = ReadSummary{};
};

Collected read_all(const fs::path& path, ReadOptions options = {}) {
    Collected out;
    options.on_skip = [&](const fs::path& skipped, std::string_view why) {
        out.skipped.emplace_back(skipped, std::string(why));
    };
    out.summary = read_documents(path, options, [&](ReadDocument&& document) -> base::Result<void> {
        out.documents.push_back(std::move(document));
        return {};
    });
    return out;
}

TEST(DocumentReader, TextFileIsOneDocumentTitledByItsFirstLine) {
    TempDir dir;
    const auto file =
        dir.write("my notes #1 caf\xC3\xA9.txt", "\xEF\xBB\xBF\n\n   First line here  \nsecond\n");
    const auto got = read_all(file);
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    ASSERT_EQ(got.documents.size(), 1u);
    const ReadDocument& d = got.documents[0];
    EXPECT_EQ(d.title, "First line here");
    EXPECT_EQ(d.text, "\n\n   First line here  \nsecond\n")
        << "the byte-order mark is dropped, nothing else";
    EXPECT_EQ(d.media_type, kMediaTypeText);
    EXPECT_EQ(d.line, 0u);
    EXPECT_EQ(d.path, file);
    const std::string expected_uri =
        "file://" + dir.path().generic_string() + "/my%20notes%20%231%20caf%C3%A9.txt";
    EXPECT_EQ(d.uri, expected_uri);
    EXPECT_EQ(got.summary->files, 1u);
    EXPECT_EQ(got.summary->documents, 1u);
}

TEST(DocumentReader, FileUriIsAbsoluteAndNormal) {
    EXPECT_EQ(file_uri("/srv/x/./y/../a b+c.txt"), "file:///srv/x/a%20b%2Bc.txt");
    const std::string relative = file_uri("a/./b/../c d.txt");
    EXPECT_TRUE(relative.starts_with("file:///")) << relative;
    EXPECT_TRUE(relative.ends_with("/a/c%20d.txt")) << relative;
    EXPECT_EQ(jsonl_document_uri("hotpot/0001 x#y"), "urn:glassbox:doc:hotpot%2F0001%20x%23y");
}

TEST(DocumentReader, EmptyTextFileIsTitledByItsName) {
    TempDir dir;
    const auto got = read_all(dir.write("empty.txt", "  \n"));
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    ASSERT_EQ(got.documents.size(), 1u);
    EXPECT_EQ(got.documents[0].title, "empty.txt");
}

TEST(DocumentReader, MarkdownTitleIsTheFirstLevelOneHeading) {
    TempDir dir;
    const auto heading =
        dir.write("a.md",
                  "---\ntitle: front\n---\nIntro line\n```sh\n# not a heading\n```\n"
                  "## Second level\n#hashtag\n  # The Title ##\nbody\n");
    const auto first_line = dir.write("b.MD", "\n  Just text\n## sub\n");
    const auto nothing = dir.write("c.markdown", "");
    const auto got = read_all(dir.path());
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    ASSERT_EQ(got.documents.size(), 3u);
    EXPECT_EQ(got.documents[0].title, "The Title");
    EXPECT_EQ(got.documents[0].media_type, kMediaTypeMarkdown);
    EXPECT_EQ(got.documents[1].title, "Just text");
    EXPECT_EQ(got.documents[2].title, "c.markdown");
}

TEST(DocumentReader, TitlesAreCappedAtACodePointBoundary) {
    TempDir dir;
    std::string line;
    for (int i = 0; i < 50; ++i) line += "\xC3\xA9";  // é
    ReadOptions options;
    options.max_title_chars = 7;
    const auto got = read_all(dir.write("t.txt", line), options);
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    ASSERT_EQ(got.documents.size(), 1u);
    EXPECT_EQ(got.documents[0].title.size(), 14u);
    EXPECT_EQ(find_invalid_utf8(got.documents[0].title), std::nullopt);
}

TEST(DocumentReader, FolderIsWalkedInSortedOrderSkippingHiddenAndUnsupported) {
    TempDir dir;
    dir.write("z.txt", "z");
    dir.write("b/inner.md", "# inner");
    dir.write("a.txt", "a");
    dir.write("b/c/deep.txt", "deep");
    dir.write(".hidden.txt", "hidden");
    dir.write(".git/config.txt", "hidden folder");
    dir.write("image.png", "png");
    dir.write("b/notes.docx", "docx");
    const auto got = read_all(dir.path());
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    std::vector<std::string> titles;
    for (const auto& d : got.documents) titles.push_back(d.title);
    EXPECT_EQ(titles, (std::vector<std::string>{"a", "deep", "inner", "z"}));
    std::vector<std::string> skipped;
    for (const auto& [path, why] : got.skipped)
        skipped.push_back(path.filename().string() + ": " + why);
    ASSERT_EQ(skipped.size(), 4u);
    EXPECT_EQ(skipped[0], ".git: hidden");
    EXPECT_EQ(skipped[1], ".hidden.txt: hidden");
    EXPECT_TRUE(skipped[2].starts_with("notes.docx: unsupported extension")) << skipped[2];
    EXPECT_TRUE(skipped[3].starts_with("image.png: unsupported extension")) << skipped[3];
    EXPECT_EQ(got.summary->files, 4u);
    EXPECT_EQ(got.summary->skipped, 4u);
}

TEST(DocumentReader, JsonlGivesOneDocumentPerLine) {
    TempDir dir;
    const auto file = dir.write(
        "c.jsonl",
        "{\"doc_id\": \"d/1\", \"title\": \" First \", \"text\": \"one\", \"extra\": [1]}\n"
        "\n"
        "{\"doc_id\": \"d2\", \"text\": \"two \\u00e9\"}\r\n"
        "{\"doc_id\": \"d3\", \"title\": null, \"text\": \"three\"}");
    const auto got = read_all(file);
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    ASSERT_EQ(got.documents.size(), 3u);
    EXPECT_EQ(got.documents[0].uri, "urn:glassbox:doc:d%2F1");
    EXPECT_EQ(got.documents[0].title, "First");
    EXPECT_EQ(got.documents[0].text, "one");
    EXPECT_EQ(got.documents[0].line, 1u);
    EXPECT_EQ(got.documents[1].title, "d2") << "no title: the doc_id";
    EXPECT_EQ(got.documents[1].text, "two \xC3\xA9");
    EXPECT_EQ(got.documents[1].line, 3u);
    EXPECT_EQ(got.documents[2].line, 4u) << "a last line without a newline is read";
    EXPECT_EQ(got.documents[2].path, file);
}

TEST(DocumentReader, BadJsonlLinesNameFileLineAndWhy) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{\"doc_id\": \"x\", \"text\": ", "not JSON"},
        {"[1, 2]", "expected a JSON object, got array"},
        {"{\"text\": \"t\"}", "\"doc_id\" is missing"},
        {"{\"doc_id\": 7, \"text\": \"t\"}", "\"doc_id\" must be a string, got number"},
        {"{\"doc_id\": \"  \", \"text\": \"t\"}", "\"doc_id\" is empty"},
        {"{\"doc_id\": \"x\"}", "\"text\" is missing"},
        {"{\"doc_id\": \"x\", \"text\": {\"a\": 1}}", "\"text\" must be a string, got object"},
        {"{\"doc_id\": \"x\", \"text\": \"t\", \"title\": 3}",
         "\"title\" must be a string, got number"},
        {"{\"doc_id\": \"ok\", \"text\": \"again\"}", "doc_id \"ok\" repeats line 1"},
        {"{\"doc_id\": \"x\", \"text\": \"bad \xC3\x28\"}",
         "not valid UTF-8 (byte 30 of the line)"},
    };
    TempDir dir;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE(cases[i].first);
        const auto file =
            dir.write("bad" + std::to_string(i) + ".jsonl",
                      "{\"doc_id\": \"ok\", \"text\": \"fine\"}\n" + cases[i].first + "\n");
        const auto got = read_all(file);
        ASSERT_FALSE(got.summary.ok());
        EXPECT_EQ(got.summary.error().type, base::ErrorType::kInvalidRequest);
        const std::string& message = got.summary.error().message;
        EXPECT_TRUE(message.starts_with(file.string() + ":2: ")) << message;
        EXPECT_NE(message.find(cases[i].second), std::string::npos) << message;
        EXPECT_EQ(got.documents.size(), 1u) << "the good line before the bad one was passed on";
    }
}

TEST(DocumentReader, InvalidUtf8InATextFileNamesTheLine) {
    TempDir dir;
    const auto file = dir.write("bad.md", "# Title\nfine\nbro\xFFken\n");
    const auto got = read_all(file);
    ASSERT_FALSE(got.summary.ok());
    EXPECT_EQ(got.summary.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_EQ(got.summary.error().message,
              file.string() + ":3: not valid UTF-8 (byte 4 of the line)");
    EXPECT_EQ(got.summary.error().place, (base::ErrorPlace{file.string(), 3, 0}));
    EXPECT_TRUE(got.documents.empty());
}

TEST(DocumentReader, MissingPathAndUnsupportedFileAreErrors) {
    TempDir dir;
    const auto missing = read_all(dir.path() / "nope.txt");
    ASSERT_FALSE(missing.summary.ok());
    EXPECT_EQ(missing.summary.error().type, base::ErrorType::kNotFound);
    EXPECT_NE(missing.summary.error().message.find("nope.txt"), std::string::npos);
    const auto unsupported = read_all(dir.write("x.pdf", "%PDF"));
    ASSERT_FALSE(unsupported.summary.ok());
    EXPECT_EQ(unsupported.summary.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(unsupported.summary.error().message.find("unsupported extension"), std::string::npos);
}

TEST(DocumentReader, JsonlIsStreamedSoOnlyALineIsBounded) {
    TempDir dir;
    std::string content;
    for (int i = 0; i < 2000; ++i) {
        content += "{\"doc_id\": \"d" + std::to_string(i) + "\", \"text\": \"" +
                   std::string(100, 'x') + "\"}\n";
    }
    ReadOptions options;
    options.max_document_bytes = 1024;  // far below the file's size (~250 KB)
    const auto got = read_all(dir.write("big.jsonl", content), options);
    ASSERT_TRUE(got.summary.ok()) << got.summary.error().message;
    EXPECT_EQ(got.documents.size(), 2000u);

    const auto long_line = dir.write(
        "long.jsonl", "{\"doc_id\": \"a\", \"text\": \"a\"}\n{\"doc_id\": \"b\", \"text\": \"" +
                          std::string(200'000, 'y') + "\"}\n");
    const auto too_long = read_all(long_line, options);
    ASSERT_FALSE(too_long.summary.ok());
    EXPECT_TRUE(too_long.summary.error().message.starts_with(long_line.string() +
                                                             ":2: line longer than 1024 bytes"))
        << too_long.summary.error().message;
    const auto big_file = read_all(dir.write("big.txt", std::string(5000, 'z')), options);
    ASSERT_FALSE(big_file.summary.ok());
    EXPECT_NE(big_file.summary.error().message.find("larger than 1024 bytes"), std::string::npos);
}

TEST(DocumentReader, AnErrorFromTheCallbackStopsTheRead) {
    TempDir dir;
    dir.write("1.txt", "one");
    dir.write("2.txt", "two");
    int calls = 0;
    const auto result = read_documents(dir.path(), {}, [&](ReadDocument&&) -> base::Result<void> {
        ++calls;
        return base::make_error(base::ErrorType::kInternal, "store is full");
    });
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().message, "store is full");
    EXPECT_EQ(calls, 1);
}

TEST(DocumentReader, HotpotCorpusChunksSliceTheirText) {
    const fs::path corpus = fs::path(GLASSBOX_SHARED_DATA) / "docs-hotpotqa" / "corpus.jsonl";
    if (!fs::exists(corpus)) GTEST_SKIP() << "shared data not present: " << corpus;
    std::size_t documents = 0;
    std::size_t chunks = 0;
    std::size_t multi_chunk = 0;
    std::set<std::string> uris;
    const auto result = read_documents(corpus, {}, [&](ReadDocument&& d) -> base::Result<void> {
        ++documents;
        uris.insert(d.uri);
        EXPECT_TRUE(d.uri.starts_with("urn:glassbox:doc:hotpot-")) << d.uri;
        EXPECT_FALSE(d.title.empty());
        for (const ChunkOptions options :
             {ChunkOptions{}, ChunkOptions{.size = 300, .overlap = 50}}) {
            auto spans = chunk_text(d.text, options);
            EXPECT_TRUE(spans.ok());
            if (!spans.ok()) return spans.error();
            EXPECT_FALSE(spans->empty()) << d.uri;
            if (spans->size() > 1 && options.size == 300) ++multi_chunk;
            for (const ChunkSpan& span : *spans) {
                ++chunks;
                // Character offsets, walked independently of the byte offsets, reach the same text.
                std::size_t byte = 0;
                for (std::uint64_t c = 0; c < span.char_offset; ++c) {
                    ++byte;
                    while (byte < d.text.size() &&
                           (static_cast<unsigned char>(d.text[byte]) & 0xC0U) == 0x80U)
                        ++byte;
                }
                EXPECT_EQ(byte, span.byte_offset);
                const std::string piece = d.text.substr(span.byte_offset, span.byte_length);
                EXPECT_EQ(count_code_points(piece), span.char_length);
                EXPECT_LE(span.char_length, options.size);
            }
        }
        return {};
    });
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(documents, 994u);
    EXPECT_EQ(result->documents, 994u);
    EXPECT_EQ(uris.size(), 994u);
    EXPECT_GT(multi_chunk, 100u) << "size 300 should split many of the paragraphs";
    EXPECT_GE(chunks, documents);
}

}  // namespace
}  // namespace glassbox::loader
