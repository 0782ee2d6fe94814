// Every setting of a worker process, with its default; one place for its timeouts and bounds.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bus/curve_keys.hpp"

#include "schema/protocol.hpp"
#include "text/redactor.hpp"

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
    // handler runs (an inline one: while it waits on a call or asks cancelled(), run_inline).
    // Must match the broker's interval: it judges us by its own.
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
    // While an inline request (run_inline) runs: at most this often, each time its handler waits
    // on a call or asks cancelled(), the I/O loop reads the broker's messages, heartbeats and
    // judges the broker's silence. Between those moments it is not read at all.
    std::chrono::milliseconds inline_poll{20};
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
    // A request this answers true for runs inline: the slot's I/O thread calls the handler itself
    // and its messages go straight to the broker (the same frames), without the hop to the
    // handler thread and back (two thread wake-ups and a PAIR round trip per request, and one
    // more wake-up for each burst of explain messages: most of a small request's CPU). Asked on
    // the I/O thread for each request the slot takes, with the GBW01 meta frame (JSON text,
    // docs/protocol.md §5.1) and the body as received; it must be cheap (no parse of a large
    // body) and must not throw. Empty: every request goes to the handler thread.
    // The rule: only requests whose handler never works long without waiting on a call or asking
    // RequestContext::cancelled(), a few milliseconds and never more than a fraction of
    // `heartbeat`. The I/O loop serves its connection only at those moments (every `inline_poll`
    // at most): there it reads the broker's messages (a CANCEL reaches cancelled(), a DISCONNECT
    // or a silent broker drops the connection and cancels the request), sends HEARTBEAT when due
    // and notes a stop. Between them nothing is read or sent but the request's own messages: a
    // handler busy past `heartbeat` × the broker's liveness without one gets the worker dropped
    // by the broker. So quick work (the store's reads, the extractive llm) or work made of calls
    // with short stretches between them (graph-rag); never work that blocks long otherwise:
    // waiting on a lock a long writer holds, network I/O of its own. Calls an inline handler
    // makes go through a BusClient of the I/O thread's own; waiting on them serves the
    // connection.
    std::function<bool(std::string_view meta, std::string_view body)> run_inline;
    // Redaction of every explain message before it leaves the worker (docs/security.md,
    // "Redaction"): the settings redaction.rules and redaction.patterns, compiled once. Shared:
    // every slot's requests read the same immutable rules. Null or empty: nothing is redacted.
    std::shared_ptr<const text::Redactor> redactor;
};

}  // namespace glassbox::runtime
