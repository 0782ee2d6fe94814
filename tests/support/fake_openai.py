#!/usr/bin/python3
"""A fake OpenAI-compatible server for tests: /v1/embeddings and /v1/chat/completions (plain and
SSE), with fault knobs and a record of every request. Standard library only.

Run:  /usr/bin/python3 tests/support/fake_openai.py [--ready-file PATH] [--api-key KEY] [--dim N]
It binds 127.0.0.1 on a free port, prints the port on stdout and, with --ready-file, writes it
there (atomically, by rename) once it accepts connections. SIGTERM or SIGINT stops it.

Protocol (what real OpenAI-compatible servers answer):
  POST /v1/embeddings        {"model", "input": str | [str], "dimensions"?}
        -> {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
            "usage": {"prompt_tokens", "total_tokens"}}; each vector is derived from the text
            (SHA-256), so the same text always gives the same vector.
  POST /v1/chat/completions  {"model", "messages": [...], "stream"?}
        -> the last user message echoed back as "echo: <text>" (or the next scripted reply, see
           "chat_replies"); with "stream": true as SSE `data: {chat.completion.chunk}` lines (one
           per word), a final chunk with finish_reason "stop" and "usage", then `data: [DONE]`.
           With "stream_options": {"include_usage": true} the usage travels as OpenAI sends it:
           in one more chunk whose "choices" is empty, after the finish chunk.
  With an API key configured, a missing or wrong "Authorization: Bearer <key>" gets 401 and an
  OpenAI-style {"error": {"message", "type", "code"}}.

Control (for tests):
  GET  /_requests  -> {"requests": [{"method", "path", "headers", "body"}]} (body parsed when JSON)
  POST /_reset     -> forget requests and knobs (the --api-key/--dim given at start stay)
  POST /_control   {knob: value, ...} sets knobs; they apply to /v1/ requests only:
     "fail_first": N, "fail_status": 429 (default) | 500 | ..., "retry_after": "S" or an HTTP-date
         answer the next N requests with that status (and Retry-After header when given)
     "delay_ms": N            sleep before answering each request (for timeouts)
     "malformed": "json" | "count" | "dim" | "nan" | "index" | "no_data" | null
         a broken answer: not JSON, one vector fewer, vectors of different sizes, a string
         where a number belongs, an index out of range, no "data"
     "reverse_data": bool     list embeddings in reverse order (clients must sort by index)
     "stream_delay_ms": N     sleep between SSE events
     "drop_after_chunks": N   cut a stream's connection after N content chunks (no [DONE])
     "api_key": str | null    require this key from now on
     "dim": N                 embedding size when the request does not say "dimensions"
     "chat_replies": [str]    scripted chat answers: each chat completion takes the next one
                              as its content (streamed word by word too); then echo again
     "chat_model": str | null the model chat answers name (default: the request's "model")
"""

import argparse
import hashlib
import json
import os
import signal
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_KNOBS = {
    "fail_first": 0,
    "fail_status": 429,
    "retry_after": None,
    "delay_ms": 0,
    "malformed": None,
    "reverse_data": False,
    "stream_delay_ms": 0,
    "drop_after_chunks": None,
    "chat_replies": [],
    "chat_model": None,
}


class State:
    def __init__(self, api_key, dim):
        self.lock = threading.Lock()
        self.start_api_key = api_key
        self.start_dim = dim
        self.reset()

    def reset(self):
        with self.lock:
            self.knobs = dict(DEFAULT_KNOBS)
            self.knobs["api_key"] = self.start_api_key
            self.knobs["dim"] = self.start_dim
            self.requests = []


def vector_for(text, dim):
    """Deterministic numbers in [-1, 1) from the text's SHA-256 stream."""
    out = []
    counter = 0
    while len(out) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode("utf-8")).digest()
        for (value,) in struct.iter_unpack(">H", digest):
            out.append(round(value / 32768.0 - 1.0, 6))
        counter += 1
    return out[:dim]


