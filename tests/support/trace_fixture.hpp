// Shared test helpers: a temp store and explain deliveries built with schema's builders.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/explain_builder.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "tests/support/scratch_dir.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace::testing {

namespace explain = schema::explain;
using std::chrono::milliseconds;

// A fresh folder in the process's scratch folder (removed, with everything in it, at exit).
inline std::filesystem::path fresh_dir() {
    static std::atomic<int> counter{0};
    auto dir = test_support::scratch_dir("glassbox-trace") / std::to_string(counter++);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

inline WallClock::time_point at(std::int64_t epoch_ms) {
    return WallClock::time_point{milliseconds{epoch_ms}};
}

// A delivery whose frames agree with `message`.
inline Delivery delivery_of(const schema::ExplainMessage& message, std::uint64_t id) {
    Delivery d;
    d.delivery_id = id;
    d.service = message.service;
    d.session = message.session;
    d.seq = std::to_string(message.seq);
    d.state = message.trace_status == schema::TraceStatus::kComplete ? "complete"
              : message.trace_status == schema::TraceStatus::kError  ? "error"
                                                                     : "open";
    d.body = schema::dump(schema::encode(message));
    return d;
}

// One echo-like run: seq 0 Question (open) and, unless `open_only`, seq 1 Synthesis (complete
// or error).
struct FakeRun {
    explain::RunUris uris;
    std::string service;
    std::string question;
    std::int64_t started_ms;
    std::optional<std::string> parent_uri;
    std::optional<std::string> conversation{};  // gb:conversation on the Question

    static FakeRun make(std::string service, std::string question, std::int64_t started_ms,
                        std::optional<std::string> parent_uri = std::nullopt) {
        return FakeRun{explain::RunUris::generate(), std::move(service),
                       std::move(question),          started_ms,
                       std::move(parent_uri),        {}};
    }
    static FakeRun with_uuid(const std::string& uuid, std::string service, std::string question,
                             std::int64_t started_ms) {
        return FakeRun{*explain::RunUris::from_uuid(uuid),
                       std::move(service),
                       std::move(question),
                       started_ms,
                       {},
                       {}};
    }
    std::string session() const { return uris.question(); }

    schema::ExplainMessage open() const {
        schema::ExplainMessage m;
        m.session = session();
        m.seq = 0;
        m.service = service;
        m.worker = service + "-test/0";
        m.parent_uri = parent_uri;
        m.explain_id = session();
        m.explain_triples = explain::question(
            uris, question, at(started_ms), explain::worker_agent_uri(service),
            parent_uri ? std::optional<std::string_view>{*parent_uri} : std::nullopt,
            conversation ? std::optional<std::string_view>{*conversation} : std::nullopt);
        return m;
    }
    schema::ExplainMessage end(schema::TraceStatus status = schema::TraceStatus::kComplete,
                               const std::string& answer = "the answer",
                               std::int64_t ended_ms = -1) const {
        schema::ExplainMessage m;
        m.session = session();
        m.seq = 1;
        m.service = service;
        m.worker = service + "-test/0";
        m.explain_id = uris.synthesis();
        const auto ended = at(ended_ms < 0 ? started_ms + 12 : ended_ms);
        m.explain_triples = explain::echo_synthesis(uris, answer, ended, milliseconds{12});
        const auto tail = explain::trace_end(uris, ended, status);
        m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
        m.end_of_trace = true;
        m.trace_status = status;
        if (status == schema::TraceStatus::kError)
            m.error = base::make_error(base::ErrorType::kInternal, "boom");
        return m;
    }
};

}  // namespace glassbox::trace::testing
