// Internal to the broker: the message being written and how it leaves, on the router or the
// topic, at once or held until the batch's explains are committed (§2.3); the peers a send
// found gone.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "base/log.hpp"

namespace glassbox::broker::detail {

enum class Outlet : std::uint8_t { kRouter, kPublisher };

// What a held message carries for its request: a commit that fails under fail-request
// withholds the request's explains and turns its FINAL into an error.
enum class Carries : std::uint8_t { kOther, kExplain, kFinal };

class Outbox {
public:
    Outbox(zmq::socket_t& router, zmq::socket_t& publisher, std::shared_ptr<spdlog::logger> log)
        : router_(router), publisher_(publisher), log_(std::move(log)) {}

    // ---- writing one message ----
    void out(std::string_view text) { out_.emplace_back(text.data(), text.size()); }
    void out(zmq::message_t&& frame) { out_.push_back(std::move(frame)); }
    // The first frame of a message to a ROUTER peer, and whether it goes in the packed form
    // (§1.4): send packs it then.
    void out_to(std::string_view identity, bool packed) {
        out(identity);
        out_packed_ = packed;
    }
    // The sink the bus/ frame encoders write through.
    auto sink() {
        return [this](std::string_view frame) { out(frame); };
    }
    // The message written, now or (held) after the commit; `request` and `carries` tag a held
    // one for withhold().
    void send(Outlet outlet = Outlet::kRouter, std::uint64_t request = 0,
              Carries carries = Carries::kOther);

    // ---- §2.3: holding until the batch commits ----
    void hold_publisher() noexcept { hold_publisher_ = true; }
    void hold_peer(std::string_view identity);
    // Holds, held messages or peers found gone: the end of a batch has work.
    bool busy() const noexcept {
        return hold_publisher_ || !held_peers_.empty() || !deferred_.empty() ||
               !unreachable_.empty();
    }
    // The commit is done: holds released, held messages sent in order.
    void flush();
    // A commit failed under fail-request: the request's held explains and FINAL are dropped;
    // true if there was a FINAL (an error takes its place).
    bool withhold(std::uint64_t request);

    // A peer a send found gone or full (router_mandatory), once each time.
    std::optional<std::string> next_unreachable();
    std::uint64_t send_failures() const noexcept { return send_failures_; }

private:
    struct Deferred {
        Outlet outlet;
        std::vector<zmq::message_t> frames;
        std::uint64_t request = 0;
        Carries carries = Carries::kOther;
    };

    bool held(Outlet outlet) const;
    bool transmit(Outlet outlet, std::vector<zmq::message_t>& frames);

    zmq::socket_t& router_;
    zmq::socket_t& publisher_;
    std::shared_ptr<spdlog::logger> log_;
    std::vector<zmq::message_t> out_;
    bool out_packed_ = false;  // out_ goes in the packed form (out_to)
    // An EXPLAIN appended in this batch is committed before it is forwarded (§2.3): until the
    // batch commits, the topic and each client it goes to hold their sends (in order), and
    // everything else — dispatches, other clients' replies — goes out at once.
    bool hold_publisher_ = false;
    std::vector<std::string> held_peers_;
    std::vector<Deferred> deferred_;
    std::vector<std::string> unreachable_;
    std::uint64_t send_failures_ = 0;
};

}  // namespace glassbox::broker::detail
