#!/usr/bin/python3
"""The docs, executed: every `glassbox …` command in a fenced block of README.md and docs/*.md runs
against the sample pipeline (issue 31, point 5), so that a doc cannot drift from the program.

What runs. In every fenced block (except data blocks: json, toml, turtle, js, …), a command is a
line whose program is `glassbox` — after optional `VAR=value` assignments, or after a pipe
(`printf '…' | glassbox chat`); lines ending in `\\` go on on the next line. Commands run in the
order of the docs (README.md, then docs/*.md by name) through `bash -o pipefail -c`, so pipes,
redirections and `&&` work as written, with stdin from /dev/null and a timeout (--timeout-s, 30 s
each; --budget-s, 200 s for all). A command fails on a non-zero exit (or not the exit a marker
names) or on a documented output line that does not appear.

Documented output. In a block written with prompts, a line starting with `$ ` is a command and the
lines under it, up to the next `$ `, are its output:

    $ glassbox invoke -q "Who designed Greyhollow Light?"
    Answer: Ilse Varrow
    …
    trace: urn:glassbox:…:question

Each output line must be a whole line of what the command printed (stdout, then stderr), in
order; runs of spaces count as one, `…` stands for any text within a line (so `…` at its end or
start for the rest of it), and a line that is only `…` for lines left out. In a block without
`$ ` prompts every `glassbox` line is a command and nothing is checked but its exit.

Markers: HTML comments right above a block's opening fence (renderers hide them), each with a
reason in parentheses; a marker that matches no command of its block is an error, and so is an
unknown `doctest:` word:

    <!-- doctest: skip (usage synopsis) -->                      every command of the block
    <!-- doctest: skip `glassbox chat` (needs a terminal) -->    the commands that begin so
    <!-- doctest: exit 2 (an unknown collection) -->             the block's commands must exit 2
    <!-- doctest: exit 2 `glassbox traces list --limit` (…) -->  only those that begin so

Skip a command that needs a model, another host or a terminal, your own files, or that would stop
or disturb the pipeline (a second broker, a worker, `glassbox up` itself); every skipped command is
printed with its reason.

The pipeline. The test makes a fresh home (GLASSBOX_HOME) in --workdir, starts `glassbox up` on
free loopback ports (broker and explain topic `tcp://127.0.0.1:*`, gateway `127.0.0.1:0`; clients
find them in <home>/run/endpoints.json, as plain `glassbox …` does), loads ops/sample (`glassbox
load rdf ops/sample/orrin.ttl --tier 1`, `glassbox load docs ops/sample/docs/`), asks one question
and stops the pipeline at the end, whatever happens (also if the test is killed: the pipeline gets
SIGINT when the test dies). Commands run in --workdir/cwd, where every top-level entry of the
source tree is linked, so `ops/sample/…` resolves and `> traces.nq` lands in the work folder; HOME
is --workdir/user (a doc's `~/.glassbox` is not yours), GLASSBOX_* and OPENAI_API_KEY are cleared
(the built-in extractive model answers), PATH starts with the folder of --glassbox.

Example ids. The set-up makes the examples the docs name, for real where it can: it asks "Who
designed Greyhollow Light?" through the router, in conversation `chat-1a2b3c4d-5e6f` (the docs'
example session id, which then exists), and waits for its trace to be stored. A trace UUID cannot
be chosen, so the docs' example trace prefix `2e14c8b4` in a command is replaced by the first 8
characters of that trace's UUID (printed with each replacement); nothing else is replaced, and
documented output is never rewritten.

Exit 0 when every command passes, 1 otherwise, 77 (skip) only when bash is missing.
"""
import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
BASH = "/bin/bash"
DATA_LANGUAGES = {"json", "jsonl", "toml", "turtle", "ttl", "trig", "nt", "nq", "ntriples", "nquads",
                  "js", "javascript", "mjs", "ts", "yaml", "yml", "sparql", "http", "html", "xml",
                  "cpp", "c++", "python", "py"}
