// POST /api/v1/query: one question through the `query` router, answered as JSON or as SSE.
#include <chrono>
#include <memory>
#include <optional>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/query_answer.hpp"
#include "gateway/query_events.hpp"
#include "schema/collection_name.hpp"
#include "schema/messages.hpp"
#include "schema/otel_ids.hpp"
#include "schema/services.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxQueryBytes =
    std::size_t{16} * 1024;  // the query worker's own bound (docs/query.md §1)
constexpr std::size_t kMaxFieldBytes = 256;
// `question` as the CLI names it; `query`, its older name, as an alias (query_answer.hpp).
constexpr std::string_view kQueryFields[] = {"question",   "query",   "mode",          "collection",
                                             "session_id", "options", "min_confidence"};
// JSON first: a client that names neither (or accepts anything) gets the answer whole.
constexpr std::string_view kQueryMediaTypes[] = {kJsonMediaType, kEventStreamMediaType};

struct QueryInput {
    schema::QueryRequest request;
    json summary;  // what run.started repeats
    Clock::time_point received = Clock::now();
};

base::Result<std::string> optional_string(const json& body, const char* key,
                                          std::size_t max_bytes) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return std::string();
    if (!it->is_string())
        return make_error(ErrorType::kInvalidRequest, std::string(key) + " must be a string");
    const auto& value = it->get_ref<const std::string&>();
    if (value.size() > max_bytes)
        return make_error(ErrorType::kInvalidRequest, std::string(key) + " is longer than " +
                                                          std::to_string(max_bytes) + " bytes");
    for (const unsigned char c : value)
        if (c < 0x20)
            return make_error(ErrorType::kInvalidRequest,
                              std::string(key) + " holds a control character");
    return value;
}

// `mode` as given (absent or null: auto); an empty or unknown one is refused naming the modes.
base::Result<schema::QueryMode> query_mode(const json& body) {
    const auto given = body.find("mode");
    if (given == body.end() || given->is_null()) return schema::QueryMode::kAuto;
    auto name = optional_string(body, "mode", kMaxFieldBytes);
    if (!name) return name.error();
    if (const auto mode = schema::query_mode_from_string(*name)) return *mode;
    using schema::QueryMode;
    std::string modes;
    for (const auto mode :
         {QueryMode::kAuto, QueryMode::kGraphRag, QueryMode::kDocumentRag, QueryMode::kAgent})
        modes += (modes.empty() ? "" : ", ") + std::string(schema::to_string(mode));
    return make_error(ErrorType::kInvalidRequest, "mode must be one of " + modes + ", not \"" +
                                                      base::printable_utf8(*name) + "\"");
}

// `min_confidence` as given (absent or null: the query worker's); a number from 0 to 1.
base::Result<std::optional<double>> min_confidence(const json& body) {
    const auto given = body.find("min_confidence");
    if (given == body.end() || given->is_null()) return std::optional<double>();
    if (!given->is_number() || !(given->get<double>() >= 0.0 && given->get<double>() <= 1.0))
        return make_error(ErrorType::kInvalidRequest,
                          "min_confidence must be a number from 0 to 1");
    return std::optional<double>(given->get<double>());
}

// The body checked and bounded: {question (or query), mode?, collection?, session_id?,
// min_confidence?, options?}.
base::Result<QueryInput> query_input(json body) {
    if (auto known = only_known_fields(body, kQueryFields); !known) return known.error();
    if (auto named = take_question_alias(body); !named) return named.error();
    const auto query = body.find(kQuestionField);
    if (query == body.end() || !query->is_string() ||
        is_blank(query->get_ref<const std::string&>()))
        return make_error(ErrorType::kInvalidRequest,
                          "question must be a string holding more than white space");
    if (query->get_ref<const std::string&>().size() > kMaxQueryBytes)
        return make_error(ErrorType::kInvalidRequest, "question is longer than 16384 bytes");
    auto mode = query_mode(body);
    if (!mode) return mode.error();
    auto collection = optional_string(body, "collection", kMaxFieldBytes);
    if (!collection) return collection.error();
    if (auto name = schema::validate_collection(*collection); !name) return name.error();
    auto session = optional_string(body, "session_id", kMaxFieldBytes);
    if (!session) return session.error();
    auto floor = min_confidence(body);
    if (!floor) return floor.error();
    if (const auto options = body.find("options");
        options != body.end() && !options->is_null() && !options->is_object())
        return make_error(ErrorType::kInvalidRequest, "options must be an object");

    QueryInput input;
    input.request.query = query->get<std::string>();
    input.request.mode = *mode;
    input.request.collection = *collection;
    input.request.session_id = *session;
    input.request.min_confidence = *floor;
    input.summary = json{{"question", input.request.query},
                         {"mode", std::string(schema::to_string(*mode))},
                         {"collection", *collection}};
    return input;
}

