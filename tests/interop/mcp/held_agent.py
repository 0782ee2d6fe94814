"""A stand-in for the `agent` service in the MCP gateway test: a GBW01 worker (docs/protocol.md
§5.1, §5.3) that holds every request it is given until the broker cancels it, so a question
asked with mode agent stays in flight on the real pipeline for as long as a test needs to cancel
it. Needs pyzmq (Debian python3-zmq)."""
import json
import threading
import time

import glassbox_up

HOLD_S = 60  # a request never cancelled is answered after this (the test has failed by then)


class HeldAgent(glassbox_up.WorkerThread):
    def __init__(self, endpoint, curve=None, service="agent", credit=8):
        super().__init__(endpoint, service, curve)
        self.credit = credit
        self.lock = threading.Lock()
        self.received = 0
        self.cancelled = 0
        self.answered = 0
        self.held = {}  # token -> when to answer anyway

    def counts(self):
        with self.lock:
            return {"received": self.received, "cancelled": self.cancelled, "answered": self.answered}

    def ready_frames(self):
        return [b"GBW01", str(self.credit).encode()]

    def on_message(self, sock, msg):
        command = msg[2] if len(msg) >= 3 else b""
        if command == b"\x02" and len(msg) >= 7:  # REQUEST [token] [empty] [meta] [body]
            self.held[msg[3]] = time.monotonic() + HOLD_S
            with self.lock:
                self.received += 1
        elif command == b"\x09" and len(msg) >= 4:  # CANCEL [token]: end it (§5.3)
            if self.held.pop(msg[3], None) is not None:
                sock.send_multipart([b"", b"MDPW01", b"\x08", msg[3], b"", b"Cancelled", b"cancelled"])
                with self.lock:
                    self.cancelled += 1

    def on_tick(self, sock, now):
        for token in [t for t, until in self.held.items() if until <= now]:
            del self.held[token]
            reply = {"response": "held too long", "answer": "", "citations": [], "sources": []}
            sock.send_multipart([b"", b"MDPW01", b"\x03", token, b"", json.dumps(reply).encode()])
            with self.lock:
                self.answered += 1
