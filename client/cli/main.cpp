// The `glassbox` executable: parses the command line and hands off to one subcommand.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "client/cli/commands.hpp"
#include "schema/log.hpp"

int main(int argc, char** argv) {
    CLI::App app{"glassbox: an explainable retrieval-augmented generation pipeline"};
    app.set_version_flag("--version", std::string{GLASSBOX_VERSION});
    app.require_subcommand(1);
    std::string log_level = "info";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
        ->envname("GLASSBOX_LOG_LEVEL");
    app.parse_complete_callback([&log_level] {
        if (!glassbox::schema::set_log_level(log_level)) {
            throw CLI::ValidationError("--log-level", "unknown level '" + log_level + "'");
        }
    });

    glassbox::cli::add_broker_command(app);
    glassbox::cli::add_worker_command(app);
    glassbox::cli::add_up_command(app);
    glassbox::cli::add_status_command(app);
    glassbox::cli::add_call_command(app);
    glassbox::cli::add_traces_command(app);
    glassbox::cli::add_load_command(app);
    glassbox::cli::add_query_command(app);
    glassbox::cli::add_graph_command(app);
    glassbox::cli::add_invoke_command(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    return 0;
}
