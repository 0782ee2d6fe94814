// GET /api/v1/traces/{id}/events: a trace's steps as SSE — those stored so far, then each new
// one live from the broker's explain topic, then `done` once the trace ends. Its sub-runs' steps
// (an engine a query routed to, an agent's tool calls) come with it, as they do in a question's
// own stream.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "bus/explain_subscriber.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/query_events.hpp"
#include "schema/explain_uris.hpp"
#include "schema/protocol.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// How often the stored trace is read again while tailing: the topic drops messages under load
// and never replays them, so the end of a trace is also learnt from the store.
constexpr std::chrono::milliseconds kStorePoll{1'000};
// How soon the store is read after a live message shows a gap in a run's seqs.
constexpr std::chrono::milliseconds kGapPoll{100};
constexpr std::string_view kEventStreamOnly[] = {kEventStreamMediaType};

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
    // The last seq sent of the trace and of each sub-run met so far (a sub-run is known from the
    // store's subtraces, or live from a parent_uri naming a step of a run already known).
    std::map<std::string, long long> last_seq;
    std::uint64_t next_id = 1;

    bool known(const std::string& run) const { return last_seq.contains(run); }

    // A live message of the trace or of one of its sub-runs (a new sub-run becomes known).
    bool follows(const bus::ExplainEvent& event) {
        if (known(event.session)) return true;
        const std::string parent = string_of(event.body, "parent_uri");
        const auto parent_run = schema::explain::RunUris::from_uri(parent);
        if (!parent_run || !known(parent_run->question())) return false;
        last_seq.emplace(event.session, -1);
        return true;
    }

    bool write(httplib::DataSink& sink, const SseEvent& event) {
        const std::string text = format_sse(next_id++, event);
        return sink.write(text.data(), text.size());
    }

    // The stored events of `trace` (a `show` reply) and of its subtraces after the last seq sent
    // of each; false when the client is gone.
    bool send_stored(httplib::DataSink& sink, const json& trace, int depth) {
        const json summary = trace.value("session", json::object());
        const std::string run = string_of(summary, "session");
        if (run.empty()) return true;
        auto& last = last_seq.try_emplace(run, -1).first->second;
        // A sub-run hangs under the step its Question prov:used (docs/vocabulary.md §2).
        std::string parent;
        const json events = trace.value("events", json::array());
        for (const auto& e : events) {
            if (depth == 0 || !parent.empty()) break;
            parent = explain_value(json{{"explain_triples", e.value("triples", json::array())}},
                                   run, schema::vocab::kProvUsed)
                         .value_or("");
        }
        for (const auto& e : events) {
            const long long seq = e.value("seq", -1LL);
            if (seq <= last) continue;
            json explain{{"message_type", "explain"},
                         {"session", run},
                         {"seq", seq},
                         {"service", string_of(summary, "service")},
                         {"explain_id", string_of(e, "explain_id")},
                         {"explain_triples", e.value("triples", json::array())},
                         {"state", string_of(e, "state")}};
            if (!parent.empty()) explain["parent_uri"] = parent;
            if (!write(sink, step_event(explain, session))) return false;
            last = seq;
        }
        // Sub-runs of sub-runs (an agent's tool call routed to graph RAG) are bounded by the
        // store's own nesting; the depth only guards against a malformed reply.
        if (depth < 8) {
            for (const auto& sub : trace.value("subtraces", json::array())) {
                if (!send_stored(sink, sub, depth + 1)) return false;
            }
        }
        return true;
    }

    // The stored events not sent yet, as step events; the trace's status.
    base::Result<std::string> catch_up(httplib::DataSink& sink, bool& gone) {
        auto shown = state.bus.call(schema::services::kTrace, json{{"op", "show"}, {"session", id}},
                                    state.config.call_timeout);
        if (!shown) return shown.error();
        const json summary = shown->value("session", json::object());
        session = string_of(summary, "session");
        if (!send_stored(sink, *shown, 0)) {
            gone = true;
            return std::string();
        }
        return string_of(summary, "status");
    }

    bool finish(httplib::DataSink& sink, const std::string& status) {
        write(sink, SseEvent{"done", json{{"trace", session},
                                          {"termination_reason", status},
                                          {"status", status}}});
        sink.done();
        return true;
    }

    bool run(httplib::DataSink& sink) {
        bool gone = false;
        auto status = catch_up(sink, gone);
        if (gone) return false;
        if (!status) {
            write(sink, SseEvent{"error",
                                 json{{"trace", nullptr},
                                      {"type", std::string(base::to_string(status.error().type))},
                                      {"message",
                                       ServerPaths::instance().redact(status.error().message)}}});
            return finish(sink, "error");
        }
        auto last_poll = Clock::now();
        auto last_write = Clock::now();
        while (*status == "running") {
            auto event = subscriber.next(state.config.client_check);
            if (event && follows(*event)) {
                auto& last = last_seq[event->session];
                const auto seq = static_cast<long long>(event->seq);
                if (seq == last + 1) {
                    if (!write(sink, step_event(event->body, session))) return false;
                    last = seq;
                    last_write = Clock::now();
                    if (event->session == session && event->state != "open") *status = event->state;
                    continue;
                }
                // A step the topic did not bring (dropped, or published before the subscription
                // took): sending this one would skip it for good. The store has them in order,
                // this one included: read it soon.
                if (seq > last + 1)
                    last_poll = std::min(last_poll, Clock::now() - kStorePoll + kGapPoll);
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
    state.server.Get(R"(/api/v1/traces/([^/]{1,1024})/events)", [&state](
                                                                    const httplib::Request& req,
                                                                    httplib::Response& res) {
        if (!admit(req, res, RouteShape{{}, kEventStreamOnly})) return;
        auto slot = take_stream_slot(state);
        if (!slot) {
            res.set_header("Retry-After", "1");
            return send_problem(
                res, Problem{503, "TooManyStreams",
                             "the gateway has " + std::to_string(state.config.max_streams) +
                                 " streams open"});
        }
        // The topic's endpoint, as the broker reports it.
        auto status =
            state.bus.call(schema::protocol::kMmiStatus, json::object(), state.config.call_timeout);
        if (!status) return send_error(res, status.error());
        const std::string pub = string_of(status->value("broker", json::object()), "pub_endpoint");
        if (pub.empty())
            return send_error(res, base::make_error(base::ErrorType::kServiceUnavailable,
                                                    "the broker names no explain topic"));
        // Known before the stream starts: an unknown id is a 404, not a stream.
        auto shown = state.bus.call(schema::services::kTrace,
                                    json{{"op", "show"}, {"session", std::string(req.matches[1])}},
                                    state.config.call_timeout);
        if (!shown) return send_error(res, shown.error());
        auto tail = std::make_shared<TraceTail>(
            state, std::move(*slot), string_of(shown->value("session", json::object()), "session"),
            pub);
        res.set_header("Cache-Control", "no-store");
        res.set_chunked_content_provider(
            "text/event-stream",
            [tail](std::size_t, httplib::DataSink& sink) { return tail->run(sink); });
    });
}

}  // namespace glassbox::gateway
