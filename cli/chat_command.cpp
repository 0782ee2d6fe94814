// `glassbox chat`: a conversation in the terminal. Each question goes to one engine (agent,
// query, graph-rag or document-rag) with the chat's session id, so the runs are the turns of one
// conversation (docs/traces.md §4) and the agent sees the earlier ones. On a terminal: a line
// editor with history, the steps streamed as they happen, and /trace, /sources, /new, /quit.
// Over a pipe: one question a line, the answers printed, for scripts (docs/chat.md).
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/bus_client.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/line_editor.hpp"
#include "cli/render/answer_render.hpp"
#include "cli/render/render_text.hpp"
#include "cli/render/trace_render.hpp"
#include "cli/settings.hpp"
#include "cli/trace_labels.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/messages_trace.hpp"
#include "schema/protocol.hpp"
#include "schema/services.hpp"
#include "text/redactor.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
namespace services = schema::services;

// A turn may run several engines (the agent's tools, the query worker's escalations).
constexpr int kDefaultChatTimeoutMs = 180'000;
// How long /trace lets the trace service wait for the last run to be stored whole.
constexpr std::int64_t kTraceSettleMs = 3'000;
// The order `auto` tries the engines in: the first with a worker up answers. The query router
// first, as `glassbox invoke` asks it: the same question takes the same route in both (issue 31).
constexpr std::string_view kAutoOrder[] = {services::kQuery, services::kAgent, services::kGraphRag};

struct ChatOptions {
    ClientOptions client;
    std::string session;
    std::string target = "auto";
    std::string collection;
    bool explain = false;  // steps on a pipe too
    bool quiet = false;    // no steps on a terminal
};

std::string new_session_id() {
    return "chat-" + schema::explain::RunUris::generate().uuid().substr(0, 13);
}

// Whether the broker has a worker for `service` (7/MDP MMI mmi.service answers "200"); a broker
// that does not answer is the error.
base::Result<bool> service_up(const ClientOptions& options, std::string_view service) {
    bus::BusClient bus(options.bus_config());
    // mmi.service takes the bare name, not JSON.
    auto id = bus.send_raw(schema::protocol::kMmiService, service, std::chrono::seconds{5});
    if (!id) return id.error();
    for (;;) {
        auto reply = bus.next(*id, std::chrono::seconds{10});
        if (!reply) return reply.error();
        if (reply->kind == bus::ReplyKind::kError) return *reply->error;
        if (reply->kind == bus::ReplyKind::kFinal) return reply->text == "200";
    }
}

std::string resolve_target(const ChatOptions& options) {
    if (options.target != "auto") return options.target;
    for (const auto service : kAutoOrder) {
        auto up = service_up(options.client, service);
        if (!up) exit_with_error(up.error());
        if (*up) return std::string(service);
    }
    exit_with_error(
        make_error(ErrorType::kUnknownService,
                   "no agent, query or graph-rag worker is up (glassbox up starts them)"));
}

json request_for(std::string_view target, const std::string& question, const ChatOptions& options,
                 const std::string& session) {
    // Every engine's request has a collection, a session_id and streaming; the question's
    // field is named differently in each.
    const auto fill = [&](auto request, auto question_field) {
        request.*question_field = question;
        request.collection = options.collection;
        request.session_id = session;
        request.streaming = true;
        return schema::encode(request);
    };
    if (target == services::kAgent)
        return fill(schema::AgentRequest{}, &schema::AgentRequest::question);
    if (target == services::kQuery)
        return fill(schema::QueryRequest{}, &schema::QueryRequest::query);
    if (target == services::kGraphRag)
        return fill(schema::GraphRagQuery{}, &schema::GraphRagQuery::query);
    return fill(schema::DocumentRagQuery{}, &schema::DocumentRagQuery::query);
}

// What the last turn left for /trace and /sources.
struct LastTurn {
    std::string trace;  // the run's session URI
    std::vector<schema::RagCitation> citations;
    std::vector<std::string> sources;
};

// One turn's stream on the screen: step lines as they come (when `steps`), the answer text as
// it streams (a terminal) or once whole (a pipe), then the short answer and the trace.
class TurnPrinter {
public:
    TurnPrinter(bool steps, bool live, render::Labeler labeler) : steps_(steps), live_(live) {
        // Step lines name the entities they show by their labels in the store.
        if (steps_) summaries_.set_labeler(std::move(labeler));
    }

    void data(const json& body) {
        const std::string type = string_field(body, "message_type");
        if (type == "thought" || type == "observation") {
            const bool error = body.is_object() && body.value("error", false);
            step_line(type + ": " +
                      (type == "observation"
                           ? render::summarize_observation(string_field(body, "content"), error)
                           : string_field(body, "content")));
            return;
        }
        const std::string piece =
            type == "answer" ? string_field(body, "content") : string_field(body, "response");
        if (piece.empty()) return;
        streamed_ += piece;
        if (live_) {
            std::cout << render::safe_text(piece, true) << std::flush;
            wrote_answer_ = true;
        }
    }

