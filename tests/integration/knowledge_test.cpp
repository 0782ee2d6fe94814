// The knowledge layer end to end: `glassbox load`, `query`, `graph stats` against a real broker,
// store and embeddings workers, on the shared evaluation data and on bad input.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kSharedData = GLASSBOX_SHARED_DATA;

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The statement lines of an N-Triples file (neither blank nor a comment), as written.
std::vector<std::string> statement_lines(const fs::path& path) {
    std::vector<std::string> lines;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) {
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        lines.push_back(line.substr(first));
    }
    return lines;
}

// The first whitespace-separated token of an N-Triples line (its subject, for IRIs).
std::string first_token(const std::string& line) { return line.substr(0, line.find(' ')); }

// Byte offset of code point `index` in UTF-8 `text`.
std::size_t byte_of_char(const std::string& text, std::uint64_t index) {
    std::size_t byte = 0;
    for (std::uint64_t seen = 0; byte < text.size(); ++byte) {
        if ((static_cast<unsigned char>(text[byte]) & 0xC0) != 0x80) {
            if (seen == index) return byte;
            ++seen;
        }
    }
    return byte;
}

class KnowledgeTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        const auto home = (dir() / "store-home").string();
        start_process("embeddings",
                      {glassbox_binary(), "worker", "embeddings", "--broker", broker_.endpoint,
                       "--heartbeat-ms", std::to_string(kHeartbeatMs)});
        start_process("store", {glassbox_binary(), "worker", "store", "--broker", broker_.endpoint,
                                "--home", home, "--heartbeat-ms", std::to_string(kHeartbeatMs)});
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "embeddings"));
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    }

    CommandResult glassbox(std::vector<std::string> args,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds{120'000}) {
        args.push_back("--broker");
        args.push_back(broker_.endpoint);
        return run_glassbox(std::move(args), timeout);
    }

    json glassbox_json(std::vector<std::string> args) {
        args.push_back("--json");
        const auto r = glassbox(args);
        EXPECT_TRUE(exited_with(r, 0)) << r.err;
        auto parsed = json::parse(r.out, nullptr, false);
        EXPECT_FALSE(parsed.is_discarded()) << r.out;
        return parsed;
    }

    json stats(const std::string& collection = "default") {
        return glassbox_json({"graph", "stats", "--collection", collection});
    }

    fs::path write(const std::string& name, const std::string& text) {
        auto path = dir() / name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }

    RunningBroker broker_;
};

