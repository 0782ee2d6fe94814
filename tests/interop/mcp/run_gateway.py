#!/usr/bin/python3
"""The SDK client test against the real gateway: `glassbox up` (every worker) with ops/sample
loaded, `glassbox gateway` on a free port with a short MCP session idle timeout, then
sdk_client.mjs --real (every tool on real runs, the trace's routing and sub-run, a session that
expires).

Exit: the client's (0, 1), or 77 when node, the SDK or the trace collector is absent.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "traces"))
sys.path.insert(0, os.path.join(HERE, "..", "rag"))
import glassbox_up  # noqa: E402
from run_rag_interop import wait_for_services  # noqa: E402  (exits 77 without rdflib)

SKIP = 77
SAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "ops", "sample"))
SERVICES = ["trace", "store", "embeddings", "llm", "graph-rag", "document-rag", "query"]


def start_gateway(p, broker, idle_ms):
    ready = os.path.join(p.workdir, "gateway.ready")
    log = open(os.path.join(p.workdir, "gateway.log"), "wb")
    gateway = subprocess.Popen([p.glassbox, "gateway", "--listen", "127.0.0.1:0", "--broker", broker,
                                "--ready-file", ready, "--mcp-session-idle-ms", str(idle_ms)],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 30
    while not os.path.exists(ready) or os.path.getsize(ready) == 0:
        if gateway.poll() is not None or time.time() > deadline:
            raise RuntimeError("glassbox gateway did not start; see " + log.name)
        time.sleep(0.05)
    with open(ready) as f:
        return gateway, json.load(f)["url"]


def stop(process):
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glassbox", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--idle-ms", type=int, default=1500)
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        print("SKIP: node is not installed")
        return SKIP
    if not os.path.isdir(os.path.join(HERE, "node_modules", "@modelcontextprotocol", "sdk")):
        print("SKIP: @modelcontextprotocol/sdk is not installed in tests/interop/mcp "
              "(ops/install-deps installs it when npm can reach its registry)")
        return SKIP
    p = glassbox_up.UpPipeline(args.glassbox, args.workdir)
    gateway = None
    try:
        broker = p.start("--no-gateway")
        missing = wait_for_services(p, SERVICES)
        if "trace" in missing:
            print("SKIP: the trace service did not register (is the trace collector started by glassbox up?)")
            return SKIP
        if missing:
            print("FAIL: glassbox up: no worker registered for %r" % missing)
            return 1
        p.run("load", "rdf", os.path.join(SAMPLE, "orrin.ttl"), "--tier", "1")
        p.run("load", "docs", os.path.join(SAMPLE, "docs"))
        gateway, url = start_gateway(p, broker, args.idle_ms)
        return subprocess.run([node, os.path.join(HERE, "sdk_client.mjs"), "--url", url + "/mcp",
                               "--idle-ms", str(args.idle_ms), "--real",
                               "--question", "Who founded the shipyard that built the MV Curlew?",
                               "--search", "shipyard"], timeout=600).returncode
    finally:
        stop(gateway)
        p.stop()


if __name__ == "__main__":
    sys.exit(main())
