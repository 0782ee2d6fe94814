// The start shared by the glassbox executables (cli/program.hpp).
#include "cli/program.hpp"

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include <malloc.h>

#include "cli/command_typos.hpp"
#include "cli/settings.hpp"

namespace glassbox::cli {
namespace {

// Every glassbox process builds and frees many message-sized buffers (explain bodies, batches of
// triples, vectors) on several threads. With glibc's defaults a freed buffer at the top of a
// thread's heap is handed back to the kernel (madvise) and one above the dynamic mmap threshold
// is unmapped, so the next message of that size faults its pages in again; on a virtual machine
// where page faults and system calls are expensive that was a tenth of a worker's CPU time.
// Memory freed below these sizes stays with the process for reuse. At most two heaps (arenas):
// with one per thread, each kept its own freed buffers, and a store worker loading 1M triples
// peaked at ~400 MiB instead of ~270. GLIBC_TUNABLES settings of glibc.malloc take precedence.
void tune_allocator() {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables != nullptr &&
        std::string_view(tunables).find("glibc.malloc.") != std::string_view::npos)
        return;
    mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
    mallopt(M_ARENA_MAX, 2);
}

}  // namespace

int run_program(int argc, char** argv, const std::function<void(CLI::App&)>& add_commands) {
    tune_allocator();
    CLI::App app{"glassbox: an explainable retrieval-augmented generation pipeline"};
    app.set_version_flag("--version", std::string{GLASSBOX_VERSION});
    app.require_subcommand(1);
    // Accepted after the subcommand too (`glassbox worker echo --log-format json`).
    app.fallthrough();
    add_setting_option(app, "log.level", "--log-level");
    add_setting_option(app, "log.format", "--log-format");
    // Once the whole command line is parsed, before any command runs: the configuration (defaults,
    // <home>/run/endpoints.json, <home>/config.toml, GLASSBOX_* variables, flags), checked whole.
    // A bad value anywhere stops here with "config error: ..." and exit 2.
    app.parse_complete_callback([&app] { resolve_settings(app); });
    add_commands(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version end the parse too (exit 0): CLI11 prints them. A command's typed
        // error (exit_with_error) and a configuration error were printed already: their code.
        if (e.get_exit_code() == 0 || dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr)
            return app.exit(e);
        // A command line that does not parse is bad input, said as every typed error is: one
        // line, exit 2 (docs/operations.md); a misspelt command is named with the nearest one.
        const auto typo = unknown_command_message(app, argc, argv);
        std::cerr << "InvalidRequest: " << (typo ? *typo : std::string(e.what()))
                  << " (--help shows the usage)\n";
        return 2;
    }
    return 0;
}

base::Result<std::filesystem::path> own_executable() {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
        return base::make_error(
            base::ErrorType::kInternal,
            "cannot find the glassbox executable (/proc/self/exe): " + ec.message());
    }
    return self;
}

}  // namespace glassbox::cli
