// The SSE events of one question (docs/http.md §3): bus replies of a `query` request in, typed
// events out. Pure: no sockets, so every translation is unit-tested.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "bus/bus_client.hpp"

namespace glassbox::gateway {

struct SseEvent {
    std::string name;
    nlohmann::json data;
    // Members already written as JSON text (`"key":value`), added to `data`'s object when the
    // event is formatted: a step's explain message, often hundreds of KiB, is written once
    // rather than copied into `data` first.
    std::string raw_members{};
};

// The `step` event of one explain message (docs/http.md §3), for the stream of `trace`.
// The explain message a reply of a query request carries: its own (EXPLAIN), or an engine's
// the router forwards as data ({"message_type": "explain", "explain": {…}} or the message
// itself); nullptr for any other reply.
const nlohmann::json* explain_of(const bus::Reply& reply);

// `text`, when given, is the message as received (the bus reply's body): written as it is when
// it is one line, so the message is not serialized again.
SseEvent step_event(const nlohmann::json& explain, const std::string& trace,
                    std::string_view text = {});

// One event on the wire: "event: <name>\nid: <id>\ndata: <one-line JSON>\n\n".
std::string format_sse(std::uint64_t id, const SseEvent& event);

class QueryEvents {
public:
    using Clock = std::chrono::steady_clock;

    // `request` is what run.started repeats: {question, mode, collection}; `received` when the
    // question came (the answer's duration_ms counts from it).
    QueryEvents(std::string request_id, nlohmann::json request,
                Clock::time_point received = Clock::now());

    // The events one bus reply of the query request stands for (none for a reply that says
    // nothing new). A terminal reply ends with `done`.
    std::vector<SseEvent> on_reply(const bus::Reply& reply);
    // The events that end a stream whose request failed without a terminal reply of its own.
    std::vector<SseEvent> on_failure(const base::Error& error);

    bool finished() const noexcept { return finished_; }
    const std::string& trace() const noexcept { return trace_; }
    // The engine whose answer won, once answer.done is out; empty before, or after an error.
    const std::string& answered_by() const noexcept { return answered_by_; }

private:
    void start(std::vector<SseEvent>& out);
    void step(const nlohmann::json& explain, std::vector<SseEvent>& out,
              std::string_view text = {});
    void final(const nlohmann::json& body, std::vector<SseEvent>& out);
    void fail(const base::Error& error, std::vector<SseEvent>& out);
    void citations(const nlohmann::json& body, std::vector<SseEvent>& out);
    void retrieval(const nlohmann::json& explain, const std::string& id,
                   std::vector<SseEvent>& out);
    SseEvent event(std::string name, nlohmann::json data) const;

    std::string request_id_;
    nlohmann::json request_;
    Clock::time_point received_;
    std::string answered_by_;
    std::string trace_;
    bool started_ = false;
    bool finished_ = false;
    std::string streamed_;  // answer text already sent as answer.delta
    std::string termination_;
    std::set<std::string> sources_sent_;
    std::map<std::string, std::string> tools_;  // "<session> <iteration>" -> the tool it called
};

}  // namespace glassbox::gateway
