"""`glassbox up` in a fresh home for an interop script: start, stop, run CLI commands, count checks;
and WorkerThread, a GBW01 worker written from docs/protocol.md §5 (ExplainWorker answers with explain messages).

Shared by run_traces_interop.py, third_party_iris.py and ../viewer/run_viewer_test.py.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import interop_scripts  # noqa: E402


def glassbox_and_workdir():
    """The command line of a script that runs `glassbox up`: --glassbox PATH --workdir DIR."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--glassbox", required=True)
    parser.add_argument("--workdir", required=True)
    return parser.parse_args()


class UpPipeline:
    def __init__(self, glassbox, workdir):
        self.glassbox = glassbox
        self.workdir = workdir
        self.home = os.path.join(workdir, "home")
        self.up = None
        self.up_log = None
        self.failures = []
        self.checks = 0

    def start(self, extra_args=()):
        """Starts `glassbox up` on ephemeral ports; returns the broker endpoint once it is ready."""
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        ready = os.path.join(self.workdir, "up.ready")
        self.up_log = open(os.path.join(self.workdir, "up.log"), "wb")
        self.up = subprocess.Popen([self.glassbox, "up", "--home", self.home, "--bind", "tcp://127.0.0.1:*",
                                    "--pub", "tcp://127.0.0.1:*", "--heartbeat-ms", "250", "--ready-file", ready]
                                   + list(extra_args)
                                   # No gateway unless asked for: its default port is fixed, and
                                   # tests run side by side.
                                   + ([] if "--gateway-listen" in extra_args else ["--no-gateway"]),
                                   stdout=self.up_log, stderr=subprocess.STDOUT, start_new_session=True)
        interop_scripts.wait_for_ready_file(ready, self.up, "glassbox up", self.up_log.name)
        with open(ready) as f:
            return json.load(f)["endpoint"]

    def stop(self):
        interop_scripts.interrupt_process_group(self.up)

    def curve_keys(self, name):
        """The CURVE keys `glassbox up` made in the home for `name` (worker, client, collector), as
        {"server": broker public key, "public": ..., "secret": ...}, read from the certificate
        files (the ZeroMQ certificate text format) — what a third-party peer needs to connect."""
        keys = os.path.join(self.home, "keys")
        return {"server": read_certificate(os.path.join(keys, "broker.key"))["public-key"],
                "public": read_certificate(os.path.join(keys, name + ".key_secret"))["public-key"],
                "secret": read_certificate(os.path.join(keys, name + ".key_secret"))["secret-key"]}

    def run(self, *args, timeout_ms=10000, check=True):
        cmd = [self.glassbox] + list(args) + ["--home", self.home]
        if args[0] in ("call", "traces") and (len(args) < 2 or args[1] != "tail"):
            cmd += ["--timeout-ms", str(timeout_ms)]
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout_ms / 1000 + 30)
        if check and proc.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(args[:3]), proc.returncode, proc.stderr.decode()))
        return proc

    def expect(self, condition, message):
        self.checks += 1
        if not condition:
            self.failures.append(message)
            print("FAIL:", message)

    def summary(self):
        """Prints how many checks ran and failed; the exit status that says which."""
        print("%d checks, %d failures" % (self.checks, len(self.failures)))
        return 1 if self.failures else 0

    def wait_for(self, what, predicate):
        value = interop_scripts.poll_until(predicate, 30)
        if not value:
            raise RuntimeError("%s: not within 30 s" % what)
        return value


def read_certificate(path):
    """The `name = "value"` lines of a ZeroMQ certificate (ZPL), as a dict."""
    values = {}
    with open(path) as f:
        for line in f:
            if line.startswith((" ", "\t")) and "=" in line:
                key, value = line.split("=", 1)
                values[key.strip()] = value.strip().strip('"')
    return values


def apply_curve(sock, curve):
    """CURVE client options on a pyzmq socket, from UpPipeline.curve_keys()."""
    if curve:
        sock.curve_serverkey = curve["server"].encode()
        sock.curve_publickey = curve["public"].encode()
        sock.curve_secretkey = curve["secret"].encode()


class WorkerThread(threading.Thread):
    """A GBW01 worker (docs/protocol.md §5.1) for `service` on its own thread until stopped: READY
    (with ready_frames()), a HEARTBEAT every 250 ms, each message from the broker to on_message(),
    on_tick() between them, DISCONNECT at the end; an error or the broker's DISCONNECT ends it and
    is kept in `error`. Needs pyzmq (imported here so that scripts without a worker do not)."""

    def __init__(self, endpoint, service, curve=None):
        super().__init__(daemon=True)
        self.curve = curve
        self.endpoint = endpoint
        self.service = service
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.error = None

    def stop(self):
        self.stopping.set()
        if self.ident is not None:  # started
            self.join(5)

    def ready_frames(self):
        return [b"GBW01"]

    def on_message(self, sock, msg):
        pass

    def on_tick(self, sock, now):
        pass

    def run(self):
        import zmq
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        apply_curve(sock, self.curve)
        sock.connect(self.endpoint)
        try:
            sock.send_multipart([b"", b"MDPW01", b"\x01", self.service.encode()] + self.ready_frames())
            self.ready.set()
            heartbeat_at = time.monotonic() + 0.25
            while not self.stopping.is_set():
                if sock.poll(100):
                    msg = sock.recv_multipart()
                    if len(msg) >= 3 and msg[2] == b"\x05":
                        self.error = "the broker sent DISCONNECT"
                        return
                    self.on_message(sock, msg)
                now = time.monotonic()
                self.on_tick(sock, now)
                if now >= heartbeat_at:
                    sock.send_multipart([b"", b"MDPW01", b"\x04"])
                    heartbeat_at = now + 0.25
            sock.send_multipart([b"", b"MDPW01", b"\x05"])
        except Exception as e:  # reported by the main thread
            self.error = repr(e)
        finally:
            sock.close(linger=100)
            ctx.term()


class ExplainWorker(WorkerThread):
    """A GBW01 worker (docs/protocol.md §5.1, §5.3) serving `service` until stopped: each request is
    answered with the explain messages bodies() returns (§8 bodies, sent in order), then REPLY `reply`."""

    def __init__(self, endpoint, service, bodies, reply=b'{"answer": "done"}', curve=None):
        super().__init__(endpoint, service, curve)
        self.bodies = bodies
        self.reply = reply
        self.served = 0

    def on_message(self, sock, msg):
        if len(msg) >= 7 and msg[2] == b"\x02":
            token = msg[3]
            for body in self.bodies():
                state = {"": b"open"}.get(body["trace_status"], body["trace_status"].encode())
                sock.send_multipart([b"", b"MDPW01", b"\x07", token, b"", body["session"].encode(),
                                     str(body["seq"]).encode(), state, json.dumps(body).encode()])
            sock.send_multipart([b"", b"MDPW01", b"\x03", token, b"", self.reply])
            self.served += 1
