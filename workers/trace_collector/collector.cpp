// The GBE01 collector loop: ATTACH, gather DELIVERs into a batch, commit, ACK; heartbeat both
// ways, reconnect on broker silence, re-ATTACH after DETACH.
#include "workers/trace_collector/collector.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "bus/collector_frames.hpp"
#include "bus/detail/frame_io.hpp"

namespace glassbox::trace {
namespace {

namespace proto = schema::protocol;
namespace cmd = proto::collector_cmd;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// §1.1: at most 64 frames a message; an ACK spends 3 on its header.
constexpr std::size_t kAcksPerMessage = 60;

class Loop {
public:
    Loop(zmq::context_t& context, const CollectorConfig& config, TraceStore& store,
         CollectorCounters& counters, const std::atomic<bool>& stop)
        : context_(context),
          config_(config),
          store_(store),
          counters_(counters),
          stop_(stop),
          log_(base::component_logger("collector")) {}

    void run() {
        connect();
        while (!stop_.load()) {
            try {
                iterate();
            } catch (const std::exception& e) {
                // No exception escapes an iteration (STYLE): log and go on with a fresh socket.
                log_->error("event=loop_error error=\"{}\" action=reconnect", e.what());
                reconnect();
            }
        }
        try {
            if (!pending_.empty()) flush();
            send_command(cmd::kDetach);
            log_->info("event=detached pending={}", pending_.size());
        } catch (const std::exception& e) {
            log_->error("event=stop_error error=\"{}\"", e.what());
        }
        socket_.reset();
    }

private:
    void connect() {
        socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
        bus::set_socket_limits(*socket_, config_.linger, config_.send_hwm, config_.receive_hwm);
        if (config_.curve) bus::apply_curve_client(*socket_, *config_.curve);
        socket_->connect(config_.endpoint);
        attach();
        last_heard_ = Clock::now();
    }

    void reconnect() {
        ++counters_.reconnects;
        socket_.reset();
        connect();
    }

    void attach() {
        // Deliveries of an earlier attachment are the broker's to hand out again: it refuses
        // their ACKs now (§6.1), and the store keeps them idempotently when they come back.
        current_from_ = pending_.size();
        bus::Frames frames;
        bus::put_collector_attach(bus::AppendFrames{frames}, config_.window);
        send(frames);
        log_->info("event=attach endpoint={} window={}", config_.endpoint, config_.window);
    }

    bool send_command(char command) {
        bus::Frames frames;
        bus::put_collector_command(bus::AppendFrames{frames}, command);
        return send(frames);
    }

    // A whole GBE01 message, as the bus/collector_frames encoders wrote it (classic), sent in
    // the packed form when configured.
    bool send(bus::Frames& frames) {
        const char command = frames[2][0];
        if (config_.packed) bus::pack_frames(frames);
        const bool sent = bus::send_frames(*socket_, std::move(frames));
        if (sent) {
            last_sent_ = Clock::now();
        } else {
            log_->warn("event=send_failed command={} reason=would_block",
                       static_cast<int>(command));
        }
        return sent;
    }

    void iterate() {
        auto now = Clock::now();
        milliseconds timeout = std::min(config_.stop_poll, config_.heartbeat);
        if (!pending_.empty()) {
            const auto due = std::max(batch_deadline_, retry_at_);
            // Rounded up: a timeout truncated to 0 ms would spin on poll until the batch is due.
            timeout = std::min(timeout, std::chrono::ceil<milliseconds>(due - now));
        }
        if (bus::wait_readable(*socket_, std::max(timeout, milliseconds{0}))) {
            while (auto frames = bus::try_receive_frames(*socket_)) {
                handle(*frames);
                if (pending_.size() >= config_.batch_max) break;
            }
        }
        now = Clock::now();
        if (!pending_.empty() && now >= retry_at_ &&
            (pending_.size() >= config_.batch_max || now >= batch_deadline_)) {
            flush();
        }
        now = Clock::now();
        if (now - last_sent_ >= config_.heartbeat) send_command(cmd::kHeartbeat);
        if (now - last_heard_ >= config_.heartbeat * config_.liveness) {
            log_->warn("event=broker_silent ms={} action=reconnect",
                       std::chrono::duration_cast<milliseconds>(now - last_heard_).count());
            reconnect();
        }
    }

    void handle(const bus::Frames& frames) {
        last_heard_ = Clock::now();
        // Packed or classic (§1.4): the decoders read the classic frames either carries.
        views_.clear();
        if (frames.empty() || !bus::is_packed(frames[0])) {
            bus::views_of(frames, 0, frames.size(), views_);
        } else if (frames.size() != 2 || !bus::unpack_views(frames[0], frames[1], views_)) {
            views_.clear();
        }
        const auto& views = views_;
        const auto command = bus::decode_collector_command(views);
        if (!command) {
            ++counters_.bad_frames;
            log_->warn("event=bad_message frames={}", frames.size());
            return;
        }
        switch (command.value()) {
            case cmd::kDeliver:
                return deliver(views);
            case cmd::kHeartbeat:
                return;
            case cmd::kDetach:
                // §6.1: the broker does not know us (it restarted, or we were expired).
                log_->info("event=detach_received action=reattach");
                attach();
                return;
            default:
                ++counters_.bad_frames;
                log_->warn("event=unknown_command command={}", static_cast<int>(command.value()));
        }
    }

