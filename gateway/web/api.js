// The gateway's REST API (docs/http.md) and a Server-Sent Events reader over fetch: EventSource
// cannot POST, and a question is a POST.
"use strict";
(function (GB) {
  // A typed error from a problem+json body (RFC 9457), or from the transport.
  class ApiError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || ("HTTP " + status));
      this.status = status;
      this.type = (problem && problem.error) || (status ? "HttpError" : "NetworkError");
      this.requestId = problem && problem.request_id;
    }
  }

  // A gateway started with --tokens wants `Authorization: Bearer <token>` (docs/http.md). The
  // token is kept for this tab only (sessionStorage), never in a URL.
  const TOKEN_KEY = "glassbox.token";
  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; }
  }
  function setToken(value) {
    try { if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* storage off */ }
  }
  function headers(extra) {
    const out = Object.assign({}, extra);
    const t = token();
    if (t) out.Authorization = "Bearer " + t;
    return out;
  }

  async function failure(response) {
    let problem = null;
    try { problem = await response.json(); } catch (e) { /* not JSON: the status says enough */ }
    return new ApiError(response.status, problem);
  }

  async function getText(path, signal) {
    const response = await fetch(path, {headers: headers({Accept: "application/json"}), signal});
    if (!response.ok) throw await failure(response);
    return response.text();
  }
  const getJson = async (path, signal) => JSON.parse(await getText(path, signal));

  // Incremental SSE parsing (the WHATWG event-stream format): lines end in \n, \r\n or \r;
  // a blank line dispatches; `:` lines are comments (the server's keep-alives).
  class SseParser {
    constructor(onEvent) {
      this.onEvent = onEvent;
      this.buffer = "";
      this.reset();
    }
    reset() { this.event = ""; this.data = []; this.id = ""; }
    push(text) {
      this.buffer += text;
      let start = 0;
      for (;;) {
        let end = -1, next = -1;
        for (let i = start; i < this.buffer.length; i++) {
          const c = this.buffer.charCodeAt(i);
          if (c === 10) { end = i; next = i + 1; break; }
          if (c === 13) {
            // A \r at the very end may be the first half of \r\n: wait for more.
            if (i + 1 === this.buffer.length) break;
            end = i; next = this.buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1; break;
          }
        }
        if (end < 0) break;
        this.line(this.buffer.slice(start, end));
        start = next;
      }
      this.buffer = this.buffer.slice(start);
    }
    line(line) {
      if (line === "") {
        if (this.data.length) this.onEvent({event: this.event || "message", id: this.id, data: this.data.join("\n")});
        this.reset();
        return;
      }
      if (line.charCodeAt(0) === 58) return;  // ':' comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
      if (field === "event") this.event = value;
      else if (field === "data") this.data.push(value);
      else if (field === "id") this.id = value;
    }
  }

  // POST /api/v1/query as a stream; calls onEvent(name, data, id) per event. Resolves when the
  // stream ends; rejects with ApiError on an HTTP error, or the AbortError when cancelled.
  async function streamQuery(body, onEvent, signal) {
    const response = await fetch("/api/v1/query", {
      method: "POST", signal,
      headers: headers({"Content-Type": "application/json", Accept: "text/event-stream"}),
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    const parser = new SseParser((ev) => {
      let data;
      try { data = JSON.parse(ev.data); } catch (e) { data = {raw: ev.data}; }
      onEvent(ev.event, data, ev.id);
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, {stream: true}));
    }
    parser.push(decoder.decode() + "\n\n");
  }

  function traceUrl(id, format) {
    return "/api/v1/traces/" + encodeURIComponent(id) + (format ? "?format=" + format : "");
  }

  function listTraces(filters, signal) {
    const q = new URLSearchParams();
    for (const k of Object.keys(filters)) {
      const v = filters[k];
      if (v !== "" && v !== null && v !== undefined && v !== false) q.set(k, String(v));
    }
    return getJson("/api/v1/traces?" + q.toString(), signal);
  }

  // A download with the bearer token: a plain link cannot carry the header, so the body is
  // fetched and handed to the browser as a file.
  async function download(url, name) {
    const response = await fetch(url, {headers: headers()});
    if (!response.ok) throw await failure(response);
    const href = URL.createObjectURL(await response.blob());
    const a = document.createElement("a");
    a.href = href;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 10000);
  }

  // Two stored runs compared (the trace service's compare: docs/traces.md, "Replay and compare").
  function compareTraces(a, b, signal) {
    return getJson("/api/v1/traces/compare?" + new URLSearchParams({a, b}).toString(), signal);
  }

  // Evaluation runs (docs/evaluation.md, "Evaluation runs"): a page of them, one with its rows.
  const evalUrl = (name) => "/api/v1/evals/" + encodeURIComponent(name);
  function listEvals(offset, signal) {
    return getJson("/api/v1/evals?" + new URLSearchParams({limit: "50", offset: String(offset || 0)}).toString(), signal);
  }
  // A chart as an object URL: an <img src> cannot carry the bearer token, so the SVG is fetched
  // and handed to the image as a blob (an image runs no script of its document either way).
  async function chartObjectUrl(path, signal) {
    const response = await fetch(path, {headers: headers({Accept: "image/svg+xml"}), signal});
    if (!response.ok) throw await failure(response);
    return URL.createObjectURL(await response.blob());
  }

  GB.api = {ApiError, SseParser, streamQuery, getJson, listTraces, traceUrl, token, setToken, headers, download,
    compareTraces, listEvals, evalUrl, chartObjectUrl,
    showEval: (name, signal) => getJson(evalUrl(name), signal),
    showTrace: (id, signal) => getJson(traceUrl(id), signal),
    // The body unparsed, so that a caller can time the parse with the rendering.
    showTraceText: (id, signal) => getText(traceUrl(id), signal)};
})(window.GB = window.GB || {});