TEST_F(KnowledgeTest, PathQuestionGraphLoadsExactlyAndAnswersPatterns) {
    const auto kb = kSharedData / "kg-pathquestion" / "kb.nt";
    const auto labels = kSharedData / "kg-pathquestion" / "labels.nt";
    if (!fs::exists(kb) || !fs::exists(labels))
        GTEST_SKIP() << "no ../shared/data/kg-pathquestion here";
    const auto kb_lines = statement_lines(kb);
    const auto label_lines = statement_lines(labels);
    const std::set<std::string> distinct_kb(kb_lines.begin(), kb_lines.end());
    std::set<std::string> distinct_all = distinct_kb;
    distinct_all.insert(label_lines.begin(), label_lines.end());

    const auto loaded = glassbox_json({"load", "rdf", kb.string(), labels.string(), "--tier", "1"});
    EXPECT_EQ(loaded["statements"], kb_lines.size() + label_lines.size());
    EXPECT_EQ(loaded["added"], distinct_all.size());
    EXPECT_GT(loaded["entities_indexed"].get<int>(), 0);
    auto counted = stats();
    EXPECT_EQ(counted["quads"], distinct_all.size());
    EXPECT_EQ(counted["facts_per_tier"]["1"], distinct_all.size());
    EXPECT_EQ(counted["entity_vectors"], loaded["entities_indexed"]);

    // Loading the same files again adds nothing.
    const auto again = glassbox_json({"load", "rdf", kb.string(), labels.string(), "--tier", "1"});
    EXPECT_EQ(again["added"], 0);
    EXPECT_EQ(again["present"], kb_lines.size() + label_lines.size());
    EXPECT_EQ(stats()["quads"], distinct_all.size());

    // For sample subjects, the store returns exactly the file's edges of that subject.
    std::map<std::string, std::set<std::string>> edges;
    for (const auto& line : distinct_kb) edges[first_token(line)].insert(line);
    std::vector<std::string> samples;
    for (const auto& [subject, lines] : edges) {
        if (samples.size() < 5 && lines.size() >= 2 && subject.front() == '<')
            samples.push_back(subject);
    }
    ASSERT_FALSE(samples.empty());
    for (const auto& subject : samples) {
        const auto r = glassbox({"query", "triples", "-s", subject, "--limit", "10000"});
        ASSERT_TRUE(exited_with(r, 0)) << r.err;
        std::set<std::string> got;
        std::istringstream out(r.out);
        std::string line;
        while (std::getline(out, line)) {
            if (!line.empty()) got.insert(line);
        }
        // labels.nt may add rdfs:label lines for the same subject; the kb edges must all be there.
        for (const auto& edge : edges[subject])
            EXPECT_TRUE(got.count(edge)) << subject << " lacks " << edge;
    }

    // Every fact resolves to the file it came from, with the tier it was loaded at.
    const json probe{{"op", "fact-sources"},
                     {"triples", glassbox_json({"query", "triples", "-s", samples[0]})["triples"]}};
    const auto sources = glassbox({"call", "store", probe.dump()});
    ASSERT_TRUE(exited_with(sources, 0)) << sources.err;
    // `glassbox call` prints one JSON line per reply; the last is the FINAL.
    std::string last_line;
    std::istringstream reply_lines(sources.out);
    for (std::string l; std::getline(reply_lines, l);) {
        if (!l.empty()) last_line = l;
    }
    const auto final_line = json::parse(last_line, nullptr, false);
    ASSERT_TRUE(final_line.is_object()) << sources.out;
    for (const auto& per_fact : final_line["body"]["sources"]) {
        ASSERT_FALSE(per_fact.empty());
        bool from_kb = false;
        for (const auto& s : per_fact) {
            EXPECT_EQ(s["tier"], 1);
            EXPECT_EQ(s["kind"], "file");
            from_kb = from_kb ||
                      s["source"].get<std::string>().find("kb.nt") != std::string::npos ||
                      s["source"].get<std::string>().find("labels.nt") != std::string::npos;
        }
        EXPECT_TRUE(from_kb) << per_fact.dump();
    }
}

