// Messages on the inproc PAIR between a worker slot's I/O loop and its handler thread.
#pragma once

#include <zmq.hpp>

namespace glassbox::runtime::detail {

// The handler thread's end of the PAIR, as a RequestContext holds it.
struct HandlerChannel {
    zmq::socket_t& socket;
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
