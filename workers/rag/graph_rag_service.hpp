// The `graph-rag` service (scaffold; filled in by the RAG work).
#pragma once

#include "workers/runtime/worker.hpp"

namespace glassbox::rag {}  // namespace glassbox::rag
