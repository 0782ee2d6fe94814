// Every setting of a worker process, with its default; one place for its timeouts and bounds.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "bus/curve_keys.hpp"

#include "schema/protocol.hpp"

namespace glassbox::runtime {

struct WorkerConfig {
    // The broker's request endpoint (ROUTER).
    std::string endpoint = "tcp://127.0.0.1:5555";
    // CURVE (docs/security.md): the broker's public key and this worker's pair (its key needs
    // `worker:<service>`, and `client` for calls to other services); none: plain TCP.
    std::optional<bus::CurveClientKeys> curve;
    // The service this worker registers (READY); 1-255 printable ASCII, not `mmi.`.
    std::string service;
    // Independent MDPW01 workers in this process, each its own socket and handler thread.
    std::size_t threads = 1;
    // HEARTBEAT is sent when nothing else went to the broker for this long (§5.2), also while a
    // handler runs. Must match the broker's interval: it judges us by its own.
    std::chrono::milliseconds heartbeat = schema::protocol::kDefaultHeartbeat;  // 2.5 s
    // The broker is dead after this many heartbeat intervals without a message (§5.2).
    int liveness = schema::protocol::kDefaultLiveness;  // 3
    // After DISCONNECT or broker silence: reconnect after this delay, doubling up to the max,
    // back to the initial delay once the broker speaks again.
    std::chrono::milliseconds reconnect_initial{100};
    std::chrono::milliseconds reconnect_max{5'000};
    // stop(): a running handler may finish for this long before it is told to cancel.
    std::chrono::milliseconds drain_timeout{30'000};
    // How often an idle I/O loop looks at the stop flag (stop() may come from any thread).
    std::chrono::milliseconds stop_poll{50};
    // How long the final DISCONNECT may wait in the socket before it is dropped at close.
    std::chrono::milliseconds disconnect_linger{1'000};
    // Socket bounds. Overflow policy: a reply the broker socket cannot take at once is dropped
    // and logged (the broker then ends the request with a typed error); between a handler and
    // its I/O loop the handler blocks (backpressure) at `channel_hwm` messages.
    int send_hwm = 100'000;
    int receive_hwm = 100'000;
    int channel_hwm = 10'000;
    // Names this process in explain messages ("worker") and logs; empty: "<service>-<host>-<pid>".
    // Each thread appends "/<n>".
    std::string worker_name;
    // A body this answers true for is not parsed into a tree: the handler gets it as text only
    // (RequestContext::body_text(), body() null) and must check it itself, answering InvalidJson
    // for text that is not JSON as the runtime would. For requests whose handler reads megabytes
    // of one string with a cursor (the store's load-triples). Empty: every body is parsed.
    std::function<bool(std::string_view body)> text_body;
};

}  // namespace glassbox::runtime