EXAMPLE_SESSION = "chat-1a2b3c4d-5e6f"
EXAMPLE_TRACE_PREFIX = "2e14c8b4"
SETUP_QUESTION = "Who designed Greyhollow Light?"
MARKER = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
MARKER_BODY = re.compile(r"^(skip|exit\s+(\d+))\s*(?:`([^`]+)`)?\s*(?:\((.+)\))?$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
# `glassbox` as the program: at the start (after `sudo -u USER` or VAR=value assignments) or after
# | ; && ||.
PROGRAM = re.compile(r"(?:^|[|;&]\s*)(?:sudo\s+(?:-u\s+\S+\s+)?)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"
                     r"glassbox(?:\s|$)")
ASSIGNMENTS = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")


class Marker:
    def __init__(self, where, kind, exit_code, prefix, reason):
        self.where = where
        self.kind = kind
        self.exit_code = exit_code
        self.prefix = " ".join(prefix.split()) if prefix else None
        self.reason = reason
        self.used = False

    def matches(self, command):
        if self.prefix is None:
            return True
        text = ASSIGNMENTS.sub("", " ".join(command.split()))
        return text == self.prefix or text.startswith(self.prefix + " ")


class Command:
    def __init__(self, where, text, output):
        self.where = where
        self.text = text
        self.output = output  # documented output lines ([] when none)
        self.skip = None      # the reason, when skipped
        self.exit_code = 0


def read_markers(lines, fence_index, path, problems):
    """The doctest markers in the lines right above a fence (blank lines between them allowed)."""
    markers = []
    i = fence_index - 1
    while i >= 0 and (not lines[i].strip() or MARKER.match(lines[i])):
        m = MARKER.match(lines[i])
        if m:
            where = "%s:%d" % (path, i + 1)
            body = MARKER_BODY.match(m.group(1))
            if not body or not body.group(4):
                problems.append("%s: a doctest marker is `skip|exit N [`command prefix`] (reason)`, not %r"
                                % (where, m.group(1)))
            else:
                kind = "skip" if body.group(1) == "skip" else "exit"
                code = int(body.group(2)) if body.group(2) else 0
                markers.insert(0, Marker(where, kind, code, body.group(3), body.group(4)))
        i -= 1
    return markers


def logical_lines(body):
    """(line index, text) of the block's lines, with `\\`-continued lines joined."""
    out = []
    pending = None
    for index, line in body:
        if pending is not None:
            pending = (pending[0], pending[1][:-1].rstrip() + " " + line.strip())
        else:
            pending = (index, line)
        if not pending[1].rstrip().endswith("\\"):
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def block_commands(path, body):
    """The commands of one block: prompt style (`$ ` lines and their output) or bare lines."""
    prompted = any(line.lstrip().startswith("$ ") for _, line in body)
    commands = []
    for index, line in logical_lines(body):
        where = "%s:%d" % (path, index + 1)
        stripped = line.strip()
        if prompted:
            if stripped.startswith("$ "):
                text = stripped[2:].strip()
                commands.append(Command(where, text, []) if PROGRAM.search(text) else None)
            elif commands and commands[-1] is not None and stripped:
                commands[-1].output.append(stripped)
        elif not stripped.startswith("#") and PROGRAM.search(stripped):
            commands.append(Command(where, stripped, []))
    return [c for c in commands if c is not None]


def apply_markers(commands, markers, problems):
    for command in commands:
        for marker in markers:
            if marker.matches(command.text):
                marker.used = True
                if marker.kind == "skip":
                    command.skip = command.skip or marker.reason
                else:
                    command.exit_code = marker.exit_code
    for marker in markers:
        if not marker.used:
            problems.append("%s: the marker matches no command of the block below it%s"
                            % (marker.where, " (`%s`)" % marker.prefix if marker.prefix else ""))


def extract(path, shown_as, problems):
    """Every command of the fenced blocks of one Markdown file, markers applied."""
    with open(path, encoding="utf-8") as f:
        return extract_lines(f.read().split("\n"), shown_as, problems)


def extract_lines(lines, shown_as, problems):
    commands = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            if MARKER.match(lines[i]):
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or MARKER.match(lines[j])):
                    j += 1
                if j >= len(lines) or not FENCE.match(lines[j]):
                    problems.append("%s:%d: a doctest marker not right above a fenced block"
                                    % (shown_as, i + 1))
                i = j
                continue
            i += 1
            continue
        indent, mark, language = fence.group(1), fence.group(2), fence.group(3).lower()
        markers = read_markers(lines, i, shown_as, problems)
        body = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(mark[0] * len(mark)):
            text = lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip()
            body.append((j, text))
            j += 1
        found = [] if language in DATA_LANGUAGES else block_commands(shown_as, body)
        apply_markers(found, markers, problems)
        commands += found
        i = j + 1
    return commands