TEST_F(KnowledgeTest, HotpotDocumentsLoadWithChunkOffsetsThatPointAtTheirText) {
    const auto corpus = kSharedData / "docs-hotpotqa" / "corpus.jsonl";
    if (!fs::exists(corpus)) GTEST_SKIP() << "no ../shared/data/docs-hotpotqa here";
    std::map<std::string, json> documents;  // doc_id -> line
    std::istringstream lines(read_file(corpus));
    std::string line;
    while (std::getline(lines, line)) {
        auto doc = json::parse(line, nullptr, false);
        if (doc.is_object()) documents[doc["doc_id"].get<std::string>()] = doc;
    }
    const auto loaded =
        glassbox_json({"load", "docs", corpus.string(), "--collection", "hotpot", "--tier", "2"});
    EXPECT_EQ(loaded["documents"], documents.size());
    EXPECT_EQ(loaded["documents_added"], documents.size());
    const auto counted = stats("hotpot");
    EXPECT_EQ(counted["documents"], documents.size());
    EXPECT_EQ(counted["chunks"], loaded["chunks"]);
    EXPECT_EQ(counted["chunk_vectors"], counted["chunks"]);

    // A keyword search for a document's title finds a chunk whose offsets slice its document.
    int checked = 0;
    for (const auto& [doc_id, doc] : documents) {
        if (checked == 20) break;
        if (doc.value("title", "").size() < 6) continue;
        ++checked;
        const auto found =
            glassbox_json({"query", "chunks", doc["title"].get<std::string>(), "--mode", "keyword",
                           "--collection", "hotpot", "--limit", "50"});
        ASSERT_FALSE(found["chunks"].empty()) << doc["title"];
        for (const auto& chunk : found["chunks"]) {
            const std::string document_id = chunk["document_id"];
            const std::string id = document_id.substr(std::string("urn:glassbox:doc:").size());
            const auto source = documents.find(id);
            if (source == documents.end()) continue;  // a percent-encoded id: checked by unit tests
            const std::string text = source->second["text"];
            const auto begin = byte_of_char(text, chunk["char_offset"]);
            const auto end = byte_of_char(text, chunk["char_offset"].get<std::uint64_t>() +
                                                    chunk["char_length"].get<std::uint64_t>());
            EXPECT_EQ(text.substr(begin, end - begin), chunk["text"].get<std::string>())
                << chunk["chunk_id"];
            EXPECT_EQ(chunk["tier"], 2);
        }
    }
    EXPECT_EQ(checked, 20);

    // Vector and hybrid search answer too, from the same chunks.
    const auto first = documents.begin()->second;
    for (const char* mode : {"vector", "hybrid"}) {
        const auto found =
            glassbox_json({"query", "chunks", first["text"].get<std::string>().substr(0, 200),
                           "--mode", mode, "--collection", "hotpot"});
        ASSERT_FALSE(found["chunks"].empty()) << mode;
        EXPECT_EQ(found["chunks"][0]["document_id"],
                  "urn:glassbox:doc:" + first["doc_id"].get<std::string>())
            << mode << ": " << found.dump();
    }
    // Loading again changes nothing.
    const auto again =
        glassbox_json({"load", "docs", corpus.string(), "--collection", "hotpot", "--tier", "2"});
    EXPECT_EQ(again["documents_unchanged"], documents.size());
    EXPECT_EQ(stats("hotpot")["chunks"], counted["chunks"]);
}

TEST_F(KnowledgeTest, BadFilesLoadNothingAndSayWhere) {
    const auto good = write("good.nt", "<urn:a> <urn:p> <urn:b> .\n<urn:b> <urn:p> \"x\" .\n");
    ASSERT_TRUE(exited_with(glassbox({"load", "rdf", good.string()}), 0));
    const auto before = stats();
    ASSERT_EQ(before["quads"], 2);

    // A syntax error on line 3: nothing of that file (or the good file before it) is loaded.
    const auto broken = write(
        "broken.nt", "<urn:c> <urn:p> <urn:d> .\n<urn:d> <urn:p> <urn:e> .\n<urn:e> <urn:p> .\n");
    auto r = glassbox({"load", "rdf", good.string(), broken.string()});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("broken.nt:3:"), std::string::npos) << r.err;
    EXPECT_EQ(stats()["quads"], 2);

    const auto bad_utf8 = write("bad-utf8.nt", "<urn:c> <urn:p> \"caf\xC3\x28\" .\n");
    r = glassbox({"load", "rdf", bad_utf8.string()});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("bad-utf8.nt:1:"), std::string::npos) << r.err;

    const auto unknown = write("data.xyz", "<urn:c> <urn:p> <urn:d> .\n");
    r = glassbox({"load", "rdf", unknown.string()});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
    r = glassbox({"load", "rdf", unknown.string(), "--format", "ntriples"});
    EXPECT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_EQ(stats()["quads"], 3);

    r = glassbox({"load", "rdf", (dir() / "missing.nt").string()});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("missing.nt"), std::string::npos) << r.err;

    const auto empty = write("empty.nt", "");
    r = glassbox({"load", "rdf", empty.string()});
    EXPECT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;

    // --lenient loads the good lines (<urn:c> <urn:p> <urn:d> is already there) and reports the bad
    // one.
    r = glassbox({"load", "rdf", broken.string(), "--lenient"});
    EXPECT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_NE(r.err.find("broken.nt:3:"), std::string::npos) << r.err;
    EXPECT_EQ(stats()["quads"], 4);

    const auto bad_jsonl =
        write("bad.jsonl", "{\"doc_id\": \"a\", \"text\": \"fine\"}\n{\"doc_id\": 7}\n");
    r = glassbox({"load", "docs", bad_jsonl.string()});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("bad.jsonl:2"), std::string::npos) << r.err;
    EXPECT_EQ(stats()["documents"], 0);

    // The store still serves after all of it.
    EXPECT_EQ(stats()["quads"], 4);
}

