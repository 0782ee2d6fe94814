// A store worker of its own home, served by a FakeBroker: the fixture of the tests that talk to a
// real StoreService through the worker runtime (the text-body and inline-read tests).
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "schema/protocol.hpp"
#include "tests/support/fake_broker.hpp"
#include "workers/runtime/worker.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::store::testing {

class StoreWorkerFixture : public ::testing::Test {
protected:
    // Starts the worker in a fresh home named after `prefix`, reading bodies as the store worker
    // does (reads_body_as_text) and running inline what `run_inline` takes (none when empty);
    // waits for its READY.
    void start_store(const std::string& prefix,
                     std::function<bool(std::string_view, std::string_view)> run_inline = {}) {
        using namespace std::chrono_literals;
        static std::atomic<int> counter{0};
        home_ = std::filesystem::temp_directory_path() /
                (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(home_);
        std::filesystem::create_directories(home_ / "knowledge");
        StoreServiceConfig config;
        config.home = home_;
        runtime::WorkerConfig c;
        c.endpoint = broker.endpoint();
        c.service = "test";
        c.heartbeat = 1000ms;
        c.stop_poll = 10ms;
        c.worker_name = "w";
        c.text_body = reads_body_as_text;
        c.run_inline = std::move(run_inline);
        service = std::make_shared<StoreService>(config);
        worker = std::make_unique<runtime::Worker>(context, c, make_store_handler(service));
        worker->start();
        auto ready = broker.expect(schema::protocol::worker_cmd::kReady);
        ASSERT_TRUE(ready);
        identity_ = ready->identity;
    }

    void TearDown() override {
        if (worker) {
            worker->stop();
            worker->wait();
        }
        std::filesystem::remove_all(home_);
    }

    zmq::context_t context{1};
    runtime::testing::FakeBroker broker{context};
    std::shared_ptr<StoreService> service;
    std::unique_ptr<runtime::Worker> worker;
    std::filesystem::path home_;
    std::string identity_;
};

}  // namespace glassbox::store::testing
