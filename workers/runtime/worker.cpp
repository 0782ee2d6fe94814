// Worker slots: the MDPW01 I/O loop (READY, heartbeats, reconnect, cancel, drain) and the
// handler thread it feeds over an inproc PAIR, or the handler run inline on the loop's thread.
#include "workers/runtime/worker.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>

#include <unistd.h>

#include "base/log.hpp"
#include "bus/detail/frame_io.hpp"
#include "bus/worker_frames.hpp"
#include "schema/protocol.hpp"
#include "schema/untrusted_json.hpp"
#include "workers/runtime/detail/slot_channel.hpp"

namespace glassbox::runtime {
namespace {

namespace protocol = schema::protocol;
namespace channel = detail::channel;
using base::ErrorType;
using base::make_error;
using bus::Frames;
using std::chrono::milliseconds;

// Looked up once: component_logger takes a lock and searches the registry, and a request logs
// on its hot path (debug lines, filtered by level only inside the call).
const std::shared_ptr<spdlog::logger>& log() {
    static const auto logger = base::component_logger("worker");
    return logger;
}

std::string default_base_name(const std::string& service) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return service + "-" + (host[0] != '\0' ? std::string(host) : std::string("localhost")) + "-" +
           std::to_string(::getpid());
}

// A bodiless MDPW01 command: HEARTBEAT, DISCONNECT.
Frames worker_command(char command) {
    Frames frames;
    bus::put_worker_command(bus::AppendFrames{frames}, command);
    return frames;
}

bool is_command(const bus::Messages& parts, char command) {
    return !parts.empty() && parts[0].size() == 1 && *parts[0].data<char>() == command;
}

// Runs one request: checks its meta and body, gives the handler its RequestContext, and ends
// the request if the handler did not. The handler thread has one (its messages go over the
// PAIR), and so has the I/O loop for inline requests (straight to the broker): each owns the
// BusClient its requests' calls use, made on first use and closed by close() on its thread.
class JobRunner {
public:
    JobRunner(zmq::context_t& context, const WorkerConfig& config, const Handler& handler,
              const std::string& worker_id)
        : context_(context), config_(config), handler_(handler), worker_id_(worker_id) {}

    // The texts are views of the request's message parts, read in place.
    void run(detail::HandlerChannel& out, std::string_view meta_text, std::string_view body_text) {
        const auto received = Clock::now();
        auto meta = decode_request_meta(meta_text, received);
        if (!meta) {
            (void)out.send(
                {std::string(1, channel::kError), "ProtocolError", meta.error().message});
            return;
        }
        // Every line logged on this thread while the request runs names it (and, once its trace
        // has begun, the trace's session: RequestContext adds it).
        base::LogFields fields;
        fields.set("request", meta->request_id);
        // §1.1: the broker never parses bodies; the worker answers InvalidJson before its logic
        // runs. Its nesting is bounded too (schema::kMaxJsonDepth): every handler may copy or walk
        // it.
        // A body the service reads as text itself (WorkerConfig::text_body) is not parsed here.
        nlohmann::json tree;
        if (!config_.text_body || !config_.text_body(body_text)) {
            auto body = parse_request_body(body_text);
            if (!body) {
                (void)out.send(
                    {std::string(1, channel::kError), "InvalidJson", body.error().message});
                return;
            }
            tree = std::move(body).value();
        }
        RequestContext context(
            std::move(meta).value(), std::move(tree), worker_id_, out,
            [this]() -> bus::BusClient& { return bus(); }, body_text);
        context.set_redactor(config_.redactor.get());
        log()->debug("event=request_start worker={} attempt={}", worker_id_,
                     context.meta().attempt);
        try {
            handler_(context);
            context.finish_if_open(
                make_error(ErrorType::kInternal, "the service ended without a reply"));
        } catch (const std::exception& e) {
            log()->error("event=handler_threw error=\"{}\"", e.what());
            finish_after_throw(context, std::string("the service failed: ") + e.what());
        } catch (...) {
            log()->error("event=handler_threw error=unknown");
            finish_after_throw(context, "the service failed");
        }
        log()->debug("event=request_end worker={}", worker_id_);
    }

    // Closes the BusClient: its socket belongs to the thread that ran the requests.
    void close() { bus_.reset(); }

private:
    static void finish_after_throw(RequestContext& context, const std::string& message) {
        try {
            context.finish_if_open(make_error(ErrorType::kInternal, message));
        } catch (...) {
            log()->error("event=terminal_lost");
        }
    }

