"""A stand-in for the `agent` service in the MCP gateway test: a GBW01 worker (docs/protocol.md
§5.1, §5.3) that holds every request it is given until the broker cancels it, so a question
asked with mode agent stays in flight on the real pipeline for as long as a test needs to cancel
it. Needs pyzmq (Debian python3-zmq)."""
import json
import threading
import time

import glassbox_up

HOLD_S = 60  # a request never cancelled is answered after this (the test has failed by then)


class HeldAgent(threading.Thread):
    def __init__(self, endpoint, curve=None, service="agent", credit=8):
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.curve = curve
        self.service = service
        self.credit = credit
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.lock = threading.Lock()
        self.received = 0
        self.cancelled = 0
        self.answered = 0
        self.error = None

    def stop(self):
        self.stopping.set()
        if self.ident is not None:
            self.join(5)

    def counts(self):
        with self.lock:
            return {"received": self.received, "cancelled": self.cancelled, "answered": self.answered}

    def run(self):
        import zmq
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        glassbox_up.apply_curve(sock, self.curve)
        sock.connect(self.endpoint)
        held = {}  # token -> when to answer anyway
        try:
            sock.send_multipart([b"", b"MDPW01", b"\x01", self.service.encode(), b"GBW01", str(self.credit).encode()])
            self.ready.set()
            heartbeat_at = time.monotonic() + 0.25
            while not self.stopping.is_set():
                if sock.poll(100):
                    msg = sock.recv_multipart()
                    command = msg[2] if len(msg) >= 3 else b""
                    if command == b"\x02" and len(msg) >= 7:  # REQUEST [token] [empty] [meta] [body]
                        held[msg[3]] = time.monotonic() + HOLD_S
                        with self.lock:
                            self.received += 1
                    elif command == b"\x09" and len(msg) >= 4:  # CANCEL [token]: end it (§5.3)
                        if held.pop(msg[3], None) is not None:
                            sock.send_multipart([b"", b"MDPW01", b"\x08", msg[3], b"", b"Cancelled", b"cancelled"])
                            with self.lock:
                                self.cancelled += 1
                    elif command == b"\x05":
                        self.error = "the broker sent DISCONNECT"
                        return
                now = time.monotonic()
                for token in [t for t, until in held.items() if until <= now]:
                    del held[token]
                    reply = {"response": "held too long", "answer": "", "citations": [], "sources": []}
                    sock.send_multipart([b"", b"MDPW01", b"\x03", token, b"", json.dumps(reply).encode()])
                    with self.lock:
                        self.answered += 1
                if now >= heartbeat_at:
                    sock.send_multipart([b"", b"MDPW01", b"\x04"])
                    heartbeat_at = now + 0.25
            sock.send_multipart([b"", b"MDPW01", b"\x05"])
        except Exception as e:  # reported by the main thread
            self.error = repr(e)
        finally:
            sock.close(linger=100)
            ctx.term()