    void explain(const json& body) {
        const std::string session = string_field(body, "session");
        // The first explain message is the run's own Question (sub-runs' come later).
        if (last_.trace.empty() && !session.empty()) last_.trace = session;
        if (steps_) step_line(summaries_.next(body));
    }

    void final(const json& body) {
        if (const std::string session = string_field(body, "session"); !session.empty())
            last_.trace = session;
        if (auto decoded = schema::decode<schema::RagResponse>(body)) {
            last_.citations = decoded->citations;
            last_.sources = decoded->sources;
        }
        std::string answer = string_field(body, "response");
        if (answer.empty()) answer = string_field(body, "content");
        if (answer.empty()) answer = streamed_;
        if (wrote_answer_) {
            std::cout << '\n';
        } else {
            const std::string marked = render::mark_citations(answer, last_.citations);
            std::cout << render::safe_text(marked.empty() ? "(no answer)" : marked, true) << '\n';
        }
        if (const std::string short_answer = string_field(body, "answer"); !short_answer.empty()) {
            std::cout << "Answer: " << render::safe_text(short_answer, false) << '\n';
        }
        if (!last_.trace.empty()) {
            std::cout << "trace: "
                      << render::safe_text(render::detail::session_label(last_.trace), false)
                      << '\n';
        }
        std::cout << std::endl;
    }

    void abort() {
        if (wrote_answer_) std::cout << '\n';
        std::cout << std::flush;
    }

    LastTurn take() { return std::move(last_); }

private:
    void step_line(const std::string& text) {
        if (!steps_ || text.empty()) return;
        if (wrote_answer_) {
            std::cout << '\n';
            wrote_answer_ = false;
        }
        std::cout << "  · " << render::safe_text(text, false) << std::endl;
    }

    bool steps_;
    bool live_;
    bool wrote_answer_ = false;
    std::string streamed_;
    render::StepSummaries summaries_;
    LastTurn last_;
};

class Chat {
public:
    Chat(const ChatOptions& options, std::string target, bool terminal)
        : options_(options),
          target_(std::move(target)),
          terminal_(terminal),
          session_(options.session.empty() ? new_session_id() : options.session) {}

    const std::string& session() const noexcept { return session_; }
    const std::string& target() const noexcept { return target_; }
    int errors() const noexcept { return errors_; }

    // One question: its answer printed, or its error on stderr (the chat goes on).
    void ask(const std::string& question) {
        const std::string body = request_for(target_, question, options_, session_)
                                     .dump(-1, ' ', false, json::error_handler_t::replace);
        bus::BusClientConfig config = options_.client.bus_config();
        bus::BusClient bus(config);
        TurnPrinter printer(terminal_ ? !options_.quiet : options_.explain, terminal_,
                            store_labeler(options_.client, options_.collection));
        auto stream = bus::open_stream(bus, target_, body, options_.client.timeout());
        if (!stream) return report(stream.error());
        const auto wait =
            options_.client.timeout() + config.deadline_grace + std::chrono::seconds{1};
        auto last = feed_replies(*stream, wait, printer);
        if (!last) return report(last.error());
        const auto error =
            last->kind == bus::ReplyKind::kError ? last->error : final_error(last->body);
        if (error) {
            printer.abort();
        } else {
            printer.final(last->body);
        }
        last_ = printer.take();
        if (error) report(*error);
    }

    // A FINAL body's own error ({"error": {"message"}}), reported as an internal one.
    static std::optional<base::Error> final_error(const json& body) {
        if (!body.is_object() || !body.contains("error") || !body["error"].is_object())
            return std::nullopt;
        return make_error(ErrorType::kInternal, string_field(body["error"], "message"));
    }

    // A /command; false for /quit.
    bool command(const std::string& line) {
        const std::string name = line.substr(0, line.find(' '));
        if (name == "/quit" || name == "/exit") return false;
        if (name == "/new") {
            session_ = new_session_id();
            last_ = {};
            std::cout << "session " << session_ << std::endl;
        } else if (name == "/trace") {
            show_trace();
        } else if (name == "/sources") {
            show_sources();
        } else if (name == "/session") {
            std::cout << "session " << session_ << " (" << target_ << ")" << std::endl;
        } else {
            std::cout << "commands: /trace (the last answer's trace), /sources (its sources), "
                         "/new (a new conversation), /session, /quit"
                      << std::endl;
        }
        return true;
    }

private:
    void report(const base::Error& error) {
        std::cerr << "error: " << render::safe_text(error.describe(), false) << std::endl;
        ++errors_;
    }

