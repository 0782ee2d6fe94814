// A glassbox client (GBC01, docs/protocol.md §4): requests, streamed replies, deadlines, cancel.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "bus/curve_keys.hpp"
#include "bus/frame_codec.hpp"
#include "bus/request_options.hpp"
#include "schema/protocol.hpp"

namespace zmq {
class context_t;  // a caller's context, shared for inproc:// endpoints (<zmq.hpp>)
}

namespace glassbox::bus {

using RequestId = std::string;

// What one reply of a request is: a stream chunk, an explain message, or one of the two
// terminal messages (§4.2). A request's last reply is kFinal or kError, exactly once.
enum class ReplyKind { kData, kExplain, kFinal, kError };
std::string_view to_string(ReplyKind kind) noexcept;

struct Reply {
    RequestId request_id;
    ReplyKind kind = ReplyKind::kFinal;
    nlohmann::json body;  // data, explain and final; null for kError and when not parsed
    std::string text;     // the body as received (data, explain and final)
    std::optional<base::Error> error;  // set exactly when kind == kError

    bool terminal() const noexcept {
        return kind == ReplyKind::kFinal || kind == ReplyKind::kError;
    }
    // {"kind":"data"|"explain"|"final","body":...} or {"kind":"error","error":{"type","message"}}.
    nlohmann::json to_json() const;
};

// Decodes one message a broker sent to a GBC01 DEALER: [empty]["GBC01"][cmd][request-id]...
// Every frame is checked; a malformed message is a ProtocolError, a body that is not JSON an
// InvalidJson. An ERROR with an empty request id (§4.3) decodes with an empty request_id.
// With `parse_body` false the body is kept as text only (its JSON unchecked), for readers that
// decode it themselves without a JSON tree (schema/json_fast.hpp). A reply in the packed form
// (§1.4) is unpacked first.
base::Result<Reply> decode_reply(Frames frames, bool parse_body = true);

// Encodes the client commands of §4.1 (exposed for tests and for fake brokers), in the packed
// form (§1.4) with `packed`. A REQUEST carries an options frame only for options other than the
// defaults.
Frames encode_request(std::string_view service, std::string_view request_id,
                      std::chrono::milliseconds deadline, std::string_view body,
                      bool packed = false, const RequestOptions& options = {});
Frames encode_cancel(std::string_view request_id, bool packed = false);
Frames encode_heartbeat(const std::vector<RequestId>& request_ids, bool packed = false);

struct BusClientConfig {
    std::string endpoint = "tcp://127.0.0.1:5555";
    // CURVE (docs/security.md): the broker's public key and this client's pair; none: plain TCP.
    std::optional<CurveClientKeys> curve;
    // HEARTBEAT listing the in-flight ids is sent this often while any request is in flight (§4.1).
    std::chrono::milliseconds heartbeat = schema::protocol::kDefaultHeartbeat;
    // Local backstop: a request with no terminal by its deadline plus this grace ends locally with
    // DeadlineExceeded (the broker promises its terminal before deadline + one heartbeat, §2).
    std::chrono::milliseconds deadline_grace = schema::protocol::kDefaultHeartbeat;
    // A request sent with deadline 0 gets the broker's default_deadline; the backstop assumes this.
    std::chrono::milliseconds default_deadline{60'000};
    std::chrono::milliseconds linger{0};
    int send_hwm = 100'000;
    int receive_hwm = 100'000;
    // Request ids are "<prefix>-<n>"; empty: a random prefix, so ids differ across restarts.
    std::string request_id_prefix;
    // A request sent while no broker has ever completed a connection (the ZMTP handshake, seen
    // through a socket monitor) ends with BrokerUnavailable once this much time has passed since
    // the client connected. Once a broker has answered the handshake, requests wait for their
    // deadline as usual: a broker that is up but slow is still waited for. 0: no check (the
    // workers' calls, which start beside their broker). Not applied to inproc:// endpoints.
    std::chrono::milliseconds connect_timeout{0};
    // Parse every data, explain and final body into Reply::body. Off: Reply::text only, for a
    // caller that decodes what it needs itself (a worker's calls, RequestContext::call).
    bool parse_bodies = true;
    // A request body above this many bytes is refused locally with MessageTooLarge instead of
    // being sent: the broker would refuse it too, and one far above its limit makes libzmq drop
    // the connection, which the client could only report as a lost broker. 0: no check (the
    // broker judges); set it to the broker's max_message_bytes.
    std::size_t max_message_bytes = 0;
    // Send in the packed form (docs/protocol.md §1.4): two frames a message instead of five to
    // seven, which the broker answers in kind. Off: the classic GBC01 frames (a broker before
    // the packed form drops packed messages).
    bool packed = true;
    // The options of every request this client sends (§4.1) unless a send names its own.
    // explain = kNone: the broker sends no PARTIAL explain for them (their traces are kept and
    // published as for any request), for a caller that never reads explain replies. The
    // default asks for nothing and sends no options frame: any broker reads such a request.
    RequestOptions request_options;
};

// One DEALER connection to the broker, any number of requests in flight on it. Not
// thread-safe: like its socket, a BusClient belongs to one thread.
class BusClient {
public:
    explicit BusClient(BusClientConfig config);  // owns its own zmq context
    BusClient(zmq::context_t& context, BusClientConfig config);
    ~BusClient();
    BusClient(const BusClient&) = delete;
    BusClient& operator=(const BusClient&) = delete;