    bus::BusClient& bus() {
        if (!bus_) {
            bus::BusClientConfig bus_config;
            bus_config.endpoint = config_.endpoint;
            bus_config.curve = config_.curve;  // calls go out on the worker's own key
            bus_config.heartbeat = config_.heartbeat;
            bus_config.deadline_grace = config_.heartbeat;
            bus_config.parse_bodies = false;  // RequestContext::call parses what its caller uses
            bus_ = std::make_unique<bus::BusClient>(context_, bus_config);
        }
        return *bus_;
    }

    zmq::context_t& context_;
    const WorkerConfig& config_;
    const Handler& handler_;
    const std::string& worker_id_;
    std::unique_ptr<bus::BusClient> bus_;
};

// The handler side of a slot: waits for jobs on its PAIR and runs the handler for each.
class HandlerLoop {
public:
    HandlerLoop(zmq::context_t& context, const WorkerConfig& config, const Handler& handler,
                std::string channel_endpoint, std::string worker_id)
        : context_(context),
          config_(config),
          channel_endpoint_(std::move(channel_endpoint)),
          worker_id_(std::move(worker_id)),
          jobs_(context, config, handler, worker_id_) {}

    void run() {
        zmq::socket_t pair(context_, zmq::socket_type::pair);
        bus::set_socket_limits(pair, milliseconds{0}, config_.channel_hwm, config_.channel_hwm);
        // Bounded wait: the I/O loop always ends us with kQuit, this only keeps the loop honest.
        // A blocking receive rather than a poll and then a receive: one wake-up per job.
        pair.set(zmq::sockopt::rcvtimeo, 1000);
        pair.connect(channel_endpoint_);
        detail::HandlerChannel handler_end{pair};
        for (;;) {
            auto parts = bus::receive_messages(pair);
            if (!parts) continue;
            if (is_command(*parts, channel::kQuit)) break;
            if (is_command(*parts, channel::kJob) && parts->size() == 3)
                jobs_.run(handler_end, bus::view_of((*parts)[1]), bus::view_of((*parts)[2]));
            // A CANCEL read here arrived after its request ended: nothing to do.
        }
        jobs_.close();  // the BusClient's socket belongs to this thread: close it here
    }

private:
    zmq::context_t& context_;
    const WorkerConfig& config_;
    std::string channel_endpoint_;
    std::string worker_id_;
    JobRunner jobs_;
};

// The broker side of a slot: one MDPW01 connection, its liveness, and the request in flight,
// which it hands to the handler thread, or runs itself when WorkerConfig::run_inline takes it.
class IoLoop final : private detail::InlineOutput {
public:
    IoLoop(zmq::context_t& context, const WorkerConfig& config, const Handler& handler,
           std::atomic<bool>& stop_requested, std::string worker_id)
        : context_(context),
          config_(config),
          handler_(handler),
          stop_requested_(stop_requested),
          worker_id_(std::move(worker_id)),
          inline_jobs_(context, config, handler, worker_id_),
          backoff_(config.reconnect_initial) {}

    void run() {
        static std::atomic<std::uint64_t> next_channel{0};
        const std::string endpoint =
            "inproc://glassbox-worker-slot-" + std::to_string(next_channel++);
        pair_ = zmq::socket_t(context_, zmq::socket_type::pair);
        bus::set_socket_limits(pair_, milliseconds{0}, config_.channel_hwm, config_.channel_hwm);
        pair_.bind(endpoint);
        HandlerLoop handler_loop(context_, config_, handler_, endpoint, worker_id_);
        std::thread handler_thread([&handler_loop] { handler_loop.run(); });
        try {
            loop();
        } catch (const std::exception& e) {
            // Only a broken context gets here (ETERM); the handler thread still has to be joined.
            log()->error("event=io_loop_failed worker={} error=\"{}\"", worker_id_, e.what());
        }
        inline_jobs_.close();  // the inline requests' BusClient belongs to this thread
        bus::send_frames(pair_, {std::string(1, channel::kQuit)}, true);
        handler_thread.join();
        pair_.close();
    }

private:
    void loop() {
        connect();
        for (;;) {
            auto now = Clock::now();
            note_stop(now);
            if (stopping_ && !busy_) {
                disconnect();
                return;
            }
            if (!dealer_ && !busy_ && now >= reconnect_at_) connect();

            zmq::socket_t* const sockets[] = {&pair_, dealer_ ? &*dealer_ : nullptr};
            unsigned readable = 0;
            try {
                readable = bus::wait_any_readable(std::span(sockets, dealer_ ? 2 : 1),
                                                  wait_time(now));  // 0: EINTR or none
            } catch (const zmq::error_t& e) {
                if (e.num() == ETERM) throw;
                continue;
            }
            if ((readable & 1U) != 0) {
                while (auto parts = bus::try_receive_messages(pair_)) on_handler_message(*parts);
            }
            if (dealer_ && (readable & 2U) != 0) read_broker();
            keep_alive(Clock::now());
        }
    }