def openai_error(message, kind, code=None):
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so the client's connection reuse is exercised
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format, *args):  # quiet unless asked
        if self.server.verbose:
            sys.stderr.write("fake_openai: " + (format % args) + "\n")

    # ---- plumbing -------------------------------------------------------------------------
    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status, payload, headers=None, raw=None):
        body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _record(self, body_bytes):
        try:
            body = json.loads(body_bytes) if body_bytes else None
        except ValueError:
            body = body_bytes.decode("utf-8", "replace")
        entry = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                 "body": body}
        with self.server.state.lock:
            self.server.state.requests.append(entry)
        return body

    # ---- routes ---------------------------------------------------------------------------
    def do_GET(self):
        state = self.server.state
        if self.path == "/_requests":
            with state.lock:
                payload = {"requests": list(state.requests)}
            self._send(200, payload)
            return
        self._record(b"")
        self._send(404, openai_error(f"no route GET {self.path}", "invalid_request_error"))

    def do_POST(self):
        state = self.server.state
        raw = self._read_body()
        if self.path == "/_reset":
            state.reset()
            self._send(200, {"ok": True})
            return
        if self.path == "/_control":
            try:
                knobs = json.loads(raw or b"{}")
                if not isinstance(knobs, dict):
                    raise ValueError("expected an object")
                unknown = set(knobs) - set(DEFAULT_KNOBS) - {"api_key", "dim"}
                if unknown:
                    raise ValueError(f"unknown knobs {sorted(unknown)}")
            except ValueError as e:
                self._send(400, openai_error(str(e), "invalid_request_error"))
                return
            with state.lock:
                state.knobs.update(knobs)
            self._send(200, {"ok": True})
            return

        body = self._record(raw)
        with state.lock:
            knobs = dict(state.knobs)
            failing = knobs["fail_first"] > 0
            if failing:
                state.knobs["fail_first"] -= 1
            # A scripted chat reply is used up by the request that gets it (not by a failure).
            scripted = None
            if (not failing and self.path == "/v1/chat/completions" and state.knobs["chat_replies"]):
                scripted = state.knobs["chat_replies"][0]
                state.knobs["chat_replies"] = state.knobs["chat_replies"][1:]
            knobs["scripted"] = scripted
        if knobs["delay_ms"]:
            # A slow provider on purpose: the tests that set it are about timeouts and deadlines.
            time.sleep(knobs["delay_ms"] / 1000.0)
        if failing:
            headers = {}
            if knobs["retry_after"] is not None:
                headers["Retry-After"] = str(knobs["retry_after"])
            status = int(knobs["fail_status"])
            kind = "rate_limit_error" if status == 429 else "server_error"
            self._send(status, openai_error(f"fake failure with HTTP {status}", kind), headers)
            return
        key = knobs["api_key"]
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            self._send(401, openai_error("Incorrect API key provided.", "invalid_request_error",
                                         "invalid_api_key"))
            return
        if knobs["malformed"] == "json":
            self._send(200, None, raw=b'{"data": [ this is not json')
            return
        if not isinstance(body, dict):
            self._send(400, openai_error("the body must be a JSON object", "invalid_request_error"))
            return
        if self.path == "/v1/embeddings":
            self._embeddings(body, knobs)
        elif self.path == "/v1/chat/completions":
            self._chat(body, knobs)
        else:
            self._send(404, openai_error(f"no route POST {self.path}", "invalid_request_error"))

    def _embeddings(self, body, knobs):
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or not texts:
            self._send(400, openai_error("'input' must be a string or a non-empty list of strings",
                                         "invalid_request_error"))
            return
        dim = body.get("dimensions") or knobs["dim"]
        data = [{"object": "embedding", "index": i, "embedding": vector_for(t, dim)}
                for i, t in enumerate(texts)]
        mode = knobs["malformed"]
        if mode == "count":
            data = data[:-1]
        elif mode == "dim":
            data[-1]["embedding"] = data[-1]["embedding"][:-1] if dim > 1 else [0.0, 0.0]
        elif mode == "nan":
            data[0]["embedding"][0] = "0.5"
        elif mode == "index":
            data[0]["index"] = len(data) + 5
        if knobs["reverse_data"]:
            data.reverse()
        tokens = sum(len(t.split()) for t in texts)
        payload = {"object": "list", "data": data, "model": body.get("model", "fake-embedding"),
                   "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        if mode == "no_data":
            del payload["data"]
        self._send(200, payload)

    def _chat(self, body, knobs):
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            self._send(400, openai_error("'messages' must be a non-empty list", "invalid_request_error"))
            return
        last_user = ""
        for m in messages:
            if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
                last_user = m["content"]
        content = knobs["scripted"] if knobs["scripted"] is not None else f"echo: {last_user}"
        model = knobs["chat_model"] or body.get("model", "fake-chat")
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
        completion_tokens = len(content.split())
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        created = int(time.time())
        if not body.get("stream"):
            self._send(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": created,
                             "model": model,
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                          "finish_reason": "stop"}],
                             "usage": usage})
            return

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(text):
            data = text.encode("utf-8")
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if knobs["stream_delay_ms"]:
                # A slow stream on purpose (the tests that set it are about stopping or timing out).
                time.sleep(knobs["stream_delay_ms"] / 1000.0)

        def chunk(delta, finish=None, with_usage=False):
            obj = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created,
                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if with_usage:
                obj["usage"] = usage
            return "data: " + json.dumps(obj) + "\n\n"

        try:
            event(": fake stream\n\n")  # an SSE comment: clients must skip it
            words = content.split(" ")
            for i, word in enumerate(words):
                if knobs["drop_after_chunks"] is not None and i >= knobs["drop_after_chunks"]:
                    self.wfile.flush()
                    return  # connection closes without the last chunk: a broken stream
                piece = word if i == 0 else " " + word
                delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
                event(chunk(delta))
            options = body.get("stream_options")
            separate_usage = isinstance(options, dict) and options.get("include_usage") is True
            event(chunk({}, "stop", with_usage=not separate_usage))
            if separate_usage:
                event("data: " + json.dumps({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                                             "created": created, "model": model, "choices": [],
                                             "usage": usage}) + "\n\n")
            event("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: allowed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ready-file", help="write the chosen port here once serving")
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--dim", type=int, default=8, help="embedding size (default 8)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args.api_key, args.dim)
    server.verbose = args.verbose
    port = server.server_address[1]

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    print(port, flush=True)
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.ready_file)
    try:
        server.serve_forever(poll_interval=0.1)
    except SystemExit:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
