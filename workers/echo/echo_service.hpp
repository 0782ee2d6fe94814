// The diagnostic echo service: answers with its request and a minimal explain chain
// (Question → Synthesis), for health checks and to exercise the explain path end to end.
#pragma once

#include <string_view>

#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::echo {

// Request body: {"question": "<text>", ...}. Optional fields, for tests:
//   "partials": N      (0-1000, default 1) PARTIAL data messages {"text": question, "index": i}
//   "delay_ms": N      (0-600000) sleep before each partial, in small steps, honouring CANCEL
//   "fail": "<Type>"   end with that typed error (the trace ends `error`)
//   "parent_uri": URI  the calling step, making this run a sub-trace
// Explain: EXPLAIN seq 0 (Question, open), seq 1 (Synthesis, complete; or the end, error).
// FINAL: {"echo": <request body>, "session": "<session URI>"}.
// A body that is not an object, or a question that is not a string (or a bad optional field):
// InvalidRequest. Stateless: safe to call on many threads at once.
void handle_echo(runtime::RequestContext& context);

// handle_echo as a runtime handler.
runtime::Handler make_echo_handler();

}  // namespace glassbox::echo