    // Every message the broker has sent, handled in order (a DISCONNECT among them drops the
    // connection, and the rest with it).
    void read_broker() {
        while (dealer_) {
            auto parts = bus::try_receive_messages(*dealer_);
            if (!parts) break;
            on_broker_message(*parts);
        }
    }

    // §5.2: a broker silent for `liveness` intervals is dead; HEARTBEAT when nothing else went.
    void keep_alive(Clock::time_point now) {
        if (dealer_ && now >= broker_expiry_) {
            log()->warn("event=broker_silent worker={} liveness={}", worker_id_, config_.liveness);
            drop_connection();
        } else if (dealer_ && now >= heartbeat_at_) {
            send_to_broker(worker_command(protocol::worker_cmd::kHeartbeat));
        }
    }

    // Takes a stop() into account: from then on the slot drains, and a request still running
    // after drain_timeout is cancelled.
    void note_stop(Clock::time_point now) {
        if (!stopping_ && stop_requested_.load()) {
            stopping_ = true;
            stop_started_ = now;
            log()->info("event=stopping worker={} busy={}", worker_id_, busy_);
        }
        if (stopping_ && busy_ && !cancel_sent_ && now - stop_started_ >= config_.drain_timeout) {
            log()->warn("event=drain_timeout worker={} {}", worker_id_, request_fields());
            cancel_handler();
        }
    }

    milliseconds wait_time(Clock::time_point now) const {
        auto wake = now + config_.stop_poll;
        if (dealer_)
            wake = std::min({wake, heartbeat_at_, broker_expiry_});
        else if (!busy_)
            wake = std::min(wake, reconnect_at_);
        const auto wait = std::chrono::ceil<milliseconds>(wake - now);
        return std::max(wait, milliseconds{0});
    }

    void connect() {
        dealer_.emplace(context_, zmq::socket_type::dealer);
        bus::set_socket_limits(*dealer_, milliseconds{0}, config_.send_hwm, config_.receive_hwm);
        if (config_.curve) bus::apply_curve_client(*dealer_, *config_.curve);
        dealer_->connect(config_.endpoint);
        const auto now = Clock::now();
        broker_expiry_ = now + config_.heartbeat * config_.liveness;
        // 7/MDP READY, plus the sixth frame declaring the glassbox extension in the compact
        // layout and packed form, GBW03 (§5.1, §1.4). No credit frame: a slot serves one
        // request at a time, so the broker's default credit of 1 fits.
        Frames ready;
        bus::put_worker_ready(bus::AppendFrames{ready}, config_.service, true, 0,
                              bus::WorkerLayout::kCompact, true);
        send_to_broker(ready);
        log()->info("event=ready worker={} service={} endpoint={}", worker_id_, config_.service,
                    config_.endpoint);
    }

    // Closes the connection and plans the next one; a request in flight is lost to the broker
    // (it applies §2 guarantee 2), so its handler is cancelled and its output dropped.
    void drop_connection() {
        dealer_.reset();
        reconnect_at_ = Clock::now() + backoff_;
        backoff_ = std::min(backoff_ * 2, config_.reconnect_max);
        if (busy_) {
            orphaned_ = true;
            cancel_handler();
        }
    }

