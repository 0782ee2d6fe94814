#!/usr/bin/python3
"""The bus's integrity probes (issue 20): a few lines of pyzmq each, against the real broker.

Each test replays one thing a security probe did to the broker and checks that it no longer
works: a forged step in another user's completed trace, answers for a request the worker was
not given, ACKs from a peer that never attached, and a second collector breaking traces by
taking part of them. Started like run_bus_interop.py (which supplies the harness):

    run_integrity_probes.py --glassbox /path/to/glassbox <test>
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zmq  # noqa: E402

from gbc_client import GbcClient  # noqa: E402
from gbe_collector import GbeCollector  # noqa: E402
import run_bus_interop  # noqa: E402  (puts tests/support on the path)
import interop_scripts  # noqa: E402
from run_bus_interop import HEARTBEAT_MS, Check, check  # noqa: E402

MDPW01 = b"MDPW01"
GBE01 = b"GBE01"


class RogueWorker:
    """A GBW01 worker (docs/protocol.md §5) that answers however the test tells it to."""

    def __init__(self, endpoint, service):
        self.ctx = zmq.Context()
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)
        self.send(b"\x01", service.encode(), b"GBW01")

    def send(self, command, *frames):
        self.socket.send_multipart([b"", MDPW01, command] + list(frames))

    def next_request(self, timeout_ms=5000):
        """The next REQUEST's (token, meta, body), answering the broker's heartbeats meanwhile."""
        stop = time.monotonic() + timeout_ms / 1000.0
        while time.monotonic() < stop:
            if not self.socket.poll(100, zmq.POLLIN):
                self.send(b"\x04")
                continue
            msg = self.socket.recv_multipart()
            if len(msg) == 7 and msg[1] == MDPW01 and msg[2] == b"\x02":
                return msg[3], json.loads(msg[5]), msg[6]
            self.send(b"\x04")
        raise Check("the rogue worker got a request within %d ms" % timeout_ms)

    def partial(self, token, body):
        self.send(b"\x06", token, b"", json.dumps(body).encode())

    def explain(self, token, session, seq, state, body):
        self.send(b"\x07", token, b"", session.encode(), str(seq).encode(), state.encode(),
                  json.dumps(body).encode())

    def error(self, token, error_type, message):
        self.send(b"\x08", token, b"", error_type.encode(), message.encode())

    def reply(self, token, body):
        self.send(b"\x03", token, b"", json.dumps(body).encode())

    def close(self):
        try:
            self.send(b"\x05")
        except zmq.ZMQError:
            pass
        self.socket.close(linger=100)
        self.ctx.term()


def start_collector(h, name="trace-collector"):
    """`glassbox worker trace-collector` storing into <home>/collector/traces.db."""
    return h.spawn(name, [
        h.glassbox, "worker", "trace-collector", "--broker", h.endpoint,
        "--home", os.path.join(h.home, "collector"), "--heartbeat-ms", str(HEARTBEAT_MS)])


def stop_process(h, proc):
    """SIGTERM one process this harness started, and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    h.procs = [(n, p) for n, p in h.procs if p is not proc]


def status(h):
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        events = client.call("mmi.status", {}, timeout_ms=5000)
    finally:
        client.close()
    check(events[-1] is not None and events[-1]["cmd"] == "final", "mmi.status answers")
    return events[-1]["body"]


def trace_call(h, body):
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        events = client.call("trace", body, timeout_ms=5000)
    finally:
        client.close()
    return events[-1]


def wait_until(what, predicate, timeout_s=15):
    value = interop_scripts.poll_until(predicate, timeout_s, 0.1)
    if not value:
        raise Check(what + " within %d s" % timeout_s)
    return value


def shown(h, session):
    """The trace service's `show` of a session, or None while it is not stored."""
    answer = trace_call(h, {"op": "show", "session": session})
    if answer is None or answer["cmd"] != "final":
        return None
    return answer["body"]


def log_of(h, name):
    with open(os.path.join(h.home, name + ".err"), errors="replace") as f:
        return f.read()


def ask_echo(client, question):
    """One echo request: its explain bodies and the FINAL's session."""
    events = client.call("echo", {"question": question}, deadline_ms=10000, timeout_ms=10000)
    check(events[-1] is not None and events[-1]["cmd"] == "final", "echo answers '%s'" % question)
    explains = [e["body"] for e in events if e["cmd"] == "partial" and e["kind"] == "explain"]
    return events[-1]["body"]["session"], explains


