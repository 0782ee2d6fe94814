#!/usr/bin/python3
"""A minimal glassbox trace collector (GBE01), written from docs/protocol.md §6.1 alone.

ATTACHes with a window, records every DELIVER keyed by (session, seq) — idempotently, as
the protocol requires — ACKs it, heartbeats, and re-ATTACHes when the broker DETACHes it.

Usage as a program: collect for a while, then print a JSON summary:
    gbe_collector.py --broker tcp://127.0.0.1:5555 --for-ms 3000
"""

import argparse
import json
import sys
import time

import zmq

from dealer_peer import DealerPeer

GBE01 = b"GBE01"
ATTACH = b"\x01"
DELIVER = b"\x02"
ACK = b"\x03"
HEARTBEAT = b"\x04"
DETACH = b"\x05"


class GbeCollector(DealerPeer):
    def __init__(self, broker, window=64, heartbeat_ms=2500, ctx=None):
        super().__init__(broker, ctx)
        self.window = window
        self.heartbeat_ms = heartbeat_ms
        self.messages = {}          # (session, seq) -> {"service", "state", "body"}
        self.deliveries = 0         # DELIVER messages received, duplicates included
        self.duplicates = []        # (session, seq) seen more than once
        self.delivery_ids = []
        self.detached = 0
        self.next_heartbeat = 0.0
        self.attach()

    def send(self, command, *frames):
        self.socket.send_multipart([b"", GBE01, command] + list(frames))
        self.next_heartbeat = time.monotonic() + self.heartbeat_ms / 1000.0

    def attach(self):
        self.send(ATTACH, str(self.window).encode())

    def detach(self):
        self.send(DETACH)

    def poll_once(self, timeout_ms):
        """Handles at most one message; returns True if one came."""
        if time.monotonic() >= self.next_heartbeat:
            self.send(HEARTBEAT)
        if not self.socket.poll(max(1, timeout_ms), zmq.POLLIN):
            return False
        msg = self.socket.recv_multipart()
        if len(msg) < 3 or msg[0] != b"" or msg[1] != GBE01:
            return True
        cmd = msg[2]
        if cmd == DELIVER and len(msg) == 9:
            delivery_id, service, session, seq, state, body = msg[3:9]
            key = (session.decode(), int(seq))
            self.deliveries += 1
            self.delivery_ids.append(int(delivery_id))
            if key in self.messages:
                self.duplicates.append(key)
            self.messages[key] = {"service": service.decode(), "state": state.decode(),
                                  "body": json.loads(body.decode("utf-8"))}
            # "Durably stored" here means kept in memory for the test's lifetime.
            self.send(ACK, delivery_id)
        elif cmd == DETACH:
            self.detached += 1
            self.attach()
        return True

    def run(self, for_ms):
        stop = time.monotonic() + for_ms / 1000.0
        while time.monotonic() < stop:
            self.poll_once(min(100, int((stop - time.monotonic()) * 1000) + 1))

    def run_until(self, predicate, timeout_ms, quiet_ms=0):
        """Runs until predicate() holds (then `quiet_ms` more, to catch duplicates) or timeout."""
        stop = time.monotonic() + timeout_ms / 1000.0
        while time.monotonic() < stop:
            if predicate():
                self.run(quiet_ms)
                return True
            self.poll_once(100)
        return predicate()

    def summary(self):
        return {"messages": len(self.messages), "deliveries": self.deliveries,
                "duplicates": len(self.duplicates), "detached": self.detached,
                "sessions": sorted({k[0] for k in self.messages})}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--for-ms", type=int, default=3000)
    args = parser.parse_args()
    collector = GbeCollector(args.broker, args.window)
    try:
        collector.run(args.for_ms)
        collector.detach()
    finally:
        collector.close()
    print(json.dumps(collector.summary()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
