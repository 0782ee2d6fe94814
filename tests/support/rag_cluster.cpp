// The in-process bus of the RAG service tests, and the scripted LLM.
#include "tests/support/rag_cluster.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>

#include "base/ascii.hpp"
#include "workers/embeddings/embeddings_config.hpp"
#include "workers/embeddings/embeddings_service.hpp"
#include "workers/rag/document_rag_service.hpp"
#include "workers/rag/graph_rag_service.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::rag::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kHeartbeat{500};

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    std::string word;
    for (char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
            (static_cast<unsigned char>(c) & 0x80)) {
            word.push_back(c);
        } else if (!word.empty()) {
            out.push_back(std::move(word));
            word.clear();
        }
    }
    if (!word.empty()) out.push_back(std::move(word));
    return out;
}

const std::set<std::string>& stop_words() {
    static const std::set<std::string> words{"which", "who", "what", "where", "when", "how",
                                             "is",    "the", "a",    "an",    "in",   "of",
                                             "does",  "did", "for",  "to",    "and",  "it"};
    return words;
}

json concepts_for(const std::string& question) {
    std::vector<std::string> concepts;
    std::string run;
    const auto ws = words(question);
    for (std::size_t i = 0; i < ws.size(); ++i) {
        const bool capital = std::isupper(static_cast<unsigned char>(ws[i][0])) &&
                             !stop_words().count(base::ascii_lower(ws[i]));
        if (capital) {
            run += (run.empty() ? "" : " ") + ws[i];
            continue;
        }
        if (!run.empty()) concepts.push_back(std::exchange(run, {}));
        if (ws[i].size() > 3 && !stop_words().count(base::ascii_lower(ws[i])))
            concepts.push_back(ws[i]);
    }
    if (!run.empty()) concepts.push_back(run);
    return {{"concepts", concepts}};
}

json scores_for(const std::string& question, const json& edges) {
    std::set<std::string> asked;
    for (const auto& w : words(question)) asked.insert(base::ascii_lower(w));
    json scores = json::array();
    for (const auto& e : edges) {
        double hits = 0;
        for (const char* part : {"s", "p", "o"}) {
            for (const auto& w : words(e[part].get<std::string>()))
                hits += asked.count(base::ascii_lower(w)) ? 1 : 0;
        }
        scores.push_back({{"id", e["id"]}, {"score", hits / (1.0 + hits)}});
    }
    return {{"scores", scores}};
}

std::string synthesis_for(const json& items, bool graph, bool unknown_marker) {
    std::string text;
    for (std::size_t i = 0; i < std::min<std::size_t>(items.size(), 3); ++i) {
        const auto& item = items[i];
        std::string claim;
        if (graph) {
            claim = item["s"].get<std::string>() + " " + item["p"].get<std::string>() + " " +
                    item["o"].get<std::string>();
        } else {
            claim = item["text"].get<std::string>();
            claim = claim.substr(0, claim.find('.'));
        }
        text += (text.empty() ? "" : " ") + claim + " [" + item["id"].get<std::string>() + "]";
        if (i == 0 && unknown_marker) text += graph ? "[e99]" : "[c99]";
        text += ".";
    }
    if (text.empty()) text = "Nothing is known about that.";
    return text;
}

}  // namespace

runtime::Handler make_fake_llm(std::shared_ptr<FakeLlmScript> script) {
    return [script](runtime::RequestContext& ctx) {
        if (script->fail) {
            (void)ctx.fail(
                base::make_error(base::ErrorType::kUpstreamError, "fake llm: endpoint down"));
            return;
        }
        auto request = schema::decode<schema::LlmRequest>(ctx.body());
        if (!request) {
            (void)ctx.fail(
                base::make_error(base::ErrorType::kInvalidRequest, request.error().message));
            return;
        }
        const auto var = [&](const std::string& name) {
            auto it = request->variables.find(name);
            return it == request->variables.end() ? std::string() : it->second;
        };
        schema::LlmResponse response;
        response.model = "fake-llm-v1";
        const std::string& name = request->template_name;
        if (name == "extract-concepts") {
            response.json = concepts_for(var("question"));
        } else if (name == "kg-edge-scoring") {
            response.json = scores_for(var("question"), json::parse(var("edges")));
        } else if (name == "kg-edge-reasoning") {
            json reasons = json::array();
            for (const auto& e : json::parse(var("edges"))) {
                reasons.push_back(
                    {{"id", e["id"]}, {"reasoning", "mentions " + e["s"].get<std::string>()}});
            }
            response.json = json{{"reasons", reasons}};
        } else if (name == "kg-synthesis" || name == "document-synthesis") {
            const bool graph = name == "kg-synthesis";
            const json items = json::parse(var(graph ? "edges" : "chunks"));
            response.text = synthesis_for(items, graph, script->unknown_markers);
            // The short answer, as the llm service splits it off the Answer line: the first
            // edge's object or chunk's title, citing it (and the unknown id when asked to).
            response.answer = "";
            if (!items.empty()) {
                response.answer = items[0][graph ? "o" : "title"].get<std::string>();
                response.answer_ids.push_back(items[0]["id"].get<std::string>());
                if (script->unknown_markers) response.answer_ids.push_back(graph ? "e99" : "c99");
            }
        } else {
            (void)ctx.fail(
                base::make_error(base::ErrorType::kNotFound, "unknown template " + name));
            return;
        }
        if (response.json) response.text = response.json->dump();
        if (request->streaming && !response.json) {
            const std::size_t step = std::max<std::size_t>(1, script->stream_piece);
            std::size_t at = 0;
            while (at < response.text.size()) {
                std::size_t end = std::min(response.text.size(), at + step);
                while (end < response.text.size() &&
                       (static_cast<unsigned char>(response.text[end]) & 0xC0) == 0x80)
                    ++end;
                (void)ctx.send_partial({{"text", response.text.substr(at, end - at)}});
                at = end;
            }
        }
        std::size_t in = 0;
        for (const auto& [k, v] : request->variables) in += v.size();
        response.in_token = in / 4 + 1;
        response.out_token = response.text.size() / 4 + 1;
        response.end_of_stream = true;
        (void)ctx.reply(schema::encode(response));
    };
}

