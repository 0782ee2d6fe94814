// The `glassbox` executable: parses the command line and hands off to one subcommand.
#include "cli/commands.hpp"
#include "cli/program.hpp"

int main(int argc, char** argv) {
    return glassbox::cli::run_program(argc, argv, [argc, argv](CLI::App& app) {
        glassbox::cli::add_broker_command(app);
        glassbox::cli::add_worker_command(app);
        glassbox::cli::add_up_command(app);
        glassbox::cli::add_status_command(app);
        glassbox::cli::add_call_command(app);
        glassbox::cli::add_traces_command(app);
        glassbox::cli::add_load_command(app);
        glassbox::cli::add_forget_command(app);
        glassbox::cli::add_query_command(app);
        glassbox::cli::add_graph_command(app);
        glassbox::cli::add_collections_command(app);
        glassbox::cli::add_invoke_command(app);
        glassbox::cli::add_sessions_command(app);
        glassbox::cli::add_chat_command(app);
        glassbox::cli::add_gateway_launcher(app, argc, argv);
        glassbox::cli::add_keys_command(app);
        glassbox::cli::add_config_command(app);
        glassbox::cli::add_store_command(app);
        glassbox::cli::add_eval_command(app);
        glassbox::cli::add_sparql_command(app);
    });
}