SELF_CHECK_PAGE = """
<!-- doctest: skip `glassbox chat` (a terminal) -->
```sh
glassbox status   # a comment
glassbox chat
printf 'q\\n' \\
  | glassbox chat --target graph-rag
# glassbox in a comment
curl http://127.0.0.1:8080/
```
<!-- doctest: exit 2 (an error) -->
```console
$ glassbox traces show nope
NotFound: …
$ curl -s x
not output
```
```json
{"glassbox up": 1}
```
"""


def self_check():
    """The extraction and the output match on a page of every form: a harness that silently ran
    fewer commands, or matched anything, would pass docs it never checked."""
    problems = []
    found = extract_lines(SELF_CHECK_PAGE.split("\n"), "self-check", problems)
    got = [(c.text, c.skip, c.exit_code, c.output) for c in found]
    want = [("glassbox status   # a comment", None, 0, []), ("glassbox chat", "a terminal", 0, []),
            ("printf 'q\\n' | glassbox chat --target graph-rag", None, 0, []),
            ("glassbox traces show nope", None, 2, ["NotFound: …"])]
    checks = [(got == want, "extracted %r" % got), (not problems, "marker problems %r" % problems),
              (missing_output(["a  b …", "…", "c"], "x\na b c\nc\n") == [], "a match missed"),
              (missing_output(["a b"], "a b c\n") == ["a b"], "a part of a line matched a whole line"),
              (missing_output(["b", "a"], "a\nb\n") == ["a"], "lines matched out of order")]
    return [message for ok, message in checks if not ok]


def doc_files(source):
    return [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))


# ---------------------------------------------------------------------------------------------