    void show_trace() {
        if (last_.trace.empty()) {
            std::cout << "(no answer yet)" << std::endl;
            return;
        }
        bus::BusClient bus(options_.client.bus_config());
        // The answer can come before the run's last events reach the store: the trace service
        // waits (settle_ms) until the conversation's runs have ended, so the tree is whole.
        (void)bus.call(services::kTrace,
                       json{{"op", "turns"},
                            {"session_id", session_},
                            {"limit", 1},
                            {"settle_ms", kTraceSettleMs}},
                       options_.client.timeout());
        auto replies = bus.call(services::kTrace, json{{"op", "show"}, {"session", last_.trace}},
                                options_.client.timeout());
        if (!replies) return report(replies.error());
        auto trace = schema::decode<schema::TraceDetail>(replies->back().body);
        if (!trace) return report(trace.error());
        render::TreeOptions tree;
        tree.labels = fetch_trace_labels(options_.client, *trace);
        std::cout << render::render_tree(*trace, tree) << std::flush;
    }

    void show_sources() {
        if (!last_.citations.empty()) {
            std::cout << render::render_sources(last_.citations) << std::flush;
        } else if (!last_.sources.empty()) {
            for (const auto& source : last_.sources)
                std::cout << "  - " << render::safe_text(source, false) << '\n';
            std::cout << std::flush;
        } else {
            std::cout << "(no sources)" << std::endl;
        }
    }

    const ChatOptions& options_;
    std::string target_;
    bool terminal_;
    std::string session_;
    LastTurn last_;
    int errors_ = 0;
};

void run_chat(const ChatOptions& options) {
    const bool terminal = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
    Chat chat(options, resolve_target(options), terminal);
    std::cout << "session " << chat.session() << " (" << chat.target() << ")" << std::endl;
    if (!terminal) {
        // Scripts: one question a line; blank lines skipped; /commands as on a terminal.
        for (std::string line; std::getline(std::cin, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.find_first_not_of(" \t") == std::string::npos) continue;
            if (line.front() == '/') {
                if (!chat.command(line)) return;
                continue;
            }
            chat.ask(line);
        }
        // A script learns that a turn failed (each error was printed on stderr as it came).
        if (chat.errors() > 0) throw CLI::RuntimeError(1);
        return;
    }
    std::cout << "Ask a question; /trace, /sources, /new, /quit (Ctrl-D)." << std::endl;
    LineEditor editor(options.client.home_path() / "chat_history");
    // The history file under the home keeps no text a redaction rule masks (docs/security.md,
    // "Redaction"): a line is kept redacted as a question is.
    const auto redactor = text::Redactor::from_settings(settings().text("redaction.rules"),
                                                        settings().text("redaction.patterns"));
    while (auto line = editor.read_line("> ")) {
        if (line->find_first_not_of(" \t") == std::string::npos) continue;
        text::RedactionTally masked;
        const auto redacted = redactor
                                  ? redactor->redact(*line, text::RedactionScope::kQuestion, masked)
                                  : std::nullopt;
        editor.add_history(redacted ? *redacted : *line);
        if (line->front() == '/') {
            if (!chat.command(*line)) return;
            continue;
        }
        chat.ask(*line);
    }
}

}  // namespace

void add_chat_command(CLI::App& app) {
    auto options = std::make_shared<ChatOptions>();
    auto* cmd = app.add_subcommand(
        "chat",
        "A conversation: each question a turn of one session (the agent sees the earlier turns). "
        "On a terminal, line editing, history, live steps and /trace /sources /new /quit; over a "
        "pipe, one question a line");
    cmd->add_option("--session", options->session,
                    "Continue this conversation (default: a new id, printed first)");
    cmd->add_option(
           "--target", options->target,
           "Engine: query, agent, graph-rag, document-rag, or auto (the query router if up, "
           "as glassbox invoke, else agent, else graph-rag)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "agent", "query", "graph-rag", "document-rag"}));
    add_setting_option(*cmd, "client.collection", "--collection");
    cmd->add_flag("-x,--explain", options->explain,
                  "Over a pipe too, print each step as it arrives");
    cmd->add_flag("--quiet", options->quiet, "On a terminal, no step lines: the answers only");
    add_client_options(*cmd, options->client, kDefaultChatTimeoutMs);
    cmd->callback([options] {
        if (options->session.size() > schema::kMaxSessionIdBytes) {
            exit_with_error(make_error(
                ErrorType::kInvalidRequest,
                "--session: at most " + std::to_string(schema::kMaxSessionIdBytes) + " bytes"));
        }
        options->collection = settings().text("client.collection");
        run_chat(*options);
    });
}

}  // namespace glassbox::cli
