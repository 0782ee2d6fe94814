// Starts tests/support/fake_openai.py on a free port for one test and always stops it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/http_client.hpp"

extern char** environ;

namespace glassbox::http::testing {

// The options of an OpenAI client (an llm provider's or an embedder's) for `base_url` and
// `model`, retrying once, soon: the fake server answers at once, and a port nothing listens on
// should fail fast.
template <typename Options>
Options quick_retry_options(const std::string& base_url, const std::string& model) {
    Options o;
    o.base_url = base_url;
    o.model = model;
    o.http.initial_backoff = std::chrono::milliseconds{10};
    o.http.max_retries = 1;
    return o;
}

class FakeOpenAiServer {
public:
    // `args` go to the script (e.g. {"--api-key", "sk-test"}). Waits up to 10 s for the port.
    explicit FakeOpenAiServer(const std::vector<std::string>& args = {}) {
        static std::atomic<int> counter{0};
        ready_file_ =
            std::filesystem::temp_directory_path() /
            ("glassbox-fake-openai-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter++) + "-" + std::to_string(std::random_device{}()) + ".port");
        std::vector<std::string> argv_strings{"/usr/bin/python3", GLASSBOX_FAKE_OPENAI,
                                              "--ready-file", ready_file_.string()};
        argv_strings.insert(argv_strings.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& s : argv_strings) argv.push_back(s.data());
        argv.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) {
            pid_ = -1;
            return;
        }
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < until) {
            std::ifstream in(ready_file_);
            if (in >> port_ && port_ > 0) break;
            port_ = 0;
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // died at start
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    ~FakeOpenAiServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            int status = 0;
            while (::waitpid(pid_, &status, WNOHANG) == 0) {
                if (std::chrono::steady_clock::now() > until) {
                    ::kill(pid_, SIGKILL);
                    ::waitpid(pid_, &status, 0);
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
        std::error_code ignored;
        std::filesystem::remove(ready_file_, ignored);
    }

    FakeOpenAiServer(const FakeOpenAiServer&) = delete;
    FakeOpenAiServer& operator=(const FakeOpenAiServer&) = delete;

    bool ok() const { return pid_ > 0 && port_ > 0; }
    int port() const { return port_; }
    std::string url(const std::string& path = "") const {
        return "http://127.0.0.1:" + std::to_string(port_) + path;
    }

    // Sets knobs (see the script's docstring).
    bool control(const nlohmann::json& knobs) {
        return control_client_.post_json(url("/_control"), knobs).ok();
    }
    // The requests the fake received so far (control calls excluded).
    nlohmann::json requests() {
        auto answer = control_client_.get(url("/_requests"));
        if (!answer) return nlohmann::json::array();
        auto parsed = nlohmann::json::parse(answer->body, nullptr, false);
        return parsed.is_object() && parsed.contains("requests") ? parsed["requests"]
                                                                 : nlohmann::json::array();
    }
    // Requests to `path` only.
    std::vector<nlohmann::json> requests_to(const std::string& path) {
        std::vector<nlohmann::json> out;
        for (const auto& r : requests()) {
            if (r.value("path", "") == path) out.push_back(r);
        }
        return out;
    }

private:
    static HttpOptions control_options() {
        HttpOptions o;
        o.max_retries = 0;
        o.timeout = std::chrono::seconds(5);
        return o;
    }

    pid_t pid_ = -1;
    int port_ = 0;
    std::filesystem::path ready_file_;
    HttpClient control_client_{control_options()};
};

}  // namespace glassbox::http::testing
