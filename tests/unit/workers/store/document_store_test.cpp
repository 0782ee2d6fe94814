// Tests for the document store: idempotent puts, atomic replacement, fetch, keyword search that
// no user text can break, paging, stats, and the HotpotQA corpus end to end.
#include "tests/support/knowledge_site.hpp"
#include "workers/store/document_store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace glassbox::store {
namespace {

namespace fs = std::filesystem;
using base::ErrorType;

// Chunks of `text` every `size` code points (a test needs exact slices, not a good chunker).
std::vector<ChunkRecord> fixed_chunks(std::string_view text, std::size_t size) {
    std::vector<ChunkRecord> out;
    std::size_t byte = 0;
    std::uint64_t character = 0;
    while (byte < text.size()) {
        ChunkRecord chunk;
        chunk.ordinal = static_cast<std::uint32_t>(out.size());
        chunk.char_offset = character;
        const std::size_t start = byte;
        while (byte < text.size() && chunk.char_length < size) {
            ++byte;
            while (byte < text.size() && (static_cast<unsigned char>(text[byte]) & 0xC0U) == 0x80U)
                ++byte;
            ++chunk.char_length;
        }
        character += chunk.char_length;
        chunk.text = std::string(text.substr(start, byte - start));
        out.push_back(std::move(chunk));
    }
    return out;
}

DocumentRecord make_document(std::string uri, std::string text, std::uint32_t tier = 2) {
    DocumentRecord d;
    d.uri = std::move(uri);
    d.title = "Title of " + d.uri;
    d.source_path = "/data/docs.jsonl";
    d.media_type = "text/plain";
    d.tier = tier;
    d.loaded_at = "2026-11-22T05:00:00Z";
    d.text = std::move(text);
    return d;
}

class DocumentStoreTest : public testing::Test {
protected:
    void SetUp() override {
        auto db = store_testing::open_sqlite(":memory:");
        ASSERT_TRUE(db) << db.error().message;
        db_ = std::move(*db);
        auto store = DocumentStore::open(*db_);
        ASSERT_TRUE(store) << store.error().message;
        store_ = std::move(*store);
    }

    PutResult put(const DocumentRecord& d, const std::vector<ChunkRecord>& chunks) {
        auto r = store_->put(d, chunks);
        EXPECT_TRUE(r) << r.error().message;
        return r ? *r : PutResult{};
    }
    PutResult put(const DocumentRecord& d, std::size_t chunk_size = 20) {
        return put(d, fixed_chunks(d.text, chunk_size));
    }

    DocumentStats stats() {
        auto s = store_->stats();
        EXPECT_TRUE(s) << s.error().message;
        return s ? *s : DocumentStats{};
    }

    std::vector<std::string> keyword_uris(std::string_view query, std::uint32_t limit = 0) {
        auto r = store_->keyword(query, limit);
        EXPECT_TRUE(r) << "query [" << query << "]: " << r.error().message;
        std::vector<std::string> uris;
        if (r) {
            for (const auto& m : *r) uris.push_back(m.chunk_uri);
        }
        return uris;
    }

