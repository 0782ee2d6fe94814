// The llm service through a real Worker and the runtime tests' fake broker: every template,
// streaming partials, typed errors, the embeddings call, and the OpenAI provider's failures.
#include "workers/llm/llm_service.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "tests/support/citation_marker_ids.hpp"
#include "tests/support/fake_broker.hpp"
#include "tests/support/fake_openai_server.hpp"
#include "tests/support/service_worker_fixture.hpp"
#include "text/feature_hashing.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/llm_request.hpp"
#include "workers/llm/openai_provider.hpp"

namespace glassbox::llm {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace cmd = schema::protocol::worker_cmd;

const std::string kQuestion = "which country is the soccer team Cruz_Azul_FC based in ?";
const json kEdges = json::parse(R"([
  {"id": "e1", "s": "Cruz Azul FC", "p": "is in country", "o": "Mexico"},
  {"id": "e2", "s": "Cruz Azul FC", "p": "plays in club inverse", "o": "Marco FABIAN"},
  {"id": "e3", "s": "Marco FABIAN", "p": "is aged", "o": "24"}])");

class LlmServiceTest : public runtime::testing::ServiceWorkerTest {
protected:
    // As `glassbox worker llm` runs it, bodies read as text (reads_body_as_text); with
    // `text_body` false the runtime parses them into a tree first, as before it did.
    void start(std::shared_ptr<Provider> provider, LlmServiceOptions options = {},
               bool text_body = true) {
        auto templates = TemplateSet::builtin();
        ASSERT_TRUE(templates);
        start_worker(
            schema::services::kLlm,
            make_llm_handler(std::make_shared<const TemplateSet>(std::move(templates).value()),
                             std::move(provider), options),
            text_body ? reads_body_as_text : std::function<bool(std::string_view)>{});
    }
    void start_extractive(bool text_body = true) {
        LlmServiceOptions options;
        options.embeddings_service.clear();  // nobody answers calls in most tests
        start(std::make_shared<ExtractiveProvider>(), options, text_body);
    }
    static json llm(const std::string& name, const json& variables, bool streaming = false) {
        return {{"template", name}, {"variables", variables}, {"streaming", streaming}};
    }
    schema::LlmResponse final_response(std::chrono::milliseconds wait = 5s) {
        auto reply = broker.expect(cmd::kReply, wait);
        if (!reply) {
            ADD_FAILURE() << "no REPLY";
            return {};
        }
        const json body = json::parse(reply->frames[5]);
        EXPECT_EQ(body["end_of_stream"], true);
        auto response = schema::decode<schema::LlmResponse>(body);
        EXPECT_TRUE(response) << reply->frames[5];
        return response ? *response : schema::LlmResponse{};
    }
    // The worker's GBC01 request to another service (the embeddings call), skipping others.
    std::optional<runtime::testing::WorkerMessage> expect_call(
        std::chrono::milliseconds timeout = 3s) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < until) {
            auto message = broker.receive(100ms);
            if (message && message->frames.size() > 6 && message->frames[1] == "GBC01")
                return message;
        }
        return std::nullopt;
    }
    void answer_call(const runtime::testing::WorkerMessage& call, char command,
                     const bus::Frames& rest) {
        bus::Frames frames{"", "GBC01", std::string(1, command), call.frames[4]};
        frames.insert(frames.end(), rest.begin(), rest.end());
        broker.send(call.identity, frames);
    }
};

using test_support::marker_ids;

TEST_F(LlmServiceTest, ExtractConceptsAnswersValidatedJson) {
    start_extractive();
    request(llm("extract-concepts", {{"question", kQuestion}}));
    const auto r = final_response();
    EXPECT_EQ(r.model, "glassbox-extractive-v1");
    ASSERT_TRUE(r.json);
    ASSERT_TRUE((*r.json)["concepts"].is_array());
    EXPECT_EQ((*r.json)["concepts"][0], "Cruz Azul FC");
    EXPECT_EQ(json::parse(r.text), *r.json) << "text holds the JSON text";
    EXPECT_GT(r.in_token, 10u) << "words of the rendered prompt";
    EXPECT_GT(r.out_token, 0u);
    EXPECT_TRUE(broker.skipped.empty()) << "no partials for a JSON template";
}

