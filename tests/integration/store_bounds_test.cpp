// Issue 16, points 3, 9, 10, 11 end to end: the store bounds the work of one request and
// answers with typed errors while it keeps serving; loads of empty, huge and bad input say
// what happened. Real broker and store worker processes on loopback.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

// The peak resident set of a process (VmHWM), in bytes; 0 if it cannot be read.
std::uint64_t peak_rss_bytes(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
}

// The terminal message of a list (an empty one if none came).
GbcMessage terminal_of(const std::vector<GbcMessage>& replies) {
    return !replies.empty() && replies.back().terminal() ? replies.back() : GbcMessage{};
}

class StoreBoundsTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        const auto home = (dir() / "store-home").string();
        store_ = &start_process(
            "store", {glassbox_binary(), "worker", "store", "--broker", broker_.endpoint, "--home",
                      home, "--heartbeat-ms", std::to_string(kHeartbeatMs)});
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{60'000}) {
        args.push_back("--broker");
        args.push_back(broker_.endpoint);
        return run_glassbox(std::move(args), timeout);
    }

    fs::path write(const std::string& name, const std::string& text) {
        auto path = dir() / name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }

    // `triples` statements of about `literal_bytes` each, loaded (not indexed).
    void load_graph(int triples, std::size_t literal_bytes) {
        std::string text;
        for (int i = 0; i < triples; ++i) {
            text += "<urn:s" + std::to_string(i) + "> <urn:p" + std::to_string(i % 7) + "> \"" +
                    std::string(literal_bytes, static_cast<char>('a' + i % 26)) + "\" .\n";
        }
        const auto r = glassbox({"load", "rdf", write("graph.nt", text).string(), "--no-index"});
        ASSERT_TRUE(exited_with(r, 0)) << r.err;
    }

    static std::string batch_body(std::size_t patterns, std::uint32_t limit) {
        json body{{"op", "triples-batch"}, {"limit", limit}, {"patterns", json::array()}};
        for (std::size_t i = 0; i < patterns; ++i) body["patterns"].push_back(json::object());
        return body.dump();
    }

    RunningBroker broker_;
    ChildProcess* store_ = nullptr;
};

