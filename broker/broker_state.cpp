// What the broker's parts share: its pieces built in order, the config normalised, and the
// drop and size checks every part applies to the message being handled.
#include "broker/detail/broker_state.hpp"

#include <random>

namespace glassbox::broker::detail {

namespace {

std::string random_instance() {
    std::random_device device;
    std::mt19937_64 generator{(static_cast<std::uint64_t>(device()) << 32) ^ device()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id;
    std::uint64_t value = generator();
    for (int i = 0; i < 16; ++i) {
        id.push_back(kHex[value & 0xF]);
        value >>= 4;
    }
    return id;
}

}  // namespace

BrokerState::BrokerState(zmq::context_t& context, BrokerConfig broker_config)
    : config(std::move(broker_config)),
      log(base::component_logger("broker")),
      router(context, zmq::socket_type::router),
      auth(context, config, log, now),
      topic(config, log, now),
      outbox(router, topic.publisher(), log),
      instance(random_instance()),
      started(Clock::now()),
      now(started),
      services(config, log, started),
      session_owners(config.ended_sessions_kept),
      feed(outbox, counters, log, now, config.delivery_interval) {
    if (config.heartbeat < milliseconds{1}) config.heartbeat = milliseconds{1};
    if (config.liveness < 1) config.liveness = 1;
    if (config.max_retries < 0) config.max_retries = 0;
    if (config.poll_interval < milliseconds{1}) config.poll_interval = milliseconds{1};
    if (config.max_drain == 0) config.max_drain = 1;
    if (config.topic_watch_interval < milliseconds{1})
        config.topic_watch_interval = milliseconds{1};
}

void BrokerState::drop(std::string_view identity, std::string_view why) {
    ++counters.dropped_frames;
    log->warn("event=dropped peer={} frames={} bytes={} reason=\"{}\"", printable(identity),
              in.frames(), in.bytes(), why);
}

std::optional<Error> BrokerState::too_large(std::string_view identity,
                                            std::string_view what) const {
    if (in.bytes() - identity.size() <= config.max_message_bytes) return std::nullopt;
    return base::make_error(ErrorType::kMessageTooLarge,
                            std::string{what} + " of " + std::to_string(in.bytes()) +
                                " bytes exceeds " + std::to_string(config.max_message_bytes));
}

}  // namespace glassbox::broker::detail
