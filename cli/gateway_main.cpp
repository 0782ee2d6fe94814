// The `glassbox-gateway` executable: the HTTP gateway (docs/http.md), run as `glassbox gateway`
// (cli/gateway_launcher.cpp) or directly, with the same global options and configuration.
#include "cli/commands.hpp"
#include "cli/program.hpp"

int main(int argc, char** argv) {
    return glassbox::cli::run_program(
        argc, argv, [](CLI::App& app) { glassbox::cli::add_gateway_command(app); });
}
