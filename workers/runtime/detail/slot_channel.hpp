// How a RequestContext's messages leave it: over the inproc PAIR between a worker slot's I/O
// loop and its handler thread, or, for a request the I/O loop runs itself (inline,
// WorkerConfig::run_inline), straight into that loop's forwarding to the broker.
#pragma once

#include <exception>
#include <utility>

#include <zmq.hpp>

#include "bus/detail/frame_io.hpp"

namespace glassbox::runtime::detail {

// The I/O loop's side of an inline request: it takes each message the handler writes as it
// would have read it from the PAIR ([kind] [frames...], channel:: below), on its own thread,
// and serves its broker connection while the handler waits or asks whether it was cancelled.
class InlineOutput {
public:
    virtual void take(bus::Messages& message) = 0;
    // Reads what the broker sent meanwhile, heartbeats when due and judges the broker's silence
    // (at most every WorkerConfig::inline_poll; a cheap clock check otherwise). True once the
    // running request was cancelled (CANCEL, its connection lost, a stop past drain_timeout).
    virtual bool serve_broker() noexcept = 0;

protected:
    ~InlineOutput() = default;
};

// The way out a RequestContext writes to: the handler thread's end of its slot's PAIR, or the
// I/O loop itself for an inline request. One request's, used on the thread that runs it.
class HandlerChannel {
public:
    explicit HandlerChannel(zmq::socket_t& pair) noexcept : pair_(&pair) {}
    explicit HandlerChannel(InlineOutput& output) noexcept : output_(&output) {}

    // One message [kind] [frames...]; waits for room on the PAIR (backpressure). False when it
    // cannot go (the I/O loop is gone, or it could not be built).
    bool send(bus::Frames&& message) noexcept {
        if (pair_ != nullptr) return bus::send_frames(*pair_, std::move(message), true);
        try {
            bus::Messages parts;
            parts.reserve(message.size());
            for (auto& frame : message) parts.push_back(bus::message_of(std::move(frame)));
            output_->take(parts);
            return true;
        } catch (const std::exception&) {
            return false;
        }
    }

    // True when a CANCEL of the running request has arrived (read here). Inline: the I/O loop
    // serves its connection first (InlineOutput::serve_broker), reading a CANCEL among the rest.
    bool cancel_arrived() noexcept;

    // Inline: lets the I/O loop serve its connection while the handler works (a call's replies
    // streaming in, no wait long enough to ask cancelled()). On the handler thread: nothing, its
    // I/O loop runs beside it.
    void serve_connection() noexcept {
        if (output_ != nullptr) (void)output_->serve_broker();
    }

private:
    zmq::socket_t* pair_ = nullptr;
    InlineOutput* output_ = nullptr;
};

}  // namespace glassbox::runtime::detail

namespace glassbox::runtime::detail::channel {

// I/O loop → handler thread.
inline constexpr char kJob = 'J';     // [J] [meta json] [body]
inline constexpr char kCancel = 'C';  // [C]: the broker cancelled the running request
inline constexpr char kQuit = 'Q';    // [Q]: leave the handler loop
// Handler thread → I/O loop; the I/O loop adds the request's token.
inline constexpr char kPartial = 'P';  // [P] [body]
inline constexpr char kExplain = 'E';  // [E] [session] [seq] [state] [body]
inline constexpr char kReply = 'R';    // [R] [body]   terminal
inline constexpr char kError = 'X';    // [X] [type] [message]   terminal

}  // namespace glassbox::runtime::detail::channel

namespace glassbox::runtime::detail {

// Only CANCEL reaches the handler thread while a request runs (the I/O loop sends nothing else).
inline bool HandlerChannel::cancel_arrived() noexcept {
    if (pair_ == nullptr) return output_ != nullptr && output_->serve_broker();
    bool cancel = false;
    while (auto parts = bus::try_receive_messages(*pair_)) {
        if (!parts->empty() && parts->front().size() == 1 &&
            *parts->front().data<char>() == channel::kCancel) {
            cancel = true;
        }
    }
    return cancel;
}

}  // namespace glassbox::runtime::detail