TEST_F(KnowledgeTest, QueriesWithInvalidTermsOrCollectionsGetTypedErrors) {
    const auto good =
        write("good.ttl",
              "@prefix ex: <http://example.org/> .\nex:a ex:p \"caf\xC3\xA9\"@fr ; ex:q 5 .\n");
    ASSERT_TRUE(exited_with(glassbox({"load", "rdf", good.string()}), 0));

    auto r = glassbox({"query", "triples", "-o", "\"café\"@fr"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_NE(r.out.find("<http://example.org/a> <http://example.org/p> \"caf\xC3\xA9\"@fr ."),
              std::string::npos)
        << r.out;
    r = glassbox({"query", "triples", "-p", "http://example.org/q", "-o",
                  "\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_NE(r.out.find("<http://example.org/a>"), std::string::npos) << r.out;

    r = glassbox({"query", "triples", "-s", "<not an iri"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("InvalidRequest"), std::string::npos) << r.err;
    r = glassbox({"query", "triples", "-p", "\"literal\""});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    r = glassbox({"query", "triples", "--collection", "../etc"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    r = glassbox({"query", "triples", "--collection", "never-loaded"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("NotFound"), std::string::npos) << r.err;

    // Raw bodies with wrong shapes get typed errors from the service itself.
    r = glassbox({"call", "store", R"({"op":"triples","s":{"t":"i"}})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    r = glassbox({"call", "store", R"({"op":"teleport"})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("unknown op"), std::string::npos) << r.err;
    r = glassbox({"call", "store",
                  R"({"op":"load-triples","source":{"uri":"urn:x"},"nquads":"<a> <b> ."})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_EQ(stats()["quads"], 2);
}

// The last FINAL body `glassbox call` printed.
json final_body(const CommandResult& r) {
    std::string last;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) {
        if (!l.empty()) last = l;
    }
    const auto parsed = json::parse(last, nullptr, false);
    return parsed.is_object() ? parsed.value("body", json()) : json();
}

TEST_F(KnowledgeTest, AStagedLoadIsInvisibleUntilCommittedAndAFailedOneLeavesNoFactOrSource) {
    const auto base = write("base.nt", "<urn:a> <urn:p> <urn:b> .\n");
    ASSERT_TRUE(exited_with(glassbox({"load", "rdf", base.string(), "--no-index"}), 0));
    const auto before = stats();

    // New facts in the first file, a syntax error in the second: neither the facts nor the first
    // file's source are stored, though the first file's batches were staged before the error.
    std::string fresh;
    for (int i = 0; i < 40; ++i)
        fresh += "<urn:n" + std::to_string(i) + "> <urn:p> \"v" + std::to_string(i) + "\" .\n";
    const auto good = write("fresh.nt", fresh);
    const auto broken = write("broken.nt", "<urn:c> <urn:p> <urn:d> .\n<urn:d> <urn:p> .\n");
    auto r = glassbox(
        {"load", "rdf", good.string(), broken.string(), "--batch-size", "7", "--no-index"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("broken.nt:2:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was loaded"), std::string::npos) << r.err;
    auto after = stats();
    EXPECT_EQ(after["quads"], before["quads"]);
    EXPECT_EQ(after["sources"], before["sources"]);

    // The service's staged ops directly: staged batches count nothing until load-commit.
    const json staged_batch{
        {"op", "load-triples"},
        {"load", "it-load-1"},
        {"source", {{"uri", "urn:it:file"}, {"tier", 2}}},
        {"nquads",
         "<urn:x> <urn:p> <urn:y> .\n<urn:x> <urn:p> <urn:y> .\n<urn:a> <urn:p> <urn:b> .\n"}};
    r = glassbox({"call", "store", staged_batch.dump()});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_EQ(final_body(r), (json{{"statements", 3}, {"added", 0}, {"present", 0}}));
    EXPECT_EQ(stats()["quads"], before["quads"]);
    r = glassbox({"call", "store", R"({"op":"load-commit","load":"it-load-1"})"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_EQ(final_body(r), (json{{"statements", 3}, {"added", 1}, {"present", 2}}));
    after = stats();
    EXPECT_EQ(after["quads"], before["quads"].get<int>() + 1);
    EXPECT_EQ(after["facts_per_tier"]["2"], 2)
        << "<urn:a> <urn:p> <urn:b> is now also from a tier-2 source";

    // Aborted: nothing to commit afterwards. Bad names and missing fields are typed errors.
    auto again = staged_batch;
    again["load"] = "it-load-2";
    again["nquads"] = "<urn:z> <urn:p> <urn:y> .\n";
    ASSERT_TRUE(exited_with(glassbox({"call", "store", again.dump()}), 0));
    ASSERT_TRUE(
        exited_with(glassbox({"call", "store", R"({"op":"load-abort","load":"it-load-2"})"}), 0));
    r = glassbox({"call", "store", R"({"op":"load-commit","load":"it-load-2"})"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_EQ(final_body(r)["added"], 0);
    EXPECT_EQ(stats()["quads"], after["quads"]);
    r = glassbox({"call", "store", R"({"op":"load-commit","load":"no good"})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("InvalidRequest"), std::string::npos) << r.err;
    r = glassbox({"call", "store", R"({"op":"load-commit"})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
}

TEST_F(KnowledgeTest, OneLoadSpreadOverTwoStoreWorkersCommitsExactly) {
    const auto home = (dir() / "store-home").string();
    start_process("store-2", {glassbox_binary(), "worker", "store", "--broker", broker_.endpoint,
                              "--home", home, "--heartbeat-ms", std::to_string(kHeartbeatMs)});
    std::string text;
    std::set<std::string> distinct;
    for (int i = 0; i < 120; ++i) {
        const std::string line = "<urn:s" + std::to_string(i % 30) + "> <urn:p" +
                                 std::to_string(i % 4) + "> <urn:o" + std::to_string(i % 11) +
                                 "> .";
        text += line + "\n";
        distinct.insert(line);
    }
    const auto file = write("spread.nt", text);
    // One statement per request, so both workers take batches of the same staged load.
    const auto loaded =
        glassbox_json({"load", "rdf", file.string(), "--batch-size", "1", "--no-index"});
    EXPECT_EQ(loaded["statements"], 120);
    EXPECT_EQ(loaded["added"], distinct.size());
    EXPECT_EQ(loaded["present"], 120 - distinct.size());
    EXPECT_EQ(stats()["quads"], distinct.size());
    const auto reloaded =
        glassbox_json({"load", "rdf", file.string(), "--batch-size", "1", "--no-index"});
    EXPECT_EQ(reloaded["added"], 0);
    EXPECT_EQ(reloaded["present"], 120);
    const auto answer = glassbox_json({"query", "triples", "-p", "urn:p1", "--limit", "1000"});
    std::size_t expected = 0;
    for (const auto& line : distinct) expected += line.find("<urn:p1>") != std::string::npos;
    EXPECT_EQ(answer["triples"].size(), expected);
}

// One batch whose text passes the broker's message limit (16 MiB) goes out as several requests
// of one staged load: nothing is refused, every literal arrives whole.
TEST_F(KnowledgeTest, ABatchOfHugeLiteralsTravelsAsSeveralRequests) {
    std::string text;
    constexpr int kTriples = 48;
    for (int i = 0; i < kTriples; ++i) {
        // 400 KB each, ending in escaped quotes; 19 MB in all, in one batch of 50,000.
        const std::string value(400'000, static_cast<char>('a' + i % 26));
        text +=
            "<urn:doc" + std::to_string(i) + "> <urn:text> \"" + value + "\\\"quoted\\\" end\" .\n";
    }
    const auto file = write("huge-literals.nt", text);
    const auto loaded = glassbox_json({"load", "rdf", file.string(), "--no-index"});
    EXPECT_EQ(loaded["statements"], kTriples);
    EXPECT_EQ(loaded["added"], kTriples);
    EXPECT_EQ(stats()["quads"], kTriples);
    const auto answer = glassbox_json({"query", "triples", "-s", "urn:doc7", "--limit", "10"});
    ASSERT_EQ(answer["triples"].size(), 1u);
    const std::string value = answer["triples"][0]["o"]["v"].get<std::string>();
    EXPECT_EQ(value.size(), 400'000u + std::string("\"quoted\" end").size());
    EXPECT_TRUE(value.ends_with("\"quoted\" end")) << value.substr(value.size() - 20);
}

// entities-batch answers each vector with its own list, exactly as `entities` answers that
// vector alone; a vector of another dimension is a typed error.
TEST_F(KnowledgeTest, EntitiesBatchAnswersEachVectorAsEntitiesDoesAlone) {
    const auto ttl =
        write("people.ttl",
              "@prefix ex: <http://example.org/> .\n"
              "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
              "ex:ada rdfs:label \"Ada Lovelace\" ; ex:knows ex:charles .\n"
              "ex:charles rdfs:label \"Charles Babbage\" .\n"
              "ex:engine rdfs:label \"Analytical Engine\" ; ex:designer ex:charles .\n");
    ASSERT_TRUE(exited_with(glassbox({"load", "rdf", ttl.string()}), 0));
    const json texts{{"texts", {"Ada Lovelace", "Analytical Engine", "Babbage"}}};
    auto r = glassbox({"call", "embeddings", texts.dump()});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    const json vectors = final_body(r)["vectors"];
    ASSERT_EQ(vectors.size(), 3u);

    r = glassbox({"call", "store",
                  json{{"op", "entities-batch"}, {"vectors", vectors}, {"limit", 2}}.dump()});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    const json results = final_body(r)["results"];
    ASSERT_EQ(results.size(), 3u) << r.out;
    for (std::size_t i = 0; i < vectors.size(); ++i) {
        r = glassbox({"call", "store",
                      json{{"op", "entities"}, {"vectors", {vectors[i]}}, {"limit", 2}}.dump()});
        ASSERT_TRUE(exited_with(r, 0)) << r.err;
        EXPECT_EQ(results[i], final_body(r)["entities"]) << i;
        EXPECT_EQ(results[i].size(), 2u) << i;
    }
    EXPECT_NE(results[0][0]["entity"].dump().find("http://example.org/ada"), std::string::npos)
        << results[0];
    EXPECT_NE(results[1][0]["entity"].dump().find("http://example.org/engine"), std::string::npos)
        << results[1];
    EXPECT_NE(results[2][0]["entity"].dump().find("http://example.org/charles"), std::string::npos)
        << results[2];

    r = glassbox({"call", "store", R"({"op":"entities-batch","vectors":[],"limit":2})"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_EQ(final_body(r)["results"], json::array());
    r = glassbox({"call", "store", R"({"op":"entities-batch","vectors":[[1.0,0.0]],"limit":2})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("InvalidRequest"), std::string::npos) << r.err;
    r = glassbox({"call", "store", R"({"op":"entities-batch","vectors":[["x"]]})"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
}

}  // namespace
}  // namespace glassbox::integration
