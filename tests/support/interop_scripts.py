"""What the Python interop and doc scripts share: the skip status, waiting on a condition with a
deadline, and starting and stopping a process that says it is ready by writing a file.

A script beside tests/interop/<suite>/ imports it after
`sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))`.
"""
import os
import signal
import subprocess
import sys
import time

SKIP = 77  # the exit status CTest's SKIP_RETURN_CODE reads as "skipped"


def require_rdflib(name="rdflib (python3-rdflib)"):
    """rdflib, or exit SKIP saying that `name` is missing."""
    try:
        import rdflib
    except ImportError:
        print("SKIP: %s is not installed for" % name, sys.executable)
        sys.exit(SKIP)
    return rdflib


def poll_until(predicate, timeout_s, interval_s=0.2):
    """The first true value of `predicate`, polled until `timeout_s` passes; None if it never is.
    The interval only bounds how late the caller notices: it orders nothing."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval_s)


def wait_for_ready_file(path, proc, what, log_name, timeout_s=30):
    """Waits until `proc` has written a non-empty ready file at `path`; raises RuntimeError naming
    `what` and its log when it exits first or `timeout_s` passes."""
    def written():
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        if proc.poll() is not None:
            raise RuntimeError("%s did not start; see %s" % (what, log_name))
        return False
    if not poll_until(written, timeout_s, 0.05):
        raise RuntimeError("%s did not start; see %s" % (what, log_name))


def interrupt_process_group(proc, timeout_s=20):
    """SIGINT to `proc` (a graceful stop), then SIGKILL to its process group if it is still
    running after `timeout_s`. Nothing when it has already ended."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def report(problems, ok_message):
    """Prints each problem as a FAIL line, or `ok: <ok_message>` when there is none; the exit
    status that says which."""
    for problem in problems:
        print("FAIL:", problem)
    if problems:
        return 1
    print("ok: " + ok_message)
    return 0
