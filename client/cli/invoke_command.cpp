// `glassbox invoke graph-rag|document-rag` (scaffold; filled in by the invoke work).
#include "client/cli/commands.hpp"

namespace glassbox::cli {

void add_invoke_command(CLI::App& /*app*/) {}

}  // namespace glassbox::cli
