#!/usr/bin/python3
"""A classic 7/MDP Majordomo worker (MDPW01), in the style of the zguide's mdwrkapi.py.

Written from docs/protocol.md and RFC 7/MDP alone: READY, REQUEST, REPLY, HEARTBEAT and
DISCONNECT, no glassbox extensions (it never declares GBW01). It proves that an unmodified
Majordomo worker works through the glassbox broker.

Usage as a program:
    mdp_worker.py --broker tcp://127.0.0.1:5555 --service py-echo [--mode echo|wrap]

`echo` replies with the request's body frames unchanged; `wrap` replies with one JSON frame
{"worker": "mdp_worker.py", "service": S, "body": <first body frame, as JSON or string>}.
"""

import argparse
import json
import os
import signal
import sys
import time

import zmq

MDPW01 = b"MDPW01"
READY = b"\x01"
REQUEST = b"\x02"
REPLY = b"\x03"
HEARTBEAT = b"\x04"
DISCONNECT = b"\x05"


class MajorDomoWorker:
    """Majordomo Protocol worker API (7/MDP), after the zguide's mdwrkapi."""

    def __init__(self, broker, service, heartbeat_ms=2500, liveness=3, reconnect_ms=250,
                 verbose=False):
        self.broker = broker
        self.service = service.encode() if isinstance(service, str) else service
        self.heartbeat_ms = heartbeat_ms
        self.liveness_max = liveness
        self.reconnect_ms = reconnect_ms
        self.verbose = verbose
        self.ctx = zmq.Context()
        self.worker = None
        self.poller = zmq.Poller()
        self.broker_seen_at = 0.0
        self.heartbeat_at = 0.0
        self.reply_to = None
        self.expect_reply = False
        self.requests_served = 0
        self.reconnect_to_broker()

    def log(self, text):
        if self.verbose:
            print("mdp_worker: " + text, file=sys.stderr, flush=True)

    def reconnect_to_broker(self):
        """Connect or reconnect to the broker with a new socket, then send READY (7/MDP)."""
        if self.worker is not None:
            self.poller.unregister(self.worker)
            self.worker.close(linger=0)
        self.worker = self.ctx.socket(zmq.DEALER)
        self.worker.setsockopt(zmq.LINGER, 0)
        self.worker.connect(self.broker)
        self.poller.register(self.worker, zmq.POLLIN)
        self.log("connecting to broker at %s" % self.broker)
        self.send_to_broker(READY, self.service)
        self.broker_seen_at = time.monotonic()

    def send_to_broker(self, command, option=None, msg=None):
        """[empty] ["MDPW01"] [command] [option]? [msg...]"""
        frames = [b"", MDPW01, command]
        if option is not None:
            frames.append(option)
        if msg:
            frames.extend(msg)
        self.worker.send_multipart(frames)
        # Any message counts as a sign of life: push the next heartbeat out.
        self.heartbeat_at = time.monotonic() + self.heartbeat_ms / 1000.0

    def recv(self, reply=None, stop_at=None):
        """Send a reply (if any), then wait for the next request; returns its body frames.

        Returns None if stop_at (a monotonic time) passes first.
        """
        assert reply is not None or not self.expect_reply
        if reply is not None:
            assert self.reply_to is not None
            # REPLY: [token] [empty] [body]...
            self.send_to_broker(REPLY, self.reply_to, [b""] + list(reply))
            self.requests_served += 1
        self.expect_reply = True
        while True:
            now = time.monotonic()
            if stop_at is not None and now >= stop_at:
                return None
            wait_s = self.heartbeat_at - now
            if stop_at is not None:
                wait_s = min(wait_s, stop_at - now)
            items = self.poller.poll(max(0, int(wait_s * 1000)) + 1)
            if items:
                msg = self.worker.recv_multipart()
                self.broker_seen_at = time.monotonic()
                if len(msg) < 3 or msg[0] != b"" or msg[1] != MDPW01:
                    self.log("invalid message from broker: %r" % (msg,))
                    continue
                command = msg[2]
                if command == REQUEST:
                    # [token] [empty] [body]...
                    if len(msg) < 5 or msg[4] != b"":
                        self.log("malformed REQUEST: %r" % (msg,))
                        continue
                    self.reply_to = msg[3]
                    return msg[5:]
                if command == HEARTBEAT:
                    pass
                elif command == DISCONNECT:
                    self.log("broker sent DISCONNECT; reconnecting")
                    self.reconnect_to_broker()
                else:
                    self.log("invalid command from broker: %r" % (command,))
            elif (time.monotonic() - self.broker_seen_at
                  > self.liveness_max * self.heartbeat_ms / 1000.0):
                # 7/MDP: a broker silent for `liveness` intervals is dead; reconnect.
                self.log("broker silent; reconnecting")
                time.sleep(self.reconnect_ms / 1000.0)  # 7/MDP: the reconnect interval itself
                self.reconnect_to_broker()
            if time.monotonic() >= self.heartbeat_at:
                self.send_to_broker(HEARTBEAT)

    def disconnect(self):
        if self.worker is not None:
            try:
                self.send_to_broker(DISCONNECT)
            except zmq.ZMQError:
                pass

    def destroy(self):
        if self.worker is not None:
            self.worker.close(linger=100)
            self.worker = None
        self.ctx.term()


def make_reply(mode, service, body):
    if mode == "echo":
        return body
    first = body[0] if body else b""
    try:
        value = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        value = first.decode("utf-8", errors="replace")
    return [json.dumps({"worker": "mdp_worker.py", "service": service, "body": value}).encode()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--mode", choices=["echo", "wrap"], default="echo")
    parser.add_argument("--heartbeat-ms", type=int, default=2500)
    parser.add_argument("--delay-ms", type=int, default=0, help="sleep before each reply")
    parser.add_argument("--max-requests", type=int, default=0, help="exit after N replies")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))

    worker = MajorDomoWorker(args.broker, args.service, heartbeat_ms=args.heartbeat_ms,
                             verbose=args.verbose)
    reply = None
    try:
        while not stopping:
            if args.max_requests and worker.requests_served >= args.max_requests:
                break
            request = worker.recv(reply, stop_at=time.monotonic() + 0.2)
            reply = None
            if request is None:
                # Keep waiting for the same request without re-sending anything.
                worker.expect_reply = False
                continue
            if args.delay_ms:
                # A slow worker on purpose: the probes that ask for it are about held requests.
                time.sleep(args.delay_ms / 1000.0)
            reply = make_reply(args.mode, args.service, request)
        if reply is not None:
            worker.recv(reply, stop_at=time.monotonic())
    except zmq.ZMQError as e:
        print("mdp_worker: %s" % e, file=sys.stderr)
    finally:
        worker.disconnect()
        worker.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