TEST_F(LlmServiceTest, EdgeScoringAndReasoningAnswerOncePerEdge) {
    start_extractive();
    request(llm(
        "kg-edge-scoring",
        {{"question", kQuestion}, {"concepts", R"(["Cruz Azul FC"])"}, {"edges", kEdges.dump()}}));
    const auto scores = final_response();
    ASSERT_TRUE(scores.json);
    const json& list = (*scores.json)["scores"];
    ASSERT_EQ(list.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(list[i]["id"], kEdges[i]["id"]);
        EXPECT_GE(list[i]["score"].get<double>(), 0.0);
        EXPECT_LE(list[i]["score"].get<double>(), 1.0);
    }
    EXPECT_GT(list[0]["score"].get<double>(), list[2]["score"].get<double>());

    request(llm("kg-edge-reasoning", {{"question", kQuestion}, {"edges", kEdges.dump()}}), "why");
    const auto reasons = final_response();
    ASSERT_TRUE(reasons.json);
    ASSERT_EQ((*reasons.json)["reasons"].size(), 3u);
    EXPECT_EQ((*reasons.json)["reasons"][1]["id"], "e2");
    EXPECT_FALSE((*reasons.json)["reasons"][1]["reasoning"].get<std::string>().empty());
}

TEST_F(LlmServiceTest, StreamedSynthesisPartialsAddUpToTheFinalText) {
    start_extractive();
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}, true));
    std::string streamed;
    int partials = 0;
    for (;;) {
        auto message = broker.receive(5s);
        ASSERT_TRUE(message) << "the stream stopped";
        if (message->command() == cmd::kHeartbeat) continue;
        if (message->command() == cmd::kPartial) {
            ASSERT_EQ(message->frames.size(), 6u);
            EXPECT_EQ(message->frames[3], "tok");
            streamed += json::parse(message->frames[5])["text"].get<std::string>();
            ++partials;
            continue;
        }
        ASSERT_EQ(message->command(), cmd::kReply);
        const auto r = schema::decode<schema::LlmResponse>(json::parse(message->frames[5]));
        ASSERT_TRUE(r);
        EXPECT_EQ(r->text, streamed);
        EXPECT_FALSE(r->json);
        // Every word written counts, the Answer line's too ("Answer:", the answer, its markers).
        ASSERT_TRUE(r->answer);
        const std::size_t line_words =
            1 + reasoner::count_words(*r->answer) + (r->answer_ids.empty() ? 0 : 1);
        EXPECT_EQ(r->out_token,
                  static_cast<std::uint64_t>(reasoner::count_words(r->text) + line_words));
        for (const auto& id : marker_ids(r->text))
            EXPECT_TRUE(id == "e1" || id == "e2" || id == "e3") << id;
        EXPECT_FALSE(marker_ids(r->text).empty());
        break;
    }
    // One partial per sentence: as many as the text has sentences (each ends with ". ").
    int sentences = 1;
    for (std::size_t at = streamed.find(". "); at != std::string::npos;
         at = streamed.find(". ", at + 2))
        ++sentences;
    EXPECT_EQ(partials, sentences) << "one partial per sentence";

    // The same without streaming: no partials, the same text.
    broker.skipped.clear();
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}), "plain");
    const auto plain = final_response();
    EXPECT_EQ(plain.text, streamed);
    EXPECT_TRUE(broker.skipped.empty());
}

