// Echo: validate, open the trace, stream the question back, close the trace, reply.
#include "workers/echo/echo_service.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "schema/explain_builder.hpp"
#include "schema/explain_uris.hpp"

namespace glassbox::echo {
namespace {

using base::Error;
using base::ErrorType;
using base::make_error;
using std::chrono::milliseconds;

constexpr std::uint64_t kMaxPartials = 1000;
constexpr std::uint64_t kMaxDelayMs = 600'000;
constexpr milliseconds kSleepStep{10};

struct EchoOptions {
    std::string question;
    std::uint64_t partials = 1;
    milliseconds delay{0};
    std::optional<Error> fail;
    std::optional<std::string> parent_uri;
};

std::optional<std::uint64_t> bounded_unsigned(const nlohmann::json& value, std::uint64_t max) {
    if (!value.is_number_integer()) return std::nullopt;
    if (value.is_number_unsigned()) {
        const auto v = value.get<std::uint64_t>();
        return v <= max ? std::optional{v} : std::nullopt;
    }
    const auto v = value.get<std::int64_t>();
    if (v < 0 || static_cast<std::uint64_t>(v) > max) return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

base::Result<EchoOptions> parse_options(const nlohmann::json& body) {
    const auto invalid = [](std::string message) {
        return make_error(ErrorType::kInvalidRequest, std::move(message));
    };
    if (!body.is_object()) return invalid("echo expects a JSON object");
    const auto question = body.find("question");
    if (question == body.end() || !question->is_string())
        return invalid("\"question\" must be a string");
    EchoOptions options;
    options.question = question->get<std::string>();
    if (const auto it = body.find("partials"); it != body.end()) {
        const auto n = bounded_unsigned(*it, kMaxPartials);
        if (!n) return invalid("\"partials\" must be an integer from 0 to 1000");
        options.partials = *n;
    }
    if (const auto it = body.find("delay_ms"); it != body.end()) {
        const auto n = bounded_unsigned(*it, kMaxDelayMs);
        if (!n) return invalid("\"delay_ms\" must be an integer from 0 to 600000");
        options.delay = milliseconds{static_cast<std::int64_t>(*n)};
    }
    if (const auto it = body.find("fail"); it != body.end()) {
        const auto type =
            it->is_string() ? base::error_type_from_string(it->get<std::string>()) : std::nullopt;
        if (!type) return invalid("\"fail\" must name an error type, e.g. \"Internal\"");
        options.fail = make_error(*type, "echo was asked to fail with " + it->get<std::string>());
    }
    if (const auto it = body.find("parent_uri"); it != body.end()) {
        if (!it->is_string()) return invalid("\"parent_uri\" must be a string");
        options.parent_uri = it->get<std::string>();
        // It enters the trace as an IRI (prov:used): one N-Triples rejects is refused here.
        if (!options.parent_uri->empty()) {
            if (auto why = schema::explain::iri_problem(*options.parent_uri))
                return invalid("\"parent_uri\" is not a valid IRI: " + *why);
        }
    }
    return options;
}

// Sleeps `delay` in small steps; false as soon as the request is cancelled.
bool sleep_unless_cancelled(runtime::RequestContext& context, milliseconds delay) {
    const auto until = std::chrono::steady_clock::now() + delay;
    while (std::chrono::steady_clock::now() < until) {
        if (context.cancelled()) return false;
        const auto left =
            std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now());
        std::this_thread::sleep_for(std::clamp(left, milliseconds{0}, kSleepStep));
    }
    return !context.cancelled();
}

}  // namespace

void handle_echo(runtime::RequestContext& context) {
    auto parsed = parse_options(context.body());
    if (!parsed) {
        (void)context.fail(parsed.error());
        return;
    }
    const EchoOptions& options = *parsed;
    namespace explain = schema::explain;
    using Clock = std::chrono::system_clock;

    const auto& run = context.run();
    const std::string session = run.question();
    const auto started = Clock::now();
    const auto started_steady = std::chrono::steady_clock::now();
    const std::string agent = explain::worker_agent_uri(context.meta().service);

    runtime::ExplainStep question_step;
    question_step.session = session;
    question_step.explain_id = session;
    question_step.parent_uri = options.parent_uri;
    question_step.triples = explain::echo_question(
        run, options.question, started, agent,
        options.parent_uri ? std::optional<std::string_view>{*options.parent_uri} : std::nullopt);
    if (auto sent = context.send_explain(question_step); !sent) {
        (void)context.fail(sent.error());
        return;
    }

    for (std::uint64_t i = 0; i < options.partials; ++i) {
        if (!sleep_unless_cancelled(context, options.delay)) {
            // The broker closes the open trace itself after a cancel (§5.3).
            (void)context.fail(context.cancellation_error());
            return;
        }
        if (auto sent = context.send_partial({{"text", options.question}, {"index", i}}); !sent)
            return;
    }

    const auto ended = Clock::now();
    runtime::ExplainStep last;
    last.session = session;
    if (options.fail) {
        last.explain_id = session;
        last.state = runtime::ExplainState::kError;
        last.error = options.fail;
        last.triples = explain::trace_end(run, ended, schema::TraceStatus::kError);
        (void)context.send_explain(last);
        (void)context.fail(*options.fail);
        return;
    }
    const auto duration =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started_steady);
    last.explain_id = run.synthesis();
    last.state = runtime::ExplainState::kComplete;
    last.triples = explain::echo_synthesis(run, options.question, ended, duration);
    const auto end = explain::trace_end(run, ended, schema::TraceStatus::kComplete);
    last.triples.insert(last.triples.end(), end.begin(), end.end());
    if (auto sent = context.send_explain(last); !sent) {
        (void)context.fail(sent.error());
        return;
    }
    (void)context.reply({{"echo", context.body()}, {"session", session}});
}

runtime::Handler make_echo_handler() {
    return [](runtime::RequestContext& context) { handle_echo(context); };
}

}  // namespace glassbox::echo
