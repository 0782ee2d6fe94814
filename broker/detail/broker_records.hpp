// Internal to the broker: the records one poll loop keeps (requests, workers, services,
// and the spool batch), the counters and the rate limit of refusal warnings.
#pragma once

#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "base/result.hpp"
#include "broker/service_queue.hpp"
#include "bus/detail/frame_io.hpp"
#include "bus/frame_codec.hpp"
#include "bus/worker_frames.hpp"
#include "schema/protocol.hpp"

namespace glassbox::broker::detail {

namespace proto = schema::protocol;
using base::Error;
using base::ErrorType;
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using std::chrono::milliseconds;

constexpr std::size_t kErrorTypeCount = static_cast<std::size_t>(ErrorType::kInternal) + 1;
constexpr std::uint64_t kMaxWindow = 65536;
constexpr std::size_t kMaxSessionBytes = 2048;
// Sessions one request may open (§5.3): its own trace, normally one. Bounds what a worker can
// make the broker remember for one request.
constexpr std::size_t kMaxSessionsPerRequest = 1024;

using bus::printable;

inline std::string_view view(const zmq::message_t& frame) noexcept { return bus::view_of(frame); }

enum class ClientKind : std::uint8_t { kMdp, kGb };

struct Service;
struct Worker;

// An explain session seen in a request's stream, so an abnormal end can close it (§5.3).
struct SessionTrack {
    std::string session;
    std::uint64_t next_seq = 0;
    bool ended = false;
    // Its messages the spool did not keep (drop-newest): the broker's end marks the trace.
    std::uint64_t not_spooled = 0;
};

struct Request {
    std::uint64_t id = 0;  // broker-assigned; the worker token
    ClientKind client_kind = ClientKind::kMdp;
    bool packed = false;  // the client sent it in the packed form (§1.4): answered so too
    // Its explain messages go to its client as PARTIAL explain: a GBC01 request that did not
    // ask explain=none (§4.1). They reach the spool and the topic either way.
    bool explain_partials = false;
    // The OTel trace id of the top-level run it works for (GBC01 option trace=, §4.1), for the
    // worker's meta frame and the broker's log lines; empty when the client gave none.
    std::string trace;
    std::string client;      // routing id
    std::string request_id;  // GBC01 request id
    Service* service = nullptr;
    std::vector<zmq::message_t> body;
    TimePoint received;
    TimePoint deadline;
    TimePoint timer_at;
    int attempts = 0;
    bool streamed = false;   // a PARTIAL or EXPLAIN reached the broker: never re-dispatched
    bool abandoned = false;  // the client has its terminal message; the worker still holds it
    Worker* worker = nullptr;
    std::vector<SessionTrack> sessions;
    // 1 + its index in the SpoolBatch while its EXPLAINs wait for the commit.
    std::size_t batch_slot = 0;
};

// A request with EXPLAINs in the spool's open batch, as end_batch needs it if the batch
// cannot be written: the request may have ended (and been erased) within the batch.
struct BatchRequest {
    std::uint64_t request = 0;
    ClientKind client_kind = ClientKind::kMdp;
    bool packed = false;
    bool explain_partials = false;
    std::string client;
    std::string request_id;
    Service* service = nullptr;          // a service with workers is never collected
    std::vector<SessionTrack> sessions;  // moved here when the request ends within the batch
};

struct Worker {
    std::string identity;
    Service* service = nullptr;
    std::string host;       // the peer's address (libzmq's Peer-Address), for status by host
    bool extended = false;  // declared GBW01 or GBW02
    bus::WorkerLayout layout = bus::WorkerLayout::kClassic;  // kCompact: declared GBW02 or GBW03
    bool packed = false;  // declared GBW03: written to in the packed form (§1.4)
    // Requests it may hold at once (§5.1: the READY credit frame; 1 for 7/MDP workers) and
    // the ones it holds, by token. Abandoned requests count until their REPLY or ERROR.
    std::size_t credit = 1;
    std::unordered_map<std::uint64_t, Request*> in_flight;
    TimePoint expiry;
    TimePoint last_sent;
    bool available = false;  // in_flight < credit: in its service's available list
    std::list<Worker*>::iterator available_position;
};

struct Service {
    Service(std::string service_name, std::size_t max_queue, OverflowPolicy policy)
        : name(std::move(service_name)), queue(max_queue, policy) {}
    std::string name;
    std::string topic;  // explain.<name>
    ServiceQueue queue;
    // Workers with spare credit, least recently used at the front. A worker given a request
    // moves to the back if it has credit left, so requests spread round robin.
    std::list<Worker*> available;
    std::size_t workers = 0;
    std::size_t idle = 0;       // workers holding no request
    std::size_t credit = 0;     // sum of the workers' credit
    std::size_t in_flight = 0;  // requests held by workers (abandoned ones included)
    bool registered = false;    // a worker has registered since the broker started
};

// Rate limit of the warnings a peer can provoke at will (forged answers, foreign sessions,
// refused ACKs): at most kBurst lines a second, the rest counted and reported with the next.
class WarningBudget {
public:
    static constexpr std::uint32_t kBurst = 20;
    // Whether a line may be logged now; if so, `unlogged` is set to the lines suppressed since
    // the last one that was.
    bool take(TimePoint now, std::uint64_t& unlogged) noexcept {
        if (now - window_ >= std::chrono::seconds{1}) {
            window_ = now;
            used_ = 0;
        }
        if (used_ >= kBurst) {
            ++suppressed_;
            return false;
        }
        ++used_;
        unlogged = suppressed_;
        suppressed_ = 0;
        return true;
    }

private:
    TimePoint window_{};
    std::uint32_t used_ = 0;
    std::uint64_t suppressed_ = 0;
};

struct TimerEntry {
    TimePoint at;
    std::uint64_t request;
    bool operator>(const TimerEntry& other) const noexcept { return at > other.at; }
};

struct Counters {
    std::uint64_t requests = 0;
    std::uint64_t replies = 0;
    std::uint64_t partials = 0;
    std::uint64_t explains = 0;
    std::uint64_t explains_synthesised = 0;
    std::uint64_t published = 0;
    std::uint64_t deliveries = 0;
    std::uint64_t redeliveries = 0;
    std::uint64_t acks = 0;
    std::uint64_t retries = 0;
    std::uint64_t workers_expired = 0;
    std::uint64_t collectors_expired = 0;
    std::uint64_t dropped_frames = 0;
    std::uint64_t spool_dropped = 0;
    std::uint64_t spool_errors = 0;
    std::uint64_t loop_errors = 0;
    // Integrity (§5.1, §5.3, §6.1): worker messages for a token the worker does not hold,
    // EXPLAINs into another request's session, EXPLAINs whose seq does not grow or that follow
    // the session's end, and ACK ids refused (not attached, not delivered to that collector).
    std::uint64_t foreign_tokens = 0;
    std::uint64_t foreign_sessions = 0;
    std::uint64_t explains_out_of_order = 0;
    std::uint64_t acks_refused = 0;
    std::array<std::uint64_t, kErrorTypeCount> errors{};
};

// The worker token of a request: its id in decimal, written into `digits`.
inline std::string_view token_of(std::uint64_t id, char (&digits)[24]) noexcept {
    const auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    return {digits, static_cast<std::size_t>(end - digits)};
}

// The by_client_ key of a GBC01 request: (routing id, request id), length-prefixed, written
// into `into` (a buffer kept for its capacity: a lookup allocates nothing).
inline std::string_view client_key(std::string_view identity, std::string_view request_id,
                                   std::string& into) {
    into.clear();
    into.push_back(static_cast<char>(identity.size()));
    into.append(identity);
    into.append(request_id);
    return into;
}

}  // namespace glassbox::broker::detail