// The issue's requests: 300 empty patterns × limit 1000 (a 61 MB reply, 407 MB of store memory,
// WorkerLost) and 50,000 patterns (the store grew to 23 GB). Now typed errors naming the bound,
// the store stays small, and it answers the next request.
TEST_F(StoreBoundsTest, TriplesBatchAboveItsBoundsIsATypedErrorAndTheStoreKeepsServing) {
    load_graph(3'000, 200);
    GbcClient client(context_, broker_.endpoint);

    auto wide =
        terminal_of(client.call("store", batch_body(300, 1'000), 30'000, milliseconds{40'000}));
    ASSERT_TRUE(wide.is_error()) << wide.describe();
    EXPECT_EQ(wide.error_type, "InvalidRequest");
    EXPECT_NE(wide.message.find("max_rows"), std::string::npos) << wide.message;
    EXPECT_NE(wide.message.find("300 patterns"), std::string::npos) << wide.message;

    auto many =
        terminal_of(client.call("store", batch_body(50'000, 0), 30'000, milliseconds{40'000}));
    ASSERT_TRUE(many.is_error()) << many.describe();
    EXPECT_EQ(many.error_type, "InvalidRequest");
    EXPECT_NE(many.message.find("max_patterns"), std::string::npos) << many.message;

    // Within the row bound but not the reply's: 150 × 1,000 triples of ~270 bytes is ~40 MB.
    auto big =
        terminal_of(client.call("store", batch_body(150, 1'000), 30'000, milliseconds{40'000}));
    ASSERT_TRUE(big.is_error()) << big.describe();
    EXPECT_EQ(big.error_type, "InvalidRequest");
    EXPECT_NE(big.message.find("max_reply_bytes"), std::string::npos) << big.message;

    // A single `triples` answer streams in messages under the bus limit.
    auto streamed =
        client.call("store", R"({"op":"triples","limit":3000})", 30'000, milliseconds{40'000});
    ASSERT_TRUE(terminal_of(streamed).is_final()) << terminal_of(streamed).describe();
    std::size_t triples = 0;
    for (const auto& m : streamed) {
        EXPECT_LT(m.body.size(), 12u << 20);
        if (m.command == 0x02 || m.command == 0x03) triples += m.json()["triples"].size();
    }
    EXPECT_EQ(triples, 3'000u);

    // Still serving, and it never held the answers it refused.
    auto next = terminal_of(client.call("store", batch_body(3, 5), 10'000));
    ASSERT_TRUE(next.is_final()) << next.describe();
    EXPECT_EQ(next.json()["results"].size(), 3u);
    EXPECT_EQ(next.json()["results"][0].size(), 5u);
    const auto peak = peak_rss_bytes(store_->pid());
    ASSERT_GT(peak, 0u);
    EXPECT_LT(peak, 200u << 20) << "the store worker peaked at " << (peak >> 20) << " MiB";
}

// Issue 33: triples-batch with "labels" answers, beside each triple, the labels the `labels`
// operation gives its terms; a wrong "labels" is a DecodeError, and labels past the reply's
// bytes are an InvalidRequest like the triples' own.
TEST_F(StoreBoundsTest, TriplesBatchLabelsAreTheLabelsOperationsAndTyped) {
    const std::string label = "<http://www.w3.org/2000/01/rdf-schema#label>";
    const auto file =
        write("labelled.nt",
              "<urn:e1> " + label + " \"Erde\"@de .\n" + "<urn:e1> " + label + " \"Earth\"@en .\n" +
                  "<urn:e2> " + label + " \"plain two\" .\n" + "<urn:rel> " + label +
                  " \"related\"@en-GB .\n" + "<urn:e1> <urn:rel> <urn:e2> .\n" +
                  "<urn:e1> <urn:rel> <http://x.org/a#e3> .\n" +
                  "<urn:e2> <urn:name> \"Zwei\"@de .\n" + "_:b <urn:rel> <urn:e1> .\n");
    const auto loaded = glassbox({"load", "rdf", file.string(), "--no-index"});
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    GbcClient client(context_, broker_.endpoint);
    json body{{"op", "triples-batch"},
              {"labels", true},
              {"patterns",
               {{{"s", {{"t", "i"}, {"i", "urn:e1"}}}},
                {{"p", {{"t", "i"}, {"i", "urn:rel"}}}},
                {{"o", {{"t", "i"}, {"i", "urn:never"}}}},
                {{"s", {{"t", "i"}, {"i", "urn:e2"}}}}}}};
    auto batch = terminal_of(client.call("store", body.dump(), 10'000));
    ASSERT_TRUE(batch.is_final()) << batch.describe();
    const auto reply = batch.json();
    ASSERT_EQ(reply["results"].size(), 4u);
    ASSERT_EQ(reply["labels"].size(), 4u);
    json terms = json::array();
    json labels = json::array();
    for (std::size_t i = 0; i < 4; ++i) {
        ASSERT_EQ(reply["labels"][i].size(), 3 * reply["results"][i].size()) << i;
        for (const auto& t : reply["results"][i]) {
            for (const char* part : {"s", "p", "o"}) terms.push_back(t[part]);
        }
        for (const auto& l : reply["labels"][i]) labels.push_back(l);
    }
    EXPECT_EQ(terms.size(), 3u * 9u);
    auto named =
        terminal_of(client.call("store", json{{"op", "labels"}, {"terms", terms}}.dump(), 10'000));
    ASSERT_TRUE(named.is_final()) << named.describe();
    EXPECT_EQ(named.json()["labels"], labels);
    for (const char* expected : {"Earth", "plain two", "related", "e3", "Zwei"})
        EXPECT_NE(labels.dump().find(std::string("\"") + expected + "\""), std::string::npos)
            << expected << " in " << labels.dump();

    // Without the option, the reply is what it was: no labels.
    body.erase("labels");
    auto plain = terminal_of(client.call("store", body.dump(), 10'000));
    ASSERT_TRUE(plain.is_final()) << plain.describe();
    EXPECT_FALSE(plain.json().contains("labels"));
    EXPECT_EQ(plain.json()["results"], reply["results"]);

    body["labels"] = "yes";
    auto wrong = terminal_of(client.call("store", body.dump(), 10'000));
    ASSERT_TRUE(wrong.is_error()) << wrong.describe();
    EXPECT_EQ(wrong.error_type, "DecodeError");
    EXPECT_NE(wrong.message.find("labels"), std::string::npos) << wrong.message;

    // Twelve edges into a node whose label is 1 MB: small triples, 12 MB of labels.
    std::string big = "<urn:big> " + label + " \"" + std::string(1 << 20, 'b') + "\" .\n";
    for (int i = 0; i < 12; ++i) big += "<urn:in" + std::to_string(i) + "> <urn:to> <urn:big> .\n";
    const auto loaded_big =
        glassbox({"load", "rdf", write("big-label.nt", big).string(), "--no-index"});
    ASSERT_TRUE(exited_with(loaded_big, 0)) << loaded_big.err;
    const json into_big{{"op", "triples-batch"},
                        {"labels", true},
                        {"patterns", {{{"p", {{"t", "i"}, {"i", "urn:to"}}}}}}};
    auto too_big = terminal_of(client.call("store", into_big.dump(), 10'000));
    ASSERT_TRUE(too_big.is_error()) << too_big.describe();
    EXPECT_EQ(too_big.error_type, "InvalidRequest");
    EXPECT_NE(too_big.message.find("triples-batch"), std::string::npos) << too_big.message;
    EXPECT_NE(too_big.message.find("max_reply_bytes"), std::string::npos) << too_big.message;
    json without_labels = into_big;
    without_labels["labels"] = false;
    auto fits = terminal_of(client.call("store", without_labels.dump(), 10'000));
    ASSERT_TRUE(fits.is_final()) << fits.describe();
    EXPECT_EQ(fits.json()["results"][0].size(), 12u);
}

// Issue 16, point 11: through the bus, text that is not N-Quads is InvalidRequest naming its
// line, a load is all or nothing, and a load without its text is refused rather than loading
// nothing successfully.
TEST_F(StoreBoundsTest, LoadTriplesRefusesTextThatIsNotNQuadsAndStoresNothingOfIt) {
    GbcClient client(context_, broker_.endpoint);
    const auto load = [&](json body) {
        body["op"] = "load-triples";
        body["collection"] = "probe";
        body["source"] = {{"uri", "urn:probe:file"}};
        return terminal_of(client.call("store", body.dump(), 10'000));
    };
    auto word = load({{"nquads", "xxxxx"}});
    ASSERT_TRUE(word.is_error()) << word.describe();
    EXPECT_EQ(word.error_type, "InvalidRequest");
    EXPECT_NE(word.message.find("N-Quads 1:1"), std::string::npos) << word.message;

    auto junk = load({{"nquads", "<urn:a> <urn:b> <urn:c> .\n%%%% junk"}});
    ASSERT_TRUE(junk.is_error()) << junk.describe();
    EXPECT_EQ(junk.error_type, "InvalidRequest");
    EXPECT_NE(junk.message.find("N-Quads 2:1"), std::string::npos) << junk.message;

    // The text under another key used to answer {"statements": 0}.
    for (const char* key : {"triples", "text", "ntriples"}) {
        auto misnamed = load({{key, "<urn:a> <urn:b> <urn:c> ."}});
        ASSERT_TRUE(misnamed.is_error()) << key << ": " << misnamed.describe();
        EXPECT_EQ(misnamed.error_type, "InvalidRequest");
        EXPECT_NE(misnamed.message.find("nquads"), std::string::npos) << misnamed.message;
    }

    // Nothing of those requests is stored: the collection was never even created.
    auto stats =
        terminal_of(client.call("store", R"({"op":"stats","collection":"probe"})", 10'000));
    ASSERT_TRUE(stats.is_error()) << stats.describe();
    EXPECT_EQ(stats.error_type, "NotFound");

    // And an error quoting bytes that are not UTF-8 (a file's path, serd's message) is valid UTF-8.
    const auto bad = write(
        "bad\xFF"
        "escape.nt",
        "<urn:a> <urn:b> \"\\\xC3\xA9\" .\n");
    const auto r = glassbox({"load", "rdf", bad.string(), "--no-index"});
    EXPECT_TRUE(exited_with(r, 2)) << r.err;
    EXPECT_NE(r.err.find("bad\\xFFescape.nt:1:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\xFF'), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("\\\xC3"), std::string::npos) << "a lone lead byte of 'é': " << r.err;
}

// Issue 16, point 9: an empty file loaded into a new collection loads zero statements and says
// so (it used to exit 2: "NotFound: the data is stored but indexing failed").
TEST_F(StoreBoundsTest, AnEmptyFileIntoANewCollectionLoadsNothingAndSaysSo) {
    const auto nt = write("empty.nt", "");
    const auto ttl = write("empty.ttl", "# only a comment\n@prefix ex: <http://example.org/> .\n");
    int n = 0;
    for (const auto& file : {nt, ttl}) {
        const std::string collection = "fresh" + std::to_string(n++);
        auto r = glassbox({"load", "rdf", file.string(), "--collection", collection});
        EXPECT_TRUE(exited_with(r, 0)) << file << ": " << r.err;
        EXPECT_NE(r.out.find("loaded 0 statements"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("nothing was loaded"), std::string::npos) << r.out;
        r = glassbox({"load", "rdf", file.string(), "--collection", collection, "--json"});
        EXPECT_TRUE(exited_with(r, 0)) << r.err;
        const auto summary = json::parse(r.out, nullptr, false);
        ASSERT_TRUE(summary.is_object()) << r.out;
        EXPECT_EQ(summary["statements"], 0);
    }
    const auto jsonl = write("empty.jsonl", "");
    auto r = glassbox({"load", "docs", jsonl.string(), "--collection", "fresh-docs"});
    EXPECT_TRUE(exited_with(r, 0)) << r.err;
    EXPECT_NE(r.out.find("loaded 0 documents"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("nothing was loaded"), std::string::npos) << r.out;
}

// Issue 16, point 10: a statement too large for one request is refused by the loader, naming
// the file, the line and the limit, before anything is sent (a 50 MB literal used to print
// "BrokerRestarted", a 20 MB one "MessageTooLarge" without a place); statements that each fit
// are sent in requests that each fit.
TEST_F(StoreBoundsTest, AStatementTooLargeForARequestIsNamedWithItsFileAndLine) {
    for (const std::size_t megabytes : {20u, 50u}) {
        const std::string name = "literal-" + std::to_string(megabytes) + "mb.nt";
        const auto file = write(name, "<urn:a> <urn:p> \"small\" .\n<urn:big> <urn:text> \"" +
                                          std::string(megabytes << 20, 'x') + "\" .\n");
        const auto r =
            glassbox({"load", "rdf", file.string(), "--no-index"}, milliseconds{120'000});
        EXPECT_TRUE(exited_with(r, 2)) << r.err;
        EXPECT_NE(r.err.find(name + ":2:"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("statement too large"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("12582912"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("BrokerRestarted"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("MessageTooLarge"), std::string::npos) << r.err;
    }
    // Three 5.5 MB statements: each fits, any two together pass 12 MiB; one batch of the
    // reader becomes three requests (two in one request used to pass 16 MiB).
    std::string text;
    for (int i = 0; i < 3; ++i) {
        text += "<urn:doc" + std::to_string(i) + "> <urn:text> \"" +
                std::string(5'500'000, static_cast<char>('a' + i)) + "\" .\n";
    }
    const auto r =
        glassbox({"load", "rdf", write("three.nt", text).string(), "--no-index", "--json"},
                 milliseconds{120'000});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    const auto summary = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(summary.is_object()) << r.out;
    EXPECT_EQ(summary["statements"], 3);
    EXPECT_EQ(summary["added"], 3);
}

}  // namespace
}  // namespace glassbox::integration
