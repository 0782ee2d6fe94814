"""`glassbox up` in a fresh home for an interop script: start, stop, run CLI commands, count checks.

Shared by run_traces_interop.py and third_party_iris.py (each subclasses UpPipeline).
"""
import json
import os
import shutil
import signal
import subprocess
import time


class UpPipeline:
    def __init__(self, glassbox, workdir):
        self.glassbox = glassbox
        self.workdir = workdir
        self.home = os.path.join(workdir, "home")
        self.up = None
        self.up_log = None
        self.failures = []
        self.checks = 0

    def start(self, *extra):
        """Starts `glassbox up` on ephemeral ports (plus `extra` options); returns the broker
        endpoint once it is ready."""
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        ready = os.path.join(self.workdir, "up.ready")
        self.up_log = open(os.path.join(self.workdir, "up.log"), "wb")
        self.up = subprocess.Popen([self.glassbox, "up", "--home", self.home, "--bind", "tcp://127.0.0.1:*",
                                    "--pub", "tcp://127.0.0.1:*", "--heartbeat-ms", "250", "--ready-file", ready, *extra],
                                   stdout=self.up_log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 30
        while not os.path.exists(ready) or os.path.getsize(ready) == 0:
            if self.up.poll() is not None or time.time() > deadline:
                raise RuntimeError("glassbox up did not start; see " + self.up_log.name)
            time.sleep(0.05)
        with open(ready) as f:
            return json.load(f)["endpoint"]

    def stop(self):
        if self.up is None or self.up.poll() is not None:
            return
        self.up.send_signal(signal.SIGINT)
        try:
            self.up.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.up.pid, signal.SIGKILL)
            self.up.wait()

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

    def wait_for(self, what, predicate):
        deadline = time.time() + 30
        while time.time() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.2)
        raise RuntimeError("%s: not within 30 s" % what)
