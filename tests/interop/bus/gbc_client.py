#!/usr/bin/python3
"""A glassbox streaming client (GBC01), written from docs/protocol.md §4 alone.

A DEALER socket; REQUEST with a request id and a relative deadline, then PARTIALs
(`data` or `explain`) and exactly one terminal FINAL or ERROR. It also sends CANCEL and
the HEARTBEAT that lets a client learn that the broker restarted. With `packed` it sends
every message in the packed form of §1.4 ([envelope] [last frame]) and reads replies in it.

Usage as a program (prints one JSON object per message received, the terminal one last):
    gbc_client.py --broker tcp://127.0.0.1:5555 echo '{"question": "hi", "partials": 3}'
Exit status: 0 on FINAL, 1 on ERROR, 2 when no terminal message came in time.
"""

import argparse
import json
import sys
import time
import uuid

import zmq

from dealer_peer import DealerPeer

GBC01 = b"GBC01"
REQUEST = b"\x01"
PARTIAL = b"\x02"
FINAL = b"\x03"
CANCEL = b"\x04"
ERROR = b"\x05"
HEARTBEAT = b"\x06"


def leb128(n):
    out = bytearray()
    while n >= 0x80:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    out.append(n)
    return bytes(out)


def pack(frames):
    """§1.4: the frames after the empty delimiter, f1 ... fn, as [envelope] [fn]."""
    envelope = b"\x01" + b"".join(leb128(len(f)) + f for f in frames[:-1])
    return [envelope, frames[-1]]


def unpack(msg):
    """The classic frames of a packed message ([b""] + fields + [last]); a classic one as is."""
    if not msg or msg[0] == b"":
        return msg
    if len(msg) != 2 or msg[0][:1] != b"\x01":
        raise ValueError("not a packed message")
    envelope, fields, at = msg[0], [b""], 1
    while at < len(envelope):
        length, shift = 0, 0
        while True:
            byte = envelope[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        fields.append(envelope[at:at + length])
        at += length
    return fields + [msg[1]]


def decode_body(frame):
    try:
        return json.loads(frame.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"raw": frame.decode("utf-8", errors="replace")}


class GbcClient(DealerPeer):
    def __init__(self, broker, heartbeat_ms=2500, ctx=None, packed=False):
        super().__init__(broker, ctx)
        self.packed = packed
        self.last_wire_frames = 0  # how many frames the last message had on the wire
        self.heartbeat_ms = heartbeat_ms
        self.in_flight = set()
        self.next_heartbeat = time.monotonic() + heartbeat_ms / 1000.0

    def request(self, service, body, deadline_ms=0, request_id=None):
        """REQUEST [empty] ["GBC01"] [0x01] [service] [request-id] [deadline-ms] [body]"""
        rid = request_id if request_id is not None else uuid.uuid4().hex.encode()
        if isinstance(rid, str):
            rid = rid.encode()
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send([b"", GBC01, REQUEST, service.encode(), rid, str(deadline_ms).encode(), body])
        self.in_flight.add(rid)
        return rid

    def send(self, frames):
        self.socket.send_multipart(pack(frames[1:]) if self.packed else frames)

    def cancel(self, rid):
        self.send([b"", GBC01, CANCEL, rid])

    def heartbeat(self, rids=None):
        ids = list(self.in_flight if rids is None else rids)
        self.send([b"", GBC01, HEARTBEAT] + ids)

    def recv(self, timeout_ms):
        """The next message as a dict, or None on timeout. Sends HEARTBEATs while waiting."""
        stop = time.monotonic() + timeout_ms / 1000.0
        while True:
            now = time.monotonic()
            if now >= self.next_heartbeat:
                if self.in_flight:
                    self.heartbeat()
                self.next_heartbeat = now + self.heartbeat_ms / 1000.0
            wait = min(stop, self.next_heartbeat) - now
            if self.socket.poll(max(1, int(wait * 1000)), zmq.POLLIN):
                return self.parse(self.socket.recv_multipart())
            if time.monotonic() >= stop:
                return None

    def parse(self, msg):
        self.last_wire_frames = len(msg)
        try:
            msg = unpack(msg)
        except (ValueError, IndexError):
            return {"cmd": "invalid", "frames": [f.hex() for f in msg]}
        if len(msg) < 4 or msg[0] != b"" or msg[1] != GBC01:
            return {"cmd": "invalid", "frames": [f.hex() for f in msg]}
        cmd, rid = msg[2], msg[3]
        out = {"request_id": rid.decode("utf-8", errors="replace")}
        if cmd == PARTIAL and len(msg) == 6:
            out.update(cmd="partial", kind=msg[4].decode(), body=decode_body(msg[5]))
        elif cmd == FINAL and len(msg) == 5:
            out.update(cmd="final", body=decode_body(msg[4]))
            self.in_flight.discard(rid)
        elif cmd == ERROR and len(msg) == 6:
            out.update(cmd="error", type=msg[4].decode("utf-8", errors="replace"),
                       message=msg[5].decode("utf-8", errors="replace"))
            self.in_flight.discard(rid)
        else:
            out.update(cmd="invalid", frames=[f.hex() for f in msg])
        return out

    def call(self, service, body, deadline_ms=0, timeout_ms=10000, cancel_after_ms=None):
        """One request; returns all its messages, the terminal one last (or None last on timeout)."""
        rid = self.request(service, body, deadline_ms)
        events = []
        stop = time.monotonic() + timeout_ms / 1000.0
        cancel_at = None if cancel_after_ms is None else time.monotonic() + cancel_after_ms / 1000.0
        while True:
            now = time.monotonic()
            if now >= stop:
                events.append(None)
                return events
            limit = stop if cancel_at is None else min(stop, cancel_at)
            event = self.recv(max(1, int((limit - now) * 1000)))
            if event is None:
                if cancel_at is not None and time.monotonic() >= cancel_at:
                    self.cancel(rid)
                    cancel_at = None
                continue
            if event.get("request_id") != rid.decode():
                continue
            events.append(event)
            if event["cmd"] in ("final", "error", "invalid"):
                return events


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--deadline-ms", type=int, default=0)
    parser.add_argument("--timeout-ms", type=int, default=10000)
    parser.add_argument("--cancel-after-ms", type=int)
    parser.add_argument("--heartbeat-ms", type=int, default=2500)
    parser.add_argument("service")
    parser.add_argument("body")
    args = parser.parse_args()
    client = GbcClient(args.broker, args.heartbeat_ms)
    try:
        events = client.call(args.service, args.body, args.deadline_ms, args.timeout_ms,
                             args.cancel_after_ms)
    finally:
        client.close()
    for event in events:
        if event is not None:
            print(json.dumps(event), flush=True)
    last = events[-1]
    if last is None:
        print("gbc_client: no terminal message within %d ms" % args.timeout_ms, file=sys.stderr)
        return 2
    return 0 if last["cmd"] == "final" else 1


if __name__ == "__main__":
    sys.exit(main())
