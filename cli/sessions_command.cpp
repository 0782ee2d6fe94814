// `glassbox sessions list|show|delete`: the conversations the trace store keeps (the turns of
// runs asked with a session id; docs/traces.md §4), through the `trace` service.
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/render/render_text.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"

namespace glassbox::cli {
namespace {

using nlohmann::json;
using render::detail::escape_controls;

struct ListOptions {
    ClientOptions client;
    int limit = 50;
};

void run_list(const ListOptions& options) {
    const json reply = call_for_object(options.client, schema::services::kTrace,
                                       json{{"op", "conversations"}, {"limit", options.limit}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto list = decoded_or_exit<schema::ConversationList>(reply);
    if (list.sessions.empty()) {
        std::cout << "(no conversations)" << std::endl;
        return;
    }
    std::size_t width = std::string_view("SESSION").size();
    for (const auto& s : list.sessions)
        width = std::max(width, render::detail::code_points(escape_controls(s.session_id, false)));
    const auto row = [&](std::string_view id, std::string_view turns, std::string_view started,
                         std::string_view last) {
        std::cout << render::detail::pad(id, width + 2) << render::detail::pad(turns, 7)
                  << render::detail::pad(started, 26) << last << '\n';
    };
    row("SESSION", "TURNS", "STARTED", "LAST");
    for (const auto& s : list.sessions) {
        row(escape_controls(s.session_id, false), std::to_string(s.turns), s.started, s.last);
    }
    std::cout << std::flush;
}

struct ShowOptions {
    ClientOptions client;
    std::string id;
    int limit = 100;
};

void run_show(const ShowOptions& options) {
    const json reply = call_for_object(options.client, schema::services::kTrace,
                                       json{{"op", "turns"},
                                            {"session_id", options.id},
                                            {"limit", options.limit},
                                            {"strict", true}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto turns = decoded_or_exit<schema::ConversationTurns>(reply);
    std::cout << "Session  " << escape_controls(turns.session_id, false) << '\n';
    if (turns.turns.empty()) {
        std::cout << "(no turns)" << std::endl;
        return;
    }
    int n = 0;
    for (const auto& turn : turns.turns) {
        std::cout << "\n[" << ++n << "] " << escape_controls(turn.started, false) << "  "
                  << escape_controls(turn.status, false) << "  trace "
                  << escape_controls(turn.trace, false) << '\n';
        std::cout << "  Q: " << escape_controls(turn.question, false) << '\n';
        if (turn.short_answer && !turn.short_answer->empty()) {
            std::cout << "  Answer: " << escape_controls(*turn.short_answer, false) << '\n';
        }
        std::cout << "  A: "
                  << (turn.answer.empty() ? "(no answer)" : escape_controls(turn.answer, false))
                  << '\n';
    }
    std::cout << std::flush;
}

struct DeleteOptions {
    ClientOptions client;
    std::string id;
};

void run_delete(const DeleteOptions& options) {
    const json reply = call_for_object(options.client, schema::services::kTrace,
                                       json{{"op", "forget"}, {"session_id", options.id}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto gone = decoded_or_exit<schema::ConversationForgotten>(reply);
    std::cout << "deleted " << gone.deleted << (gone.deleted == 1 ? " turn" : " turns") << " of "
              << escape_controls(gone.session_id, false)
              << " (the runs' traces stay: glassbox traces list)" << std::endl;
}

}  // namespace

void add_sessions_command(CLI::App& app) {
    auto* sessions = app.add_subcommand(
        "sessions",
        "Conversations: the turns of questions asked with a session id (glassbox chat, --session)");
    sessions->require_subcommand(1);

    auto [list_cmd, list] = add_command<ListOptions>(
        *sessions, "list", "Conversations, most recent first: Session | Turns | Started | Last",
        run_list);
    list_cmd->add_option("--limit", list->limit, "At most this many")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    add_client_options(*list_cmd, list->client);

    auto [show_cmd, show] = add_command<ShowOptions>(
        *sessions, "show", "The turns of one conversation, oldest first: question, answer, trace",
        run_show);
    show_cmd->add_option("id", show->id, "The session id")->required();
    show_cmd->add_option("--limit", show->limit, "The last this many turns")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    add_client_options(*show_cmd, show->client);

    auto [delete_cmd, remove] = add_command<DeleteOptions>(
        *sessions, "delete", "Forget a conversation: its turns are deleted (the runs' traces stay)",
        run_delete);
    delete_cmd->add_option("id", remove->id, "The session id")->required();
    add_client_options(*delete_cmd, remove->client);
}

}  // namespace glassbox::cli
