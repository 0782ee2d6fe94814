#!/usr/bin/env bash
# Tests ops/check-layers: the repository passes; a copy of it with planted violations (the
# broker including and linking the CLI, a worker including another worker, two layer-2 peers, a library
# including a test fixture, the gateway including a worker) fails, naming each planted include and nothing else.
set -euo pipefail
root=${1:?usage: check_layers_test.sh REPO_ROOT}
check=$root/ops/check-layers
fail() { echo "FAIL: $*"; exit 1; }

echo "-- the repository itself"
"$check" --root "$root" || fail "the repository breaks the layers (see above)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for d in base schema storage http loader text bus broker workers gateway cli; do
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
printf '#include "bus/frame_io.hpp"\n' >> "$loader_hpp"
printf '#include "tests/support/process.hpp"\n' >> "$base_hpp"
printf '#include "workers/runtime/worker.hpp"\n' >> "$(first_hpp gateway)"
printf 'target_link_libraries(glassbox_broker PRIVATE glassbox::cli)\n' >> "$work/broker/CMakeLists.txt"
# Allowed: a worker including the runtime, the CLI including a worker, the bus including schema,
# the gateway including the bus.
printf '#include "bus/bus_client.hpp"\n' >> "$(first_hpp gateway)"
printf '#include "workers/runtime/worker.hpp"\n' >> "$llm_hpp"
printf '#include "schema/term.hpp"\n' >> "$(first_hpp bus)"

set +e
out=$("$check" --root "$work" 2>&1)
status=$?
set -e
echo "$out"
[ $status -eq 1 ] || fail "exit status $status, expected 1"
count=$(grep -vc '^check-layers' <<<"$out" || true)
[ "$count" -eq 6 ] || fail "expected exactly 6 violations, got $count"
grep -q "^broker/.*: broker -> cli: layer 3 includes layer 6" <<<"$out" || fail "broker -> cli not named"
grep -q "^workers/llm/.*: workers/llm -> workers/embeddings: a worker includes another worker" <<<"$out" \
  || fail "worker -> worker not named"
grep -q "^loader/.*: loader -> bus: peers of layer 2" <<<"$out" || fail "loader -> bus not named"
grep -q "^base/.*: base -> tests/support/process.hpp" <<<"$out" || fail "base -> tests not named"
grep -q "^broker/CMakeLists.txt:.*: broker links glassbox::cli (cli): layer 3 includes layer 6" <<<"$out" \
  || fail "the broker linking the CLI not named"
grep -q "^gateway/.*: gateway -> workers/runtime: the gateway is a bus client" <<<"$out" \
  || fail "gateway -> workers/runtime not named"
echo "check_layers_test: passed"
