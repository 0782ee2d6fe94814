// The `llm` service (scaffold; filled in by the llm work).
#pragma once

#include "workers/runtime/worker.hpp"

namespace glassbox::llm {}  // namespace glassbox::llm