TEST_F(LlmServiceTest, SynthesisRepliesCarryTheShortAnswerApartFromTheText) {
    start_extractive();
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}, true));
    std::string streamed;
    for (;;) {
        auto message = broker.receive(5s);
        ASSERT_TRUE(message) << "the stream stopped";
        if (message->command() == cmd::kPartial) {
            streamed += json::parse(message->frames[5])["text"].get<std::string>();
            continue;
        }
        if (message->command() != cmd::kReply) continue;
        const json body = json::parse(message->frames[5]);
        ASSERT_TRUE(body.contains("answer")) << body.dump();
        ASSERT_TRUE(body["answer_ids"].is_array()) << body.dump();
        const auto r = schema::decode<schema::LlmResponse>(body);
        ASSERT_TRUE(r);
        ASSERT_TRUE(r->answer);
        // What users read never holds the Answer line; the short answer's ids are given ids.
        EXPECT_EQ(streamed, r->text);
        EXPECT_EQ(r->text.find("Answer:"), std::string::npos) << r->text;
        for (const auto& id : r->answer_ids)
            EXPECT_TRUE(id == "e1" || id == "e2" || id == "e3") << id;
        if (r->answer->empty()) {
            EXPECT_TRUE(r->answer_ids.empty());
        }
        break;
    }
    // Templates without the contract carry no short answer.
    request(llm("extract-concepts", {{"question", kQuestion}}), "concepts");
    EXPECT_FALSE(final_response().answer);
}

// A provider that answers every text template with a fixed reply.
class ScriptedProvider final : public Provider {
public:
    explicit ScriptedProvider(std::string reply) : reply_(std::move(reply)) {}
    base::Result<Completion> generate(const PromptInput&, const GenerateOptions& options) override {
        if (options.on_text) options.on_text(reply_);
        Completion c;
        c.text = reply_;
        c.model = "scripted";
        return c;
    }
    std::string_view name() const override { return "scripted"; }

private:
    std::string reply_;
};

// A provider that answers its replies in turn, one per request.
class TurnsProvider final : public Provider {
public:
    explicit TurnsProvider(std::vector<std::string> replies) : replies_(std::move(replies)) {}
    base::Result<Completion> generate(const PromptInput&, const GenerateOptions&) override {
        Completion c;
        c.text = replies_.at(next_++ % replies_.size());
        c.model = "turns";
        return c;
    }
    std::string_view name() const override { return "turns"; }

private:
    std::vector<std::string> replies_;
    std::atomic<std::size_t> next_{0};
};

// A reply that is already one item per edge goes out as the model wrote it; one that only looks
// so (an id twice, an extra member, an item missing) is completed: edges in order, the first
// answer for an id, 0 for none.
TEST_F(LlmServiceTest, ScoresAlreadyPerEdgeGoOutAsWrittenOthersAreCompleted) {
    const std::vector<std::string> replies{
        R"({"scores": [{"id": "e1", "score": 1}, {"id": "e2", "score": 0.5},
                       {"id": "e3", "score": 0}]})",
        R"({"scores": [{"id": "e1", "score": 0.2}, {"id": "e1", "score": 0.3},
                       {"id": "e3", "score": 0.1}]})",
        R"({"scores": [{"id": "e1", "score": 0.2, "why": "x"}, {"id": "e2", "score": 0.5},
                       {"id": "e3", "score": 0.1}]})",
        R"({"scores": [{"id": "e2", "score": 0.5}, {"id": "e1", "score": 0.2}]})",
        R"({"scores": [{"id": "e1", "score": 0.2}, {"id": "e2", "score": 0.5},
                       {"id": "e3", "score": 0.1}], "note": "extra"})"};
    LlmServiceOptions options;
    options.embeddings_service.clear();
    start(std::make_shared<TurnsProvider>(replies), options);
    const std::vector<json> expected{
        json::parse(replies[0]),
        json::parse(R"({"scores": [{"id": "e1", "score": 0.2}, {"id": "e2", "score": 0.0},
                                   {"id": "e3", "score": 0.1}]})"),
        json::parse(R"({"scores": [{"id": "e1", "score": 0.2}, {"id": "e2", "score": 0.5},
                                   {"id": "e3", "score": 0.1}]})"),
        json::parse(R"({"scores": [{"id": "e1", "score": 0.2}, {"id": "e2", "score": 0.5},
                                   {"id": "e3", "score": 0.0}]})"),
        json::parse(R"({"scores": [{"id": "e1", "score": 0.2}, {"id": "e2", "score": 0.5},
                                   {"id": "e3", "score": 0.1}]})")};
    for (std::size_t i = 0; i < replies.size(); ++i) {
        request(llm("kg-edge-scoring",
                    {{"question", kQuestion}, {"concepts", "[]"}, {"edges", kEdges.dump()}}));
        const auto r = final_response();
        ASSERT_TRUE(r.json) << "reply " << i;
        EXPECT_EQ(*r.json, expected[i]) << "reply " << i;
        if (i == 0) {
            EXPECT_EQ(r.text, replies[0]) << "complete already: the model's own text";
        } else {
            EXPECT_EQ(r.text, expected[i].dump()) << "reply " << i;
        }
    }
}

