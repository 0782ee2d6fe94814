// An in-process bus for the RAG service tests: a real broker, the real store and embeddings
// services on a temporary home, a scripted `llm`, and the graph-rag and document-rag workers,
// all over loopback TCP with real ZeroMQ.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "broker/broker.hpp"
#include "bus/bus_client.hpp"
#include "schema/messages.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::rag::testing {

// How the scripted LLM behaves (read on every request; set before sending one).
struct FakeLlmScript {
    std::atomic<bool> fail{false};             // answer every request with UpstreamError
    std::atomic<bool> unknown_markers{true};   // add [e99]/[c99] to syntheses
    std::atomic<std::size_t> stream_piece{3};  // bytes per streamed PARTIAL
};

// The scripted LLM. Deterministic and simple, so tests can predict what it does:
//  extract-concepts: runs of capitalised words ("Cruz Azul FC") plus lower-case words after
//    "the" that are not stop words; kg-edge-scoring: share of question words in the edge text;
//  kg-edge-reasoning: "mentions <s>"; kg-synthesis / document-synthesis: one sentence per given
//    edge/chunk (at most 3) each followed by its marker, then an unknown marker; the short
//    answer is the first edge's object or chunk's title, citing it (and the unknown id).
runtime::Handler make_fake_llm(std::shared_ptr<FakeLlmScript> script);

// One reply of a stream, as the tests look at it.
struct StreamReply {
    bus::ReplyKind kind;
    nlohmann::json body;
    std::optional<base::Error> error;
};

class RagCluster {
public:
    explicit RagCluster(RagConfig config = {});
    ~RagCluster();

    const std::string& endpoint() const noexcept { return endpoint_; }
    FakeLlmScript& llm() noexcept { return *script_; }

    // Runs a store op to its FINAL (fails the test otherwise).
    nlohmann::json store(nlohmann::json body);
    // Loads N-Triples text as `uri` (tier) and indexes the collection.
    void load_triples(const std::string& collection, const std::string& uri,
                      const std::string& ntriples, int tier = 1);
    // Loads each (uri, title, text) as a one-chunk document and indexes it.
    void load_documents(const std::string& collection,
                        const std::vector<std::tuple<std::string, std::string, std::string>>& docs);

    // Sends `body` to `service` and collects every reply up to the terminal.
    std::vector<StreamReply> request(const std::string& service, const nlohmann::json& body,
                                     std::chrono::milliseconds deadline = std::chrono::milliseconds{
                                         20'000});

    // Stops one service's workers (e.g. the store, for failure paths).
    void stop_service(const std::string& service);
    // Serves one more service on the cluster's bus (e.g. the query router over these engines).
    void add_worker(const std::string& service, runtime::Handler handler, std::size_t threads = 1);

private:
    zmq::context_t context_{1};
    std::filesystem::path home_;
    std::unique_ptr<broker::Broker> broker_;
    std::jthread broker_thread_;
    std::string endpoint_;
    std::shared_ptr<FakeLlmScript> script_ = std::make_shared<FakeLlmScript>();
    std::vector<std::pair<std::string, std::unique_ptr<runtime::Worker>>> workers_;
    std::unique_ptr<bus::BusClient> client_;
};

}  // namespace glassbox::rag::testing