def die_with_parent():
    """In the child: SIGINT when the test dies, so that even a killed test stops its pipeline."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


class Pipeline:
    def __init__(self, glassbox, source, workdir):
        self.glassbox = os.path.abspath(glassbox)
        self.source = source
        self.workdir = workdir
        self.home = os.path.join(workdir, "home")
        self.cwd = os.path.join(workdir, "cwd")
        self.up = None
        self.up_log = None
        self.env = self.make_env()

    def make_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GLASSBOX_") and k != "OPENAI_API_KEY"}
        env["GLASSBOX_HOME"] = self.home
        env["HOME"] = os.path.join(self.workdir, "user")
        env["PATH"] = os.path.dirname(self.glassbox) + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        return env

    def prepare(self):
        shutil.rmtree(self.workdir, ignore_errors=True)
        for d in (self.home, self.cwd, self.env["HOME"]):
            os.makedirs(d)
        for name in os.listdir(self.source):
            if not name.startswith(".") and not name.startswith("build"):
                os.symlink(os.path.join(self.source, name), os.path.join(self.cwd, name))

    def start(self):
        ready = os.path.join(self.workdir, "up.ready")
        self.up_log = log = open(os.path.join(self.workdir, "up.log"), "wb")
        self.up = subprocess.Popen(
            [self.glassbox, "up", "--bind", "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*",
             "--gateway-listen", "127.0.0.1:0", "--ready-file", ready],
            cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent)
        interop_scripts.wait_for_ready_file(ready, self.up, "glassbox up", log.name)

    def stop(self):
        interop_scripts.interrupt_process_group(self.up)
        if self.up_log is not None:
            self.up_log.close()

    def shell(self, text, timeout_s):
        """Runs one command line through bash: (exit code or None on timeout, stdout, stderr)."""
        proc = subprocess.Popen([BASH, "-o", "pipefail", "-c", text], cwd=self.cwd, env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
            return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return None, out.decode(errors="replace"), err.decode(errors="replace")

    def must(self, text, timeout_s=60):
        code, out, err = self.shell(text, timeout_s)
        if code != 0:
            raise RuntimeError("set-up: `%s` exited %s:\n%s%s" % (text, code, out, err))
        return out

    def wait_for(self, what, predicate, timeout_s=30):
        value = interop_scripts.poll_until(predicate, timeout_s, 0.1)
        if not value:
            raise RuntimeError("set-up: %s: not within %d s" % (what, timeout_s))
        return value


def set_up(p):
    """Waits for the workers, loads the sample and makes the docs' examples; returns the
    placeholder replacements {documented text: real text}."""
    services = ["store", "embeddings", "llm", "graph-rag", "document-rag", "agent", "query", "trace"]
    for service in services:
        p.wait_for("the %s service" % service,
                   lambda: p.shell("glassbox call mmi.service %s" % service, 10)[1].find("200") >= 0)
    p.must("glassbox load rdf ops/sample/orrin.ttl --tier 1")
    p.must("glassbox load docs ops/sample/docs/")
    answer = p.must("glassbox invoke -q %s --session %s" % (sh_quote(SETUP_QUESTION), EXAMPLE_SESSION))
    match = re.search(r"^trace: urn:glassbox:([0-9a-f-]{36}):question$", answer, re.M)
    if not match:
        raise RuntimeError("set-up: no `trace: urn:glassbox:…:question` line in:\n" + answer)
    uuid = match.group(1)

    def stored():
        code, out, _ = p.shell("glassbox traces show %s --format json" % uuid, 10)
        return code == 0 and json.loads(out)["session"]["status"] == "complete"
    p.wait_for("the set-up question's trace stored complete", stored)
    p.wait_for("conversation %s listed" % EXAMPLE_SESSION,
               lambda: EXAMPLE_SESSION in p.shell("glassbox sessions list", 10)[1])
    return {EXAMPLE_TRACE_PREFIX: uuid[:8]}


def sh_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------------------------------------

def squash(text):
    return " ".join(text.split())


def missing_output(documented, printed):
    """The documented lines that are not, in order, whole printed lines (`…`: any text)."""
    lines = [squash(line) for line in printed.splitlines()]
    at = 0
    missing = []
    for doc in documented:
        doc = squash(doc)
        if doc in ("…", "...", "[…]"):
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in doc.split("…")))
        for k in range(at, len(lines)):
            if pattern.fullmatch(lines[k]):
                at = k + 1
                break
        else:
            missing.append(doc)
    return missing


def substitute(text, replacements):
    for example, real in replacements.items():
        text = re.sub(r"\b%s\b" % re.escape(example), real, text)
    return text


def run_command(p, command, replacements, timeout_s):
    """Runs one documented command; returns the reason it failed, or None."""
    text = substitute(command.text, replacements)
    if text != command.text:
        print("  (as `%s`)" % shown(text))
    started = time.time()
    code, out, err = p.shell(text, timeout_s)
    took = time.time() - started
    if code is None:
        return "no exit within %d s" % timeout_s, out, err
    if code != command.exit_code:
        return "exit %d, the docs expect %d (%.1f s)" % (code, command.exit_code, took), out, err
    missing = missing_output(command.output, out + ("\n" if out and not out.endswith("\n") else "") + err)
    if missing:
        return "documented output not printed:\n" + "\n".join("    | " + m for m in missing), out, err
    return None, out, err


def tail(text, lines=25, width=300):
    parts = text.rstrip("\n").splitlines()
    cut = ["    … (%d lines)" % (len(parts) - lines)] if len(parts) > lines else []
    return "\n".join(cut + ["    " + (line if len(line) <= width else line[:width] + " …")
                            for line in parts[-lines:]])


def shown(text):
    """A command as the report shows it: without its trailing `   # comment`."""
    return re.sub(r"\s{2,}#.*$", "", text)


def run_all(p, commands, replacements, timeout_s, deadline):
    """Runs every command not skipped; past the deadline the rest fail unrun (a broken pipeline
    must not make each one wait out its timeout)."""
    failures = []
    ran = 0
    for command in commands:
        if command.skip:
            continue
        if time.time() > deadline:
            failures.append((command, "not run: the test's time budget (--budget-s) is spent"))
            continue
        print("RUN  %s  %s" % (command.where, shown(command.text)))
        ran += 1
        problem, out, err = run_command(p, command, replacements, timeout_s)
        if problem:
            failures.append((command, problem))
            print("FAIL %s: %s" % (command.where, problem))
            print("  stdout:\n%s\n  stderr:\n%s" % (tail(out), tail(err)))
    return ran, failures


def parse_args():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--glassbox", required=True, help="the glassbox executable")
    parser.add_argument("--source-dir", default=os.path.normpath(os.path.join(here, "..", "..")))
    parser.add_argument("--workdir", default=os.path.join("/tmp", "glassbox-doc-commands-%d" % os.getpid()))
    parser.add_argument("--timeout-s", type=int, default=30, help="each command's timeout")
    parser.add_argument("--budget-s", type=int, default=200,
                        help="time for all the commands (below CTest's TIMEOUT, so the pipeline is stopped)")
    parser.add_argument("--only", help="only the docs whose path contains this")
    parser.add_argument("--list", action="store_true", help="print the commands and markers, run nothing")
    return parser.parse_args()


def collect(source, only):
    problems = []
    commands = []
    for path in doc_files(source):
        shown_as = os.path.relpath(path, source)
        if only and only not in shown_as:
            continue
        commands += extract(path, shown_as, problems)
    return commands, problems


def report(commands, ran, failures, problems):
    skipped = [c for c in commands if c.skip]
    print("\nSkipped, by name:")
    for c in skipped:
        print("  %s  `%s` — %s" % (c.where, shown(c.text), c.skip))
    for problem in problems:
        print("MARKER %s" % problem)
    print("\n%d commands in the docs: %d ran, %d failed, %d skipped; %d marker problems"
          % (len(commands), ran, len(failures), len(skipped), len(problems)))
    for command, problem in failures:
        print("  FAILED %s  `%s`: %s" % (command.where, shown(command.text), problem.split("\n")[0]))


def main():
    args = parse_args()
    if not os.access(BASH, os.X_OK):
        print("SKIP: %s is missing (the docs' commands are shell lines)" % BASH)
        return SKIP
    broken = self_check()
    if broken:
        print("FAIL: the harness itself: " + "; ".join(broken))
        return 1
    source = os.path.abspath(args.source_dir)
    commands, problems = collect(source, args.only)
    if args.list:
        for c in commands:
            print("%s  %s%s%s" % (c.where, c.text, "  [skip: %s]" % c.skip if c.skip else "",
                                  "  [exit %d]" % c.exit_code if c.exit_code else ""))
            for line in c.output:
                print("      | " + line)
        for problem in problems:
            print("MARKER " + problem)
        return 1 if problems else 0
    p = Pipeline(args.glassbox, source, os.path.abspath(args.workdir))
    p.prepare()
    try:
        p.start()
        replacements = set_up(p)
        print("example ids: %s" % ", ".join("%s -> %s" % kv for kv in replacements.items()))
        ran, failures = run_all(p, commands, replacements, args.timeout_s, time.time() + args.budget_s)
    except RuntimeError as e:  # the pipeline or the set-up: nothing of the docs was checked
        print("FAIL: %s" % e)
        return 1
    finally:
        p.stop()
    report(commands, ran, failures, problems)
    if ran == 0:
        print("FAIL: no command ran (is the extraction broken?)")
        return 1
    return 1 if failures or problems else 0


if __name__ == "__main__":
    sys.exit(main())