TEST_F(LlmServiceTest, ASynthesisReplyBreakingTheContractIsATypedError) {
    LlmServiceOptions options;
    options.embeddings_service.clear();
    start(std::make_shared<ScriptedProvider>("Cruz Azul FC is in Mexico [e1][e7]."), options);
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}), "no-line");
    auto [type, message] = expect_error("no-line");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("\"Answer:\" line"), std::string::npos) << message;
}

TEST_F(LlmServiceTest, ASynthesisReplyWithAnInventedMarkerIsATypedError) {
    LlmServiceOptions options;
    options.embeddings_service.clear();
    start(std::make_shared<ScriptedProvider>("Answer: Mexico [e1]\nIt is in Mexico [e1][e7]."),
          options);
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}), "invented");
    auto [type, message] = expect_error("invented");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("[e7]"), std::string::npos) << message;
}

TEST_F(LlmServiceTest, DocumentSynthesisCitesChunks) {
    start_extractive();
    const json chunks = json::array(
        {{{"id", "c1"}, {"text", "The tower opened in 1889. It is tall."}, {"title", "Tower"}},
         {{"id", "c2"}, {"text", "Bread is baked daily."}, {"title", "Bakery"}}});
    request(llm("document-synthesis",
                {{"question", "When did the tower open?"}, {"chunks", chunks.dump()}}));
    const auto r = final_response();
    EXPECT_TRUE(r.text.starts_with("The tower opened in 1889. [c1]")) << r.text;
}

TEST_F(LlmServiceTest, TypedErrorsAndTheWorkerKeepsServing) {
    start_extractive();
    request(llm("no-such-template", json::object()), "unknown");
    auto [type, message] = expect_error("unknown");
    EXPECT_EQ(type, "NotFound");
    EXPECT_NE(message.find("no-such-template"), std::string::npos);
    EXPECT_NE(message.find("kg-synthesis"), std::string::npos) << "lists the known ones";

    request(llm("kg-synthesis", {{"question", "q"}}), "missing");
    std::tie(type, message) = expect_error("missing");
    EXPECT_EQ(type, "InvalidRequest");
    EXPECT_NE(message.find("\"edges\""), std::string::npos) << message;

    request(llm("kg-synthesis", {{"question", "q"}, {"edges", "[{\"id\": \"e1\"}]"}}), "shape");
    std::tie(type, message) = expect_error("shape");
    EXPECT_EQ(type, "InvalidRequest");
    EXPECT_NE(message.find("\"edges\""), std::string::npos) << message;

    request(llm("kg-synthesis", {{"question", 42}}), "number");
    std::tie(type, message) = expect_error("number");
    EXPECT_EQ(type, "InvalidRequest");
    EXPECT_NE(message.find("\"question\""), std::string::npos) << message;

    int n = 0;
    for (const json& bad :
         {json::array(), json{{"variables", json::object()}}, json{{"template", 3}},
          json{{"template", "kg-synthesis"}, {"variables", "x"}}}) {
        const std::string token = "bad" + std::to_string(n++);
        request(bad, token);
        std::tie(type, message) = expect_error(token);
        EXPECT_EQ(type, "InvalidRequest") << bad.dump();
    }

    request(llm("extract-concepts", {{"question", "Where is Lake_Orrin?"}}), "after");
    const auto response = final_response();
    ASSERT_TRUE(response.json);
    EXPECT_EQ((*response.json)["concepts"][0], "Lake Orrin");
}

