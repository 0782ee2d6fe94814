// `glassbox gateway` in the glassbox executable: it runs the gateway program, glassbox-gateway,
// from the folder glassbox itself is in, in this same process (exec) and with this same command
// line, so a supervisor (`glassbox up`, systemd) sees one process with one pid.
//
// Why a program of its own: the HTTP server library (Debian's libcpp-httplib, built with
// OpenSSL) initialises OpenSSL when it is loaded. Linked into glassbox, every glassbox process —
// the broker, each worker, each `glassbox invoke` — loaded OpenSSL's libraries and ran that
// initialisation at start: ~4 MiB more resident memory and ~3 ms more start-up for processes
// that never serve HTTP. Only the gateway needs the library, so only it links it.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/program.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGatewayProgram = "glassbox-gateway";

[[noreturn]] void exec_gateway(int argc, char** argv) {
    const auto self = own_executable();
    if (!self) exit_with_error(self.error());
    const fs::path program = self->parent_path() / kGatewayProgram;
    // argv[0] stays what it was, so help, usage lines and `ps` still say `glassbox gateway`.
    std::vector<char*> args(argv, argv + argc);
    args.push_back(nullptr);
    const std::string program_text = program.string();
    ::execv(program_text.c_str(), args.data());
    const int error = errno;  // execv returns only on failure
    exit_with_error(base::make_error(
        error == ENOENT ? base::ErrorType::kNotFound : base::ErrorType::kInternal,
        "cannot run the gateway program " + program_text + ": " + std::strerror(error) +
            " (it is built and installed beside glassbox)"));
}

}  // namespace

void add_gateway_launcher(CLI::App& app, int argc, char** argv) {
    auto* command = app.add_subcommand("gateway",
                                       "Serve the HTTP API (REST + SSE) and the trace viewer over "
                                       "the bus (runs glassbox-gateway)");
    // Every argument after `gateway`, --help included, is the gateway program's to parse.
    // (Not passed up to glassbox's own options either: the program parses the whole line again.)
    command->set_help_flag();
    command->fallthrough(false);
    command->prefix_command();
    command->callback([argc, argv] { exec_gateway(argc, argv); });
}

}  // namespace glassbox::cli