// The step durations of a question's explain messages (its own, and its engines' forwarded).
void record_steps(Gateway::State& state, const bus::Reply& reply) {
    if (const json* explain = explain_of(reply)) state.metrics.steps_of(*explain);
}

// One query request from sending to its FINAL, each step told to `watch`; abandoned on the bus
// when `watch` cancels it, or when this thread leaves by an exception.
base::Result<bus::Reply> run_query(Gateway::State& state, bus::BusClient& client,
                                   const schema::QueryRequest& request, const QueryWatch& watch) {
    auto id =
        client.send(schema::services::kQuery, schema::encode(request), state.config.query_timeout);
    if (!id) return std::move(id).error();
    struct AbandonOnExit {
        bus::BusClient& client;
        const std::string& id;
        ~AbandonOnExit() {
            if (client.is_in_flight(id)) client.abandon(id);
        }
    } guard{client, *id};
    // Without a watch nothing polls: the client's backstop ends the request by its deadline.
    const auto wait = watch.cancelled ? state.config.client_check
                                      : std::chrono::milliseconds{std::chrono::hours{24}};
    for (;;) {
        if (watch.cancelled && watch.cancelled())
            return make_error(ErrorType::kCancelled, "the caller cancelled the question");
        auto reply = client.next(*id, wait);
        if (!reply) {
            if (reply.error().type == ErrorType::kTimeout) continue;
            return std::move(reply).error();
        }
        record_steps(state, *reply);
        if (reply->kind == bus::ReplyKind::kError)
            return reply->error.value_or(make_error(ErrorType::kInternal, "error"));
        if (reply->kind == bus::ReplyKind::kFinal) return std::move(reply).value();
        if (const json* explain = explain_of(*reply); explain != nullptr && watch.on_step)
            watch.on_step(*explain);
    }
}

// The router's FINAL as the answer (query_answer.hpp), with the request id when the caller has one.
base::Result<json> ask(Gateway::State& state, QueryInput input, const std::string& request_id,
                       const QueryWatch& watch = {}) {
    input.request.streaming = false;
    auto lease = state.bus.lease();
    const auto started = Clock::now();
    auto final = run_query(state, *lease, input.request, watch);
    state.metrics.bus_call(std::string(schema::services::kQuery), Clock::now() - started, !final);
    if (!final) return std::move(final).error();
    const json& body = final->body;
    if (auto error = body_error(body)) return *error;
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - input.received);
    json answer = query_answer(
        body, AnswerContext{input.request.query, input.request.collection, request_id, took});
    state.metrics.question(string_of(body, "engine"), took);
    // The run the gateway asks for is a top-level one: its OTel trace id is its own (docs/
    // operations.md, "Logs").
    const auto trace = string_of(answer, "trace_id");
    base::component_logger("gateway")->info(
        "event=question request_id={} trace={} otel_trace_id={} as=json", request_id, trace,
        schema::otel::trace_id_of(trace).value_or("-"));
    return answer;
}

// Accept: application/json: the answer (docs/http.md §3).
void answer_json(Gateway::State& state, QueryInput input, httplib::Response& res) {
    auto body = ask(state, std::move(input), request_id_of(res));
    if (!body) return send_error(res, body.error());
    send_json(res, 200, *body);
}

// The state of one SSE answer, alive as long as httplib may call its content provider.
struct QueryStream {
    QueryStream(Gateway::State& s, StreamSlot slot_, BusLease lease_, std::string request_id_,
                json summary, Clock::time_point received_)
        : state(s),
          slot(std::move(slot_)),
          lease(std::move(lease_)),
          request_id(request_id_),
          received(received_),
          events(std::move(request_id_), std::move(summary), received_) {}

    ~QueryStream() {
        // A stream httplib never ran (the client left before the headers went out) still ends
        // its run on the bus.
        if (!bus_request.empty() && lease->is_in_flight(bus_request)) lease->abandon(bus_request);
    }