// Each body's answer, as the worker sent it: the REPLY's body, or the ERROR's type and message.
std::vector<std::string> answers_to(runtime::testing::FakeBroker& broker,
                                    const std::string& identity,
                                    const std::vector<std::string>& bodies) {
    std::vector<std::string> answers;
    for (std::size_t i = 0; i < bodies.size(); ++i) {
        const std::string token = "t" + std::to_string(i);
        broker.send_request(identity, token, bodies[i], "r-" + token, 10'000,
                            std::string(schema::services::kLlm));
        for (;;) {
            auto message = broker.receive(5s);
            if (!message) {
                ADD_FAILURE() << "no answer to " << bodies[i];
                return answers;
            }
            if (message->command() == cmd::kHeartbeat) continue;
            if (message->command() != cmd::kReply && message->command() != cmd::kError) continue;
            EXPECT_EQ(message->frames[3], token);
            std::string answer(1, message->command());
            for (std::size_t f = 5; f < message->frames.size(); ++f)
                answer += "|" + message->frames[f];
            answers.push_back(std::move(answer));
            break;
        }
    }
    return answers;
}

// A body read as text (the worker's default) is answered byte for byte as the runtime's tree of
// it was: good requests, bad shapes (InvalidRequest) and text that is not JSON (InvalidJson).
TEST_F(LlmServiceTest, BodiesReadAsTextAreAnsweredAsTheirTreesWere) {
    const std::vector<std::string> bodies{
        llm("extract-concepts", {{"question", kQuestion}}).dump(),
        llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}).dump(),
        llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}).dump(2),
        R"({"template":"extract-concepts","variables":{"question":"a","question":"Who is Zo\u00eb?"}})",
        R"({"variables":{"question":"q"}})",
        R"({"template":"kg-synthesis","variables":{"question":1}})",
        R"({"template":"kg-synthesis","streaming":"no"})",
        R"([1,2])",
        R"({"template":"kg-synthesis")",
        "{\"template\":\"x\xFF\"}",
        "",
    };
    start_extractive(true);
    const auto as_text = answers_to(broker, identity, bodies);
    worker->stop();
    worker->wait();
    start_extractive(false);
    const auto as_tree = answers_to(broker, identity, bodies);
    ASSERT_EQ(as_text.size(), bodies.size());
    EXPECT_EQ(as_text, as_tree);
    EXPECT_EQ(as_text[0][0], cmd::kReply) << as_text[0];
    EXPECT_EQ(as_text[1][0], cmd::kReply) << as_text[1];
    EXPECT_EQ(as_text[1], as_text[2]) << "whitespace changes nothing";
    EXPECT_EQ(as_text[3][0], cmd::kReply) << as_text[3];
    EXPECT_NE(as_text[3].find("Zo"), std::string::npos) << "the last of a name given twice";
    for (std::size_t i = 4; i < 8; ++i)
        EXPECT_NE(as_text[i].find("|InvalidRequest|"), std::string::npos) << as_text[i];
    for (std::size_t i = 8; i < bodies.size(); ++i)
        EXPECT_NE(as_text[i].find("|InvalidJson|the request body: "), std::string::npos)
            << as_text[i];
}

// n edges of one named club, as the "edges" variable's JSON text.
std::string club_edges(std::size_t n) {
    json edges = json::array();
    for (std::size_t i = 0; i < n; ++i)
        edges.push_back({{"id", "e" + std::to_string(i)},
                         {"s", "Cruz Azul FC"},
                         {"p", "plays in club inverse"},
                         {"o", "Player " + std::to_string(i)}});
    return edges.dump();
}

