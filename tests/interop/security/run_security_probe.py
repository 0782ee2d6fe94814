"""The security probe of issue 20, replayed with pyzmq against `glassbox up` (CURVE by default).

Each probe is something a few lines of pyzmq could do to a glassbox without CURVE; each must now
fail: a rogue worker without a key gets no one's questions, a worker key cannot register another
service, nothing without the `subscriber` role reads the explain topic, nothing without the
`collector` role takes the spool, plain TCP on a non-loopback address is refused, and another
local user (no access to the owner-only home) cannot talk to the broker. pyzmq with the home's
certificates (the ZeroMQ certificate format) is let in: the format is the one libzmq tools read.

Exit 0 when every check passes, 1 on a failed check, 77 (skip) without pyzmq or CURVE support.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces"))
import glassbox_up  # noqa: E402

try:
    import zmq
except ImportError:
    print("SKIP: pyzmq (Debian python3-zmq) is not installed")
    sys.exit(77)
if not zmq.has("curve"):
    print("SKIP: this libzmq has no CURVE")
    sys.exit(77)

TIMEOUT_S = 2.0


def drain(sock, seconds):
    """Every message `sock` receives within `seconds`."""
    got = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if sock.poll(50):
            got.append(sock.recv_multipart())
    return got


def socket(ctx, kind, endpoint, curve=None):
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    glassbox_up.apply_curve(sock, curve)
    sock.connect(endpoint)
    return sock


def main():
    args = glassbox_up.glassbox_and_workdir()

    up = glassbox_up.UpPipeline(args.glassbox, args.workdir)
    ctx = zmq.Context()
    try:
        endpoint = up.start()
        with open(os.path.join(up.workdir, "up.ready")) as f:
            pub = json.load(f)["pub_endpoint"]
        up.wait_for("the echo service", lambda: b"200" in up.run("call", "mmi.service", "echo", check=False).stdout)
        up.wait_for("the trace service", lambda: b"200" in up.run("call", "mmi.service", "trace", check=False).stdout)
        server_key = up.curve_keys("client")["server"]

        # A key of its own, allowed, that may only serve echo: what a worker host would get.
        up.run("keys", "new", "rogue", "--role", "worker:echo")
        # The broker looks at its allow-list folder once a second (docs/security.md); the key
        # works from its next reload on, and the probes below may start sooner than that.
        broker_log = os.path.join(up.home, "logs", "broker.log")
        reloads = lambda: open(broker_log, errors="replace").read().count("event=allowed_keys_reloaded")
        reloads_before = reloads()
        up.run("keys", "allow", os.path.join(up.home, "keys", "rogue.key"))
        up.wait_for("the broker's reload of the allow-list", lambda: reloads() > reloads_before)
        rogue_cert = glassbox_up.read_certificate(os.path.join(up.home, "keys", "rogue.key_secret"))
        rogue = {"server": server_key, "public": rogue_cert["public-key"], "secret": rogue_cert["secret-key"]}
        stranger_public, stranger_secret = zmq.curve_keypair()
        stranger = {"server": server_key, "public": stranger_public.decode(), "secret": stranger_secret.decode()}

        # Probe 1: `READY graph-rag GBW01` without a key (and with a key nobody allowed) received
        # users' questions. Now: no handshake, no request; every user's call is answered by echo.
        keyless = socket(ctx, zmq.DEALER, endpoint)
        unknown = socket(ctx, zmq.DEALER, endpoint, stranger)
        for sock in (keyless, unknown):
            sock.send_multipart([b"", b"MDPW01", b"\x01", b"echo", b"GBW01"])
        answered = 0
        for i in range(10):
            r = up.run("call", "echo", json.dumps({"question": "q%d" % i}), check=False)
            answered += r.returncode == 0 and ("q%d" % i) in r.stdout.decode()
        up.expect(answered == 10, "every user's call answered by the real echo worker (%d of 10)" % answered)
        up.expect(drain(keyless, 0.5) == [], "a worker without a key received nothing")
        up.expect(drain(unknown, 0.2) == [], "a worker with a key not allowed received nothing")

        # Probe 2: a rogue `trace` worker answered `traces list`. A worker key may register only
        # its own services: READY trace is answered with DISCONNECT.
        rogue_worker = socket(ctx, zmq.DEALER, endpoint, rogue)
        rogue_worker.send_multipart([b"", b"MDPW01", b"\x01", b"trace", b"GBW01"])
        replies = [m for m in drain(rogue_worker, TIMEOUT_S) if m[2:3] != [b"\x04"]]
        up.expect(replies[:1] == [[b"", b"MDPW01", b"\x05"]],
                  "READY for a service the key may not serve gets DISCONNECT (got %r)" % replies[:1])
        listed = up.run("traces", "list", "--json", check=False)
        up.expect(listed.returncode == 0 and "fake" not in listed.stdout.decode(), "traces list is the real one")

        # Probe 6: subscribing to `explain.` read every question and answer. Only keys with the
        # `subscriber` role (the home's client key) read it now.
        watchers = {"no key": socket(ctx, zmq.SUB, pub), "not allowed": socket(ctx, zmq.SUB, pub, stranger),
                    "worker key": socket(ctx, zmq.SUB, pub, rogue),
                    "subscriber": socket(ctx, zmq.SUB, pub, up.curve_keys("client"))}
        subscribed = json.loads(up.run("status", "--json").stdout)["topic"]["subscriptions"]
        for sock in watchers.values():
            sock.setsockopt(zmq.SUBSCRIBE, b"explain.")
        # PUB/SUB: the subscriber's subscription reaches the broker before anything is published.
        up.wait_for("the subscriber's subscription reaches the broker", lambda: json.loads(
            up.run("status", "--json").stdout)["topic"]["subscriptions"] >= subscribed + 1)
        up.run("call", "echo", json.dumps({"question": "private question"}))
        seen = {name: drain(sock, TIMEOUT_S if name == "subscriber" else 0.3) for name, sock in watchers.items()}
        up.expect(len(seen["subscriber"]) > 0, "a key with the subscriber role reads the topic")
        for name in ("no key", "not allowed", "worker key"):
            up.expect(seen[name] == [], "the explain topic is closed to a subscriber with %s" % name)

        # Probes 4 and 5: ACKs without attaching, and a second collector taking the spool. Without
        # the `collector` role ATTACH is answered with DETACH and ACKs are dropped.
        rogue_collector = socket(ctx, zmq.DEALER, endpoint, rogue)
        rogue_collector.send_multipart([b"", b"GBE01", b"\x01", b"1000"])
        replies = drain(rogue_collector, TIMEOUT_S)
        up.expect(replies[:1] == [[b"", b"GBE01", b"\x05"]], "ATTACH without the collector role gets DETACH")
        rogue_collector.send_multipart([b"", b"GBE01", b"\x03"] + [str(i).encode() for i in range(1, 2001)])
        status = json.loads(up.run("status", "--json").stdout)
        up.expect(status["security"]["mode"] == "curve", "status says CURVE")
        up.expect(status["security"]["messages_refused"] >= 2, "refused messages are counted")
        up.expect(status["security"]["peers_refused"] >= 2, "refused connections are counted")
        up.expect(status["spool"]["collectors"] == 1, "only the real collector is attached")

        # pyzmq with the home's client certificate is an ordinary GBC01 client.
        client = socket(ctx, zmq.DEALER, endpoint, up.curve_keys("client"))
        client.send_multipart([b"", b"GBC01", b"\x01", b"echo", b"py-1", b"5000", b'{"question": "from pyzmq"}'])
        final = [m for m in drain(client, TIMEOUT_S) if m[2:3] == [b"\x03"]]
        up.expect(len(final) == 1 and b"from pyzmq" in final[0][-1], "a pyzmq CURVE client is served")

        # Another local user cannot read the owner-only home, so has no keys: refused.
        if os.geteuid() == 0 and shutil.which("setpriv"):
            other_home = os.path.join(up.workdir, "nobody-home")
            os.makedirs(other_home, mode=0o700)
            os.chown(other_home, 65534, 65534)
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", args.glassbox,
                                "call", "echo", "{}", "--broker", endpoint, "--home", other_home,
                                "--timeout-ms", "5000"], capture_output=True, timeout=30)
            up.expect(r.returncode != 0, "another local user's client is refused (exit %d)" % r.returncode)
            up.expect(b"disagree on security" in r.stderr, "and told why: %r" % r.stderr[-300:])
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", args.glassbox,
                                "call", "echo", "{}", "--home", up.home, "--timeout-ms", "5000"],
                               capture_output=True, timeout=30)
            up.expect(r.returncode != 0, "nor can it use the owner-only home's keys")
        else:
            print("note: not root or no setpriv: the other-user probe is skipped")

        # Probe 7: `--bind tcp://0.0.0.0:…` listened on all interfaces with no warning. Plain TCP
        # there is refused without --insecure.
        plain_home = os.path.join(up.workdir, "plain-home")
        r = subprocess.run([args.glassbox, "broker", "--bind", "tcp://0.0.0.0:0", "--pub", "tcp://127.0.0.1:0",
                            "--home", plain_home], capture_output=True, timeout=30)
        up.expect(r.returncode != 0 and b"--insecure" in r.stderr,
                  "a plain broker on 0.0.0.0 is refused (exit %d, %r)" % (r.returncode, r.stderr[-200:]))
    except Exception as error:  # a probe that cannot run is a failure, not a skip
        up.failures.append("probe aborted: %r" % (error,))
        print("FAIL: probe aborted:", repr(error))
    finally:
        ctx.destroy(linger=0)
        up.stop()

    print("%d checks, %d failed" % (up.checks, len(up.failures)))
    return 1 if up.failures else 0


if __name__ == "__main__":
    sys.exit(main())
