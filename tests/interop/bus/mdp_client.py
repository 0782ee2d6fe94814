#!/usr/bin/python3
"""A classic 7/MDP Majordomo client (MDPC01), in the style of the zguide's mdcliapi.py.

Written from docs/protocol.md and RFC 7/MDP alone: a REQ socket, one REQUEST, one REPLY,
with a timeout and a bounded number of retries (reconnecting with a new socket, as the
zguide's "lazy pirate" client does). No glassbox extensions.

Usage as a program (prints the reply's body frames as one JSON list of strings):
    mdp_client.py --broker tcp://127.0.0.1:5555 mmi.service echo
"""

import argparse
import json
import sys

import zmq

MDPC01 = b"MDPC01"


class MajorDomoClient:
    """Majordomo Protocol client API (7/MDP), after the zguide's mdcliapi."""

    def __init__(self, broker, timeout_ms=2500, retries=1, verbose=False):
        self.broker = broker
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.verbose = verbose
        self.ctx = zmq.Context()
        self.client = None
        self.poller = zmq.Poller()
        self.reconnect_to_broker()

    def log(self, text):
        if self.verbose:
            print("mdp_client: " + text, file=sys.stderr, flush=True)

    def reconnect_to_broker(self):
        if self.client is not None:
            self.poller.unregister(self.client)
            self.client.close(linger=0)
        self.client = self.ctx.socket(zmq.REQ)
        self.client.setsockopt(zmq.LINGER, 0)
        self.client.connect(self.broker)
        self.poller.register(self.client, zmq.POLLIN)
        self.log("connecting to broker at %s" % self.broker)

    def send(self, service, request):
        """Sends a request; returns the reply's body frames, or None after all retries.

        REQUEST: [empty] ["MDPC01"] [service] [body]...  (REQ adds the empty frame)
        REPLY:   [empty] ["MDPC01"] [service] [body]...
        """
        if isinstance(service, str):
            service = service.encode()
        if not isinstance(request, list):
            request = [request]
        request = [f.encode() if isinstance(f, str) else f for f in request]
        frames = [MDPC01, service] + request
        retries = self.retries
        while retries > 0:
            self.client.send_multipart(frames)
            items = self.poller.poll(self.timeout_ms)
            if items:
                msg = self.client.recv_multipart()
                if len(msg) < 2 or msg[0] != MDPC01:
                    raise ValueError("reply is not MDPC01: %r" % (msg,))
                if msg[1] != service:
                    raise ValueError("reply names service %r, expected %r" % (msg[1], service))
                return msg[2:]
            retries -= 1
            self.log("no reply, %d retries left" % retries)
            self.reconnect_to_broker()
        return None

    def destroy(self):
        if self.client is not None:
            self.client.close(linger=0)
            self.client = None
        self.ctx.term()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--timeout-ms", type=int, default=5000)
    parser.add_argument("--retries", type=int, default=1)
    parser.add_argument("service")
    parser.add_argument("body", nargs="*")
    args = parser.parse_args()
    client = MajorDomoClient(args.broker, args.timeout_ms, args.retries)
    try:
        reply = client.send(args.service, args.body)
    finally:
        client.destroy()
    if reply is None:
        print("mdp_client: no reply from %s" % args.broker, file=sys.stderr)
        return 2
    print(json.dumps([f.decode("utf-8", errors="replace") for f in reply]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
