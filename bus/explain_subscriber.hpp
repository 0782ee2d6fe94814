// A live observer of the broker's explain topic (XPUB, docs/protocol.md §6.2).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "bus/curve_keys.hpp"
#include "bus/frame_codec.hpp"

namespace zmq {
class context_t;  // a caller's context, shared for inproc:// endpoints (<zmq.hpp>)
}

namespace glassbox::bus {

// One message of the topic: [topic] [session] [seq] [state] [body].
struct ExplainEvent {
    std::string topic;    // "explain.<service>"
    std::string service;  // the topic without its "explain." prefix
    std::string session;  // the trace's session URI
    std::uint64_t seq = 0;
    std::string state;    // open, complete or error
    nlohmann::json body;  // the explain message (§8)
};

// Checks every frame: 5 frames, an "explain." topic, an ascii-int seq, a known state, a JSON object
// body.
base::Result<ExplainEvent> decode_explain_event(const Frames& frames);

struct ExplainSubscriberConfig {
    std::string endpoint = "tcp://127.0.0.1:5556";
    std::string topic =
        "explain.";  // prefix filter: "explain." for all, "explain.echo" for one service
    std::chrono::milliseconds linger{0};
    int receive_hwm =
        100'000;  // overflow policy: PUB/SUB drops beyond it (the topic is for watching)
    // CURVE (docs/security.md): the broker's public key and this subscriber's pair (its key needs
    // the `subscriber` role); none: plain TCP.
    std::optional<CurveClientKeys> curve;
};

// A SUB socket; belongs to one thread. Messages published before it connected are not seen.
class ExplainSubscriber {
public:
    explicit ExplainSubscriber(ExplainSubscriberConfig config);  // owns its own zmq context
    ExplainSubscriber(zmq::context_t& context, ExplainSubscriberConfig config);
    ~ExplainSubscriber();
    ExplainSubscriber(const ExplainSubscriber&) = delete;
    ExplainSubscriber& operator=(const ExplainSubscriber&) = delete;

    void subscribe(const std::string& topic);
    // The next well-formed event; Timeout if none within `timeout` (malformed ones are skipped).
    base::Result<ExplainEvent> next(std::chrono::milliseconds timeout);

private:
    // The context (owned or the caller's) and the SUB socket (explain_subscriber.cpp).
    struct Socket;

    ExplainSubscriber(zmq::context_t* shared, ExplainSubscriberConfig config);

    ExplainSubscriberConfig config_;
    std::unique_ptr<Socket> socket_;
};

}  // namespace glassbox::bus
