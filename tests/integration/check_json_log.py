#!/usr/bin/python3
"""Checks a glassbox log written with --log-format json (the JSON log test of config_test.cpp).

Usage: check_json_log.py LOG REQUEST=SESSION...

Every line must be one JSON object with string members time, level, component and msg (and
only string members). For each REQUEST=SESSION pair: at least one line names the request, and
every line that names it names that session too, the line that starts it included (the worker
draws the trace's session when the request arrives). Prints what it found; exit status 0 when all holds, 1 otherwise.
"""
import json
import sys


def main() -> int:
    path, pairs = sys.argv[1], [arg.split("=", 1) for arg in sys.argv[2:]]
    failures = []
    lines = []
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError as e:
                failures.append(f"line {number} is not JSON ({e}): {text!r}")
                continue
            if not isinstance(line, dict):
                failures.append(f"line {number} is not an object: {text!r}")
                continue
            for member in ("time", "level", "component", "msg"):
                if not isinstance(line.get(member), str):
                    failures.append(f"line {number} has no string {member}: {text!r}")
            if not all(isinstance(v, str) for v in line.values()):
                failures.append(f"line {number} has a member that is not a string: {text!r}")
            lines.append((number, line))
    for request, session in pairs:
        named = [(n, line) for n, line in lines if line.get("request") == request]
        if not named:
            failures.append(f"no line names request {request}")
        for n, line in named:
            if line.get("session") != session:
                failures.append(f"line {n} names request {request} without its session {session}: {line}")
        print(f"request {request}: {len(named)} lines, events "
              f"{sorted({line.get('event', '?') for _, line in named})}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
