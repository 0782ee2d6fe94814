// Raw protocol peers for integration tests (docs/protocol.md §3, §4, §6.1).
#include "tests/support/bus_peers.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

namespace glassbox::integration {

namespace {

using Clock = std::chrono::steady_clock;

const std::string kGbc = "GBC01";
const std::string kMdpc = "MDPC01";
const std::string kGbe = "GBE01";

milliseconds until(Clock::time_point t) {
    const auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now());
    return std::max(left, milliseconds{0});
}

std::string random_prefix() {
    std::random_device rd;
    std::ostringstream out;
    out << std::hex << rd();
    return out.str();
}

std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

}  // namespace

namespace {

std::mutex curve_mutex;
std::map<std::string, CurveKeys> curve_by_endpoint;

// The `key = "value"` lines of a certificate file.
std::map<std::string, std::string> certificate_values(const std::string& path) {
    std::map<std::string, std::string> values;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || (line[0] != ' ' && line[0] != '\t')) continue;
        const auto equals = line.find('=');
        if (equals == std::string::npos) continue;
        auto trim = [](std::string text) {
            const auto first = text.find_first_not_of(" \t\"");
            const auto last = text.find_last_not_of(" \t\"\r");
            return first == std::string::npos ? std::string{}
                                              : text.substr(first, last - first + 1);
        };
        values[trim(line.substr(0, equals))] = trim(line.substr(equals + 1));
    }
    return values;
}

}  // namespace

void use_curve_for(const std::string& endpoint, CurveKeys keys) {
    const std::lock_guard lock{curve_mutex};
    curve_by_endpoint[endpoint] = std::move(keys);
}

CurveKeys home_curve_keys(const std::string& home, const std::string& name) {
    auto own = certificate_values(home + "/keys/" + name + ".key_secret");
    return CurveKeys{certificate_values(home + "/keys/broker.key")["public-key"], own["public-key"],
                     own["secret-key"]};
}

RawDealer::RawDealer(zmq::context_t& context, const std::string& endpoint)
    : socket_(context, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    {
        const std::lock_guard lock{curve_mutex};
        if (const auto found = curve_by_endpoint.find(endpoint); found != curve_by_endpoint.end()) {
            socket_.set(zmq::sockopt::curve_serverkey, found->second.server);
            socket_.set(zmq::sockopt::curve_publickey, found->second.public_key);
            socket_.set(zmq::sockopt::curve_secretkey, found->second.secret_key);
        }
    }
    socket_.set(zmq::sockopt::sndhwm, 100'000);
    socket_.set(zmq::sockopt::rcvhwm, 100'000);
    socket_.connect(endpoint);
}

void RawDealer::send(const Frames& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
        socket_.send(zmq::buffer(frames[i]), flags);
    }
}

std::optional<Frames> RawDealer::recv(milliseconds timeout) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) <= 0) {
        return std::nullopt;
    }
    Frames frames;
    do {
        zmq::message_t part;
        if (!socket_.recv(part, zmq::recv_flags::dontwait)) {
            break;
        }
        frames.push_back(part.to_string());
        if (!part.more()) {
            break;
        }
    } while (true);
    return frames;
}

nlohmann::json GbcMessage::json() const { return nlohmann::json::parse(body, nullptr, false); }

std::string GbcMessage::describe() const {
    std::ostringstream out;
    switch (command) {
        case 0x02:
            out << "PARTIAL " << kind << " " << body;
            break;
        case 0x03:
            out << "FINAL " << body;
            break;
        case 0x05:
            out << "ERROR " << error_type << ": " << message;
            break;
        default: {
            out << "MALFORMED [";
            for (const auto& f : raw) {
                out << "[" << printable(f) << "]";
            }
            out << "]";
        }
    }
    out << " (rid " << request_id << ")";
    return out.str();
}

GbcMessage parse_gbc(Frames frames) {
    GbcMessage m;
    if (frames.size() >= 4 && frames[0].empty() && frames[1] == kGbc && frames[2].size() == 1) {
        const char cmd = frames[2][0];
        m.request_id = frames[3];
        if (cmd == 0x02 && frames.size() == 6) {
            m.command = cmd;
            m.kind = frames[4];
            m.body = frames[5];
        } else if (cmd == 0x03 && frames.size() == 5) {
            m.command = cmd;
            m.body = frames[4];
        } else if (cmd == 0x05 && frames.size() == 6) {
            m.command = cmd;
            m.error_type = frames[4];
            m.message = frames[5];
        }
    }
    m.raw = std::move(frames);
    return m;
}

GbcClient::GbcClient(zmq::context_t& context, const std::string& endpoint, milliseconds heartbeat)
    : dealer_(context, endpoint),
      heartbeat_(heartbeat),
      next_heartbeat_(Clock::now() + heartbeat),
      id_prefix_(random_prefix()) {}

std::string GbcClient::request(const std::string& service, const std::string& body,
                               std::uint64_t deadline_ms, std::string request_id) {
    if (request_id.empty()) {
        request_id = id_prefix_ + "-" + std::to_string(next_id_++);
    }
    dealer_.send(
        {"", kGbc, std::string(1, '\x01'), service, request_id, std::to_string(deadline_ms), body});
    in_flight_.insert(request_id);
    return request_id;
}

void GbcClient::cancel(const std::string& request_id) {
    dealer_.send({"", kGbc, std::string(1, '\x04'), request_id});
}

void GbcClient::heartbeat(const std::vector<std::string>& request_ids) {
    Frames frames{"", kGbc, std::string(1, '\x06')};
    frames.insert(frames.end(), request_ids.begin(), request_ids.end());
    dealer_.send(frames);
}