RagCluster::RagCluster(RagConfig config) {
    std::string pattern = (std::filesystem::temp_directory_path() / "glassbox-rag-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    home_ = pattern;

    broker::BrokerConfig broker_config;
    broker_config.endpoint = "tcp://127.0.0.1:*";
    broker_config.pub_endpoint = "tcp://127.0.0.1:*";
    broker_config.heartbeat = kHeartbeat;
    broker_ = std::make_unique<broker::Broker>(context_, broker_config);
    auto bound = broker_->bind();
    if (!bound) throw std::runtime_error("broker bind: " + bound.error().message);
    endpoint_ = bound->endpoint;
    broker_thread_ = std::jthread([this](std::stop_token token) { broker_->run(token); });

    auto embedder =
        embeddings::make_embedder(*embeddings::EmbeddingsConfig::from_json(json::object()));
    add_worker("embeddings", embeddings::make_embeddings_handler(*embedder), 2);
    store::StoreServiceConfig store_config;
    store_config.home = home_;
    add_worker("store",
               store::make_store_handler(std::make_shared<store::StoreService>(store_config)), 2);
    add_worker("llm", make_fake_llm(script_), 2);
    add_worker("graph-rag", make_graph_rag_handler(config), 2);
    add_worker("document-rag", make_document_rag_handler(config), 2);

    bus::BusClientConfig client_config;
    client_config.endpoint = endpoint_;
    client_config.heartbeat = kHeartbeat;
    client_ = std::make_unique<bus::BusClient>(context_, client_config);
}

RagCluster::~RagCluster() {
    client_.reset();
    for (auto& [name, worker] : workers_) worker->stop();
    workers_.clear();
    broker_->stop();
    broker_thread_ = {};
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
}

void RagCluster::add_worker(const std::string& service, runtime::Handler handler,
                            std::size_t threads) {
    runtime::WorkerConfig config;
    config.endpoint = endpoint_;
    config.service = service;
    config.threads = threads;
    config.heartbeat = kHeartbeat;
    config.drain_timeout = 2s;
    config.worker_name = service + "-test";
    auto worker = std::make_unique<runtime::Worker>(context_, config, std::move(handler));
    worker->start();
    workers_.emplace_back(service, std::move(worker));
}

void RagCluster::stop_service(const std::string& service) {
    for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->first == service) {
            it->second->stop();
            it->second->wait();
            it = workers_.erase(it);
        } else {
            ++it;
        }
    }
}

std::vector<StreamReply> RagCluster::request(const std::string& service, const json& body,
                                             std::chrono::milliseconds deadline) {
    std::vector<StreamReply> replies;
    auto id = client_->send(service, body, deadline);
    if (!id) {
        ADD_FAILURE() << "send: " << id.error().message;
        return replies;
    }
    for (;;) {
        auto reply = client_->next(*id, deadline + 5s);
        if (!reply) {
            ADD_FAILURE() << "no terminal from " << service << ": " << reply.error().message;
            return replies;
        }
        replies.push_back(StreamReply{reply->kind, reply->body, reply->error});
        if (reply->terminal()) return replies;
    }
}

json RagCluster::store(json body) {
    auto replies = request("store", body, 60s);
    if (replies.empty() || replies.back().kind != bus::ReplyKind::kFinal) {
        ADD_FAILURE() << "store " << body.value("op", "?") << " failed: "
                      << (replies.empty() || !replies.back().error ? "no reply"
                                                                   : replies.back().error->message);
        return json::object();
    }
    return replies.back().body;
}

void RagCluster::load_triples(const std::string& collection, const std::string& uri,
                              const std::string& ntriples, int tier) {
    store({{"op", "load-triples"},
           {"collection", collection},
           {"source",
            {{"uri", uri}, {"path", ""}, {"media_type", "application/n-triples"}, {"tier", tier}}},
           {"nquads", ntriples}});
    store({{"op", "index"}, {"collection", collection}});
}

void RagCluster::load_documents(
    const std::string& collection,
    const std::vector<std::tuple<std::string, std::string, std::string>>& docs) {
    json documents = json::array();
    for (const auto& [uri, title, text] : docs) {
        std::size_t chars = 0;
        for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
        documents.push_back({{"uri", uri},
                             {"title", title},
                             {"source", {{"uri", uri}, {"media_type", "text/plain"}, {"tier", 2}}},
                             {"text", text},
                             {"chunks", json::array({{{"ordinal", 0},
                                                      {"char_offset", 0},
                                                      {"char_length", chars},
                                                      {"text", text}}})}});
    }
    store({{"op", "load-documents"}, {"collection", collection}, {"documents", documents}});
    store({{"op", "index"}, {"collection", collection}});
}

}  // namespace glassbox::rag::testing
