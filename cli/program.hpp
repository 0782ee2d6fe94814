// The start of every glassbox executable: the allocator's tuning, the global options (log level
// and format, --version), the configuration resolved once the command line is parsed, and the
// subcommands the executable has. `glassbox` has all of them but the gateway's server, which
// runs as `glassbox-gateway` (cli/gateway_launcher.cpp says why).
#pragma once

#include <filesystem>
#include <functional>

#include <CLI/CLI.hpp>

#include "base/result.hpp"

namespace glassbox::cli {

// Builds the app, lets add_commands register the subcommands, parses and runs the one named.
// Returns the process's exit status.
int run_program(int argc, char** argv, const std::function<void(CLI::App&)>& add_commands);

// The file of the running executable (/proc/self/exe): what `glassbox up` starts its children
// from, and the folder the gateway program is looked for in.
base::Result<std::filesystem::path> own_executable();

}  // namespace glassbox::cli
