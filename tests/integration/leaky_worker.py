#!/usr/bin/python3
"""A stand-in worker for the gateway's path audit (issue 31): it fails every request with an
Internal error whose message names files of the server, as a worker with a careless error text
would. The gateway must pass none of those paths on to a client.

A GBW01 worker (docs/protocol.md §5.1, §5.3) over pyzmq (Debian python3-zmq):
  leaky_worker.py ENDPOINT SERVICE MESSAGE
It runs until the broker disconnects it or it is terminated.
"""
import signal
import sys
import time

import zmq


def main():
    endpoint, service, message = sys.argv[1], sys.argv[2], sys.argv[3]
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    sock.send_multipart([b"", b"MDPW01", b"\x01", service.encode(), b"GBW01", b"4"])
    heartbeat_at = time.monotonic() + 0.25
    while not stopping:
        if sock.poll(100):
            msg = sock.recv_multipart()
            command = msg[2] if len(msg) >= 3 else b""
            if command == b"\x02" and len(msg) >= 5:  # REQUEST [token] [empty] [meta] [body]: fail it
                sock.send_multipart([b"", b"MDPW01", b"\x08", msg[3], b"", b"Internal", message.encode()])
            elif command == b"\x05":  # DISCONNECT
                return 0
        if time.monotonic() >= heartbeat_at:
            sock.send_multipart([b"", b"MDPW01", b"\x04"])
            heartbeat_at = time.monotonic() + 0.25
    sock.send_multipart([b"", b"MDPW01", b"\x05"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
