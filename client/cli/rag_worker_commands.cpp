// `glassbox worker graph-rag` and `glassbox worker document-rag` (scaffold; filled in by the RAG work).
#include "client/cli/worker_support.hpp"

namespace glassbox::cli {

void add_graph_rag_worker_command(CLI::App& /*worker_command*/) {}
void add_document_rag_worker_command(CLI::App& /*worker_command*/) {}

}  // namespace glassbox::cli
