// `glassbox worker llm` (scaffold; filled in by the llm work).
#include "client/cli/worker_support.hpp"

namespace glassbox::cli {

void add_llm_worker_command(CLI::App& /*worker_command*/) {}

}  // namespace glassbox::cli
