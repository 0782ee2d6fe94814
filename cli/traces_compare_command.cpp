// `glassbox traces diff A B` and `glassbox traces replay ID` (docs/traces.md, "Replay and
// compare"): two stored runs compared by the `trace` service's `compare` op; a stored run's
// question asked again of the same engine, the new run linked to it (prov:wasRevisionOf), then
// compared with it.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "bus/bus_client.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/question_request.hpp"
#include "cli/render/comparison_render.hpp"
#include "cli/render/trace_render.hpp"
#include "cli/settings.hpp"
#include "cli/trace_labels.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
namespace vocab = schema::vocab;

// A replay asks a question again, as `invoke` does: a slow model gets two minutes.
constexpr int kDefaultReplayTimeoutMs = 120'000;

// The comparison as text, its facts' entities named by the store's labels (best effort) in the
// collection run b asked.
void print_comparison(const ClientOptions& client, const schema::TraceComparison& comparison) {
    render::Labels labels;
    if (const auto iris = render::comparison_iris(comparison); !iris.empty()) {
        std::string collection = comparison.b.collection.value_or("");
        if (collection.empty()) collection = settings().text("client.collection");
        labels = ask_store_labels(client, collection, iris);
    }
    std::cout << render::render_comparison(comparison, labels) << std::flush;
}

// ---- diff ---------------------------------------------------------------------------------

struct DiffOptions {
    ClientOptions client;
    std::string a;
    std::string b;
};