TEST_F(LlmServiceTest, MoreEdgesThanTheBoundAreATypedErrorNamingIt) {
    start_extractive();
    const std::size_t bound = ExtractiveProvider::kMaxEdges;
    for (const char* name : {"kg-edge-scoring", "kg-edge-reasoning", "kg-synthesis"}) {
        const std::string token = std::string("over-") + name;
        request(
            llm(name,
                {{"question", kQuestion}, {"concepts", "[]"}, {"edges", club_edges(bound + 1)}}),
            token, 60'000);
        auto [type, message] = expect_error(token, 60s);
        EXPECT_EQ(type, "InvalidRequest") << name;
        EXPECT_NE(message.find(std::to_string(bound)), std::string::npos) << message;
        EXPECT_NE(message.find("kMaxEdges"), std::string::npos) << message;
    }
    request(llm("kg-edge-scoring",
                {{"question", kQuestion}, {"concepts", "[]"}, {"edges", club_edges(bound)}}),
            "at-bound", 60'000);
    const auto at_bound = final_response(60s);
    ASSERT_TRUE(at_bound.json) << "the bound itself is served";
    EXPECT_EQ((*at_bound.json)["scores"].size(), bound);
}

// The extractive provider on its own, with the request's cancel check and deadline.
base::Result<Completion> score_directly(const std::string& edges_json,
                                        const GenerateOptions& options) {
    static const auto templates = TemplateSet::builtin();
    const PromptTemplate* t = templates->find("kg-edge-scoring");
    const std::map<std::string, std::string> variables{
        {"question", kQuestion}, {"concepts", "[]"}, {"edges", edges_json}};
    auto rendered = t->render(variables);
    EXPECT_TRUE(rendered);
    ExtractiveProvider provider;
    return provider.generate(PromptInput{*t, variables, *rendered}, options);
}

TEST(ExtractiveProviderTest, ScoringStopsOnceCancelledOrPastTheDeadline) {
    const std::string edges = club_edges(ExtractiveProvider::kMaxEdges);
    // Counted, not timed: the provider asks, hears "cancelled" and asks no more. (Building and
    // rendering 20,000 edges alone takes seconds under a sanitizer on a loaded machine.)
    int asked = 0;
    GenerateOptions cancelled;
    cancelled.cancelled = [&asked] {
        ++asked;
        return true;
    };
    auto answer = score_directly(edges, cancelled);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, base::ErrorType::kCancelled);
    EXPECT_EQ(asked, 1) << "stops at the first check that says cancelled";

    GenerateOptions late;
    late.deadline = Clock::now() - 1ms;
    answer = score_directly(edges, late);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, base::ErrorType::kCancelled);

    GenerateOptions in_time;
    in_time.deadline = Clock::now() + 60s;
    in_time.cancelled = [] { return false; };
    EXPECT_TRUE(score_directly(club_edges(10), in_time));
}

// The configured delay (llm.extractive_delay_ms): the answer comes after it; a cancelled
// request or a passed deadline stops the wait.
TEST(ExtractiveProviderTest, ADelayComesBeforeTheAnswerAndACancelOrTheDeadlineEndsIt) {
    static const auto templates = TemplateSet::builtin();
    const PromptTemplate* t = templates->find("extract-concepts");
    const std::map<std::string, std::string> variables{{"question", kQuestion}};
    auto rendered = t->render(variables);
    ASSERT_TRUE(rendered);
    const PromptInput input{*t, variables, *rendered};

    ExtractiveProvider slow(150ms);
    auto started = Clock::now();
    auto answer = slow.generate(input, GenerateOptions{});
    ASSERT_TRUE(answer) << answer.error().describe();
    EXPECT_GE(Clock::now() - started, 150ms);
    EXPECT_FALSE((*answer->json)["concepts"].empty()) << "the same answer, later";

    // A minute's delay, cancelled after the first checks: it stops long before the minute.
    ExtractiveProvider very_slow(60s);
    GenerateOptions cancel;
    int checks = 0;
    cancel.cancelled = [&checks] { return ++checks > 3; };
    started = Clock::now();
    answer = very_slow.generate(input, cancel);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, base::ErrorType::kCancelled);
    EXPECT_LT(Clock::now() - started, 30s);

    GenerateOptions late;
    late.deadline = Clock::now() + 20ms;
    answer = very_slow.generate(input, late);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, base::ErrorType::kTimeout);
}

