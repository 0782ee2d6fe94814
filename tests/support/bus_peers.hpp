// Raw protocol peers for integration tests, written from docs/protocol.md: every frame visible.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

namespace glassbox::integration {

using Frames = std::vector<std::string>;
using std::chrono::milliseconds;

// CURVE client keys (Z85) of the raw peers that connect to one endpoint: a `glassbox up` runs
// CURVE by default, and its home holds the keys (docs/security.md).
struct CurveKeys {
    std::string server;  // the broker's public key
    std::string public_key;
    std::string secret_key;
};
// From now on every RawDealer (and the clients built on it) connecting to `endpoint` uses `keys`.
void use_curve_for(const std::string& endpoint, CurveKeys keys);
// The keys `glassbox up` made in `home` for `name` ("client", "worker", "collector"), read from
// the ZeroMQ certificate files in <home>/keys.
CurveKeys home_curve_keys(const std::string& home, const std::string& name = "client");

// One DEALER socket with deadline-bounded receive.
class RawDealer {
public:
    RawDealer(zmq::context_t& context, const std::string& endpoint);
    void send(const Frames& frames);
    // The next message, or nullopt when none arrives within `timeout`.
    std::optional<Frames> recv(milliseconds timeout);
    zmq::socket_t& socket() noexcept { return socket_; }
    void close() { socket_.close(); }

private:
    zmq::socket_t socket_;
};

// One message a broker sends a GBC01 client (§4.2).
struct GbcMessage {
    char command = 0;  // 0x02 PARTIAL, 0x03 FINAL, 0x05 ERROR; 0 if malformed
    std::string request_id;
    std::string kind;        // PARTIAL: "data" or "explain"
    std::string body;        // PARTIAL, FINAL
    std::string error_type;  // ERROR
    std::string message;     // ERROR
    Frames raw;

    bool terminal() const noexcept { return command == 0x03 || command == 0x05; }
    bool is_partial(const char* k) const { return command == 0x02 && kind == k; }
    bool is_final() const noexcept { return command == 0x03; }
    bool is_error() const noexcept { return command == 0x05; }
    nlohmann::json json() const;  // body parsed; discarded value if not JSON
    std::string describe() const;
};

// A GBC01 client on a DEALER: requests with ids, HEARTBEAT while waiting, CANCEL.
class GbcClient {
public:
    GbcClient(zmq::context_t& context, const std::string& endpoint,
              milliseconds heartbeat = milliseconds{200});

    // Sends REQUEST; returns the request id (generated unless given).
    std::string request(const std::string& service, const std::string& body,
                        std::uint64_t deadline_ms = 10'000, std::string request_id = {});
    void cancel(const std::string& request_id);
    void heartbeat(const std::vector<std::string>& request_ids);
    void send_raw(const Frames& frames) { dealer_.send(frames); }

    // The next message of any request; sends HEARTBEAT for the in-flight ids while waiting.
    std::optional<GbcMessage> recv(milliseconds timeout);
    // All messages of `request_id` up to its terminal (last), or up to the timeout.
    std::vector<GbcMessage> collect(const std::string& request_id, milliseconds timeout);
    // request() then collect().
    std::vector<GbcMessage> call(const std::string& service, const std::string& body,
                                 std::uint64_t deadline_ms = 10'000,
                                 milliseconds timeout = milliseconds{15'000});
    // Messages received for other request ids while collect() waited, in arrival order.
    std::vector<GbcMessage>& stashed() noexcept { return stash_; }
    RawDealer& dealer() noexcept { return dealer_; }

private:
    RawDealer dealer_;
    milliseconds heartbeat_;
    std::chrono::steady_clock::time_point next_heartbeat_;
    std::set<std::string> in_flight_;
    std::vector<GbcMessage> stash_;
    std::uint64_t next_id_ = 1;
    std::string id_prefix_;
};

GbcMessage parse_gbc(Frames frames);

// A 7/MDP client on a DEALER: [empty]["MDPC01"][service][body]... and its single REPLY.
class MdpClient {
public:
    MdpClient(zmq::context_t& context, const std::string& endpoint);
    // The reply's body frames, or nullopt on timeout / malformed reply.
    std::optional<Frames> call(const std::string& service, const Frames& body,
                               milliseconds timeout = milliseconds{10'000});
    RawDealer& dealer() noexcept { return dealer_; }

private:
    RawDealer dealer_;
};

// A minimal GBE01 trace collector: ATTACH, record each DELIVER by (session, seq), ACK it.
class Collector {
public:
    struct Delivery {
        std::uint64_t delivery_id = 0;
        std::string service;
        std::string state;
        nlohmann::json body;
    };

    Collector(zmq::context_t& context, const std::string& endpoint, std::uint64_t window = 64,
              milliseconds heartbeat = milliseconds{200});
    ~Collector();
    void attach();
    void detach();
    // Handles messages for `duration` (HEARTBEATs, ACKs, re-ATTACH after DETACH).
    void pump(milliseconds duration);
    // Pumps until `count` distinct (session, seq) are recorded or the timeout passes.
    bool wait_for(std::size_t count, milliseconds timeout);

    const std::map<std::pair<std::string, std::uint64_t>, Delivery>& messages() const noexcept {
        return messages_;
    }
    std::size_t deliveries() const noexcept { return deliveries_; }
    const std::vector<std::pair<std::string, std::uint64_t>>& duplicates() const noexcept {
        return duplicates_;
    }
    std::size_t detaches() const noexcept { return detaches_; }
    bool ack = true;  // false: record but never ACK (to test redelivery)

private:
    void handle(const Frames& frames);

    RawDealer dealer_;
    std::uint64_t window_;
    milliseconds heartbeat_;
    std::chrono::steady_clock::time_point next_heartbeat_;
    std::map<std::pair<std::string, std::uint64_t>, Delivery> messages_;
    std::vector<std::pair<std::string, std::uint64_t>> duplicates_;
    std::size_t deliveries_ = 0;
    std::size_t detaches_ = 0;
};

// Every message a SUB socket receives within `timeout`, until `count` arrived (fewer when the
// time runs out: the caller asserts the count).
std::vector<Frames> receive_published(zmq::socket_t& sub, std::size_t count,
                                      std::chrono::milliseconds timeout);

}  // namespace glassbox::integration
