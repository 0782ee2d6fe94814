// One service's handler run by a real runtime::Worker against the FakeBroker: start it, send it
// requests, read its ERRORs. The fixture the llm and embeddings service tests share.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "tests/support/fake_broker.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::runtime::testing {

class ServiceWorkerTest : public ::testing::Test {
protected:
    // Starts a worker of `service` serving `handler`, and waits for its READY. `text_body`:
    // WorkerConfig::text_body.
    void start_worker(std::string_view service, Handler handler,
                      std::function<bool(std::string_view)> text_body = {}) {
        service_ = std::string(service);
        broker.answers_heartbeats = true;
        WorkerConfig c;
        c.endpoint = broker.endpoint();
        c.service = service_;
        c.stop_poll = 10ms;
        c.text_body = std::move(text_body);
        worker = std::make_unique<Worker>(context, c, std::move(handler));
        worker->start();
        auto ready = broker.expect(schema::protocol::worker_cmd::kReady);
        ASSERT_TRUE(ready);
        identity = ready->identity;
    }
    void TearDown() override {
        if (worker) {
            worker->stop();
            worker->wait();
        }
    }
    void request(const nlohmann::json& body, const std::string& token = "tok",
                 long long deadline_ms = 10'000) {
        broker.send_request(identity, token, body.dump(), "r-" + token, deadline_ms, service_);
    }
    // The type and message of the ERROR for `token`, or a failure.
    std::pair<std::string, std::string> expect_error(const std::string& token,
                                                     std::chrono::milliseconds wait = 5s) {
        auto error = broker.expect(schema::protocol::worker_cmd::kError, wait);
        if (!error) {
            ADD_FAILURE() << "no ERROR for " << token;
            return {};
        }
        EXPECT_EQ(error->frames[3], token);
        return {error->frames[5], error->frames[6]};
    }

    zmq::context_t context{1};
    FakeBroker broker{context};
    std::unique_ptr<Worker> worker;
    std::string identity;

private:
    std::string service_;
};

}  // namespace glassbox::runtime::testing
