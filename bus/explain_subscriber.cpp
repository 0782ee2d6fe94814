// SUB side of the explain topic: connect, filter by topic prefix, decode and check each message.
#include "bus/explain_subscriber.hpp"

#include <zmq.hpp>

#include "base/log.hpp"
#include "bus/detail/frame_io.hpp"
#include "schema/protocol.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::bus {
namespace {

namespace protocol = schema::protocol;
using base::ErrorType;
using base::make_error;

}  // namespace

base::Result<ExplainEvent> decode_explain_event(const Frames& frames) {
    if (frames.size() != 5)
        return make_error(ErrorType::kProtocolError, "explain topic message must have 5 frames");
    if (frames[0].rfind(protocol::kExplainTopicPrefix, 0) != 0) {
        return make_error(ErrorType::kProtocolError, "topic does not start with explain.");
    }
    const auto seq = protocol::parse_ascii_int(frames[2]);
    if (!seq) return make_error(ErrorType::kProtocolError, "seq is not an ascii-int");
    if (frames[3] != protocol::kStateOpen && frames[3] != protocol::kStateComplete &&
        frames[3] != protocol::kStateError) {
        return make_error(ErrorType::kProtocolError, "state is not open, complete or error");
    }
    auto body = schema::parse_untrusted_json(frames[4]);
    if (!body) return make_error(ErrorType::kInvalidJson, "explain body: " + body.error().message);
    if (!body->is_object())
        return make_error(ErrorType::kDecodeError, "explain body is not a JSON object");
    ExplainEvent event;
    event.topic = frames[0];
    event.service = frames[0].substr(protocol::kExplainTopicPrefix.size());
    event.session = frames[1];
    event.seq = *seq;
    event.state = frames[3];
    event.body = std::move(body).value();
    return event;
}

// The subscriber's context (its own, or the caller's) and its SUB socket.
struct ExplainSubscriber::Socket {
    explicit Socket(zmq::context_t* shared)
        : context(shared), sub(context.get(), zmq::socket_type::sub) {}
    ContextHandle context;
    zmq::socket_t sub;
};

ExplainSubscriber::ExplainSubscriber(ExplainSubscriberConfig config)
    : ExplainSubscriber(nullptr, std::move(config)) {}

ExplainSubscriber::ExplainSubscriber(zmq::context_t& context, ExplainSubscriberConfig config)
    : ExplainSubscriber(&context, std::move(config)) {}

ExplainSubscriber::ExplainSubscriber(zmq::context_t* shared, ExplainSubscriberConfig config)
    : config_(std::move(config)), socket_(std::make_unique<Socket>(shared)) {
    set_socket_limits(socket_->sub, config_.linger, 1000, config_.receive_hwm);
    if (config_.curve) apply_curve_client(socket_->sub, *config_.curve);
    socket_->sub.set(zmq::sockopt::subscribe, config_.topic);
    socket_->sub.connect(config_.endpoint);
}

ExplainSubscriber::~ExplainSubscriber() = default;

void ExplainSubscriber::subscribe(const std::string& topic) {
    socket_->sub.set(zmq::sockopt::subscribe, topic);
}

base::Result<ExplainEvent> ExplainSubscriber::next(std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + timeout;
    for (;;) {
        while (auto frames = try_receive_frames(socket_->sub)) {
            auto event = decode_explain_event(*frames);
            if (event) return event;
            base::component_logger("client")->warn("event=bad_explain_message error=\"{}\"",
                                                   event.error().describe());
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0)
            return make_error(ErrorType::kTimeout, "no explain message within the timeout");
        wait_readable(socket_->sub, left);
    }
}

}  // namespace glassbox::bus
