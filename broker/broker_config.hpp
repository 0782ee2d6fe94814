// Every endpoint, timeout, bound and overflow policy of the broker, with its default
// (docs/protocol.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/protocol.hpp"

namespace glassbox::broker {

// What a full per-service request queue does with one more request (protocol.md §9).
enum class OverflowPolicy {
    kReject,      // the new request ends with QueueFull
    kDropOldest,  // the oldest queued request ends with Evicted; the new one is queued
};

// What a full explain spool does with one more EXPLAIN (protocol.md §6.1).
enum class SpoolPolicy {
    kFailRequest,  // the EXPLAIN is refused and its request ends with SpoolFull
    kDropNewest,   // the EXPLAIN is forwarded to the client and the topic but not spooled
};

// Wire/CLI spelling: "reject", "drop-oldest", "fail-request", "drop-newest".
std::string_view to_string(OverflowPolicy policy) noexcept;
std::string_view to_string(SpoolPolicy policy) noexcept;
std::optional<OverflowPolicy> overflow_policy_from_string(std::string_view name) noexcept;
std::optional<SpoolPolicy> spool_policy_from_string(std::string_view name) noexcept;

struct BrokerConfig {
    // ROUTER endpoint for clients, workers and trace collectors. `tcp://127.0.0.1:*` picks a
    // free port; Broker::bind() returns the resolved endpoint.
    std::string endpoint = "tcp://127.0.0.1:5555";
    // XPUB endpoint of the explain topic.
    std::string pub_endpoint = "tcp://127.0.0.1:5556";

    // CURVE on both endpoints (docs/security.md): the broker's own key pair (Z85). Empty: plain
    // TCP (the NULL mechanism, anyone who reaches the port is trusted), which bind() refuses on an
    // endpoint other machines can reach unless `insecure`.
    std::string curve_public_key;
    std::string curve_secret_key;
    // With CURVE: the folder of public certificates allowed to connect, each with its roles
    // (client, subscriber, collector, worker:<service>); looked at again every
    // allow_reload_interval and reloaded when it changed. Required with CURVE.
    std::string allow_folder;
    std::chrono::milliseconds allow_reload_interval{1000};
    // Plain TCP on a non-loopback endpoint, knowingly.
    bool insecure = false;
    // Directory of the explain spool's segment files, created (0700) if missing. Empty: an
    // in-memory spool (tests, benchmarks; not durable).
    std::string spool_path;

    // Heartbeat interval with workers and collectors (§5.2), and how many silent intervals
    // make a peer dead.
    std::chrono::milliseconds heartbeat{2500};
    int liveness = 3;

    // Re-dispatches of a request whose worker died before sending anything (§2.2).
    int max_retries = 2;
    // Deadline of MDPC01 requests and of GBC01 requests with deadline-ms 0; larger ones are
    // clamped.
    std::chrono::milliseconds default_deadline{60'000};
    std::chrono::milliseconds max_deadline{3'600'000};
    // How long a request for a never-registered service waits for a worker (§9).
    std::chrono::milliseconds unknown_service_wait{1'000};
    // After a start on a spool, how long a request for a service registered before (the
    // spool's `services` list) waits for its workers to register again, instead of
    // unknown_service_wait: workers notice a restarted broker within a heartbeat or two.
    std::chrono::milliseconds restart_grace{10'000};

    // Per-service request queue bound and overflow policy (§9). The clients of a service are
    // served in turn, each its own requests oldest first.
    std::size_t max_queue = 10'000;
    OverflowPolicy overflow = OverflowPolicy::kReject;
    // mmi.status lists, per service, this many clients with the most queued requests.
    std::size_t status_top_clients = 5;

    // Largest accepted message, all frames together (§1.1). A single frame above
    // 2 x max_message_bytes + 1 MiB makes libzmq drop the connection (ZMQ_MAXMSGSIZE).
    std::size_t max_message_bytes = schema::protocol::kDefaultMaxMessageBytes;  // 16 MiB

    // Largest frame a subscriber may send on the explain topic's XPUB port (§6.2), the
    // subscribe/unsubscribe flag byte included. libzmq refuses a longer frame before reading it
    // (ZMQ_MAXMSGSIZE) and closes that connection, so one subscription cannot grow the socket's
    // subscription trie by more than this. No topic is longer than `explain.` and a 255-byte
    // service name: nothing a real subscriber needs is refused.
    std::size_t max_subscription_bytes =
        1 + 8 + 255;  // 264: the flag, `explain.` and a service name
    // How many subscriptions (distinct prefixes) and prefix bytes one subscriber connection, and
    // all of them together, may hold on the explain topic. libzmq stores each subscription before
    // the broker sees it; the broker counts them per connection (named by its ZAP handler) and
    // closes the connection of a subscriber that passes a bound (event=explain_subscriber_dropped),
    // which frees what libzmq held for it. A real subscriber needs one per service at most.
    std::size_t max_subscriptions_per_subscriber = 256;
    std::size_t max_subscribed_bytes_per_subscriber = std::size_t{16} * 1024;
    std::size_t max_subscriptions = 16'384;
    std::size_t max_subscribed_bytes = std::size_t{1024} * 1024;
    // Bytes one subscriber's TCP connection may send, plus 1 KiB for each second it has been
    // connected. libzmq can take in a fast sender's whole stream of subscriptions before the
    // broker reads the first (each stored as it is read), so this is watched on the kernel's
    // count (TCP_INFO) by a thread of its own every topic_watch_interval, and a connection past
    // it is closed. A real subscriber sends a few hundred bytes.
    std::size_t max_subscriber_inbound_bytes = std::size_t{64} * 1024;
    std::chrono::milliseconds topic_watch_interval{5};

    // Explain spool bounds and policy (§6.1).
    std::uint64_t spool_max_messages = 1'000'000;
    std::uint64_t spool_max_bytes = 1024ull * 1024ull * 1024ull;
    SpoolPolicy spool_policy = SpoolPolicy::kFailRequest;
    // Sessions of ended requests the broker remembers so that no worker writes into them
    // again (§5.3; about 150 bytes each). Older ones are guarded by the trace collector, which
    // refuses writes into a session that has ended.
    std::size_t ended_sessions_kept = 65'536;
    // Collectors are handed spooled EXPLAINs at most this often, in batches, so delivering a
    // trace does not compete with the answers still being made (0: as soon as spooled).
    std::chrono::milliseconds delivery_interval{10};

    // Socket high-water marks (messages) and linger on close.
    int send_hwm = 100'000;
    int receive_hwm = 100'000;
    std::chrono::milliseconds linger{200};

    // Longest poll wait: bounds how late stop() and timers are noticed.
    std::chrono::milliseconds poll_interval{100};
    // How often the explain topic's socket is polled for (un)subscriptions.
    std::chrono::milliseconds topic_poll_interval{20};
    // Most messages read from the request socket before timers and the spool batch are served.
    std::size_t max_drain = 1024;
};

}  // namespace glassbox::broker