std::optional<GbcMessage> GbcClient::recv(milliseconds timeout) {
    const auto stop = Clock::now() + timeout;
    while (true) {
        const auto now = Clock::now();
        if (now >= next_heartbeat_) {
            if (!in_flight_.empty()) {
                heartbeat({in_flight_.begin(), in_flight_.end()});
            }
            next_heartbeat_ = now + heartbeat_;
        }
        auto frames = dealer_.recv(until(std::min(stop, next_heartbeat_)));
        if (frames) {
            auto m = parse_gbc(std::move(*frames));
            if (m.terminal()) {
                in_flight_.erase(m.request_id);
            }
            return m;
        }
        if (Clock::now() >= stop) {
            return std::nullopt;
        }
    }
}

std::vector<GbcMessage> GbcClient::collect(const std::string& request_id, milliseconds timeout) {
    std::vector<GbcMessage> out;
    // Messages stashed earlier for this id come first.
    for (auto it = stash_.begin(); it != stash_.end();) {
        if (it->request_id == request_id) {
            out.push_back(std::move(*it));
            it = stash_.erase(it);
            if (out.back().terminal()) {
                return out;
            }
        } else {
            ++it;
        }
    }
    const auto stop = Clock::now() + timeout;
    while (Clock::now() < stop) {
        auto m = recv(until(stop));
        if (!m) {
            break;
        }
        if (m->request_id != request_id) {
            stash_.push_back(std::move(*m));
            continue;
        }
        out.push_back(std::move(*m));
        if (out.back().terminal()) {
            break;
        }
    }
    return out;
}

std::vector<GbcMessage> GbcClient::call(const std::string& service, const std::string& body,
                                        std::uint64_t deadline_ms, milliseconds timeout) {
    return collect(request(service, body, deadline_ms), timeout);
}

MdpClient::MdpClient(zmq::context_t& context, const std::string& endpoint)
    : dealer_(context, endpoint) {}

std::optional<Frames> MdpClient::call(const std::string& service, const Frames& body,
                                      milliseconds timeout) {
    Frames frames{"", kMdpc, service};
    frames.insert(frames.end(), body.begin(), body.end());
    dealer_.send(frames);
    auto reply = dealer_.recv(timeout);
    if (!reply || reply->size() < 3 || !(*reply)[0].empty() || (*reply)[1] != kMdpc ||
        (*reply)[2] != service) {
        return std::nullopt;
    }
    return Frames(reply->begin() + 3, reply->end());
}

Collector::Collector(zmq::context_t& context, const std::string& endpoint, std::uint64_t window,
                     milliseconds heartbeat)
    : dealer_(context, endpoint), window_(window), heartbeat_(heartbeat) {
    attach();
}

Collector::~Collector() {
    try {
        detach();
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort on the way out
    }
}

void Collector::attach() {
    dealer_.send({"", kGbe, std::string(1, '\x01'), std::to_string(window_)});
    next_heartbeat_ = Clock::now() + heartbeat_;
}

void Collector::detach() { dealer_.send({"", kGbe, std::string(1, '\x05')}); }

void Collector::handle(const Frames& f) {
    if (f.size() < 3 || !f[0].empty() || f[1] != kGbe || f[2].size() != 1) {
        return;
    }
    const char cmd = f[2][0];
    if (cmd == 0x02 && f.size() == 9) {
        Delivery d;
        d.delivery_id = std::stoull(f[3]);
        d.service = f[4];
        d.state = f[7];
        d.body = nlohmann::json::parse(f[8], nullptr, false);
        const auto key = std::make_pair(f[5], static_cast<std::uint64_t>(std::stoull(f[6])));
        ++deliveries_;
        if (messages_.count(key) != 0) {
            duplicates_.push_back(key);
        }
        messages_[key] = std::move(d);
        if (ack) {
            dealer_.send({"", kGbe, std::string(1, '\x03'), f[3]});
            next_heartbeat_ = Clock::now() + heartbeat_;
        }
    } else if (cmd == 0x05) {
        ++detaches_;
        attach();
    }
}

void Collector::pump(milliseconds duration) {
    const auto stop = Clock::now() + duration;
    do {
        const auto now = Clock::now();
        if (now >= next_heartbeat_) {
            dealer_.send({"", kGbe, std::string(1, '\x04')});
            next_heartbeat_ = now + heartbeat_;
        }
        if (auto f = dealer_.recv(until(std::min(stop, next_heartbeat_)))) {
            handle(*f);
        }
    } while (Clock::now() < stop);
}

bool Collector::wait_for(std::size_t count, milliseconds timeout) {
    const auto stop = Clock::now() + timeout;
    while (messages_.size() < count && Clock::now() < stop) {
        pump(std::min(milliseconds{50}, until(stop)));
    }
    return messages_.size() >= count;
}

std::vector<Frames> receive_published(zmq::socket_t& sub, std::size_t count,
                                      std::chrono::milliseconds timeout) {
    std::vector<Frames> published;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (published.size() < count && std::chrono::steady_clock::now() < until) {
        zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, std::chrono::milliseconds{100}) <= 0) continue;
        Frames frames;
        while (true) {
            zmq::message_t part;
            if (!sub.recv(part, zmq::recv_flags::dontwait)) break;
            frames.push_back(part.to_string());
            if (!part.more()) break;
        }
        if (!frames.empty()) published.push_back(std::move(frames));
    }
    return published;
}

}  // namespace glassbox::integration