    void deliver(const bus::FrameViews& frames) {
        // [empty] ["GBE01"] [0x02] [delivery-id] [service] [session] [seq] [state] [body]
        const auto id = bus::collector_delivery_id(frames);
        if (!id) {
            // Without its id a delivery cannot be acknowledged or quarantined; the broker
            // hands it out again after we detach.
            ++counters_.bad_frames;
            log_->error("event=bad_deliver frames={} reason=no_delivery_id", frames.size());
            return;
        }
        ++counters_.deliveries;
        Delivery d;
        d.delivery_id = *id;
        if (const auto whole = bus::decode_collector_deliver(frames)) {
            d.service = whole.value().service;
            d.session = whole.value().session;
            d.seq = whole.value().seq;
            d.state = whole.value().state;
            d.body = whole.value().body;
        } else {
            // Kept for the quarantine: validate_delivery rejects the missing frames.
            d.state = "frames:" + std::to_string(frames.size());
        }
        if (pending_.empty()) batch_deadline_ = Clock::now() + config_.batch_wait;
        pending_.push_back(std::move(d));
        counters_.pending = pending_.size();
    }

    void flush() {
        auto outcome = store_.store_batch(pending_);
        if (!outcome) {
            ++counters_.store_failures;
            counters_.store_failing = true;
            // Valid UTF-8 whatever the error quotes (a path, say): it leaves in a JSON reply.
            counters_.last_store_error.set(base::printable_utf8(outcome.error().describe()));
            retry_at_ = Clock::now() + config_.retry_delay;
            log_->error("event=store_failed deliveries={} error=\"{}\" action=retry_ms:{}",
                        pending_.size(), outcome.error().message, config_.retry_delay.count());
            return;
        }
        if (counters_.store_failing.exchange(false)) {
            log_->info("event=store_recovered deliveries={} failures={}", pending_.size(),
                       counters_.store_failures.load());
        }
        ++counters_.batches;
        counters_.stored += outcome->stored;
        counters_.iris_rewritten += outcome->iris_rewritten;
        counters_.duplicates += outcome->duplicates;
        counters_.quarantined += outcome->quarantined;
        counters_.refused += outcome->refused;
        if (outcome->quarantined > 0)
            log_->warn("event=quarantined count={}", outcome->quarantined);
        if (outcome->refused > 0) {
            log_->warn(
                "event=explain_refused count={} reason=\"written after its session's end, or by "
                "another "
                "service or worker; kept in quarantine\"",
                outcome->refused);
        }
        if (outcome->iris_rewritten > 0) {
            log_->warn(
                "event=iris_rewritten count={} reason=\"not valid IRIs (N-Triples IRIREF); stored "
                "percent-encoded\"",
                outcome->iris_rewritten);
        }
        // The batch is stored: the counters say so before the ACKs go out, so whoever has seen
        // an ACK reads stats that include it.
        const std::vector<Delivery> stored = std::exchange(pending_, {});
        const std::size_t current = std::exchange(current_from_, 0);
        counters_.pending = 0;
        std::vector<std::uint64_t> ids;
        for (std::size_t i = current; i < stored.size(); ++i) {
            ids.push_back(stored[i].delivery_id);
            if (ids.size() == kAcksPerMessage || i + 1 == stored.size()) {
                // An ACK that cannot be sent is not lost work: the message is stored, and its
                // redelivery is a duplicate the store ignores.
                bus::Frames frames;
                bus::put_collector_ack(bus::AppendFrames{frames}, ids);
                counters_.acked += ids.size();
                if (!send(frames)) counters_.acked -= ids.size();
                ids.clear();
            }
        }
    }

    zmq::context_t& context_;
    const CollectorConfig& config_;
    TraceStore& store_;
    CollectorCounters& counters_;
    const std::atomic<bool>& stop_;
    std::shared_ptr<spdlog::logger> log_;
    std::unique_ptr<zmq::socket_t> socket_;
    std::vector<Delivery> pending_;
    bus::FrameViews views_;         // of the message handled (unpacked when it came packed)
    std::size_t current_from_ = 0;  // pending_[current_from_...] came on the current attachment
    Clock::time_point batch_deadline_{};
    Clock::time_point retry_at_{};
    Clock::time_point last_sent_{};
    Clock::time_point last_heard_{};
};

}  // namespace

Collector::Collector(zmq::context_t& context, CollectorConfig config, TraceStore& store)
    : context_(context), config_(std::move(config)), store_(store) {}

schema::TraceCollectorStats Collector::stats() const {
    schema::TraceCollectorStats s;
    s.deliveries = counters_.deliveries.load();
    s.stored = counters_.stored.load();
    s.acked = counters_.acked.load();
    s.store_failures = counters_.store_failures.load();
    s.store_failing = counters_.store_failing.load();
    s.pending = counters_.pending.load();
    s.last_store_error = counters_.last_store_error.get();
    s.iris_rewritten = counters_.iris_rewritten.load();
    s.refused = counters_.refused.load();
    return s;
}

void Collector::run() {
    Loop loop(context_, config_, store_, counters_, stop_requested_);
    loop.run();
}

}  // namespace glassbox::trace
