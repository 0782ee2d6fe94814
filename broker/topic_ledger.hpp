// The explain topic's subscribers and what each holds: the connections libzmq reports, the
// subscriptions counted per subscriber and in total, and the bounds that get one cut (§6.2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace glassbox::broker {

// Bounds of the explain topic's subscriptions (BrokerConfig; docs/operations.md). Bytes are the
// subscribed prefixes' lengths.
struct TopicLimits {
    std::size_t per_subscriber = 256;
    std::size_t bytes_per_subscriber = std::size_t{16} * 1024;
    std::size_t total = 16'384;
    std::size_t total_bytes = std::size_t{1024} * 1024;
};

// Which bound a subscription passed.
enum class TopicBound : std::uint8_t {
    kSubscriberCount,
    kSubscriberBytes,
    kTotalCount,
    kTotalBytes
};
std::string_view to_string(TopicBound bound) noexcept;

// libzmq's XPUB keeps every subscription of a connection until that connection closes, and the
// broker can only close a connection by its file descriptor. The ledger ties the two:
// - the monitor reports each connection accepted and closed, by fd, in the order they happen;
// - the ZAP handler names each connection once its handshake reaches it (admit()); the name it
//   gives carries the number of monitor events seen then;
// - every subscription message carries its connection's name (User-Id) and fd.
// A connection's messages are decoded only after its ZAP reply, so at admit() its ACCEPTED is
// seen and its close is not: it is the latest connection accepted on its fd before the mark.
// A name whose fd was closed or reused since belongs to a connection gone (libzmq dropped its
// subscriptions with it): its messages are not counted and nothing is cut for it.
class TopicLedger {
public:
    explicit TopicLedger(TopicLimits limits) : limits_(limits) {}

    // Monitor events: a connection accepted on `fd`; the connection on `fd` closed.
    void accepted(int fd);
    struct Departed {
        std::string name;
        std::size_t subscriptions = 0;
        bool dropped = false;
    };
    std::optional<Departed> disconnected(int fd);

    // ZAP: the name of the connection whose handshake is being authenticated now. Call it only
    // after every monitor event already sent has been passed to accepted()/disconnected().
    std::string admit();

    enum class Verdict : std::uint8_t {
        kCounted,    // a new subscription of a subscriber within the bounds
        kRepeated,   // one it holds already (libzmq keeps it once)
        kIgnored,    // its connection is gone or being cut: not counted
        kOverLimit,  // passes `bound`: the subscriber is marked dropped and must be cut
        kUnnamed,    // no name the ledger gave, or one it cannot tie to a connection
    };
    struct Outcome {
        Verdict verdict = Verdict::kUnnamed;
        TopicBound bound = TopicBound::kSubscriberCount;
    };
    Outcome subscribe(std::string_view name, int fd, std::string_view topic);
    void unsubscribe(std::string_view name, std::string_view topic);

    // Whether `fd` is, as far as the monitor has reported, still the open connection `name`.
    bool holds(std::string_view name, int fd) const;
    // Subscriptions and prefix bytes `name` holds (0 if unknown).
    std::size_t subscriptions_of(std::string_view name) const;

    std::size_t subscribers() const noexcept { return subscribers_.size(); }
    std::size_t subscriptions() const noexcept { return subscriptions_; }
    std::size_t bytes() const noexcept { return bytes_; }
    std::uint64_t dropped() const noexcept { return dropped_; }
    std::size_t open_connections() const noexcept { return connections_.size(); }
    const TopicLimits& limits() const noexcept { return limits_; }

private:
    struct Connection {
        std::uint64_t accepted_at = 0;  // index of its ACCEPTED among all monitor events
        std::string owner;              // the name bound to it, once a message came
    };
    struct Subscriber {
        int fd = -1;
        std::unordered_set<std::string> topics;
        std::size_t bytes = 0;
        bool dropped = false;
    };
    Subscriber* bind(std::string_view name, int fd);
    void forget(const std::string& name);

    TopicLimits limits_;
    std::uint64_t events_ = 0;  // monitor events seen
    std::uint64_t admitted_ = 0;
    std::unordered_map<int, Connection> connections_;  // open, by fd
    std::unordered_map<std::string, Subscriber> subscribers_;
    std::size_t subscriptions_ = 0;
    std::size_t bytes_ = 0;
    std::uint64_t dropped_ = 0;
};

}  // namespace glassbox::broker
