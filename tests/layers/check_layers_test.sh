#!/usr/bin/env bash
# Tests ops/check-layers: the repository passes; a copy of it with planted violations (the
# broker including and linking the CLI, a worker including another worker, two layer-2 peers, a
# library including a test fixture, the gateway including a worker, a worker including the CLI in
# angle brackets, a worker linking the CLI and the gateway's MCP library by their raw target
# names, text/ linking the CLI in its glassbox_component list, a new top-level folder with no layer) fails, naming each planted violation and nothing
# else; allowed spellings beside them (angle-bracket includes down the layers, system headers,
# raw targets down the layers, CMake variables, a build tree, a hidden folder) are not named.
set -euo pipefail
root=${1:?usage: check_layers_test.sh REPO_ROOT}
check=$root/ops/check-layers
fail() { echo "FAIL: $*"; exit 1; }

echo "-- the repository itself"
"$check" --root "$root" || fail "the repository breaks the layers (see above)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every top-level folder that has a layer (workers/ for workers/runtime and the workers).
for d in $("$check" --list-layers | awk '$1 != "-" { split($2, p, "/"); print p[1] }' | sort -u); do
  [ -d "$root/$d" ] && cp -r "$root/$d" "$work/$d"
done
"$check" --root "$work" >/dev/null || fail "a clean copy of the tree fails"

echo "-- planted violations"
first_hpp() { find "$work/$1" -maxdepth 1 -name '*.hpp' | sort | head -1; }
broker_hpp=$(first_hpp broker)
llm_hpp=$(first_hpp workers/llm)
loader_hpp=$(first_hpp loader)
base_hpp=$(first_hpp base)
printf '#include "cli/home.hpp"\n' >> "$broker_hpp"
printf '#include "workers/embeddings/embedder.hpp"\n' >> "$llm_hpp"
printf '#include "bus/bus_client.hpp"\n' >> "$loader_hpp"
printf '#include "tests/support/process.hpp"\n' >> "$base_hpp"
printf '#include "workers/runtime/worker.hpp"\n' >> "$(first_hpp gateway)"
printf 'target_link_libraries(glassbox_broker PRIVATE glassbox::cli)\n' >> "$work/broker/CMakeLists.txt"
printf '#include <cli/home.hpp>\n' >> "$(first_hpp workers/echo)"
printf 'target_link_libraries(glassbox_query PRIVATE glassbox_cli)\n' >> "$work/workers/query/CMakeLists.txt"
printf 'target_link_libraries(glassbox_echo PRIVATE\n  glassbox::gateway_mcp)\n' \
  >> "$work/workers/echo/CMakeLists.txt"
sed -i 's/^  PUBLIC glassbox::base/  PUBLIC glassbox::base glassbox::cli/' "$work/text/CMakeLists.txt"
mkdir -p "$work/reasoning"
printf '#include "schema/term.hpp"\n' > "$work/reasoning/planner.hpp"
# Allowed: a worker including the runtime, the CLI including a worker, the bus including schema,
# the gateway including the bus.
printf '#include "bus/bus_client.hpp"\n' >> "$(first_hpp gateway)"
printf '#include "workers/runtime/worker.hpp"\n' >> "$llm_hpp"
printf '#include "schema/term.hpp"\n' >> "$(first_hpp bus)"
printf '#include <schema/term.hpp>\n#include <vector>\n#include <zmq.hpp>\n' >> "$(first_hpp bus)"
printf 'target_link_libraries(glassbox_echo PRIVATE glassbox_runtime ${glassbox_SOURCE_DIR}/x)\n' \
  >> "$work/workers/echo/CMakeLists.txt"
mkdir -p "$work/build-planted" "$work/out/CMakeFiles" "$work/.cache"
touch "$work/out/CMakeCache.txt"
printf 'int main() {}\n' > "$work/out/CMakeFiles/CMakeCXXCompilerId.cpp"
printf '#include "cli/home.hpp"\n' > "$work/.cache/x.hpp"

set +e
out=$("$check" --root "$work" 2>&1)
status=$?
set -e
echo "$out"
[ $status -eq 1 ] || fail "exit status $status, expected 1"
count=$(grep -vc '^check-layers' <<<"$out" || true)
[ "$count" -eq 11 ] || fail "expected exactly 11 violations, got $count"
grep -q "^broker/.*: broker -> cli: layer 3 includes layer 6" <<<"$out" || fail "broker -> cli not named"
grep -q "^workers/llm/.*: workers/llm -> workers/embeddings: a worker includes another worker" <<<"$out" \
  || fail "worker -> worker not named"
grep -q "^loader/.*: loader -> bus: peers of layer 2" <<<"$out" || fail "loader -> bus not named"
grep -q "^base/.*: base -> tests/support/process.hpp" <<<"$out" || fail "base -> tests not named"
grep -q "^broker/CMakeLists.txt:.*: broker links glassbox::cli (cli): layer 3 includes layer 6" <<<"$out" \
  || fail "the broker linking the CLI not named"
grep -q "^gateway/.*: gateway -> workers/runtime: the gateway is a bus client" <<<"$out" \
  || fail "gateway -> workers/runtime not named"
grep -q "^workers/echo/.*: workers/echo -> cli: layer 4 includes layer 6" <<<"$out" \
  || fail "the angle-bracket include <cli/home.hpp> from a worker not named"
grep -q "^workers/query/CMakeLists.txt:.*: workers/query links glassbox_cli (cli): layer 4 includes layer 6" \
  <<<"$out" || fail "the raw target glassbox_cli linked from a worker not named"
grep -q "^workers/echo/CMakeLists.txt:.*: workers/echo links glassbox::gateway_mcp (gateway): layer 4 includes layer 5" \
  <<<"$out" || fail "glassbox::gateway_mcp (defined in gateway/mcp) linked from a worker not named"
grep -q "^text/CMakeLists.txt:.*: text links glassbox::cli (cli): layer 2 includes layer 6" <<<"$out" \
  || fail "the CLI in text/'s glassbox_component link list not named"
grep -q "^reasoning/: a top-level folder with no layer" <<<"$out" \
  || fail "the new top-level folder reasoning/ not named"
echo "check_layers_test: passed"
