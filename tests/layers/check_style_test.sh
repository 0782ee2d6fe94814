#!/usr/bin/env bash
# Tests ops/check-style in a small git repository of its own (the repository's .clang-format,
# .clang-tidy and script): a clean change passes; an unformatted new file and an unformatted
# line in a committed file fail, each named; a clang-tidy finding on a line the change wrote
# fails, named, while the same finding on a line it did not touch is not reported.
set -euo pipefail
root=${1:?usage: check_style_test.sh REPO_ROOT}
fail() { echo "FAIL: $*"; exit 1; }
for tool in git cmake clang-format clang-tidy; do
  command -v "$tool" >/dev/null || { echo "check_style_test: $tool missing, skipped"; exit 77; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ops" "$work/lib"
cp "$root/ops/check-style" "$work/ops/"
cp "$root/.clang-format" "$root/.clang-tidy" "$work/"
cat > "$work/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(style_test CXX)
set(CMAKE_CXX_STANDARD 20)
add_library(style_test STATIC lib/sizes.cpp)
EOF
# Committed: a formatted file whose one function already has a clang-tidy finding
# (performance-unnecessary-value-param: a string copied, only read).
cat > "$work/lib/sizes.cpp" <<'EOF'
// Sizes of things.
#include <string>

int old_size(std::string text) { return static_cast<int>(text.size()); }
EOF
clang-format -i "$work/lib/sizes.cpp"
cd "$work"
git init -q .
git -c user.name=t -c user.email=t@t add -A
git -c user.name=t -c user.email=t@t commit -qm base
check() { set +e; out=$(ops/check-style --base HEAD "$@" 2>&1); status=$?; set -e; echo "$out"; }

echo "-- nothing changed"
check
[ $status -eq 0 ] || fail "a clean tree fails (status $status)"

echo "-- an unformatted new file, an unformatted line in a committed file"
printf 'int  ugly( ){return 1;}\n' > lib/ugly.cpp
printf 'int   also_ugly( ) {return 2;}\n' >> lib/sizes.cpp
check --no-tidy
[ $status -eq 1 ] || fail "unformatted files pass (status $status)"
grep -q '^lib/ugly.cpp: not formatted' <<<"$out" || fail "the new unformatted file not named"
grep -q '^lib/sizes.cpp: not formatted' <<<"$out" || fail "the unformatted committed file not named"
clang-format -i lib/ugly.cpp lib/sizes.cpp
check --no-tidy
[ $status -eq 0 ] || fail "formatted files still fail"
git checkout -q lib/sizes.cpp
rm lib/ugly.cpp

echo "-- a clang-tidy finding on a line the change wrote; the old one is not the change's"
printf '\nint new_size(std::string text) { return static_cast<int>(text.size()); }\n' >> lib/sizes.cpp
clang-format -i lib/sizes.cpp
new_line=$(grep -n 'new_size' lib/sizes.cpp | cut -d: -f1)
old_line=$(grep -n 'old_size' lib/sizes.cpp | cut -d: -f1)
check
[ $status -eq 1 ] || fail "a clang-tidy finding passes (status $status)"
grep -q "lib/sizes.cpp:$new_line:.*performance-unnecessary-value-param" <<<"$out" \
  || fail "the finding on the new line $new_line not named"
if grep -q "lib/sizes.cpp:$old_line:" <<<"$out"; then
  fail "the finding on the untouched line $old_line reported"
fi
echo "check_style_test: passed"
