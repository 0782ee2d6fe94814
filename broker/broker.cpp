// The Broker facade: owns one BrokerCore (broker/detail/broker_core.hpp) and forwards to it.
#include "broker/broker.hpp"

#include "broker/detail/broker_core.hpp"

namespace glassbox::broker {

Broker::Broker(zmq::context_t& context, BrokerConfig config)
    : core_(std::make_unique<detail::BrokerCore>(context, std::move(config))) {}

Broker::~Broker() = default;

base::Result<BoundEndpoints> Broker::bind() { return core_->bind(); }

void Broker::run() { core_->run(stop_requested_, nullptr); }

void Broker::run(const std::stop_token& token) { core_->run(stop_requested_, &token); }

const BrokerConfig& Broker::config() const noexcept { return core_->config(); }

}  // namespace glassbox::broker
