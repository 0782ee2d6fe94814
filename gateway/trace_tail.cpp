// GET /api/v1/traces/{id}/events: a trace's steps as SSE — those stored so far, then each new
// one live from the broker's explain topic, then `done` once the trace ends.
#include <chrono>
#include <memory>

#include "bus/explain_subscriber.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/query_events.hpp"
#include "schema/protocol.hpp"
#include "schema/services.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// How often the stored trace is read again while tailing: the topic drops messages under load
// and never replays them, so the end of a trace is also learnt from the store.
constexpr std::chrono::milliseconds kStorePoll{1'000};

struct TraceTail {
    TraceTail(Gateway::State& s, StreamSlot slot_, std::string id_, std::string pub)
        : state(s), slot(std::move(slot_)), id(std::move(id_)), subscriber([&] {
              bus::ExplainSubscriberConfig config;
              config.endpoint = std::move(pub);
              config.curve = s.config.curve;
              return config;
          }()) {}

    Gateway::State& state;
    StreamSlot slot;
    std::string id;
    bus::ExplainSubscriber subscriber;
    std::string session;
    long long last_seq = -1;
    std::uint64_t next_id = 1;

    bool write(httplib::DataSink& sink, const SseEvent& event) {
        const std::string text = format_sse(next_id++, event);
        return sink.write(text.data(), text.size());
    }

    // The stored events after last_seq, as step events; the trace's status.
    base::Result<std::string> catch_up(httplib::DataSink& sink, bool& gone) {
        auto shown = state.bus.call(schema::services::kTrace, json{{"op", "show"}, {"session", id}},
                                    state.config.call_timeout);
        if (!shown) return shown.error();
        const json summary = shown->value("session", json::object());
        session = string_of(summary, "session");
        for (const auto& e : shown->value("events", json::array())) {
            const long long seq = e.value("seq", -1LL);
            if (seq <= last_seq) continue;
            const json explain{{"message_type", "explain"},        {"session", session},
                               {"seq", seq},                       {"service", string_of(summary, "service")},
                               {"explain_id", string_of(e, "explain_id")}, {"explain_triples", e.value("triples", json::array())},
                               {"state", string_of(e, "state")}};
            if (!write(sink, step_event(explain, session))) {
                gone = true;
                return std::string();
            }
            last_seq = seq;
        }
        return string_of(summary, "status");
    }

    bool finish(httplib::DataSink& sink, const std::string& status) {
        write(sink, SseEvent{"done", json{{"trace", session}, {"termination_reason", status}, {"status", status}}});
        sink.done();
        return true;
    }

    bool run(httplib::DataSink& sink) {
        bool gone = false;
        auto status = catch_up(sink, gone);
        if (gone) return false;
        if (!status) {
            write(sink, SseEvent{"error", json{{"trace", nullptr}, {"type", std::string(base::to_string(status.error().type))},
                                               {"message", status.error().message}}});
            return finish(sink, "error");
        }
        auto last_poll = Clock::now();
        auto last_write = Clock::now();
        while (*status == "running") {
            auto event = subscriber.next(state.config.client_check);
            if (event && event->session == session && static_cast<long long>(event->seq) > last_seq) {
                if (!write(sink, step_event(event->body, session))) return false;
                last_seq = static_cast<long long>(event->seq);
                last_write = Clock::now();
                if (event->state != "open") *status = event->state;
                continue;
            }
            if (!sink.is_writable()) return false;
            if (Clock::now() - last_write >= state.config.keep_alive) {
                static constexpr std::string_view kKeepAlive = ": keep-alive\n\n";
                if (!sink.write(kKeepAlive.data(), kKeepAlive.size())) return false;
                last_write = Clock::now();
            }
            if (Clock::now() - last_poll >= kStorePoll) {
                last_poll = Clock::now();
                status = catch_up(sink, gone);
                if (gone) return false;
                if (!status) return finish(sink, "error");
            }
        }
        // Whatever the store holds that the topic did not bring.
        (void)catch_up(sink, gone);
        if (gone) return false;
        return finish(sink, *status);
    }
};

}  // namespace

void add_trace_tail_route(Gateway::State& state) {
    state.server.Get(R"(/api/v1/traces/([^/]{1,1024})/events)", [&state](const httplib::Request& req, httplib::Response& res) {
        auto slot = take_stream_slot(state);
        if (!slot) {
            res.set_header("Retry-After", "1");
            return send_problem(res, Problem{503, "TooManyStreams",
                                             "the gateway has " + std::to_string(state.config.max_streams) + " streams open"});
        }
        // The topic's endpoint, as the broker reports it.
        auto status = state.bus.call(schema::protocol::kMmiStatus, json::object(), state.config.call_timeout);
        if (!status) return send_error(res, status.error());
        const std::string pub = string_of(status->value("broker", json::object()), "pub_endpoint");
        if (pub.empty()) return send_error(res, make_error(ErrorType::kServiceUnavailable, "the broker names no explain topic"));
        // Known before the stream starts: an unknown id is a 404, not a stream.
        auto shown = state.bus.call(schema::services::kTrace, json{{"op", "show"}, {"session", std::string(req.matches[1])}},
                                    state.config.call_timeout);
        if (!shown) return send_error(res, shown.error());
        auto tail = std::make_shared<TraceTail>(state, std::move(*slot), string_of(shown->value("session", json::object()), "session"), pub);
        res.set_header("Cache-Control", "no-store");
        res.set_chunked_content_provider("text/event-stream",
                                         [tail](std::size_t, httplib::DataSink& sink) { return tail->run(sink); });
    });
}

}  // namespace glassbox::gateway
