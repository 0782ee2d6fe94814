// Message codecs: round trips, defaults, unknown fields, typed decode errors, dump.
#include "schema/messages.hpp"

#include <gtest/gtest.h>

#include "schema/explain_uris.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::schema {
namespace {

using nlohmann::json;

template <typename T>
T round_trip(const T& m) {
    auto back = decode_body<T>(dump(encode(m)));
    EXPECT_TRUE(back.ok()) << back.error().describe();
    return back.value();
}

Triple sample_triple() {
    return make_triple(iri("urn:s"), iri("urn:p"),
                       quoted(make_triple(iri("urn:a"), iri("urn:b"), lang_literal("é", "fr"))),
                       "urn:graph:retrieval");
}

TEST(Dump, NeverThrowsOnInvalidUtf8) {
    json j{{"a", std::string("x\xffy")}};
    std::string text;
    EXPECT_NO_THROW(text = dump(j));
    EXPECT_TRUE(parse_untrusted_json(text).ok());
    EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

TEST(GraphRagQuery, DefaultsAndRoundTrip) {
    auto empty = decode<GraphRagQuery>(json::object());
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(empty->entity_limit, 0u);
    EXPECT_FALSE(empty->parent_uri.has_value());
    EXPECT_EQ(or_default(empty->entity_limit, kDefaultEntityLimit), 50u);
    EXPECT_EQ(or_default(7, kDefaultEdgeLimit), 7u);

    GraphRagQuery q{"who?",   "c1",
                    1,        2,
                    3,        4,
                    5,        6,
                    true,     "urn:glassbox:x:routing",
                    "chat-1", std::vector<std::string>{"Greyhollow Light"},
                    0.4,      "urn:glassbox:x:question"};
    EXPECT_EQ(round_trip(q), q);
}

TEST(GraphRagQuery, UnknownFieldsIgnoredNullIsMissing) {
    auto r = decode_body<GraphRagQuery>(
        R"({"query":"q","future_field":{"x":[1,2]},"entity_limit":null,"edge_limit":9})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->query, "q");
    EXPECT_EQ(r->entity_limit, 0u);
    EXPECT_EQ(r->edge_limit, 9u);
}

TEST(GraphRagQuery, WrongTypesAreTypedErrors) {
    struct Case {
        const char* body;
        const char* message;
    };
    for (const auto& c : {
             Case{R"({"query":5})", "query: expected string, got number"},
             Case{R"({"entity_limit":"50"})", "entity_limit: expected integer, got string"},
             Case{R"({"entity_limit":-1})", "entity_limit: expected a non-negative integer"},
             Case{R"({"entity_limit":1.5})", "entity_limit: expected integer, got number"},
             Case{R"({"entity_limit":4294967296})", "entity_limit: integer out of range"},
             Case{R"({"streaming":"yes"})", "streaming: expected boolean, got string"},
             Case{R"([])", "$: expected object, got array"},
         }) {
        auto r = decode_body<GraphRagQuery>(c.body);
        ASSERT_FALSE(r.ok()) << c.body;
        EXPECT_EQ(r.error().type, base::ErrorType::kDecodeError);
        EXPECT_EQ(r.error().message, c.message);
    }
    auto bad_json = decode_body<GraphRagQuery>("{\"query\":");
    ASSERT_FALSE(bad_json.ok());
    EXPECT_EQ(bad_json.error().type, base::ErrorType::kInvalidJson);
}

TEST(GraphRagQuery, AParentUriThatIsNoIriIsRefusedNamingTheField) {
    const json bad = {{"query", "q"}, {"parent_uri", "not a uri <>\"\n"}};
    const auto graph = decode<GraphRagQuery>(bad);
    ASSERT_FALSE(graph.ok());
    EXPECT_EQ(graph.error().type, base::ErrorType::kDecodeError);
    EXPECT_EQ(graph.error().message.rfind("parent_uri: not a valid IRI: it contains a space", 0),
              0u)
        << graph.error().message;
    EXPECT_FALSE(decode<DocumentRagQuery>(bad).ok());
    EXPECT_FALSE(decode<AgentRequest>(json{{"question", "q"}, {"parent_uri", "relative"}}).ok());
    const auto echo = decode<EchoRequest>(json{{"question", "q"}, {"parent_uri", "urn:a\tb"}});
    ASSERT_FALSE(echo.ok());
    EXPECT_NE(echo.error().message.find("parent_uri"), std::string::npos);
    EXPECT_TRUE(decode<GraphRagQuery>(json{{"parent_uri", "urn:glassbox:x:routing"}}).ok());
    EXPECT_TRUE(decode<GraphRagQuery>(json{{"parent_uri", ""}}).ok())
        << "empty is the services' own check (\"must not be empty when given\")";
}

// revision_of (`glassbox traces replay`): every question request takes it, an IRI checked as
// parent_uri is.
TEST(QuestionRequests, RevisionOfIsAnIriEveryEngineTakes) {
    const std::string original = "urn:glassbox:2e14c8b4-1111-4222-8333-444444444444:question";
    const auto graph = decode<GraphRagQuery>(json{{"query", "q"}, {"revision_of", original}});
    ASSERT_TRUE(graph.ok()) << graph.error().describe();
    EXPECT_EQ(graph->revision_of, std::optional<std::string>(original));
    EXPECT_EQ(encode(*graph)["revision_of"], original);
    EXPECT_EQ(
        decode<DocumentRagQuery>(json{{"query", "q"}, {"revision_of", original}})->revision_of,
        std::optional<std::string>(original));
    EXPECT_EQ(decode<AgentRequest>(json{{"question", "q"}, {"revision_of", original}})->revision_of,
              std::optional<std::string>(original));
    EXPECT_EQ(decode<QueryRequest>(json{{"query", "q"}, {"revision_of", original}})->revision_of,
              std::optional<std::string>(original));
    EXPECT_FALSE(decode<GraphRagQuery>(json{{"query", "q"}})->revision_of.has_value());
    EXPECT_FALSE(encode(GraphRagQuery{}).contains("revision_of"));
    const auto bad = decode<QueryRequest>(json{{"query", "q"}, {"revision_of", "not an iri <>"}});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("revision_of"), std::string::npos) << bad.error().message;
    EXPECT_FALSE(decode<AgentRequest>(json{{"question", "q"}, {"revision_of", 7}}).ok());
}

TEST(QueryRequest, ModeEnum) {
    auto r = decode_body<QueryRequest>(R"({"query":"t","mode":"document-rag","session_id":"s1"})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->mode, QueryMode::kDocumentRag);
    EXPECT_EQ(r->query, "t");
    EXPECT_EQ(r->session_id, "s1");
    auto d = decode_body<QueryRequest>(R"({"query":"t"})");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->mode, QueryMode::kAuto);
    auto bad = decode_body<QueryRequest>(R"({"mode":"magic"})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().type, base::ErrorType::kDecodeError);
    EXPECT_EQ(bad.error().message.rfind("mode: unknown value \"magic\"", 0), 0u)
        << bad.error().message;
    auto wrong = decode_body<QueryRequest>(R"({"query":7})");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().type, base::ErrorType::kDecodeError);
    EXPECT_EQ(wrong.error().message.rfind("query:", 0), 0u) << wrong.error().message;
    QueryRequest q{"x", QueryMode::kAgent, "c", true, "conversation-1", "", std::nullopt};
    EXPECT_EQ(round_trip(q), q);
    q.request_id = "gw-0123";
    EXPECT_EQ(round_trip(q), q);
    EXPECT_EQ(encode(q)["request_id"], "gw-0123");
    EXPECT_EQ(encode(q)["mode"], "agent");
}

TEST(QueryRequest, SessionIdNamesTheConversation) {
    auto none = decode_body<QueryRequest>(R"({"query":"t"})");
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->session_id, "");
    auto s = decode_body<QueryRequest>(R"({"query":"t","session_id":"chat-1"})");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->session_id, "chat-1");
    EXPECT_EQ(round_trip(*s), *s);
    auto bad = decode_body<QueryRequest>(R"({"query":"t","session_id":5})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().type, base::ErrorType::kDecodeError);
}

// Issue 35: the router's floor, passed on to its engines and applied to its own answer. A number
// when given (its range is the query worker's to check: InvalidRequest there); absent, the
// worker's query.min_confidence, and nothing on the wire.
TEST(QueryRequest, MinConfidenceRoundTripsAndIsANumber) {
    QueryRequest q;
    q.query = "When was Saltspire Light built?";
    EXPECT_FALSE(encode(q).contains("min_confidence"));
    EXPECT_EQ(round_trip(q), q);
    q.min_confidence = 0.45;
    EXPECT_EQ(encode(q)["min_confidence"], 0.45);
    EXPECT_EQ(round_trip(q), q);
    q.min_confidence = 0.0;
    EXPECT_EQ(round_trip(q).min_confidence, std::optional<double>(0.0)) << "0: never abstain";
    auto given = decode_body<QueryRequest>(R"({"query":"t","min_confidence":1})");
    ASSERT_TRUE(given.ok());
    EXPECT_EQ(given->min_confidence, std::optional<double>(1.0));
    auto null = decode_body<QueryRequest>(R"({"query":"t","min_confidence":null})");
    ASSERT_TRUE(null.ok());
    EXPECT_FALSE(null->min_confidence.has_value());
    auto bad = decode_body<QueryRequest>(R"({"query":"t","min_confidence":"high"})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().type, base::ErrorType::kDecodeError);
    EXPECT_EQ(bad.error().message.rfind("min_confidence", 0), 0u) << bad.error().message;
}

TEST(RagQueries, SessionIdRoundTrips) {
    GraphRagQuery g;
    g.query = "who?";
    g.session_id = "chat-2";
    EXPECT_EQ(round_trip(g), g);
    EXPECT_EQ(encode(g)["session_id"], "chat-2");
    DocumentRagQuery d;
    d.query = "when?";
    d.session_id = "chat-2";
    EXPECT_EQ(round_trip(d), d);
    auto absent = decode_body<DocumentRagQuery>(R"({"query":"q"})");
    ASSERT_TRUE(absent.ok());
    EXPECT_EQ(absent->session_id, "");
}

TEST(AgentRequest, HistoryRoundTripAndNestedErrors) {
    AgentRequest a;
    a.question = "q";
    a.history = {AgentHistoryStep{"t", "search", {{"q", "x"}}, "obs"}};
    a.max_iterations = 3;
    EXPECT_EQ(round_trip(a), a);
    auto bad = decode_body<AgentRequest>(R"({"history":[{"thought":"t"},{"arguments":{"q":1}}]})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "history[1].arguments.q: expected string, got number");
}

TEST(RagResponse, RoundTripWithTriplesAndError) {
    RagResponse r;
    r.message_type = RagMessageType::kExplain;
    r.explain_id = "urn:glassbox:x:focus";
    r.explain_graph = "urn:graph:retrieval";
    r.explain_triples = {sample_triple(), sample_triple()};
    r.end_of_session = true;
    r.in_token = 12;
    r.sources = {"urn:doc:1"};
    r.error = base::make_error(base::ErrorType::kUpstreamError, "llm down");
    EXPECT_EQ(round_trip(r), r);
    EXPECT_EQ(encode(r)["error"]["type"], "UpstreamError");
    EXPECT_FALSE(encode(r).contains("answer")) << "a FINAL's field";
    r.answer = "Mara Quill";
    r.answer_selections = {"urn:glassbox:x:focus:edge:1"};
    EXPECT_EQ(round_trip(r), r);
    EXPECT_EQ(encode(r)["answer"], "Mara Quill");
}

// Issue 35: an edge citation carries its fact in parts (subject, predicate, object), so the
// agent can check a graph-rag name fact against document sentences; a citation written without
// them (a chunk, an older graph-rag) still decodes, and they stay out of its encoding.
TEST(RagResponse, AnEdgeCitationCarriesItsFactInPartsAndOlderCitationsStillDecode) {
    RagResponse r;
    RagCitation edge;
    edge.n = 1;
    edge.kind = "edge";
    edge.text = "Greyhollow Light was designed by Ilse Varrow";
    edge.subject = "Greyhollow Light";
    edge.predicate = "was designed by";
    edge.object = "Ilse Varrow";
    RagCitation chunk;
    chunk.n = 2;
    chunk.kind = "chunk";
    chunk.text = "Greyhollow Light was designed by Tomas Heddle.";
    r.citations = {edge, chunk};
    EXPECT_EQ(round_trip(r), r);
    const json body = encode(r);
    EXPECT_EQ(body["citations"][0]["subject"], "Greyhollow Light");
    EXPECT_EQ(body["citations"][0]["predicate"], "was designed by");
    EXPECT_EQ(body["citations"][0]["object"], "Ilse Varrow");
    EXPECT_FALSE(body["citations"][1].contains("subject")) << body.dump();
    EXPECT_FALSE(body["citations"][1].contains("predicate")) << body.dump();
    auto older = decode_body<RagResponse>(
        R"({"citations":[{"n":1,"kind":"edge","text":"Greyhollow Light was designed by Ilse Varrow"}]})");
    ASSERT_TRUE(older.ok()) << older.error().message;
    ASSERT_EQ(older->citations.size(), 1u);
    EXPECT_FALSE(older->citations[0].subject.has_value());
    EXPECT_FALSE(older->citations[0].predicate.has_value());
    auto bad = decode_body<RagResponse>(R"({"citations":[{"n":1,"subject":3}]})");
    EXPECT_FALSE(bad.ok()) << "a subject that is not a string";
}

TEST(RagResponse, ErrorsInsideTriplesNameTheIndex) {
    json body = encode(RagResponse{});
    body["explain_triples"] = json::array({encode(sample_triple()), encode(sample_triple()),
                                           encode(sample_triple()), encode(sample_triple())});
    body["explain_triples"][3]["o"]["tr"]["s"] = "not a term";
    auto r = decode<RagResponse>(body);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "explain_triples[3].o.tr.s: expected object, got string");
    auto bad_error = decode_body<RagResponse>(R"({"error":{"type":"Nope","message":"m"}})");
    ASSERT_FALSE(bad_error.ok());
    EXPECT_EQ(bad_error.error().message, "error.type: unknown error type \"Nope\"");
    auto bad_type = decode_body<RagResponse>(R"({"message_type":"thought"})");
    EXPECT_FALSE(bad_type.ok());
}

TEST(AgentResponse, RoundTrip) {
    AgentResponse a;
    a.message_type = AgentMessageType::kObservation;
    a.content = "seen";
    a.end_of_message = true;
    a.message_id = "m1";
    EXPECT_EQ(round_trip(a), a);
    EXPECT_EQ(encode(a)["message_type"], "observation");
}

TEST(Triples, QueryBatchAndResponses) {
    TriplesQuery q;
    q.s = iri("urn:s");
    q.o = literal("x");
    q.limit = 10;
    EXPECT_EQ(round_trip(q), q);
    EXPECT_FALSE(encode(q).contains("p"));

    TriplesQueryBatch b;
    b.patterns = {TriplePattern{iri("urn:a"), std::nullopt, std::nullopt, "urn:graph:source"},
                  TriplePattern{std::nullopt, iri("urn:p"), std::nullopt, std::nullopt}};
    b.limit = 5;
    EXPECT_EQ(round_trip(b), b);
    auto bad = decode_body<TriplesQueryBatch>(R"({"patterns":[{},{"p":{"t":"i"}}]})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "patterns[1].p.i: missing");

    TriplesResponse tr{{sample_triple()}};
    EXPECT_EQ(round_trip(tr), tr);
    TriplesBatchResponse br{{{sample_triple()}, {}}};
    EXPECT_EQ(round_trip(br), br);
}

TEST(Embeddings, RoundTripsAndVectorErrors) {
    EmbeddingsRequest req{{"a", "ü"}};
    EXPECT_EQ(round_trip(req), req);
    EmbeddingsResponse resp{{{0.5, -1.25}, {0.0, 1.0}}, "hash", 2};
    EXPECT_EQ(round_trip(resp), resp);
    auto bad = decode_body<EmbeddingsResponse>(R"({"vectors":[[0.1],[0.2,"x"]]})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "vectors[1][1]: expected number, got string");

    GraphEmbeddingsQuery g{{{1.0}}, 4, "c"};
    EXPECT_EQ(round_trip(g), g);
    GraphEmbeddingsResponse ge{{EntityMatch{iri("urn:e"), 0.9}, EntityMatch{literal("x"), 0.1}}};
    EXPECT_EQ(round_trip(ge), ge);
    auto no_entity = decode_body<GraphEmbeddingsResponse>(R"({"entities":[{"score":1}]})");
    ASSERT_FALSE(no_entity.ok());
    EXPECT_EQ(no_entity.error().message, "entities[0].entity: missing");
    GraphEmbeddingsBatchResponse gb{
        {{EntityMatch{iri("urn:e"), 0.9}}, {}, {EntityMatch{literal("x"), 0.1}}}};
    EXPECT_EQ(round_trip(gb), gb);
    auto bad_list = decode_body<GraphEmbeddingsBatchResponse>(
        R"({"results":[[],[{"entity":{"t":"i","i":"urn:e"}}],{}]})");
    ASSERT_FALSE(bad_list.ok());
    EXPECT_EQ(bad_list.error().message, "results[2]: expected array, got object");

    DocumentEmbeddingsQuery d{{{0.25}}, 3, "c"};
    EXPECT_EQ(round_trip(d), d);
    ChunkKeywordQuery k{"words", 2, "c"};
    EXPECT_EQ(round_trip(k), k);
    ChunkMatchResponse cm{{ChunkMatch{"c1", 0.5}}};
    EXPECT_EQ(round_trip(cm), cm);
}

TEST(ChunkFetch, RoundTrip) {
    ChunkFetchRequest req{{"c1", "c2"}, "col"};
    EXPECT_EQ(round_trip(req), req);
    ChunkFetchResponse resp{{Chunk{"c1", "d1", "text ☃", 10, 6, 2, "Title", 1}}};
    EXPECT_EQ(round_trip(resp), resp);
}

TEST(StoreMessages, LoadRequestsAndResponsesRoundTrip) {
    SourceInfo source{"file:///data/kb.nt", "kb.nt", "application/n-triples", 2,
                      "2026-11-22T05:00:00Z"};
    LoadTriplesRequest load{"col", source, "<urn:s> <urn:p> \"o\" .\n"};
    EXPECT_EQ(round_trip(load), load);
    LoadTriplesResponse loaded{10, 7, 3};
    EXPECT_EQ(round_trip(loaded), loaded);
    DocumentLoad doc{"urn:glassbox:doc:a",
                     "A",
                     source,
                     "Alpha. Beta ☃.",
                     {ChunkLoad{0, 0, 6, "Alpha."}, ChunkLoad{1, 7, 7, "Beta ☃."}}};
    LoadDocumentsRequest docs{"col", {doc}, false};
    EXPECT_EQ(round_trip(docs), docs);
    LoadDocumentsResponse docs_loaded{1, 2, 3, 4, 5};
    EXPECT_EQ(round_trip(docs_loaded), docs_loaded);
    IndexResponse indexed{5, 6, "glassbox-hashing-v1", 384};
    EXPECT_EQ(round_trip(indexed), indexed);
}

TEST(StoreMessages, ProvenanceLabelsHybridAndStatsRoundTrip) {
    FactSourcesRequest facts{"col", {sample_triple()}};
    EXPECT_EQ(round_trip(facts), facts);
    FactSourcesResponse sources{
        {{FactSource{"urn:c#chunk-1", "chunk", "urn:c", 1, "2026-11-22T05:00:00Z"}}, {}}};
    EXPECT_EQ(round_trip(sources), sources);
    LabelsRequest labels{"col", {iri("urn:x"), literal("y")}};
    EXPECT_EQ(round_trip(labels), labels);
    LabelsResponse named{{"X", "y"}};
    EXPECT_EQ(round_trip(named), named);
    HybridChunkQuery hybrid{"who", {{0.5, -0.5}}, 7, "col"};
    EXPECT_EQ(round_trip(hybrid), hybrid);
    StoreStats stats;
    stats.collection = "col";
    stats.quads = 9859;
    stats.facts_per_tier = {{"1", 9000}, {"3", 859}};
    stats.model = "m";
    stats.dim = 384;
    EXPECT_EQ(round_trip(stats), stats);
}

TEST(StoreMessages, WrongShapesAreTypedErrorsWithPaths) {
    auto bad_tier = decode_body<LoadTriplesRequest>(R"({"source": {"tier": "high"}})");
    ASSERT_FALSE(bad_tier.ok());
    EXPECT_EQ(bad_tier.error().type, base::ErrorType::kDecodeError);
    EXPECT_NE(bad_tier.error().message.find("source.tier"), std::string::npos)
        << bad_tier.error().message;
    auto bad_chunk =
        decode_body<LoadDocumentsRequest>(R"({"documents": [{"chunks": [{"char_offset": -1}]}]})");
    ASSERT_FALSE(bad_chunk.ok());
    EXPECT_NE(bad_chunk.error().message.find("documents[0].chunks[0].char_offset"),
              std::string::npos)
        << bad_chunk.error().message;
    auto bad_counts = decode_body<StoreStats>(R"({"facts_per_tier": {"1": -3}})");
    ASSERT_FALSE(bad_counts.ok());
    EXPECT_NE(bad_counts.error().message.find("facts_per_tier.1"), std::string::npos)
        << bad_counts.error().message;
}

TEST(Llm, RequestVariablesMustBeStrings) {
    LlmRequest req{"graph-rag-answer", {{"question", "q"}, {"context", "c"}}, true};
    EXPECT_EQ(round_trip(req), req);
    EXPECT_EQ(encode(req)["template"], "graph-rag-answer");
    auto bad = decode_body<LlmRequest>(R"({"variables":{"a":"b","n":1}})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "variables.n: expected string, got number");
    LlmResponse resp{"t", json{{"k", 1}}, "extractive", 3, 4, true, std::nullopt, {}};
    EXPECT_EQ(round_trip(resp), resp);
    LlmResponse plain{"t", std::nullopt, "m", 0, 0, false, std::nullopt, {}};
    EXPECT_FALSE(encode(plain).contains("json"));
    EXPECT_FALSE(encode(plain).contains("answer")) << "only templates with the answer contract";
    // The answer contract's short answer and its ids ("" is an answer: undecided).
    LlmResponse answered{"Mara founded it [e2].", std::nullopt, "m", 5, 6, true, "Mara", {"e2"}};
    EXPECT_EQ(round_trip(answered), answered);
    EXPECT_EQ(encode(answered)["answer"], "Mara");
    LlmResponse undecided{"x", std::nullopt, "m", 0, 0, true, "", {}};
    EXPECT_EQ(round_trip(undecided).answer, std::optional<std::string>(""));
}

TEST(Echo, KeepsEveryOtherField) {
    auto r =
        decode_body<EchoRequest>(R"({"question":"hi","delay_ms":5,"fail":{"type":"Internal"}})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->question, "hi");
    EXPECT_EQ(r->extra["delay_ms"], 5);
    EXPECT_FALSE(r->extra.contains("question"));
    EXPECT_EQ(round_trip(r.value()), r.value());
    auto bad = decode_body<EchoRequest>(R"({"question":["x"]})");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "question: expected string, got array");
}

TEST(ExplainMessage, MatchesProtocolSection8) {
    ExplainMessage m;
    m.session = "urn:glassbox:1:question";
    m.seq = 3;
    m.service = "echo";
    m.worker = "w1";
    m.explain_id = "urn:glassbox:1:synthesis";
    m.explain_triples = {sample_triple()};
    m.end_of_trace = true;
    m.trace_status = TraceStatus::kComplete;
    const json j = encode(m);
    EXPECT_EQ(j["message_type"], "explain");
    EXPECT_EQ(j["explain_graph"], "urn:graph:retrieval");
    EXPECT_EQ(j["trace_status"], "complete");
    EXPECT_FALSE(j.contains("parent_uri"));
    EXPECT_FALSE(j.contains("error"));
    EXPECT_EQ(round_trip(m), m);

    // The broker's synthetic end-of-trace body (protocol §5.3).
    auto broker = decode_body<ExplainMessage>(
        R"({"message_type":"explain","session":"S","seq":7,"service":"graph-rag","end_of_trace":true,
            "trace_status":"error","error":{"type":"WorkerLost","message":"gone"},"explain_triples":[]})");
    ASSERT_TRUE(broker.ok()) << broker.error().describe();
    EXPECT_EQ(broker->trace_status, TraceStatus::kError);
    ASSERT_TRUE(broker->error.has_value());
    EXPECT_EQ(broker->error->type, base::ErrorType::kWorkerLost);
    EXPECT_EQ(broker->explain_graph, "urn:graph:retrieval");

    EXPECT_FALSE(decode_body<ExplainMessage>(R"({"message_type":"chunk"})").ok());
    EXPECT_FALSE(decode_body<ExplainMessage>(R"({"trace_status":"done"})").ok());
    auto neg = decode_body<ExplainMessage>(R"({"seq":-1})");
    ASSERT_FALSE(neg.ok());
    EXPECT_EQ(neg.error().message, "seq: expected a non-negative integer");
}

// Issue 16 point 12: an explain message from a third-party worker carries IRIs as it likes; the
// decoder makes each one writable (explain::writable_iri) and counts them, and keeps valid ones.
TEST(ExplainMessage, EveryIriItCarriesIsMadeWritable) {
    const std::string bad = "not a uri <>\"\n";
    const json term_bad = {{"t", "i"}, {"i", bad}};
    const json term_space = {{"t", "i"}, {"i", "urn:x y"}};
    const json term_good = {{"t", "i"}, {"i", "urn:ok"}};
    const json body = {
        {"session", "urn:x y"},
        {"explain_id", bad},
        {"parent_uri", "relative/step"},
        {"explain_graph", "urn:g|h"},
        {"explain_triples",
         json::array({
             {{"s", term_bad}, {"p", term_space}, {"o", term_good}, {"g", "urn:g^"}},
             {{"s", term_good},
              {"p", term_good},
              {"o", {{"t", "l"}, {"v", "1"}, {"dt", "integer"}}}},
             {{"s", {{"t", "t"}, {"tr", {{"s", term_good}, {"p", term_good}, {"o", term_bad}}}}},
              {"p", term_good},
              {"o",
               {{"t", "t"},
                {"tr", {{"s", term_space}, {"p", term_good}, {"o", {{"t", "l"}, {"v", "x"}}}}}}}},
             {{"s", term_good}, {"p", term_good}, {"o", term_good}},
         })},
    };
    std::size_t rewritten = 0;
    auto m = decode_explain(body, rewritten);
    ASSERT_TRUE(m.ok()) << m.error().describe();
    // session, explain_id, parent_uri, explain_graph; s, p, g; dt; quoted o; quoted s.
    EXPECT_EQ(rewritten, 10u);
    EXPECT_EQ(m->session, explain::writable_iri("urn:x y"));
    EXPECT_EQ(m->session, "urn:x%20y");
    EXPECT_EQ(m->explain_id, explain::writable_iri(bad));
    EXPECT_EQ(m->parent_uri, "urn:glassbox:iri:relative/step");
    EXPECT_EQ(m->explain_graph, "urn:g%7Ch");
    ASSERT_EQ(m->explain_triples.size(), 4u);
    const auto& t0 = m->explain_triples[0];
    EXPECT_EQ(t0.s, iri(explain::writable_iri(bad)));
    EXPECT_EQ(t0.p, iri("urn:x%20y"));
    EXPECT_EQ(t0.o, iri("urn:ok"));
    EXPECT_EQ(t0.graph, "urn:g%5E");
    EXPECT_EQ(m->explain_triples[1].o, typed_literal("1", "urn:glassbox:iri:integer"));
    const auto& t2 = m->explain_triples[2];
    EXPECT_EQ(t2.s.as_triple().o, iri(explain::writable_iri(bad)));
    EXPECT_EQ(t2.o.as_triple().s, iri("urn:x%20y"));
    EXPECT_EQ(t2.o.as_triple().o, literal("x"));
    EXPECT_EQ(m->explain_triples[3], make_triple(iri("urn:ok"), iri("urn:ok"), iri("urn:ok")));
    // decode<ExplainMessage> is the same decoder; a message of valid IRIs is read unchanged.
    auto plain = decode<ExplainMessage>(body);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(*plain, *m);
    auto again = decode_explain(encode(*m), rewritten);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(rewritten, 0u);
    EXPECT_EQ(*again, *m);
}

TEST(Decoders, NeverThrowOnArbitraryShapes) {
    const std::vector<json> shapes{
        json(nullptr),
        json(1),
        json("s"),
        json::array(),
        json::parse(R"({"a":[{"b":null}]})"),
        json::parse(R"({"explain_triples":{"s":1},"patterns":7,"vectors":[1]})")};
    for (const auto& s : shapes) {
        EXPECT_NO_THROW({
            (void)decode<GraphRagQuery>(s);
            (void)decode<RagResponse>(s);
            (void)decode<AgentResponse>(s);
            (void)decode<TriplesQueryBatch>(s);
            (void)decode<EmbeddingsResponse>(s);
            (void)decode<ExplainMessage>(s);
            (void)decode<EchoRequest>(s);
            (void)decode<LlmResponse>(s);
        });
    }
    EXPECT_FALSE(decode<EmbeddingsResponse>(shapes.back()).ok());
}

}  // namespace
}  // namespace glassbox::schema

namespace glassbox::schema {
namespace {

TEST(Conversations, RepliesRoundTripAndNullShortAnswer) {
    ConversationTurns turns{
        "chat-1",
        {ConversationTurn{"Who wrote Dune?", "Frank Herbert wrote Dune.", "Frank Herbert", "0b6f",
                          "2026-11-27T03:00:00.000Z", "complete"},
         ConversationTurn{"When?", "", std::nullopt, "1c2d", "2026-11-27T03:00:05.000Z", "error"}}};
    EXPECT_EQ(round_trip(turns), turns);
    const auto wire = encode(turns);
    EXPECT_TRUE(wire["turns"][1]["short_answer"].is_null()) << wire.dump();
    ConversationList list{
        {ConversationSummary{"chat-1", 2, "2026-11-27T03:00:00.000Z", "2026-11-27T03:00:05.000Z"}}};
    EXPECT_EQ(round_trip(list), list);
    ConversationForgotten gone{"chat-1", 2};
    EXPECT_EQ(round_trip(gone), gone);
    // A turn without its trace, or a list without sessions, is not the contract's shape.
    EXPECT_FALSE(decode<ConversationTurn>(nlohmann::json{{"question", "q"}}).ok());
    EXPECT_FALSE(decode<ConversationList>(nlohmann::json::object()).ok());
}

// Issue 31: the `collections` and `collection-delete` replies, and the name a delete requires.
TEST(StoreMessages, CollectionMessagesRoundTripAndADeleteNeedsItsName) {
    CollectionSummary summary;
    summary.collection = "notes";
    summary.facts = 12;
    summary.entities = 5;
    summary.documents = 2;
    summary.chunks = 7;
    summary.documents_per_tier = {{"2", 2}};
    summary.chunks_per_tier = {{"2", 7}};
    summary.entity_vectors = 5;
    summary.chunk_vectors = 7;
    summary.bytes_on_disk = 65536;
    summary.last_loaded = "2026-11-29T06:50:57.461Z";
    const CollectionList list{{summary}, true};
    EXPECT_EQ(round_trip(list), list);
    const CollectionDeleted deleted{summary};
    EXPECT_EQ(round_trip(deleted), deleted);
    EXPECT_EQ(encode(deleted)["removed"]["collection"], "notes");
    StoreStats stats;
    stats.documents_per_tier = {{"1", 3}};
    stats.chunks_per_tier = {{"1", 9}};
    stats.last_loaded = "2026-11-29T06:50:57Z";
    EXPECT_EQ(round_trip(stats), stats);
    const CollectionDeleteRequest named{"notes"};
    EXPECT_EQ(round_trip(named), named);
    auto unnamed = decode_body<CollectionDeleteRequest>("{}");
    ASSERT_FALSE(unnamed.ok());
    EXPECT_EQ(unnamed.error().type, base::ErrorType::kDecodeError);
    EXPECT_NE(unnamed.error().message.find("collection"), std::string::npos)
        << unnamed.error().message;
}

// Issue 31: a question of punctuation alone has nothing to search for (it reached the vector
// search as a zero vector); letters and digits of any script do.
TEST(HasWords, LettersDigitsOrOtherScriptsCountPunctuationDoesNot) {
    for (std::string_view yes :
         {"Who?", "1871", "\xC3\xA9t\xC3\xA9", "\xE7\x81\xAF\xE5\xA1\x94", "...a"})
        EXPECT_TRUE(has_words(yes)) << yes;
    for (std::string_view no : {"...", "?!", " - ", "", "\t"}) EXPECT_FALSE(has_words(no)) << no;
}

TEST(TraceRetention, RepliesRoundTripAndOlderSummariesReadUnpinned) {
    TracePruneResult pruned{true, 2, 5, 11, 300, 1, 1, 0, 1'000'000, 400'000};
    EXPECT_EQ(decode<TracePruneResult>(encode(pruned)).value(), pruned);
    TracePinned pinned{"urn:glassbox:0b6f:question", true, std::nullopt};
    EXPECT_EQ(decode<TracePinned>(encode(pinned)).value(), pinned);
    EXPECT_FALSE(encode(pinned).contains("summary")) << "absent for a run kept whole";
    // A summarised run pinned says it stays one (docs/traces.md, "Sampling").
    TracePinned summary_pinned{"urn:glassbox:0b6f:question", true, true};
    EXPECT_EQ(decode<TracePinned>(encode(summary_pinned)).value(), summary_pinned);
    TraceStats sampled;
    sampled.sampling = TraceSamplingStats{0.25, {1, 2, 3, 4, 5}, 6, 7};
    EXPECT_EQ(decode<TraceStats>(encode(sampled)).value(), sampled);
    EXPECT_EQ(encode(sampled)["sampling"]["whole"]["escalation"], 2);
    EXPECT_FALSE(decode<TracePinned>(nlohmann::json{{"pinned", true}}).ok()) << "session required";
    TraceStats stats;
    stats.retention = TraceRetentionStats{86'400'000, 0, 3, 7, 9, 20, 123'456, 1, "busy"};
    EXPECT_EQ(decode<TraceStats>(encode(stats)).value(), stats);
    EXPECT_FALSE(decode<TraceStats>(nlohmann::json::object()).value().retention);
    // A summary from before `pinned` existed reads as not pinned.
    auto summary =
        decode<TraceSessionSummary>(nlohmann::json{{"session", "urn:x"}, {"status", "complete"}});
    ASSERT_TRUE(summary.ok());
    EXPECT_FALSE(summary->pinned);
    summary->pinned = true;
    EXPECT_EQ(encode(*summary)["pinned"], true);
}

TEST(TraceEvaluations, RoundTripAndOlderSummariesReadUnevaluated) {
    TraceEvaluation e{"20261130T091715Z-set",
                      "set",
                      "q1",
                      {"Ilse Varrow", "I. Varrow"},
                      true,
                      true,
                      1.0,
                      0.75,
                      0.9,
                      "2026-11-30T09:17:20.000Z"};
    EXPECT_EQ(decode<TraceEvaluation>(encode(e)).value(), e);
    // Absent scores are written as null and read back absent.
    TraceEvaluation bare{"run",        "set",        std::nullopt, {},           false,
                         std::nullopt, std::nullopt, std::nullopt, std::nullopt, ""};
    EXPECT_TRUE(encode(bare)["f1"].is_null());
    EXPECT_EQ(decode<TraceEvaluation>(encode(bare)).value(), bare);
    for (const char* required : {"run", "set", "correct"}) {
        auto without = encode(e);
        without.erase(required);
        EXPECT_FALSE(decode<TraceEvaluation>(without).ok()) << required << " is required";
    }
    auto wrong = encode(e);
    wrong["f1"] = "high";
    EXPECT_FALSE(decode<TraceEvaluation>(wrong).ok());
    TraceEvaluated evaluated{"urn:glassbox:0b6f:question", e, 2};
    EXPECT_EQ(decode<TraceEvaluated>(encode(evaluated)).value(), evaluated);
    // A summary from before evaluations existed reads as never evaluated; one with them keeps
    // them in order.
    auto summary =
        decode<TraceSessionSummary>(nlohmann::json{{"session", "urn:x"}, {"status", "complete"}});
    ASSERT_TRUE(summary.ok());
    EXPECT_TRUE(summary->evaluations.empty());
    EXPECT_EQ(encode(*summary)["evaluations"], nlohmann::json::array());
    summary->evaluations = {bare, e};
    EXPECT_EQ(decode<TraceSessionSummary>(encode(*summary)).value(), *summary);
}

}  // namespace
}  // namespace glassbox::schema