def forge(rogue, client, victim, template, seq):
    """The probe: a request reaches the rogue, which writes step `seq` into `victim` and replies."""
    rid = client.request("echo", {"question": "anything"}, 10000)
    token, _, _ = rogue.next_request()
    step = dict(template)
    step.update(seq=seq, explain_id=victim.replace(":question", ":forged"), worker=template["worker"],
                end_of_trace=False, trace_status="")
    rogue.explain(token, victim, seq, "open", step)
    rogue.reply(token, {"echo": "forged", "session": victim})
    events = []
    while not events or events[-1]["cmd"] not in ("final", "error"):
        event = client.recv(5000)
        check(event is not None, "the rogue's client gets its answer")
        if event["request_id"] == rid.decode():
            events.append(event)
    return events


def forge_as_new_worker(h, client, victim, template, seq):
    """forge() by a RogueWorker of echo that joins for it and leaves after."""
    rogue = RogueWorker(h.endpoint, "echo")
    try:
        return forge(rogue, client, victim, template, seq)
    finally:
        rogue.close()


def test_forged_step(h):
    """A rogue worker cannot add a step to another user's completed trace (§5.3, §6.1)."""
    h.start_broker()
    echo = h.start_echo_worker()
    start_collector(h)
    h.wait_service("echo")
    h.wait_service("trace")
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        victim, explains = ask_echo(client, "the victim's question")
        before = wait_until("the victim's trace is stored complete", lambda: (
            lambda s: s if s and s["session"]["status"] == "complete" else None)(shown(h, victim)))
        events_before = before["session"]["events"]
        stop_process(h, echo)

        # The rogue takes over the service and writes into the victim's ended session.
        answer = forge_as_new_worker(h, client, victim, explains[0], 77)
        check(answer[-1]["cmd"] == "final", "the rogue's request itself completes")
        # Wait for the broker's verdict and for the collector to have stored all it was given
        # (nothing left in the spool), rather than for "long enough".
        wait_until("the broker counts the forged explain",
                   lambda: status(h)["counters"].get("foreign_sessions") == 1)
        wait_until("every spooled explain message is stored",
                   lambda: status(h)["spool"].get("messages") == 0)
        after = shown(h, victim)
        check(after["session"]["events"] == events_before and
              all(e["seq"] != 77 for e in after["events"]),
              "the victim's trace is unchanged (%d events, %d before)"
              % (after["session"]["events"], events_before))
        check(not [e for e in answer if e["cmd"] == "partial" and e["kind"] == "explain"],
              "the rogue's client gets no explain message of the victim's session")
        counters = status(h)["counters"]
        check(counters.get("foreign_sessions") == 1,
              "mmi.status counts the forged explain (foreign_sessions %s)"
              % counters.get("foreign_sessions"))
        check("event=forged_explain" in log_of(h, "broker"), "the broker logs event=forged_explain")

        # After a restart the broker has no record of the victim's session: the collector
        # refuses the write into an ended session itself.
        for name, proc in list(h.procs):
            stop_process(h, proc)
        client.close()
        os.remove(os.path.join(h.home, "broker.ready.json"))
        h.start_broker()
        client = GbcClient(h.endpoint, HEARTBEAT_MS)
        start_collector(h, "trace-collector-2")
        h.wait_service("trace")
        answer = forge_as_new_worker(h, client, victim, explains[0], 78)
        check(answer[-1]["cmd"] == "final", "after the restart the rogue's request completes")
        wait_until("the collector refuses the write into the ended session",
                   lambda: "event=explain_refused" in log_of(h, "trace-collector-2"))
        after = shown(h, victim)
        check(after["session"]["events"] == events_before and after["session"]["status"] == "complete"
              and all(e["seq"] not in (77, 78) for e in after["events"]),
              "the victim's trace is still unchanged")
        stats = trace_call(h, {"op": "stats"})["body"]
        check(stats.get("quarantined", 0) >= 1, "the refused message is kept aside (quarantined)")
    finally:
        client.close()


def test_forged_reply(h):
    """A worker cannot answer, stream or fail a request it was not given (§5.1)."""
    h.start_broker()
    holder = RogueWorker(h.endpoint, "echo")
    rogue = None
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        h.wait_service("echo")
        rid = client.request("echo", {"question": "whose answer?"}, 10000)
        token, _, _ = holder.next_request()
        rogue = RogueWorker(h.endpoint, "echo")
        rogue.partial(token, {"forged": "chunk"})
        rogue.error(token, "Internal", "forged error")
        rogue.reply(token, {"forged": "reply"})
        wait_until("the broker counts the three forged answers",
                   lambda: status(h)["counters"].get("foreign_tokens") == 3)
        holder.reply(token, {"genuine": True})
        event = client.recv(5000)
        check(event is not None and event["request_id"] == rid.decode() and event["cmd"] == "final"
              and event["body"] == {"genuine": True},
              "the client's first and only message is the holder's FINAL")
        check(client.recv(300) is None, "nothing forged follows")
        lines = [l for l in log_of(h, "broker").splitlines() if "event=foreign_token" in l]
        check(len(lines) == 3 and all(" warning " in l for l in lines),
              "the broker logs each forged answer as a warning")
    finally:
        client.close()
        holder.close()
        if rogue is not None:
            rogue.close()


