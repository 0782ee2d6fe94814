// integration_test_worker: a plain 7/MDP worker that holds each request before replying.
//
// Unlike the echo worker (which sends its Question explain first), it sends nothing for a
// request until it replies, so killing it during the hold exercises re-dispatch (§2.2).
// It heartbeats while holding, as §5.2 requires, so only a real death looks like one.
//
//   integration_test_worker --broker E --service S [--delay-ms N] [--heartbeat-ms N]
// Reply body: {"served_by": <pid>, "request": <request body as JSON, or as a string>}.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Frames = std::vector<std::string>;

volatile sig_atomic_t g_stop = 0;

void send_frames(zmq::socket_t& socket, const Frames& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        socket.send(zmq::buffer(frames[i]),
                    i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
}

Frames recv_frames(zmq::socket_t& socket) {
    Frames frames;
    while (true) {
        zmq::message_t part;
        if (!socket.recv(part, zmq::recv_flags::dontwait)) {
            return frames;
        }
        frames.push_back(part.to_string());
        if (!part.more()) {
            return frames;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string broker;
    std::string service;
    milliseconds delay{0};
    milliseconds heartbeat{2500};
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        const std::string value = argv[i + 1];
        if (key == "--broker") {
            broker = value;
        } else if (key == "--service") {
            service = value;
        } else if (key == "--delay-ms") {
            delay = milliseconds{std::stoll(value)};
        } else if (key == "--heartbeat-ms") {
            heartbeat = milliseconds{std::stoll(value)};
        } else {
            std::cerr << "unknown option " << key << "\n";
            return 2;
        }
    }
    if (broker.empty() || service.empty()) {
        std::cerr << "usage: integration_test_worker --broker E --service S [--delay-ms N]\n";
        return 2;
    }
    ::signal(SIGTERM, [](int) { g_stop = 1; });

    const std::string kMdpw = "MDPW01";
    zmq::context_t context(1);
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.connect(broker);
    send_frames(socket, {"", kMdpw, std::string(1, '\x01'), service});
    auto next_heartbeat = Clock::now() + heartbeat;

    struct Held {
        std::string token;
        std::string body;
        Clock::time_point reply_at;
    };
    std::optional<Held> held;
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    while (g_stop == 0) {
        zmq::poll(&item, 1, milliseconds{10});
        for (auto f = recv_frames(socket); !f.empty(); f = recv_frames(socket)) {
            if (f.size() >= 6 && f[1] == kMdpw && f[2] == std::string(1, '\x02')) {
                held = Held{f[3], f[5], Clock::now() + delay};
            } else if (f.size() >= 3 && f[1] == kMdpw && f[2] == std::string(1, '\x05')) {
                // DISCONNECT: 7/MDP says reconnect; for a test worker, exiting is enough.
                return 3;
            }
        }
        const auto now = Clock::now();
        if (held && now >= held->reply_at) {
            auto request = nlohmann::json::parse(held->body, nullptr, false);
            nlohmann::json reply{
                {"served_by", ::getpid()},
                {"request", request.is_discarded() ? nlohmann::json(held->body) : request}};
            send_frames(socket, {"", kMdpw, std::string(1, '\x03'), held->token, "", reply.dump()});
            held.reset();
            next_heartbeat = now + heartbeat;
        }
        if (now >= next_heartbeat) {
            send_frames(socket, {"", kMdpw, std::string(1, '\x04')});
            next_heartbeat = now + heartbeat;
        }
    }
    send_frames(socket, {"", kMdpw, std::string(1, '\x05')});
    return 0;
}