    void disconnect() {
        if (!dealer_) return;
        send_to_broker(worker_command(protocol::worker_cmd::kDisconnect));
        // Give the DISCONNECT time to leave before the socket closes.
        const auto linger =
            static_cast<int>(std::min<std::int64_t>(config_.disconnect_linger.count(), 60'000));
        dealer_->set(zmq::sockopt::linger, linger);
        dealer_.reset();
        log()->info("event=disconnected worker={}", worker_id_);
    }

    void cancel_handler() {
        if (cancel_sent_) return;
        cancel_sent_ = true;
        if (running_inline_) {
            inline_cancelled_ = true;  // read by the inline handler's cancelled()
            return;
        }
        bus::send_frames(pair_, {std::string(1, channel::kCancel)}, true);
    }

    void send_to_broker(const Frames& frames) {
        auto parts = bus::messages_of(frames);
        send_to_broker(parts);
    }

    void send_to_broker(bus::Messages& parts) {
        if (!dealer_) return;
        if (!bus::send_messages(*dealer_, parts)) {
            log()->warn("event=send_dropped worker={} reason=would_block", worker_id_);
            return;
        }
        heartbeat_at_ = Clock::now() + config_.heartbeat;  // §5.2: any message counts
    }

    // A message from the handler thread with its kind replaced by this command and the token,
    // in the layout the request came in: the handler's parts (bodies) go on to the broker as
    // they are, without a copy.
    void forward_to_broker(char command, bus::Messages& parts) {
        bus::Messages out;
        out.reserve(parts.size() + 4);
        bus::put_worker_token_head(bus::AppendMessages{out}, command, token_, layout_);
        for (std::size_t i = 1; i < parts.size(); ++i) out.push_back(std::move(parts[i]));
        if (packed_) bus::pack_messages(out);
        send_to_broker(out);
    }

    void send_error(const std::string& token, bus::WorkerLayout layout, bool packed, ErrorType type,
                    const std::string& message) {
        Frames frames;
        bus::put_worker_error(bus::AppendFrames{frames}, token, make_error(type, message), layout);
        if (packed) bus::pack_frames(frames);
        send_to_broker(frames);
    }

    // The classic views of a message from the broker, read in place (packed or not); the error
    // says why a packed one is malformed.
    base::Result<void> classic_views(const bus::Messages& parts) {
        if (parts.empty() || !bus::is_packed(bus::view_of(parts[0]))) {
            bus::views_of(parts, 0, parts.size(), views_);
            return {};
        }
        if (parts.size() != 2) return bus::frame_error("packed message: not two frames");
        return bus::unpack_views(bus::view_of(parts[0]), bus::view_of(parts[1]), views_);
    }

    void on_broker_message(bus::Messages& parts) {
        broker_expiry_ = Clock::now() + config_.heartbeat * config_.liveness;
        backoff_ = config_.reconnect_initial;  // the broker answers: the next outage starts afresh
        // The broker writes to us packed (we declared GBW03); a classic message is read too.
        const bool packed = !parts.empty() && bus::is_packed(bus::view_of(parts[0]));
        if (auto unpacked = classic_views(parts); !unpacked) {
            log()->warn("event=bad_broker_message worker={} error=\"{}\"", worker_id_,
                        unpacked.error().message);
            return;
        }
        const auto& views = views_;
        const auto command = bus::decode_worker_command(views);
        if (!command || views.size() > protocol::kMaxFrames) {
            log()->warn("event=bad_broker_message worker={} frames={}", worker_id_, views.size());
            return;
        }
        switch (command.value()) {
            case protocol::worker_cmd::kRequest:
                on_request(views, packed, parts);
                break;
            case protocol::worker_cmd::kHeartbeat:
                break;
            case protocol::worker_cmd::kDisconnect:
                log()->warn("event=broker_disconnect worker={} busy={}", worker_id_, busy_);
                drop_connection();
                reconnect_at_ = Clock::now();  // 7/MDP: reconnect at once with a new socket
                break;
            case protocol::worker_cmd::kCancel:
                if (const auto token = bus::decode_worker_cancel(views);
                    token && busy_ && !orphaned_ && token.value() == token_) {
                    log()->info("event=cancel worker={} {}", worker_id_, request_fields());
                    cancel_handler();
                }
                break;
            default:
                log()->warn("event=unexpected_command worker={} command={}", worker_id_,
                            static_cast<int>(static_cast<unsigned char>(command.value())));
        }
    }

    // `packed`: the request came in the packed form; its answers go so too. `frames` are views
    // of `parts`, whose last part, the body, goes on to the handler without a copy.
    void on_request(const bus::FrameViews& frames, bool packed, bus::Messages& parts) {
        const auto token_frame = bus::worker_token_of(frames);
        if (!token_frame) {
            log()->warn("event=bad_request worker={} reason=token", worker_id_);
            return;  // no usable token to answer with
        }
        const std::string token{*token_frame};
        // We declared GBW02, so the broker writes the compact layout; a classic REQUEST (a
        // broker or test peer that writes GBW01) is read too, and answered in its own layout.
        const auto request = bus::decode_gbw_request(frames);
        const auto layout = request                                  ? request.value().layout
                            : frames.size() > 4 && frames[4].empty() ? bus::WorkerLayout::kClassic
                                                                     : bus::WorkerLayout::kCompact;
        if (busy_) {
            // 5.1: one request at a time; the broker broke that rule, refuse the newcomer only.
            send_error(token, layout, packed, ErrorType::kProtocolError,
                       "worker is busy with another request");
            return;
        }
        if (!request) {
            send_error(token, layout, packed, ErrorType::kProtocolError, request.error().message);
            return;
        }
        busy_ = true;
        orphaned_ = false;
        cancel_sent_ = false;
        token_ = token;
        layout_ = layout;
        packed_ = packed;
        // Kept as text: only a log line about the request (cancel, drain) decodes it.
        meta_text_.assign(request.value().meta);
        // The body is the message's last frame in every layout and form (decode_gbw_request
        // checked the shape).
        if (takes_inline(request.value().meta, bus::view_of(parts.back()))) {
            run_inline(request.value().meta, bus::view_of(parts.back()));
            return;
        }
        bus::Messages job;
        job.reserve(3);
        job.emplace_back(&channel::kJob, std::size_t{1});
        job.emplace_back(request.value().meta.data(), request.value().meta.size());
        // The views are not read after the body moves.
        job.push_back(std::move(parts.back()));
        bus::send_messages(pair_, job, true);
    }

    bool takes_inline(std::string_view meta, std::string_view body) const noexcept {
        if (!config_.run_inline) return false;
        try {
            return config_.run_inline(meta, body);
        } catch (...) {
            return false;  // a hook that throws: the handler thread, as without one
        }
    }

    // Runs the request on this thread: its messages go to the broker as the handler thread's
    // would (take(), then on_handler_message), the meta and body read in place. Meanwhile the
    // connection is served only when the handler waits on a call or asks cancelled()
    // (serve_broker): a CANCEL, a heartbeat, a stop wait for that.
    void run_inline(std::string_view meta, std::string_view body) {
        running_inline_ = true;
        inline_cancelled_ = false;
        next_inline_poll_ = Clock::now() + config_.inline_poll;
        detail::HandlerChannel output{static_cast<detail::InlineOutput&>(*this)};
        inline_jobs_.run(output, meta, body);
        running_inline_ = false;
        if (busy_) {
            // No terminal reached on_handler_message (one could not be built: no memory left):
            // the broker ends the request at its deadline, and the slot takes the next one.
            log()->error("event=terminal_lost worker={} {}", worker_id_, request_fields());
            end_request();
        }
    }

    // detail::InlineOutput: a message of an inline request, as if read from the PAIR.
    void take(bus::Messages& message) override { on_handler_message(message); }

    // detail::InlineOutput: what the loop would do between messages, done while the inline
    // handler waits. A message read here is handled as in loop(): CANCEL of this request sets
    // the flag returned, DISCONNECT or a silent broker drops the connection (the request is then
    // orphaned and cancelled, its output dropped), a REQUEST is refused as busy (§5.1).
    bool serve_broker() noexcept override {
        try {
            const auto now = Clock::now();
            if (now < next_inline_poll_) return inline_cancelled_;
            next_inline_poll_ = now + config_.inline_poll;
            note_stop(now);
            read_broker();
            keep_alive(Clock::now());
        } catch (const std::exception& e) {
            // Only a broken context gets here (ETERM): the loop meets it again after the request.
            log()->error("event=inline_serve_failed worker={} error=\"{}\"", worker_id_, e.what());
        }
        return inline_cancelled_;
    }

    void end_request() {
        busy_ = false;
        orphaned_ = false;
        cancel_sent_ = false;
        token_.clear();
        meta_text_.clear();
        session_hint_.clear();
    }

    void on_handler_message(bus::Messages& parts) {
        if (parts.empty() || parts[0].size() != 1 || !busy_) return;
        const char kind = *parts[0].data<char>();
        const bool terminal = kind == channel::kReply || kind == channel::kError;
        if (!orphaned_) {
            namespace cmd = protocol::worker_cmd;
            if (kind == channel::kPartial && parts.size() == 2) {
                forward_to_broker(cmd::kPartial, parts);
            } else if (kind == channel::kExplain && parts.size() == 5) {
                if (session_hint_.empty()) session_hint_ = parts[1].to_string();
                forward_to_broker(cmd::kExplain, parts);
            } else if (kind == channel::kReply && parts.size() == 2) {
                forward_to_broker(cmd::kReply, parts);
            } else if (kind == channel::kError && parts.size() == 3) {
                forward_to_broker(cmd::kError, parts);
            }
        }
        if (terminal) end_request();
    }

    // The request in flight as the handler thread's lines name it: request=… session=… (the
    // session once its first explain message went by).
    std::string request_fields() const {
        const auto meta = bus::decode_request_meta(meta_text_);
        std::string fields = "request=" + (meta ? meta.value().request_id : std::string{});
        if (!session_hint_.empty()) fields += " session=" + session_hint_;
        return fields;
    }

    zmq::context_t& context_;
    const WorkerConfig& config_;
    const Handler& handler_;
    std::atomic<bool>& stop_requested_;
    std::string worker_id_;
    JobRunner inline_jobs_;  // after worker_id_, which it reads
    zmq::socket_t pair_;
    std::optional<zmq::socket_t> dealer_;
    Clock::time_point heartbeat_at_{};
    Clock::time_point broker_expiry_{};
    Clock::time_point reconnect_at_{};
    milliseconds backoff_;
    bool stopping_ = false;
    Clock::time_point stop_started_{};
    bool busy_ = false;
    bool orphaned_ = false;  // the connection that brought the request is gone
    bool cancel_sent_ = false;
    std::string token_;
    bus::WorkerLayout layout_ = bus::WorkerLayout::kCompact;  // of the request in flight
    bool packed_ = true;                                      // of the request in flight
    std::string meta_text_;        // the meta frame of the request in flight, for logs only
    bus::FrameViews views_;        // of the broker's message being read (kept: no allocation each)
    std::string session_hint_;     // the first explain session of the request in flight, for logs
    bool running_inline_ = false;  // the handler runs on this thread now (run_inline)
    bool inline_cancelled_ = false;         // cancel_handler() while it does
    Clock::time_point next_inline_poll_{};  // serve_broker() reads the socket again from then
};

void validate(const WorkerConfig& config) {
    if (!protocol::is_valid_service_name(config.service)) {
        throw std::invalid_argument("worker service name must be 1-255 printable ASCII characters");
    }
    if (config.service.rfind(protocol::kMmiPrefix, 0) == 0) {
        throw std::invalid_argument("mmi. services belong to the broker");
    }
    if (config.endpoint.empty()) throw std::invalid_argument("worker endpoint is empty");
    if (config.threads == 0 || config.threads > 1024)
        throw std::invalid_argument("worker threads must be 1-1024");
    if (config.heartbeat.count() <= 0)
        throw std::invalid_argument("worker heartbeat must be positive");
    if (config.liveness < 1) throw std::invalid_argument("worker liveness must be at least 1");
    if (config.reconnect_initial.count() <= 0 || config.reconnect_max < config.reconnect_initial) {
        throw std::invalid_argument("worker reconnect delays must be positive, max >= initial");
    }
    if (config.stop_poll.count() <= 0)
        throw std::invalid_argument("worker stop_poll must be positive");
}

}  // namespace

Worker::Worker(WorkerConfig config, Handler handler)
    : Worker(nullptr, std::move(config), std::move(handler)) {}

Worker::Worker(zmq::context_t& context, WorkerConfig config, Handler handler)
    : Worker(&context, std::move(config), std::move(handler)) {}

Worker::Worker(zmq::context_t* shared, WorkerConfig config, Handler handler)
    : context_(std::make_unique<bus::ContextHandle>(shared)),
      config_(std::move(config)),
      handler_(std::move(handler)) {
    validate(config_);
    base_name_ =
        config_.worker_name.empty() ? default_base_name(config_.service) : config_.worker_name;
}

Worker::~Worker() {
    stop();
    wait();
}

std::string Worker::slot_worker_id(std::size_t slot) const {
    return base_name_ + "/" + std::to_string(slot);
}

void Worker::start() {
    if (!threads_.empty()) return;
    if (!handler_) throw std::invalid_argument("worker has no handler");
    for (std::size_t slot = 0; slot < config_.threads; ++slot) {
        threads_.emplace_back([this, slot] {
            IoLoop loop(context_->get(), config_, handler_, stop_requested_, slot_worker_id(slot));
            loop.run();
        });
    }
}

void Worker::stop() noexcept { stop_requested_.store(true); }

void Worker::wait() {
    for (auto& thread : threads_) {
        if (thread.joinable()) thread.join();
    }
    threads_.clear();
}

void Worker::run() {
    start();
    wait();
}

}  // namespace glassbox::runtime