    Gateway::State& state;
    StreamSlot slot;
    BusLease lease;
    std::string request_id;
    Clock::time_point received;
    QueryEvents events;
    std::string bus_request;
    std::uint64_t next_id = 1;

    bool write(httplib::DataSink& sink, const std::vector<SseEvent>& out) {
        std::string text;
        for (const auto& e : out) text += format_sse(next_id++, e);
        return text.empty() || sink.write(text.data(), text.size());
    }

    // The run, from its first reply to `done`; false when the HTTP client went away (the
    // request is then cancelled on the bus, so its trace ends with status error).
    bool run(httplib::DataSink& sink) {
        const auto& config = state.config;
        const auto give_up = Clock::now() + config.query_timeout + std::chrono::seconds{10};
        auto last_write = Clock::now();
        while (!events.finished()) {
            auto reply = lease->next(bus_request, config.client_check);
            if (!reply) {
                if (reply.error().type == ErrorType::kTimeout && Clock::now() < give_up) {
                    if (!sink.is_writable()) return client_gone();
                    if (Clock::now() - last_write >= config.keep_alive) {
                        static constexpr std::string_view kKeepAlive = ": keep-alive\n\n";
                        if (!sink.write(kKeepAlive.data(), kKeepAlive.size())) return client_gone();
                        last_write = Clock::now();
                    }
                    continue;
                }
                if (!write(sink, events.on_failure(reply.error()))) return client_gone();
                break;
            }
            record_steps(state, *reply);
            if (!write(sink, events.on_reply(*reply))) return client_gone();
            last_write = Clock::now();
        }
        sink.done();
        if (!events.answered_by().empty())
            state.metrics.question(events.answered_by(), Clock::now() - received);
        base::component_logger("gateway")->info(
            "event=question request_id={} trace={} otel_trace_id={} as=sse", request_id,
            events.trace(), schema::otel::trace_id_of(events.trace()).value_or("-"));
        return true;
    }

    bool client_gone() {
        base::component_logger("gateway")->info(
            "event=stream_client_gone request_id={} trace={} bus_request={}", request_id,
            events.trace(), bus_request);
        if (lease->is_in_flight(bus_request)) lease->abandon(bus_request);
        return false;
    }
};

void answer_stream(Gateway::State& state, QueryInput input, const httplib::Request&,
                   httplib::Response& res) {
    auto slot = take_stream_slot(state);
    if (!slot) {
        res.set_header("Retry-After", "1");
        send_problem(res, Problem{503, "TooManyStreams",
                                  "the gateway has " + std::to_string(state.config.max_streams) +
                                      " streams open"});
        return;
    }
    input.request.streaming = true;
    const std::string body =
        schema::encode(input.request).dump(-1, ' ', false, json::error_handler_t::replace);
    auto lease = state.bus.lease();
    auto sent = lease->send_raw(schema::services::kQuery, body, state.config.query_timeout);
    if (!sent) {
        send_error(res, sent.error());
        return;
    }
    auto stream =
        std::make_shared<QueryStream>(state, std::move(*slot), std::move(lease), request_id_of(res),
                                      std::move(input.summary), input.received);
    stream->bus_request = *sent;
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [stream](std::size_t, httplib::DataSink& sink) { return stream->run(sink); });
}

}  // namespace

base::Result<json> ask_query(Gateway::State& state, const json& body, const QueryWatch& watch) {
    auto input = query_input(body);
    if (!input) return std::move(input).error();
    return ask(state, std::move(*input), "", watch);
}

void add_query_routes(Gateway::State& state) {
    state.server.Post("/api/v1/query",
                      [&state](const httplib::Request& req, httplib::Response& res) {
                          const auto media_type = admit(req, res, RouteShape{{}, kQueryMediaTypes});
                          if (!media_type) return;
                          auto body = json_body(state, req);
                          if (!body) {
                              send_error(res, body.error());
                              return;
                          }
                          auto input = query_input(*body);
                          if (!input) {
                              send_error(res, input.error());
                              return;
                          }
                          // The question's trace carries the request id (gb:requestId), so a log
                          // line finds its trace.
                          input->request.request_id = request_id_of(res);
                          if (kQueryMediaTypes[*media_type] == kEventStreamMediaType) {
                              answer_stream(state, std::move(*input), req, res);
                          } else {
                              answer_json(state, std::move(*input), res);
                          }
                      });
}

}  // namespace glassbox::gateway