    // Sends a REQUEST. send_raw puts `body_json` on the wire as is (the worker validates it);
    // `deadline` is relative, 0 meaning the broker's default. Fails with InvalidRequest for a bad
    // service name, MessageTooLarge for a body above config().max_message_bytes (nothing is sent),
    // Internal if the socket refuses the send.
    base::Result<RequestId> send_raw(std::string_view service, std::string_view body_json,
                                     std::chrono::milliseconds deadline);
    base::Result<RequestId> send(std::string_view service, const nlohmann::json& body,
                                 std::chrono::milliseconds deadline);
    // The same with this request's own options instead of config().request_options.
    base::Result<RequestId> send_raw(std::string_view service, std::string_view body_json,
                                     std::chrono::milliseconds deadline,
                                     const RequestOptions& options);

    // The next reply of any request in flight. Timeout if none within `timeout`; a request whose
    // local backstop passes yields its synthesized DeadlineExceeded (or Cancelled) reply.
    base::Result<Reply> next(std::chrono::milliseconds timeout);
    // The next reply of one request; replies of others read meanwhile are kept for later.
    // NotFound if `id` is neither in flight nor has replies waiting.
    base::Result<Reply> next(const RequestId& id, std::chrono::milliseconds timeout);

    // Sends CANCEL; the broker answers ERROR Cancelled, which still arrives through next().
    // If it does not within the grace, the request ends locally with Cancelled.
    base::Result<void> cancel(const RequestId& id);

    // Sends CANCEL and forgets the request at once: no further reply of it is returned.
    void abandon(const RequestId& id);

    // Sends a request and collects every reply up to and including the FINAL. An ERROR terminal
    // (or a local deadline) comes back as the Result's error.
    base::Result<std::vector<Reply>> call(std::string_view service, const nlohmann::json& body,
                                          std::chrono::milliseconds deadline);

    std::size_t in_flight() const noexcept { return in_flight_.size(); }
    bool is_in_flight(const RequestId& id) const { return in_flight_.count(id) != 0; }
    const BusClientConfig& config() const noexcept { return config_; }

private:
    using Clock = std::chrono::steady_clock;
    struct InFlight {
        Clock::time_point backstop;
        bool cancelled = false;
    };

    // The context (owned or the caller's), the DEALER and its monitor (bus_client.cpp).
    struct Sockets;

    BusClient(zmq::context_t* shared, BusClientConfig config);
    void connect();
    void watch_connection();
    void check_connection(Clock::time_point now);
    void stop_watching();
    void pump(Clock::time_point until);
    void read_available();
    void heartbeat_if_due(Clock::time_point now);
    void expire_backstops(Clock::time_point now);
    std::optional<Reply> take_buffered(const RequestId* wanted);
    Clock::time_point next_wakeup(Clock::time_point until) const;

    BusClientConfig config_;
    std::unique_ptr<Sockets> sockets_;
    std::string id_prefix_;
    std::uint64_t next_id_ = 1;
    std::map<RequestId, InFlight> in_flight_;
    std::deque<Reply> buffered_;
    Clock::time_point next_heartbeat_{};
    // Until a broker completes a handshake (seen by the monitor): when to give up on it.
    bool broker_seen_ = true;
    bool handshaken_ = false;  // connected to a peer now (by the monitor's last event)
    // A handshake a broker failed: our key not allowed, or one side plain and the other CURVE.
    enum class Refusal : std::uint8_t { kNone, kKey, kMechanism };
    Refusal refused_ = Refusal::kNone;
    Clock::time_point connect_by_{};
};

// The replies of one request, in order, up to its terminal message.
class Stream {
public:
    Stream(BusClient& client, RequestId id) : client_(&client), id_(std::move(id)) {}

    const RequestId& id() const noexcept { return id_; }
    bool done() const noexcept { return done_; }
    // The next reply; after the terminal one, NotFound. Timeout leaves the stream open.
    base::Result<Reply> next(std::chrono::milliseconds timeout);
    base::Result<void> cancel() { return client_->cancel(id_); }

private:
    BusClient* client_;
    RequestId id_;
    bool done_ = false;
};

// Sends a request and returns its stream.
base::Result<Stream> open_stream(BusClient& client, std::string_view service,
                                 std::string_view body_json, std::chrono::milliseconds deadline);

}  // namespace glassbox::bus