TEST_F(LlmServiceTest, EdgeScoringAsksTheEmbeddingsServiceAndBlendsItIn) {
    start(std::make_shared<ExtractiveProvider>());
    const json edges =
        json::parse(R"([{"id": "e1", "s": "Lake Orrin", "p": "feeds", "o": "River Tam"},
                                       {"id": "e2", "s": "Lake Orrin", "p": "borders", "o": "Tam Forest"}])");
    request(llm(
        "kg-edge-scoring",
        {{"question", "What does Lake_Orrin do?"}, {"concepts", "[]"}, {"edges", edges.dump()}}));
    auto call = expect_call();
    ASSERT_TRUE(call);
    EXPECT_EQ(call->frames[3], "embeddings");
    EXPECT_LE(std::stoll(call->frames[5]), 2000) << "bounded by embeddings_timeout";
    // The call works for the run: it carries the run's OTel trace id (request option trace=).
    ASSERT_EQ(call->frames.size(), 8u);
    EXPECT_EQ(call->frames[6].rfind("trace=", 0), 0u) << call->frames[6];
    const json texts = json::parse(call->frames.back())["texts"];
    ASSERT_EQ(texts.size(), 3u);
    EXPECT_EQ(texts[0], "What does Lake_Orrin do?");
    EXPECT_EQ(texts[1], "Lake Orrin feeds River Tam");
    // The question points the same way as e1, away from e2.
    const json vectors = json::array({{1.0, 0.0}, {0.9, 0.1}, {0.0, 1.0}});
    answer_call(*call, schema::protocol::client_cmd::kFinal,
                {json{{"vectors", vectors}, {"model", "m"}, {"dim", 2}}.dump()});
    const auto r = final_response();
    ASSERT_TRUE(r.json);
    EXPECT_GT((*r.json)["scores"][0]["score"].get<double>(),
              (*r.json)["scores"][1]["score"].get<double>());
}

// An embeddings service that answers with the built-in hashing model is asked once: the next
// requests compute the very same vectors in the worker, until the TTL sends it back to ask.
TEST_F(LlmServiceTest, EdgeScoringComputesBuiltinVectorsItselfOnceTheServiceNamesThem) {
    LlmServiceOptions options;
    options.builtin_embeddings_ttl = 400ms;
    start(std::make_shared<ExtractiveProvider>(), options);
    const auto ask = [&](const std::string& token) {
        request(llm("kg-edge-scoring",
                    {{"question", kQuestion}, {"concepts", "[]"}, {"edges", kEdges.dump()}}),
                token);
    };
    const auto answer_builtin = [&](const runtime::testing::WorkerMessage& call) {
        const json body = json::parse(call.frames.back());
        json vectors = json::array();
        for (const auto& t : body["texts"])
            vectors.push_back(text::feature_vector(t.get<std::string>(), 64));
        answer_call(call, schema::protocol::client_cmd::kFinal,
                    {json{{"vectors", vectors}, {"model", text::kFeatureHashingModel}, {"dim", 64}}
                         .dump()});
    };

    ask("first");
    auto call = expect_call();
    ASSERT_TRUE(call);
    answer_builtin(*call);
    const auto first = final_response();
    ASSERT_TRUE(first.json);

    broker.skipped.clear();
    ask("second");
    const auto second = final_response();
    ASSERT_TRUE(second.json);
    for (const auto& m : broker.skipped)
        EXPECT_NE(m.frames[1], "GBC01") << "asked embeddings within the TTL";
    EXPECT_EQ(*second.json, *first.json)
        << "the worker's own vectors score exactly as the service's";

    std::this_thread::sleep_for(500ms);
    ask("third");
    call = expect_call();
    ASSERT_TRUE(call) << "after the TTL the service is asked again";
    answer_call(*call, schema::protocol::client_cmd::kFinal,
                {json{{"vectors", json::array({{1.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}, {0.0, 1.0}})},
                      {"model", "another"},
                      {"dim", 2}}
                     .dump()});
    ASSERT_TRUE(final_response().json);
    ask("fourth");
    call = expect_call();
    ASSERT_TRUE(call) << "another model is never computed locally";
    answer_builtin(*call);
    ASSERT_TRUE(final_response().json);
}