def test_ack_flood(h):
    """ACKs from a peer that never attached take nothing from the spool (§6.1)."""
    h.start_broker()
    h.start_echo_worker()
    h.wait_service("echo")
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    sessions = []
    try:
        for i in range(10):
            session, _ = ask_echo(client, "question %d" % i)
            sessions.append(session)
    finally:
        client.close()
    spooled = wait_until("every explain message is spooled",
                         lambda: status(h)["spool"]["messages"])
    ctx = zmq.Context()
    flooder = ctx.socket(zmq.DEALER)
    flooder.setsockopt(zmq.LINGER, 0)
    flooder.connect(h.endpoint)
    try:
        ids = [str(i).encode() for i in range(1, 100001)]
        for first in range(0, len(ids), 60):  # §1.1: at most 64 frames a message
            flooder.send_multipart([b"", GBE01, b"\x03"] + ids[first:first + 60])
        # Read by the broker once every id is refused, or (as before issue 20) once the ACKs
        # have emptied the spool.
        wait_until("the broker reads the whole flood", lambda: (
            lambda s: s["counters"].get("acks_refused") == 100000 or s["spool"]["messages"] == 0)(
                status(h)))
        spool = status(h)["spool"]
        check(spool["messages"] == spooled,
              "the spool still holds its %d messages (has %d)" % (spooled, spool["messages"]))
        check(flooder.poll(2000, zmq.POLLIN) and flooder.recv_multipart() == [b"", GBE01, b"\x05"],
              "the flooder is told to attach (DETACH)")
    finally:
        flooder.close(linger=0)
        ctx.term()
    check("event=ack_refused" in log_of(h, "broker"), "the broker logs event=ack_refused")

    start_collector(h)
    h.wait_service("trace")
    for session in sessions:
        wait_until("trace %s stored complete" % session, lambda: (
            lambda s: s and s["session"]["status"] == "complete")(shown(h, session)))
    check(True, "all 10 traces reach the store once a collector attaches")


def test_second_collector(h):
    """A second collector takes whole traces, never parts of them (§6.1, session-affine)."""
    h.start_broker()
    h.start_echo_worker(threads=2)
    start_collector(h)
    h.wait_service("echo")
    h.wait_service("trace")
    second = GbeCollector(h.endpoint, window=64, heartbeat_ms=HEARTBEAT_MS)
    client = GbcClient(h.endpoint, HEARTBEAT_MS)
    try:
        wait_until("two collectors attached", lambda: status(h)["spool"]["collectors"] == 2)
        expected = {}
        rids = {}
        for i in range(30):
            rids[client.request("echo", {"question": "q%d" % i}, 20000).decode()] = i
        explains = {}
        finals = 0
        stop = time.monotonic() + 20
        while finals < 30 and time.monotonic() < stop:
            second.poll_once(5)
            event = client.recv(5)
            if event is None or event["request_id"] not in rids:
                continue
            if event["cmd"] == "partial" and event["kind"] == "explain":
                explains.setdefault(event["body"]["session"], set()).add(event["body"]["seq"])
            elif event["cmd"] == "final":
                finals += 1
        check(finals == 30, "30 requests answered")
        expected = explains
        total = sum(len(s) for s in expected.values())

        def stored_events():
            listed = trace_call(h, {"op": "list", "limit": 100})
            sessions = listed["body"]["sessions"] if listed and listed["cmd"] == "final" else []
            return {s["session"]: s for s in sessions}

        def delivered():
            second.run(100)
            return len(second.messages) + sum(s["events"] for s in stored_events().values()) >= total

        wait_until("all %d explain messages stored by one collector or the other" % total, delivered)
        second.run(300)
        in_store = stored_events()
        in_second = {}
        for session, seq in second.messages:
            in_second.setdefault(session, set()).add(seq)
        broken = [s for s in expected
                  if (s in in_second and in_second[s] != expected[s])
                  or (s in in_store and (s in in_second or in_store[s]["status"] != "complete"
                                         or in_store[s]["events"] != len(expected[s])))]
        check(not broken, "no trace is split between the collectors (%d broken of %d: %s)"
              % (len(broken), len(expected), broken[:3]))
        check(set(in_store) | set(in_second) == set(expected), "every trace is held whole by one")
        check(in_store and in_second, "both collectors hold traces (%d and %d)"
              % (len(in_store), len(in_second)))
    finally:
        client.close()
        second.close()


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


if __name__ == "__main__":
    sys.exit(run_bus_interop.main(TESTS, __doc__))
