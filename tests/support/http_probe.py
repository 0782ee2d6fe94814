#!/usr/bin/python3
"""One HTTP request with Python's own client (urllib), printed as one JSON object, for the
gateway's tests: a client written apart from the server under test.

Usage: http_probe.py METHOD URL [--body TEXT] [--header 'Name: value']... [--timeout S]
                     [--close-after-events N]

Prints {"status", "headers": {lower-case name: value}, "body": text} or, for a
text/event-stream answer, {"status", "headers", "events": [{"event", "id", "data"}],
"comments": N, "ended": true|false} with each event's data parsed as JSON (kept as text when
it is not). --close-after-events closes the connection after that many events (a client that
goes away).
"""
import argparse
import json
import sys
import urllib.error
import urllib.request


def read_events(response, close_after):
    events, comments, current = [], 0, {}
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if current:
                data = current.get("data")
                try:
                    current["data"] = json.loads(data) if data is not None else None
                except ValueError:
                    pass
                events.append(current)
                current = {}
                if close_after and len(events) >= close_after:
                    return events, comments, False
            continue
        if line.startswith(":"):
            comments += 1
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data" and "data" in current:
            current["data"] += "\n" + value
        else:
            current[name] = value
    return events, comments, True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("method")
    parser.add_argument("url")
    parser.add_argument("--body")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--close-after-events", type=int, default=0)
    args = parser.parse_args()
    headers = {}
    for h in args.header:
        name, _, value = h.partition(":")
        headers[name.strip()] = value.strip()
    # surrogateescape: bytes of the command line that are not UTF-8 are sent as they are.
    data = args.body.encode("utf-8", "surrogateescape") if args.body is not None else None
    if data is not None and "Content-Type" not in headers:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(args.url, data=data, method=args.method, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=args.timeout)
    except urllib.error.HTTPError as error:
        response = error
    out = {"status": response.status,
           "headers": {k.lower(): v for k, v in response.headers.items()}}
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        out["events"], out["comments"], out["ended"] = read_events(response, args.close_after_events)
        response.close()
    else:
        out["body"] = response.read().decode("utf-8", errors="replace")
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