void run_diff(const DiffOptions& options) {
    const json reply = call_for_object(options.client, schema::services::kTrace,
                                       json{{"op", "compare"}, {"a", options.a}, {"b", options.b}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    print_comparison(options.client, decoded_or_exit<schema::TraceComparison>(reply));
}

// ---- replay -------------------------------------------------------------------------------

struct ReplayOptions {
    ClientOptions client;
    std::string id;
};

// What a replay asks again: the stored run's question, engine, collection and, for a routed
// run the caller sent to one engine (routing method "explicit"), that engine as its mode.
struct StoredQuestion {
    std::string session;
    std::string service;
    std::string question;
    std::string collection;
    std::string mode = "auto";
};

// The first literal of `subject` `predicate` among the trace's own triples; "" when none.
std::string own_literal(const schema::TraceDetail& trace, std::string_view subject,
                        std::string_view predicate) {
    for (const auto& event : trace.events) {
        for (const auto& t : event.triples) {
            if (t.s.is_iri() && t.s.as_iri().value == subject && t.p.is_iri() &&
                t.p.as_iri().value == predicate && t.o.is_literal())
                return t.o.as_literal().value;
        }
    }
    return {};
}

// The routing decision's engine when the caller named it (mode), else "auto".
std::string routed_mode(const schema::TraceDetail& trace) {
    const std::string routing =
        trace.session.session.ends_with(":question")
            ? trace.session.session.substr(0, trace.session.session.size() - 9) + ":routing"
            : std::string();
    if (routing.empty() || own_literal(trace, routing, vocab::kRoutingMethod) != "explicit")
        return "auto";
    const auto engine = own_literal(trace, routing, vocab::kEngine);
    return engine.empty() ? "auto" : engine;
}

[[noreturn]] void refuse(const std::string& message) {
    exit_with_error(make_error(ErrorType::kInvalidRequest, message));
}

StoredQuestion stored_question(const ReplayOptions& options) {
    const json reply = call_for_object(options.client, schema::services::kTrace,
                                       json{{"op", "show"}, {"session", options.id}});
    const auto trace = decoded_or_exit<schema::TraceDetail>(reply);
    const auto& s = trace.session;
    const std::string named = render::safe_text(s.session, false);
    if (s.parent) {
        refuse(named + " is a sub-run of " + render::safe_text(*s.parent, false) +
               ": replay the run it belongs to (glassbox traces replay " +
               render::safe_text(*s.parent, false) + ")");
    }
    const std::string kind = s.kind.value_or(s.service.value_or(""));
    if (kind == "store") {
        refuse(named +
               " is a change to the knowledge (kind store), not a question: there is nothing to "
               "ask again; replay the answers it affected (glassbox traces list --affected)");
    }
    namespace services = schema::services;
    if (kind != services::kQuery && kind != services::kGraphRag && kind != services::kDocumentRag &&
        kind != services::kAgent) {
        refuse(named + " is a run of kind \"" + render::safe_text(kind, false) +
               "\": only query, graph-rag, document-rag and agent runs can be replayed");
    }
    StoredQuestion out;
    out.session = s.session;
    out.service = kind;
    out.question = own_literal(trace, s.session, vocab::kQuery);
    if (out.question.empty()) out.question = s.question.value_or("");
    if (out.question.empty()) refuse(named + " records no question to ask again");
    out.collection = s.collection.value_or("");
    if (kind == services::kQuery) out.mode = routed_mode(trace);
    return out;
}

// Asks `original`'s question again of its engine, as a revision of it; the FINAL body.
json ask_again(const ClientOptions& client, const StoredQuestion& original) {
    QuestionRequest request;
    request.service = original.service;
    request.question = original.question;
    request.collection = original.collection;
    request.streaming = false;
    request.revision_of = original.session;
    TargetParameters targets;
    targets.mode = original.mode;
    const std::string body =
        question_body(request, targets).dump(-1, ' ', false, json::error_handler_t::replace);
    bus::BusClientConfig config = client.bus_config();
    config.request_options.explain = bus::ExplainDelivery::kNone;
    bus::BusClient bus(config);
    auto stream = bus::open_stream(bus, original.service, body, client.timeout());
    if (!stream) exit_with_error(stream.error());
    // The client's backstop (deadline + grace) ends the stream, so this wait always terminates.
    const auto wait = client.timeout() + config.deadline_grace + std::chrono::seconds{1};
    for (;;) {
        auto reply = stream->next(wait);
        if (!reply) exit_with_error(reply.error());
        if (!reply->terminal()) continue;
        if (reply->kind == bus::ReplyKind::kError) exit_with_error(*reply->error);
        if (auto error = body_error(reply->body)) exit_with_error(*error);
        return reply->body;
    }
}

// The comparison of `original` with the new run once the store holds the new run whole: the
// trace service waits (settle_ms) for it to end, asked again until the command's deadline.
json compare_when_stored(const ClientOptions& client, const std::string& original,
                         const std::string& replay) {
    const auto deadline = std::chrono::steady_clock::now() + client.timeout();
    const auto settle = schema::turns_settle_ms(client.timeout());
    for (;;) {
        json reply = call_for_object(
            client, schema::services::kTrace,
            json{{"op", "compare"}, {"a", original}, {"b", replay}, {"settle_ms", settle}});
        const bool running = reply.is_object() && reply.contains("b") && reply["b"].is_object() &&
                             reply["b"].value("status", "") == "running";
        if (!running) return reply;
        if (std::chrono::steady_clock::now() >= deadline) {
            std::string why = "the replayed run " + replay;
            why +=
                " was not stored whole within --timeout-ms: compare it later with glassbox "
                "traces diff ";
            why.append(original).append(" ").append(replay);
            exit_with_error(make_error(ErrorType::kTimeout, why));
        }
    }
}

void run_replay(const ReplayOptions& options) {
    if (options.id.empty()) refuse("the trace id is empty");
    const auto original = stored_question(options);
    const json final = ask_again(options.client, original);
    const std::string replay = string_field(final, "session");
    if (replay.empty()) {
        exit_with_error(make_error(ErrorType::kDecodeError,
                                   "the " + original.service + " answer names no trace session"));
    }
    const json comparison = compare_when_stored(options.client, original.session, replay);
    if (options.client.json) {
        std::cout << dump_json(json{{"original", original.session},
                                    {"replay", replay},
                                    {"answer", final},
                                    {"comparison", comparison}})
                  << std::endl;
        return;
    }
    std::cout << "Replayed " << render::safe_text(original.session, false) << " ("
              << render::safe_text(original.service, false) << ") as "
              << render::safe_text(replay, false) << "\n\n";
    print_comparison(options.client, decoded_or_exit<schema::TraceComparison>(comparison));
    std::cout << "\ntrace: " << render::safe_text(replay, false) << "\n  glassbox traces show "
              << render::safe_text(replay, false) << '\n'
              << std::flush;
}

}  // namespace

void add_traces_compare(CLI::App& traces) {
    auto [diff_cmd, diff] = add_command<DiffOptions>(
        traces, "diff",
        "Compare two runs: answer changed or not (both answers), confidence a -> b, sources and "
        "facts added (+) and removed (-), models",
        run_diff);
    diff_cmd->add_option("a", diff->a, "The first run: session URI or a unique prefix of its UUID")
        ->required();
    diff_cmd->add_option("b", diff->b, "The second run")->required();
    add_client_options(*diff_cmd, diff->client);

    auto [replay_cmd, replay] = add_command<ReplayOptions>(
        traces, "replay",
        "Ask a stored run's question again (same engine, collection and routing mode), record the "
        "new run as a revision of it (prov:wasRevisionOf) and compare the two as diff does",
        run_replay);
    replay_cmd
        ->add_option("id", replay->id, "The run to replay: session URI or a unique UUID prefix")
        ->required();
    add_client_options(*replay_cmd, replay->client, kDefaultReplayTimeoutMs);
}

}  // namespace glassbox::cli
