// "Did you mean …?" for a command line CLI11 refused: a misspelt subcommand (`glassbox invok`,
// `glassbox traces lst`, `glassbox invoke graphrag`) is named with the nearest command and the
// commands that level has, instead of "A subcommand is required" (issue 31).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace glassbox::cli {

// The message for the first word of `argv` that stands where `app`'s subcommand tree expects a
// subcommand and names none, e.g. `unknown command "invok" (did you mean invoke?); the
// commands are: broker, worker, ...`; nullopt when the command line has no such word (another
// parse error, which CLI11 reports itself). Option values are skipped by the options' arity.
std::optional<std::string> unknown_command_message(const CLI::App& app, int argc,
                                                   const char* const* argv);

}  // namespace glassbox::cli