    std::unique_ptr<storage::sql::Connection> db_;
    std::unique_ptr<DocumentStore> store_;
};

TEST_F(DocumentStoreTest, PutAddsTheDocumentAndItsChunks) {
    const auto d = make_document("urn:glassbox:doc:a",
                                 "The caf\xC3\xA9 on the corner serves strong coffee every day.");
    const auto chunks = fixed_chunks(d.text, 20);
    ASSERT_EQ(chunks.size(), 3u);
    const PutResult r = put(d, chunks);
    EXPECT_EQ(r.outcome, PutOutcome::kAdded);
    ASSERT_EQ(r.chunk_rowids.size(), 3u);
    EXPECT_TRUE(std::is_sorted(r.chunk_rowids.begin(), r.chunk_rowids.end()));
    EXPECT_TRUE(r.removed_rowids.empty());

    auto fetched = store_->fetch_rowids(r.chunk_rowids);
    ASSERT_TRUE(fetched) << fetched.error().message;
    ASSERT_EQ(fetched->chunks.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const StoredChunk& c = fetched->chunks[i];
        EXPECT_EQ(c.rowid, r.chunk_rowids[i]);
        EXPECT_EQ(c.chunk.chunk_id, "urn:glassbox:doc:a#chunk-" + std::to_string(i));
        EXPECT_EQ(c.chunk.document_id, d.uri);
        EXPECT_EQ(c.chunk.text, chunks[i].text);
        EXPECT_EQ(c.chunk.char_offset, chunks[i].char_offset);
        EXPECT_EQ(c.chunk.char_length, chunks[i].char_length);
        EXPECT_EQ(c.chunk.ordinal, i);
        EXPECT_EQ(c.chunk.document_title, d.title);
        EXPECT_EQ(c.chunk.tier, 2u);
    }
    auto stored = store_->document(d.uri);
    ASSERT_TRUE(stored) << stored.error().message;
    EXPECT_EQ(stored->record, d);
    EXPECT_EQ(stored->chunks, 3u);
    EXPECT_EQ(stored->characters, 54u) << "code points (the text has 55 bytes)";
    EXPECT_TRUE(stored->content_hash.starts_with("sha256:"));
}

// Issue 16: a fetch stops at its byte bound as it reads, with an error saying where.
TEST_F(DocumentStoreTest, AFetchPastItsByteBoundIsAnInvalidRequest) {
    const auto d = make_document("urn:glassbox:doc:big", std::string(10'000, 'w'));
    put(d, 1'000);
    std::vector<std::string> ids;
    for (int i = 0; i < 10; ++i) ids.push_back(d.uri + "#chunk-" + std::to_string(i));
    auto all = store_->fetch(ids);
    ASSERT_TRUE(all) << all.error().message;
    EXPECT_EQ(all->chunks.size(), 10u);
    auto bounded = store_->fetch(ids, 4'000);
    ASSERT_FALSE(bounded);
    EXPECT_EQ(bounded.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(bounded.error().message.find("chunks-fetch"), std::string::npos)
        << bounded.error().message;
    EXPECT_NE(bounded.error().message.find("at chunk 4 of 10"), std::string::npos)
        << bounded.error().message;
    EXPECT_TRUE(store_->fetch(std::vector<std::string>(ids.begin(), ids.begin() + 3), 4'000));
}

TEST_F(DocumentStoreTest, ContentHashIsSha256OfTheText) {
    // FIPS 180-4 examples: empty, one block, two blocks (padding spills into a second block).
    const std::map<std::string, std::string> vectors = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}};
    int n = 0;
    for (const auto& [text, hex] : vectors) {
        const auto uri = "urn:glassbox:doc:h" + std::to_string(n++);
        put(make_document(uri, text));
        auto stored = store_->document(uri);
        ASSERT_TRUE(stored) << stored.error().message;
        EXPECT_EQ(stored->content_hash, "sha256:" + hex) << "text [" << text << "]";
    }
}

TEST_F(DocumentStoreTest, TheSamePutAgainIsANoOp) {
    const auto d =
        make_document("urn:glassbox:doc:a", "Alpha beta gamma delta epsilon zeta eta theta.");
    const PutResult first = put(d);
    auto again = d;
    again.loaded_at = "2027-01-01T00:00:00Z";
    const PutResult second = put(again);
    EXPECT_EQ(second.outcome, PutOutcome::kUnchanged);
    EXPECT_TRUE(second.chunk_rowids.empty());
    EXPECT_TRUE(second.removed_rowids.empty());
    EXPECT_EQ(store_->document(d.uri)->record.loaded_at, d.loaded_at) << "nothing was written";
    EXPECT_EQ(stats().chunks, first.chunk_rowids.size());
    EXPECT_EQ(to_string(second.outcome), "unchanged");
}

TEST_F(DocumentStoreTest, ChangedTextReplacesChunksWithNewRowids) {
    const auto d = make_document("urn:glassbox:doc:a",
                                 "Original wording about volcanoes and lava flows in Iceland.");
    const PutResult first = put(d, 100);
    const auto changed = make_document(d.uri, "Rewritten wording about glaciers and ice sheets.");
    const PutResult second = put(changed, 100);
    EXPECT_EQ(second.outcome, PutOutcome::kReplaced);
    EXPECT_EQ(second.removed_rowids, first.chunk_rowids);
    ASSERT_FALSE(second.chunk_rowids.empty());
    EXPECT_GT(second.chunk_rowids.front(), first.chunk_rowids.back()) << "rowids are never reused";
    EXPECT_EQ(stats().chunks, second.chunk_rowids.size());
    EXPECT_TRUE(keyword_uris("volcanoes").empty()) << "the old chunks left the FTS index";
    EXPECT_EQ(keyword_uris("glaciers"), std::vector<std::string>{d.uri + "#chunk-0"});
    auto old = store_->fetch_rowids(first.chunk_rowids);
    ASSERT_TRUE(old);
    EXPECT_TRUE(old->chunks.empty());
    EXPECT_EQ(old->unknown, first.chunk_rowids);

    // The same text chunked differently is a replacement too.
    const PutResult rechunked = put(changed, 10);
    EXPECT_EQ(rechunked.outcome, PutOutcome::kReplaced);
    EXPECT_EQ(rechunked.removed_rowids, second.chunk_rowids);
    EXPECT_EQ(stats().chunks, rechunked.chunk_rowids.size());
}

TEST_F(DocumentStoreTest, RowidsOfDeletedLastChunksAreNotReused) {
    const auto d =
        make_document("urn:glassbox:doc:last", "Only this document has chunks in the store.");
    const PutResult first = put(d);
    const PutResult second = put(make_document(d.uri, "Different text now."));
    EXPECT_GT(second.chunk_rowids.front(), first.chunk_rowids.back());
}

TEST_F(DocumentStoreTest, MetadataChangeKeepsTheChunks) {
    const auto d = make_document("urn:glassbox:doc:a", "Some text that stays exactly the same.");
    const PutResult first = put(d);
    auto retiered = d;
    retiered.tier = 1;
    retiered.title = "New title";
    retiered.loaded_at = "2027-01-01T00:00:00Z";
    const PutResult second = put(retiered);
    EXPECT_EQ(second.outcome, PutOutcome::kReplaced);
    EXPECT_TRUE(second.chunk_rowids.empty()) << "nothing to re-embed";
    EXPECT_TRUE(second.removed_rowids.empty());
    auto fetched = store_->fetch_rowids(first.chunk_rowids);
    ASSERT_TRUE(fetched);
    ASSERT_EQ(fetched->chunks.size(), first.chunk_rowids.size());
    EXPECT_EQ(fetched->chunks[0].chunk.tier, 1u);
    EXPECT_EQ(fetched->chunks[0].chunk.document_title, "New title");
    EXPECT_EQ(store_->document(d.uri)->record.loaded_at, "2027-01-01T00:00:00Z");
    EXPECT_EQ(stats().documents_per_tier[1], 1u);
}

TEST_F(DocumentStoreTest, BadInputIsRejectedAndNothingWritten) {
    const auto good =
        make_document("urn:glassbox:doc:keep", "A stored document that must survive.");
    const PutResult kept = put(good);
    const auto base =
        make_document("urn:glassbox:doc:keep", "Replacement text that must not land.");
    const auto chunks = fixed_chunks(base.text, 10);

    struct Case {
        std::string name;
        DocumentRecord document;
        std::vector<ChunkRecord> chunks;
    };
    std::vector<Case> cases;
    cases.push_back({"empty uri", base, chunks});
    cases.back().document.uri.clear();
    for (const std::uint32_t tier : {0u, 5u}) {
        cases.push_back({"tier " + std::to_string(tier), base, chunks});
        cases.back().document.tier = tier;
    }
    cases.push_back({"chunk beyond the text", base, chunks});
    cases.back().chunks.back().char_length += 1;
    cases.push_back({"offset beyond the text", base, chunks});
    cases.back().chunks.back().char_offset = 1'000'000;
    cases.push_back({"text not the slice", base, chunks});
    cases.back().chunks[1].text[0] = '#';
    cases.push_back({"repeated ordinal", base, chunks});
    cases.back().chunks[2].ordinal = 1;
    cases.push_back({"empty chunk", base, chunks});
    cases.back().chunks.push_back(ChunkRecord{99, 3, 0, ""});
    cases.push_back({"invalid UTF-8 text", make_document(base.uri, "bad \xC3\x28 text"), {}});
    cases.push_back({"invalid UTF-8 title", base, chunks});
    cases.back().document.title = "\xFF";
    cases.push_back({"loaded_at not a dateTime", base, chunks});
    cases.back().document.loaded_at = "yesterday";
    cases.push_back(
        {"new document, bad chunk", make_document("urn:glassbox:doc:new", "short"), {}});
    cases.back().chunks.push_back(ChunkRecord{0, 0, 6, "short"});

    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        auto r = store_->put(c.document, c.chunks);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest);
        EXPECT_FALSE(r.error().message.empty());
    }
    const DocumentStats s = stats();
    EXPECT_EQ(s.documents, 1u);
    EXPECT_EQ(s.chunks, kept.chunk_rowids.size());
    EXPECT_EQ(store_->document(good.uri)->record.text, good.text);
    EXPECT_EQ(store_->document("urn:glassbox:doc:new").error().type, ErrorType::kNotFound);
}

TEST_F(DocumentStoreTest, AFailureMidPutRollsEverythingBack) {
    const auto d =
        make_document("urn:glassbox:doc:a", "Stable text about rivers, lakes and the sea.");
    const PutResult kept = put(d, 100);
    // Fails the third chunk insert, after the document row and two chunks were written.
    ASSERT_TRUE(db_->exec(
        "CREATE TEMP TRIGGER fail_third BEFORE INSERT ON main.chunks WHEN new.ordinal = 2 "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"));
    auto replaced =
        store_->put(make_document(d.uri, "Entirely new words about mountains and deserts."),
                    fixed_chunks("Entirely new words about mountains and deserts.", 10));
    ASSERT_FALSE(replaced.ok());
    EXPECT_NE(replaced.error().message.find("injected failure"), std::string::npos)
        << replaced.error().message;
    auto added = store_->put(
        make_document("urn:glassbox:doc:b", "Another document about forests and trees."),
        fixed_chunks("Another document about forests and trees.", 10));
    ASSERT_FALSE(added.ok());

    EXPECT_EQ(store_->document(d.uri)->record.text, d.text);
    EXPECT_EQ(store_->document("urn:glassbox:doc:b").error().type, ErrorType::kNotFound);
    EXPECT_EQ(stats().chunks, kept.chunk_rowids.size());
    EXPECT_TRUE(keyword_uris("mountains forests").empty());
    EXPECT_EQ(keyword_uris("rivers").size(), 1u);
}

TEST_F(DocumentStoreTest, CallersTransactionDecidesCommitOrRollback) {
    {
        auto transaction = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
        ASSERT_TRUE(transaction);
        const auto d = make_document("urn:glassbox:doc:rolled", "Rolled back text.");
        auto r = store_->put(d, fixed_chunks(d.text, 100), TransactionMode::kCallers);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->outcome, PutOutcome::kAdded);
    }  // rolled back
    EXPECT_EQ(stats().documents, 0u);
    auto transaction = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
    ASSERT_TRUE(transaction);
    const auto d = make_document("urn:glassbox:doc:kept", "Committed text.");
    ASSERT_TRUE(store_->put(d, fixed_chunks(d.text, 100), TransactionMode::kCallers));
    auto bad = store_->put(make_document("", "x"), {}, TransactionMode::kCallers);
    EXPECT_FALSE(bad.ok());
    ASSERT_TRUE(transaction->commit());
    EXPECT_EQ(stats().documents, 1u);
    EXPECT_EQ(keyword_uris("committed"), std::vector<std::string>{"urn:glassbox:doc:kept#chunk-0"});
}

TEST_F(DocumentStoreTest, FetchAnswersInOrderAndListsUnknownIds) {
    const auto a = make_document("urn:glassbox:doc:a", "First document text is here.");
    const auto b = make_document("urn:glassbox:doc:b", "Second document text is there.", 4);
    const PutResult ra = put(a, 100);
    const PutResult rb = put(b, 100);
    const std::vector<std::string> ask = {
        "urn:glassbox:doc:b#chunk-0", "urn:glassbox:doc:nope#chunk-0", "urn:glassbox:doc:a#chunk-0",
        "urn:glassbox:doc:b#chunk-0", "urn:glassbox:doc:a#chunk-7"};
    auto got = store_->fetch(ask);
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->chunks.size(), 2u);
    EXPECT_EQ(got->chunks[0].chunk.chunk_id, ask[0]);
    EXPECT_EQ(got->chunks[0].rowid, rb.chunk_rowids[0]);
    EXPECT_EQ(got->chunks[0].chunk.tier, 4u);
    EXPECT_EQ(got->chunks[1].chunk.text, a.text);
    EXPECT_EQ(got->unknown, (std::vector<std::string>{ask[1], ask[4]}));
    const std::vector<std::int64_t> rowids = {ra.chunk_rowids[0], 999'999, ra.chunk_rowids[0]};
    auto by_rowid = store_->fetch_rowids(rowids);
    ASSERT_TRUE(by_rowid);
    ASSERT_EQ(by_rowid->chunks.size(), 1u);
    EXPECT_EQ(by_rowid->chunks[0].chunk.chunk_id, "urn:glassbox:doc:a#chunk-0");
    EXPECT_EQ(by_rowid->unknown, std::vector<std::int64_t>{999'999});
}

TEST_F(DocumentStoreTest, KeywordSearchRanksByBm25AndMatchesAnyWord) {
    put(make_document("urn:glassbox:doc:dice",
                      "Dice games use dice. Many dice, more dice, always dice."),
        1000);
    put(make_document("urn:glassbox:doc:one", "A board game with a single dice roll and cards."),
        1000);
    put(make_document("urn:glassbox:doc:cafe", "The Caf\xC3\xA9 M\xC3\xBCller serves coffee."),
        1000);
    put(make_document("urn:glassbox:doc:none", "Nothing relevant here at all."), 1000);

    auto ranked = store_->keyword("dice", 0);
    ASSERT_TRUE(ranked) << ranked.error().message;
    ASSERT_EQ(ranked->size(), 2u);
    EXPECT_EQ((*ranked)[0].chunk_uri, "urn:glassbox:doc:dice#chunk-0")
        << "more occurrences rank first";
    EXPECT_GT((*ranked)[0].score, (*ranked)[1].score);
    EXPECT_GT((*ranked)[0].rowid, 0);

    EXPECT_EQ(keyword_uris("CAFE muller"),
              std::vector<std::string>{"urn:glassbox:doc:cafe#chunk-0"})
        << "case and diacritics are folded";
    const auto partial = keyword_uris("coffee cards unicorns");
    EXPECT_EQ(
        std::set<std::string>(partial.begin(), partial.end()),
        (std::set<std::string>{"urn:glassbox:doc:cafe#chunk-0", "urn:glassbox:doc:one#chunk-0"}))
        << "any word matches";
    EXPECT_EQ(keyword_uris("the dice"), keyword_uris("dice")) << "stop-words are dropped";
    EXPECT_EQ(keyword_uris("at").size(), 1u) << "a query of stop-words only still searches";
    EXPECT_EQ(keyword_uris("dice", 1).size(), 1u);
    EXPECT_TRUE(keyword_uris("").empty());
    EXPECT_TRUE(keyword_uris("  ?! -- ").empty());
}

TEST_F(DocumentStoreTest, NoUserTextIsAnFts5SyntaxError) {
    put(make_document("urn:glassbox:doc:a", "text AND NEAR not column star caret quote"), 1000);
    const std::vector<std::string> hostile = {"\"",
                                              "\"\"",
                                              "AND",
                                              "NOT x",
                                              "x OR",
                                              "text:foo",
                                              "col : x",
                                              "foo*",
                                              "^text",
                                              "NEAR(a b)",
                                              "(",
                                              ")",
                                              "-",
                                              "'",
                                              "a\"b",
                                              "{text}: x",
                                              "text + quote",
                                              "\xFF\xFE",
                                              "\xF0\x9F\x98\x80",
                                              "\xF0\x9F\x98\x80 text",
                                              "\xE2\x80\x9Ctext\xE2\x80\x9D",
                                              std::string(10'000, 'q'),
                                              std::string(5'000, '"'),
                                              "NEAR/3",
                                              "*",
                                              "AND OR NOT",
                                              "\xE2\x82\xAC",
                                              "\xE2\x82\xAC text",
                                              "x\xE2\x82\xACy",
                                              "\xE2\x86\x92",
                                              "\x01\x02"};
    for (const std::string& q : hostile) {
        auto r = store_->keyword(q, 5);
        EXPECT_TRUE(r.ok()) << "query [" << q.substr(0, 40)
                            << "]: " << (r.ok() ? "" : r.error().message);
    }
    EXPECT_EQ(keyword_uris("text:foo").size(), 1u) << "a column filter is just two words";
    EXPECT_EQ(keyword_uris("NOT").size(), 1u) << "operators are words";
    EXPECT_EQ(fts_match_query("The \"quick\" fox, the FOX!"), "\"quick\" OR \"fox\"");
}

TEST_F(DocumentStoreTest, ChunksAfterPagesInRowidOrder) {
    put(make_document("urn:glassbox:doc:a", std::string(95, 'a')), 10);
    put(make_document("urn:glassbox:doc:b", std::string(35, 'b')), 10);
    std::vector<std::string> seen;
    std::int64_t after = 0;
    for (int pages = 0; pages < 100; ++pages) {
        auto page = store_->chunks_after(after, 3);
        ASSERT_TRUE(page) << page.error().message;
        if (page->empty()) break;
        EXPECT_LE(page->size(), 3u);
        for (const auto& c : *page) {
            EXPECT_GT(c.rowid, after);
            after = c.rowid;
            seen.push_back(c.chunk.chunk_id);
        }
    }
    ASSERT_EQ(seen.size(), 14u);
    EXPECT_EQ(seen.front(), "urn:glassbox:doc:a#chunk-0");
    EXPECT_EQ(seen[9], "urn:glassbox:doc:a#chunk-9");
    EXPECT_EQ(seen.back(), "urn:glassbox:doc:b#chunk-3");
}

TEST_F(DocumentStoreTest, StatsCountDocumentsChunksAndCharactersPerTier) {
    put(make_document("urn:glassbox:doc:a", "\xC3\xA9\xC3\xA9\xC3\xA9", 1), 1);
    put(make_document("urn:glassbox:doc:b", "bbbb", 3), 2);
    put(make_document("urn:glassbox:doc:c", "cc", 3), 2);
    const DocumentStats s = stats();
    EXPECT_EQ(s.documents, 3u);
    EXPECT_EQ(s.chunks, 3u + 2u + 1u);
    EXPECT_EQ(s.characters, 3u + 4u + 2u);
    EXPECT_EQ(s.documents_per_tier, (std::array<std::uint64_t, 5>{0, 1, 0, 2, 0}));
    EXPECT_EQ(s.chunks_per_tier, (std::array<std::uint64_t, 5>{0, 3, 0, 3, 0}));
}

TEST(DocumentStoreFile, ReopensWithItsDataAndSharesTheFileWithTheGraphStore) {
    const fs::path dir = fs::temp_directory_path() / ("gb-docstore-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path file = dir / "collection.db";
    {
        auto db = store_testing::open_sqlite(file);
        ASSERT_TRUE(db) << db.error().message;
        auto graph = GraphStore::open(**db);
        ASSERT_TRUE(graph) << graph.error().message;
        auto store = DocumentStore::open(**db);
        ASSERT_TRUE(store) << store.error().message;
        const auto d = make_document("urn:glassbox:doc:p", "Persistent words survive reopening.");
        ASSERT_TRUE((*store)->put(d, fixed_chunks(d.text, 12)));
    }
    {
        auto db = store_testing::open_sqlite(file);
        ASSERT_TRUE(db) << db.error().message;
        auto store = DocumentStore::open(**db);
        ASSERT_TRUE(store) << store.error().message;
        auto found = (*store)->keyword("reopening", 0);
        ASSERT_TRUE(found) << found.error().message;
        ASSERT_EQ(found->size(), 1u);
        EXPECT_EQ((*found)[0].chunk_uri, "urn:glassbox:doc:p#chunk-2");
        EXPECT_EQ((*store)->stats()->documents, 1u);
    }
    fs::remove_all(dir);
}

TEST(DocumentStoreCorpus, HotpotCorpusLoadsAndTitlesFindTheirDocuments) {
    const fs::path corpus = fs::path(GLASSBOX_SHARED_DATA) / "docs-hotpotqa" / "corpus.jsonl";
    if (!fs::exists(corpus)) GTEST_SKIP() << "shared data not present: " << corpus;
    auto db = store_testing::open_sqlite(":memory:");
    ASSERT_TRUE(db);
    auto store = DocumentStore::open(**db);
    ASSERT_TRUE(store);

    std::ifstream in(corpus);
    std::string line;
    std::vector<std::pair<std::string, std::string>> titles;  // uri, title
    std::uint64_t characters = 0;
    while (std::getline(in, line)) {
        const auto json = nlohmann::json::parse(line, nullptr, false);
        ASSERT_FALSE(json.is_discarded());
        DocumentRecord d;
        d.uri = "urn:glassbox:doc:" + json.at("doc_id").get<std::string>();
        d.title = json.value("title", "");
        d.text = json.at("text").get<std::string>();
        d.media_type = "text/plain";
        auto r = (*store)->put(d, fixed_chunks(d.text, 300));
        ASSERT_TRUE(r) << d.uri << ": " << r.error().message;
        ASSERT_EQ(r->outcome, PutOutcome::kAdded);
        titles.emplace_back(d.uri, d.title);
        characters += (*store)->document(d.uri)->characters;
    }
    const DocumentStats s = *(*store)->stats();
    EXPECT_EQ(s.documents, 994u);
    EXPECT_EQ(s.documents_per_tier[schema::kDefaultTier], 994u);
    EXPECT_EQ(s.characters, characters);
    EXPECT_GT(s.chunks, s.documents);

    // A distinctive title: its document's chunk comes first.
    auto demon = (*store)->keyword("Demon Dice", 5);
    ASSERT_TRUE(demon && !demon->empty());
    EXPECT_TRUE((*demon)[0].chunk_uri.starts_with("urn:glassbox:doc:hotpot-0000#chunk-"))
        << (*demon)[0].chunk_uri;

    // Over every title: the title's own document is the best match for most of them (titles
    // that are common words, like a year, legitimately match other documents better).
    std::size_t first = 0;
    for (const auto& [uri, title] : titles) {
        auto found = (*store)->keyword(title, 1);
        ASSERT_TRUE(found) << title << ": " << found.error().message;
        if (!found->empty() && (*found)[0].chunk_uri.starts_with(uri + "#chunk-")) ++first;
    }
    std::printf("[ metric ] %zu of %zu titles find their own document first\n", first,
                titles.size());
    EXPECT_GT(first * 10, titles.size() * 8)
        << first << " of " << titles.size() << " titles find their document first";

    // Reloading the corpus changes nothing.
    const auto& [uri0, title0] = titles[0];
    auto again = (*store)->document(uri0);
    ASSERT_TRUE(again);
    auto same = (*store)->put(again->record, fixed_chunks(again->record.text, 300));
    ASSERT_TRUE(same);
    EXPECT_EQ(same->outcome, PutOutcome::kUnchanged);
}

}  // namespace
}  // namespace glassbox::store