TEST_F(LlmServiceTest, EdgeScoringFallsBackToLexicalWhenEmbeddingsFail) {
    start(std::make_shared<ExtractiveProvider>());
    request(llm("kg-edge-scoring",
                {{"question", kQuestion}, {"concepts", "[]"}, {"edges", kEdges.dump()}}));
    auto call = expect_call();
    ASSERT_TRUE(call);
    answer_call(*call, schema::protocol::client_cmd::kError, {"UnknownService", "no embeddings"});
    const auto r = final_response();
    ASSERT_TRUE(r.json);
    EXPECT_EQ((*r.json)["scores"].size(), 3u);

    // Within the back-off it does not ask again.
    broker.skipped.clear();
    request(llm("kg-edge-scoring",
                {{"question", kQuestion}, {"concepts", "[]"}, {"edges", kEdges.dump()}}),
            "again");
    const auto again = final_response();
    ASSERT_TRUE(again.json);
    EXPECT_EQ(again.json->at("scores").size(), 3u);
    for (const auto& m : broker.skipped)
        EXPECT_NE(m.frames[1], "GBC01") << "asked embeddings again";
}

class LlmServiceOpenAiTest : public LlmServiceTest {
protected:
    std::shared_ptr<Provider> openai(const std::string& base_url) {
        return std::make_shared<OpenAiProvider>(
            http::testing::quick_retry_options<OpenAiProviderOptions>(base_url, "fake"));
    }
    http::testing::FakeOpenAiServer server;
};

TEST_F(LlmServiceOpenAiTest, ASynthesisReplyIsCheckedWholeThenStreamedWithoutItsAnswerLine) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control(
        {{"chat_replies", {"Answer: Mexico [e1]\nCruz Azul FC is in Mexico [e1]."}}}));
    start(openai(server.url()));
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}, true));
    const auto r = final_response();
    EXPECT_EQ(r.model, "fake");
    EXPECT_GT(r.in_token, 0u);
    std::string streamed;
    for (const auto& m : broker.skipped)
        if (m.command() == cmd::kPartial)
            streamed += json::parse(m.frames[5])["text"].get<std::string>();
    EXPECT_EQ(streamed, r.text);
    EXPECT_EQ(r.text, "Cruz Azul FC is in Mexico [e1].");
    ASSERT_TRUE(r.answer);
    EXPECT_EQ(*r.answer, "Mexico");
    EXPECT_EQ(r.answer_ids, (std::vector<std::string>{"e1"}));
}

TEST_F(LlmServiceOpenAiTest, ScoresAreCompletedToOnePerGivenEdge) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control(
        {{"chat_replies",
          {R"({"scores": [{"id": "e2", "score": 0.4}, {"id": "e9", "score": 1}]})"}}}));
    start(openai(server.url()));
    request(llm("kg-edge-scoring",
                {{"question", kQuestion}, {"concepts", "[]"}, {"edges", kEdges.dump()}}));
    const auto r = final_response();
    ASSERT_TRUE(r.json);
    EXPECT_EQ((*r.json)["scores"],
              json::parse(R"([{"id": "e1", "score": 0.0}, {"id": "e2", "score": 0.4},
                                                  {"id": "e3", "score": 0.0}])"));
    EXPECT_EQ(json::parse(r.text), *r.json);
}

TEST_F(LlmServiceOpenAiTest, InvalidJsonAfterTheRepairIsAnUpstreamError) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"chat_replies", {"nope", "still nope"}}}));
    start(openai(server.url()));
    request(llm("extract-concepts", {{"question", kQuestion}}), "bad");
    auto [type, message] = expect_error("bad");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
}

TEST_F(LlmServiceOpenAiTest, TheRequestDeadlineBoundsTheEndpoint) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"delay_ms", 5000}}));
    start(openai(server.url()));
    const auto sent = std::chrono::steady_clock::now();
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}), "slow", 400);
    auto [type, message] = expect_error("slow", 3s);
    EXPECT_EQ(type, "DeadlineExceeded") << message;
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 2s);
}

TEST_F(LlmServiceTest, AnEndpointThatIsDownIsAnUpstreamError) {
    // Port 1: nothing listens there.
    start(std::make_shared<OpenAiProvider>(
        http::testing::quick_retry_options<OpenAiProviderOptions>("http://127.0.0.1:1", "m")));
    request(llm("kg-synthesis", {{"question", kQuestion}, {"edges", kEdges.dump()}}), "down");
    auto [type, message] = expect_error("down");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("cannot connect"), std::string::npos) << message;
}

}  // namespace
}  // namespace glassbox::llm
