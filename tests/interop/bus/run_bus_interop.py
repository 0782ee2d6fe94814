#!/usr/bin/python3
"""Interop tests of the glassbox broker with outside peers (pyzmq), one test per invocation.

Starts the real `glassbox broker` (and `glassbox worker echo` where a test needs it) on
tcp://127.0.0.1:* with a fresh home, learns the endpoint from the ready file, runs the
python peers in this directory against it, and exits 0 when every check holds.

    run_bus_interop.py --glassbox /path/to/glassbox <test>
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))

import interop_scripts  # noqa: E402
import zmq  # noqa: E402

from gbc_client import GbcClient  # noqa: E402
from gbe_collector import GbeCollector  # noqa: E402
from mdp_client import MajorDomoClient  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HEARTBEAT_MS = 250


class Check(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Check(what)
    print("ok: " + what, flush=True)


class Harness:
    """Owns every process it starts; stop() terminates and reaps them all."""

    def __init__(self, glassbox):
        self.glassbox = glassbox
        self.home = tempfile.mkdtemp(prefix="glassbox-interop-")
        self.procs = []
        self.endpoint = None
        self.pub_endpoint = None

    def spawn(self, name, argv):
        out = open(os.path.join(self.home, name + ".out"), "wb")
        err = open(os.path.join(self.home, name + ".err"), "wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        out.close()
        err.close()
        self.procs.append((name, proc))
        return proc

    def start_broker(self, extra=()):
        ready = os.path.join(self.home, "broker.ready.json")
        proc = self.spawn("broker", [
            self.glassbox, "broker", "--bind", "tcp://127.0.0.1:*",
            "--pub", "tcp://127.0.0.1:*", "--home", os.path.join(self.home, "broker-home"),
            "--heartbeat-ms", str(HEARTBEAT_MS), "--ready-file", ready] + list(extra))

        def ready_info():
            if proc.poll() is not None:
                raise Check("broker exited early with %s" % proc.returncode)
            try:
                with open(ready) as f:
                    info = json.load(f)
                return info if all(k in info for k in ("endpoint", "pub_endpoint", "pid")) else None
            except (OSError, ValueError):
                return None
        info = interop_scripts.poll_until(ready_info, 10, 0.02)
        if not info:
            raise Check("broker wrote no ready file within 10 s")
        self.endpoint = info["endpoint"]
        self.pub_endpoint = info["pub_endpoint"]
        check(info["pid"] == proc.pid, "ready file names the broker's pid")
        return info

    def start_echo_worker(self, threads=1):
        return self.spawn("echo-worker-%d" % len(self.procs), [
            self.glassbox, "worker", "echo", "--broker", self.endpoint,
            "--threads", str(threads), "--heartbeat-ms", str(HEARTBEAT_MS)])

    def start_py_worker(self, service, mode):
        return self.spawn("mdp-worker-%d" % len(self.procs), [
            sys.executable, os.path.join(HERE, "mdp_worker.py"), "--broker", self.endpoint,
            "--service", service, "--mode", mode, "--heartbeat-ms", str(HEARTBEAT_MS)])

    def start_with_py_worker(self, service, mode):
        """The broker and one mdp_worker.py serving `service` in `mode`, once it is registered."""
        self.start_broker()
        self.start_py_worker(service, mode)
        self.wait_service(service)

    def wait_service(self, service, timeout_s=10):
        """Polls mmi.service until the broker reports a worker for `service`."""
        def registered():
            client = MajorDomoClient(self.endpoint, timeout_ms=1000)
            try:
                return client.send("mmi.service", [service.encode()]) == [b"200"]
            finally:
                client.destroy()
        if not interop_scripts.poll_until(registered, timeout_s, 0.05):
            raise Check("service %s registered within %d s" % (service, timeout_s))

    def stop(self, keep):
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if keep:
            for name, _ in self.procs:
                for ext in (".err",):
                    path = os.path.join(self.home, name + ext)
                    if os.path.exists(path) and os.path.getsize(path):
                        with open(path, errors="replace") as f:
                            tail = f.read()[-3000:]
                        print("--- %s%s (tail) ---\n%s" % (name, ext, tail))
            print("logs kept in " + self.home)
        else:
            shutil.rmtree(self.home, ignore_errors=True)


def test_mdp_roundtrip(h):
    """An unmodified 7/MDP client and worker talk through the broker."""
    h.start_with_py_worker("py-echo", "echo")
    client = MajorDomoClient(h.endpoint, timeout_ms=5000)
    try:
        for i in range(5):
            reply = client.send("py-echo", [b"hello %d" % i, b"second frame"])
            check(reply == [b"hello %d" % i, b"second frame"],
                  "mdp round trip %d returns both body frames unchanged" % i)
    finally:
        client.destroy()
    # The same through the standalone client program.
    out = subprocess.run([sys.executable, os.path.join(HERE, "mdp_client.py"), "--broker",
                          h.endpoint, "py-echo", "from the command line"],
                         capture_output=True, timeout=20, text=True)
    check(out.returncode == 0 and json.loads(out.stdout) == ["from the command line"],
          "mdp_client.py program gets its reply")


def test_mdp_to_echo(h):
    """A 7/MDP client gets exactly one reply (the final body) from the C++ echo worker."""
    h.start_broker()
    h.start_echo_worker()
    h.wait_service("echo")
    client = MajorDomoClient(h.endpoint, timeout_ms=5000)
    try:
        for i in range(3):
            body = {"question": "mdp question %d" % i, "partials": 3}
            reply = client.send("echo", [json.dumps(body).encode()])
            check(reply is not None and len(reply) == 1, "echo answers with one body frame")
            value = json.loads(reply[0])
            check(value.get("echo") == body, "the reply echoes the request body")
            check(isinstance(value.get("session"), str) and value["session"],
                  "the reply names the session")
    finally:
        client.destroy()


def test_gbc_to_mdp_worker(h):
    """A GBC01 streaming client is served by a plain 7/MDP worker: one FINAL, no partials."""
    h.start_with_py_worker("py-wrap", "wrap")
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        body = {"question": "from gbc", "n": 7}
        events = client.call("py-wrap", body, deadline_ms=10000, timeout_ms=10000)
        check(events[-1] is not None, "a terminal message arrives")
        check(len(events) == 1 and events[0]["cmd"] == "final", "exactly one FINAL, nothing else")
        check(events[0]["body"] == {"worker": "mdp_worker.py", "service": "py-wrap",
                                    "body": body}, "the FINAL carries the worker's reply")
        # Several in flight at once on one socket, matched by request id.
        rids = [client.request("py-wrap", {"i": i}, 10000) for i in range(10)]
        finals = {}
        stop = time.monotonic() + 10
        while len(finals) < len(rids) and time.monotonic() < stop:
            event = client.recv(500)
            if event and event["cmd"] == "final":
                finals[event["request_id"]] = event["body"]["body"]
        check(sorted(finals) == sorted(r.decode() for r in rids),
              "10 pipelined requests each get their FINAL")
        check(all(finals[r.decode()] == {"i": i} for i, r in enumerate(rids)),
              "each FINAL belongs to its request id")
    finally:
        client.close()


def test_gbc_streaming(h):
    """GBC01 streaming from the C++ echo worker: data partials, explain, FINAL, CANCEL."""
    h.start_broker()
    h.start_echo_worker(threads=2)
    h.wait_service("echo")
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        body = {"question": "stream me", "partials": 4}
        events = client.call("echo", body, deadline_ms=10000, timeout_ms=10000)
        check(events[-1] is not None and events[-1]["cmd"] == "final", "the stream ends in FINAL")
        data = [e for e in events if e["cmd"] == "partial" and e["kind"] == "data"]
        explain = [e for e in events if e["cmd"] == "partial" and e["kind"] == "explain"]
        check(len(data) == 4, "4 data partials arrive (got %d)" % len(data))
        check(len(explain) >= 2, "explain partials arrive (got %d)" % len(explain))
        check(sum(1 for e in events if e["cmd"] in ("final", "error")) == 1,
              "exactly one terminal message")
        final = events[-1]["body"]
        check(final.get("echo") == body, "FINAL echoes the body")
        session = final.get("session")
        seqs = [e["body"]["seq"] for e in explain]
        check(seqs == list(range(len(seqs))), "explain seq numbers run 0, 1, 2, ... in order")
        check(all(e["body"]["session"] == session for e in explain),
              "every explain names the FINAL's session")
        check(all(e["body"].get("message_type") == "explain" for e in explain),
              "explain bodies are explain messages")
        check(explain[-1]["body"].get("end_of_trace") is True
              and explain[-1]["body"].get("trace_status") == "complete",
              "the last explain ends the trace as complete")
        check(not any(e["body"].get("end_of_trace") for e in explain[:-1]),
              "no earlier explain ends the trace")

        # CANCEL a slow request.
        t0 = time.monotonic()
        events = client.call("echo", {"question": "slow", "delay_ms": 5000}, deadline_ms=20000,
                             timeout_ms=5000, cancel_after_ms=300)
        check(events[-1] is not None and events[-1]["cmd"] == "error"
              and events[-1]["type"] == "Cancelled", "CANCEL ends the request with ERROR Cancelled")
        # Not a speed bound: the worker takes 5 s, so an answer before then did not wait for it.
        check(time.monotonic() - t0 < 5.0,
              "the cancel is answered before the worker's 5 s of work would have ended")

        # Deadline shorter than the work.
        events = client.call("echo", {"question": "late", "delay_ms": 3000}, deadline_ms=300,
                             timeout_ms=5000)
        check(events[-1] is not None and events[-1]["cmd"] == "error"
              and events[-1]["type"] == "DeadlineExceeded", "a passed deadline ends in DeadlineExceeded")

        # The reliable feed: a GBE01 collector receives the first request's explain messages.
        collector = GbeCollector(h.endpoint, window=16, heartbeat_ms=HEARTBEAT_MS)
        try:
            want = {(session, s) for s in seqs}
            collector.run_until(lambda: want <= set(collector.messages), 10000, quiet_ms=500)
            check(want <= set(collector.messages),
                  "the collector receives every explain message of the session")
            check(not collector.duplicates, "no delivery is duplicated")
        finally:
            collector.close()
    finally:
        client.close()


def test_gbc_packed(h):
    """The packed form (§1.4) from a client written from the doc: a packed request to the C++
    echo worker streams back packed (two frames a message) with the same content; a malformed
    envelope is dropped without taking the broker or the connection down."""
    h.start_broker()
    h.start_echo_worker()
    h.wait_service("echo")
    client = GbcClient(h.endpoint, HEARTBEAT_MS, packed=True)
    try:
        body = {"question": "packed", "partials": 3}
        rid = client.request("echo", body, deadline_ms=10000)
        events, wire = [], []
        while True:
            event = client.recv(10000)
            check(event is not None, "a reply to the packed request arrives")
            events.append(event)
            wire.append(client.last_wire_frames)
            if event["cmd"] in ("final", "error", "invalid"):
                break
        check(events[-1]["cmd"] == "final", "the packed request ends in FINAL (got %s)" % events[-1])
        check(all(e["request_id"] == rid.decode() for e in events), "every reply names the request")
        check(all(n == 2 for n in wire), "every reply came packed, two frames (got %s)" % wire)
        data = [e for e in events if e["cmd"] == "partial" and e["kind"] == "data"]
        explain = [e for e in events if e["cmd"] == "partial" and e["kind"] == "explain"]
        check(len(data) == 3, "3 data partials (got %d)" % len(data))
        check(explain and explain[-1]["body"].get("end_of_trace") is True, "the trace ends")
        check(events[-1]["body"].get("echo") == body, "FINAL echoes the body")

        client.socket.send_multipart([b"\x07not-an-envelope", b"x"])
        client.socket.send_multipart([b"\x01\x09GBC01", b"x"])
        events = client.call("echo", {"question": "still there"}, deadline_ms=10000, timeout_ms=10000)
        check(events[-1] is not None and events[-1]["cmd"] == "final",
              "after two malformed envelopes the same connection is still served")

        classic = GbcClient(h.endpoint, HEARTBEAT_MS)
        try:
            events = classic.call("echo", {"question": "classic"}, deadline_ms=10000,
                                  timeout_ms=10000)
            check(events[-1] is not None and events[-1]["cmd"] == "final"
                  and classic.last_wire_frames == 5, "a classic client beside it gets classic frames")
        finally:
            classic.close()
    finally:
        client.close()


def test_mmi_service(h):
    """mmi.service answers 200 for a registered service, 404 for another, 501 for unknown mmi."""
    h.start_with_py_worker("py-echo", "echo")
    client = MajorDomoClient(h.endpoint, timeout_ms=5000)
    try:
        check(client.send("mmi.service", [b"py-echo"]) == [b"200"], "mmi.service py-echo -> 200")
        check(client.send("mmi.service", [b"no-such-service"]) == [b"404"],
              "mmi.service no-such-service -> 404")
        check(client.send("mmi.no-such-thing", [b""]) == [b"501"], "mmi.no-such-thing -> 501")
    finally:
        client.destroy()
    gbc = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        events = gbc.call("mmi.service", "py-echo", timeout_ms=5000)
        check(events[-1] is not None and events[-1]["cmd"] == "final"
              and events[-1]["body"] == 200, "GBC01 mmi.service py-echo -> FINAL 200")
        events = gbc.call("mmi.no-such-thing", "{}", timeout_ms=5000)
        check(events[-1] is not None and events[-1]["cmd"] == "error"
              and events[-1]["type"] == "UnknownService", "GBC01 unknown mmi -> UnknownService")
    finally:
        gbc.close()


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main(tests=None, description=__doc__):
    """Runs the one test the command line names (`--glassbox PATH NAME`) with a fresh Harness;
    the exit status says whether it passed. Other scripts pass their own `tests` table."""
    tests = TESTS if tests is None else tests
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--glassbox", required=True)
    parser.add_argument("test", choices=sorted(tests))
    args = parser.parse_args()
    h = Harness(args.glassbox)
    failed = True
    try:
        tests[args.test](h)
        failed = False
    except Check as e:
        print("FAILED: " + str(e), flush=True)
    except Exception:  # noqa: BLE001 - report any crash as a test failure
        traceback.print_exc()
    finally:
        h.stop(keep=failed)
    print("%s: %s" % (args.test, "FAIL" if failed else "PASS"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
