// Bus connections shared by the gateway's HTTP threads.
#include "gateway/bus_pool.hpp"

#include <zmq.hpp>

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {
// Idle connections kept for reuse; more are closed when they come back (a burst's extra ones).
constexpr std::size_t kMaxIdle = 64;
}  // namespace

BusLease::~BusLease() {
    if (pool_ != nullptr && client_) pool_->give_back(std::move(client_));
}

BusPool::BusPool(bus::BusClientConfig config)
    : context_(std::make_unique<zmq::context_t>(1)), config_(std::move(config)) {}

BusPool::~BusPool() = default;

BusLease BusPool::lease() {
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            auto client = std::move(idle_.back());
            idle_.pop_back();
            return BusLease(*this, std::move(client));
        }
    }
    return BusLease(*this, std::make_unique<bus::BusClient>(*context_, config_));
}

void BusPool::give_back(std::unique_ptr<bus::BusClient> client) {
    // A connection still waiting on a request (its caller gave up) is closed, not reused: its
    // late replies must not reach the next request.
    if (client->in_flight() != 0) return;
    std::lock_guard lock(mutex_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(client));
}

std::optional<base::Error> body_error(const json& body) {
    if (!body.is_object()) return std::nullopt;
    const auto it = body.find("error");
    if (it == body.end() || !it->is_object()) return std::nullopt;
    const auto type_field = it->find("type");
    const auto message_field = it->find("message");
    const std::string type_name =
        type_field != it->end() && type_field->is_string() ? type_field->get<std::string>() : "";
    const std::string message = message_field != it->end() && message_field->is_string()
                                    ? message_field->get<std::string>()
                                    : std::string();
    return make_error(base::error_type_from_string(type_name).value_or(ErrorType::kInternal),
                      message);
}

base::Result<json> BusPool::call(std::string_view service, const json& body,
                                 std::chrono::milliseconds deadline) {
    auto client = lease();
    const auto started = std::chrono::steady_clock::now();
    auto replies = client->call(service, body, deadline);
    if (on_call) on_call(service, std::chrono::steady_clock::now() - started, !replies);
    if (!replies) return replies.error();
    if (replies->empty() || replies->back().kind != bus::ReplyKind::kFinal)
        return make_error(ErrorType::kInternal, std::string(service) + " answered no FINAL");
    json final = std::move(replies->back().body);
    if (auto error = body_error(final)) return *error;
    return final;
}

}  // namespace glassbox::gateway
