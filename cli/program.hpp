// The start of every glassbox executable: the allocator's tuning, the global options (log level
// and format, --version), the configuration resolved once the command line is parsed, and the
// subcommands the executable has. `glassbox` has all of them but the gateway's server, which
// runs as `glassbox-gateway` (cli/gateway_launcher.cpp says why).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace glassbox::cli {

// Builds the app, lets add_commands register the subcommands, parses and runs the one named.
// Returns the process's exit status.
int run_program(int argc, char** argv, const std::function<void(CLI::App&)>& add_commands);

}  // namespace glassbox::cli
