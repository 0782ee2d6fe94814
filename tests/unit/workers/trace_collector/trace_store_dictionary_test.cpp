// The trace store takes explain bodies in the dictionary form (docs/protocol.md §8.1): a real
// graph-RAG run stored as its workers sent it exports the same N-Quads and shows the same triples
// as the same messages in the plain form; a malformed dictionary is quarantined.
#include <gtest/gtest.h>

#include <algorithm>

#include "schema/json_fast.hpp"
#include "schema/services.hpp"
#include "schema/untrusted_json.hpp"
#include "tests/support/rag_cluster.hpp"
#include "tests/support/trace_fixture.hpp"

namespace glassbox::trace::testing {
namespace {

using nlohmann::json;

constexpr std::int64_t kT0 = 1'790'000'000'000;

Delivery delivery_of_text(const json& body, std::string text, std::uint64_t id) {
    Delivery d;
    d.delivery_id = id;
    d.service = body.value("service", "");
    d.session = body.value("session", "");
    d.seq = std::to_string(body.value("seq", 0ULL));
    const std::string status = body.value("trace_status", "");
    d.state = status.empty() ? "open" : status;
    d.body = std::move(text);
    return d;
}

std::string export_all(TraceStore& store) {
    std::string nquads;
    auto counts = store.export_nquads(std::nullopt, std::nullopt, [&](std::string_view lines) {
        nquads += lines;
        return true;
    });
    EXPECT_TRUE(counts.ok()) << counts.error().describe();
    return nquads;
}

class DictionaryStoreTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = fresh_dir(); }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::unique_ptr<TraceStore> open(const char* name) {
        auto opened = TraceStore::open(dir_ / name, OpenMode::kReadWrite, config_);
        EXPECT_TRUE(opened.ok()) << opened.error().describe();
        return opened.ok() ? std::move(opened).value() : nullptr;
    }
    StoreConfig config_;
    std::filesystem::path dir_;
};

TEST_F(DictionaryStoreTest, GraphRagRunExportsTheSameTriplesInBothForms) {
    rag::testing::RagCluster cluster;
    cluster.load_triples("kg", "file:///test/kb.nt", R"(
<urn:kg:cruz_azul> <urn:kg:is_in_country> <urn:kg:mexico> .
<urn:kg:cruz_azul> <urn:kg:founded> "1927"^^<http://www.w3.org/2001/XMLSchema#gYear> .
<urn:kg:cruz_azul> <http://www.w3.org/2000/01/rdf-schema#label> "Cruz Azul FC" .
<urn:kg:mexico> <http://www.w3.org/2000/01/rdf-schema#label> "México \"MX\"" .
<urn:kg:is_in_country> <http://www.w3.org/2000/01/rdf-schema#label> "is in country" .
)");
    std::vector<Delivery> as_sent;
    std::vector<Delivery> as_plain;
    std::string session;
    std::uint64_t id = 1;
    for (const auto& reply :
         cluster.request(std::string(schema::services::kGraphRag),
                         {{"query", "Which country is Cruz Azul FC in?"}, {"collection", "kg"}})) {
        if (reply.kind != bus::ReplyKind::kExplain) continue;
        ASSERT_TRUE(schema::has_term_dictionary(reply.body)) << "workers send the dictionary form";
        session = reply.body.value("session", "");
        as_sent.push_back(delivery_of_text(reply.body, schema::dump(reply.body), id));
        auto decoded = schema::decode<schema::ExplainMessage>(reply.body);
        ASSERT_TRUE(decoded) << decoded.error().describe();
        as_plain.push_back(delivery_of_text(reply.body, schema::encode_text(*decoded), id));
        ++id;
    }
    ASSERT_GE(as_sent.size(), 4u);
    // The plain bodies are the bigger ones.
    std::size_t sent_bytes = 0, plain_bytes = 0;
    for (std::size_t i = 0; i < as_sent.size(); ++i) {
        sent_bytes += as_sent[i].body.size();
        plain_bytes += as_plain[i].body.size();
    }
    EXPECT_LT(sent_bytes, plain_bytes);

    auto dictionary_store = open("dictionary.db");
    auto plain_store = open("plain.db");
    ASSERT_TRUE(dictionary_store && plain_store);
    for (const auto& [store, batch] :
         {std::pair{dictionary_store.get(), &as_sent}, std::pair{plain_store.get(), &as_plain}}) {
        auto outcome = store->store_batch(*batch, at(kT0));
        ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
        EXPECT_EQ(outcome->stored, batch->size());
        EXPECT_EQ(outcome->quarantined, 0u);
    }
    const std::string exported = export_all(*dictionary_store);
    EXPECT_FALSE(exported.empty());
    EXPECT_EQ(exported, export_all(*plain_store));
    auto shown = dictionary_store->show(session, at(kT0));
    auto shown_plain = plain_store->show(session, at(kT0));
    ASSERT_TRUE(shown.ok() && shown_plain.ok());
    EXPECT_EQ((*shown)["events"], (*shown_plain)["events"]);
}

TEST_F(DictionaryStoreTest, MalformedDictionaryIsQuarantined) {
    auto store = open("traces.db");
    ASSERT_TRUE(store);
    const auto run = FakeRun::make("echo", "why?", kT0);
    const std::string head = R"({"message_type":"explain","session":")" + run.session() +
                             R"(","seq":0,"service":"echo","worker":"echo-test/0",)"
                             R"("explain_terms":[{"t":"i","i":"urn:a"}],"explain_triples":)";
    const std::vector<std::string> bad{head + "[[0,0,1]]}", head + "[[0,0]]}", head + "[[0,0,-1]]}",
                                       head + R"([[0,0,"0"]]})"};
    std::vector<Delivery> batch;
    std::uint64_t id = 1;
    for (const auto& body : bad) batch.push_back(delivery_of_text(json::parse(body), body, id++));
    const std::string good_body = head + "[[0,0,0]]}";
    batch.push_back(delivery_of_text(json::parse(good_body), good_body, id++));
    auto outcome = store->store_batch(batch, at(kT0));
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    EXPECT_EQ(outcome->quarantined, bad.size());
    EXPECT_EQ(outcome->stored, 1u);
    for (std::size_t i = 0; i < bad.size(); ++i) {
        auto checked = validate_delivery(batch[i]);
        ASSERT_FALSE(checked.ok()) << bad[i];
        EXPECT_EQ(checked.error().message.rfind("bad triple: explain_triples[0]", 0), 0u)
            << checked.error().message;
    }
    EXPECT_NE(export_all(*store).find("<urn:a> <urn:a> <urn:a>"), std::string::npos);
}

}  // namespace
}  // namespace glassbox::trace::testing
