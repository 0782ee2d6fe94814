#!/usr/bin/python3
"""The SDK client test against the MCP server on cpp-httplib over a canned Backend (no bus).

Starts mcp_stub_server (it prints its port), runs sdk_client.mjs against it with a short session
idle timeout, stops the server. Exit: the script's (0, 1, or 77 when node or the SDK is absent).
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stub", required=True)
    parser.add_argument("--idle-ms", default="1500")
    parser.add_argument("--sse", action="store_true", help="the server answers POSTs as event streams")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        print("SKIP: node is not installed")
        return 77
    server = subprocess.Popen([args.stub, args.idle_ms] + (["sse"] if args.sse else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().strip()
        if not port.isdigit():
            print("FAIL: mcp_stub_server printed no port")
            return 1
        return subprocess.run([node, os.path.join(HERE, "sdk_client.mjs"), "--url", "http://127.0.0.1:%s/mcp" % port,
                               "--idle-ms", args.idle_ms, "--question", "Who founded the yard?"],
                              timeout=240).returncode
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
