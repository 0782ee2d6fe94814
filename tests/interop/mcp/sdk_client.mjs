// The official MCP TypeScript SDK client against glassbox's /mcp: connect, list, call every
// tool, progress, tool and protocol errors, resources, raw transport checks, cancellation (the
// SDK's AbortSignal, a notification, a client that leaves, DELETE), and a session that expires.
//
// node sdk_client.mjs --url http://127.0.0.1:PORT/mcp --idle-ms N --question "…" [--real]
// Exit 0 when every check passes, 1 on a failure, 77 when the SDK is not installed.
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const SKIP = 77;
const require = createRequire(import.meta.url);
try {
  require.resolve("@modelcontextprotocol/sdk/package.json");
} catch {
  console.log("SKIP: @modelcontextprotocol/sdk is not installed in tests/interop/mcp " +
              "(ops/install-deps installs it when npm can reach its registry)");
  process.exit(SKIP);
}
const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { McpError, EmptyResultSchema, LATEST_PROTOCOL_VERSION } = await import("@modelcontextprotocol/sdk/types.js");

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    "idle-ms": { type: "string", default: "1500" },
    question: { type: "string", default: "Who founded the shipyard that built the MV Curlew?" },
    search: { type: "string", default: "shipyard" },
    real: { type: "boolean", default: false },
  },
});
const url = new URL(opts.url);
const idleMs = Number(opts["idle-ms"]);

let checks = 0;
const failures = [];
function expect(condition, message) {
  checks += 1;
  if (!condition) {
    failures.push(message);
    console.log("FAIL:", message);
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect() {
  const client = new Client({ name: "glassbox-interop", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  return { client, transport };
}

// A promise's rejection, or null when it resolved.
async function rejection(promise) {
  try {
    await promise;
    return null;
  } catch (err) {
    return err;
  }
}

async function rawPost(headers, body) {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
}

// The promise's value, or an Error naming `what` when it takes longer than `ms`.
function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(what + ": not within " + ms + " ms")), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// The JSON-RPC messages of an SSE answer as they come: next() gives the next one, or null when
// the stream ends. Comments (keep-alives) are skipped.
function sseMessages(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return async function next() {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (data) return JSON.parse(data);
        continue;
      }
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += value;
    }
  };
}

// A word no other question holds, so list_traces' search finds one run.
const nonce = (what) => `${what}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

// Retries `probe` (which answers a value or null) until it answers, within 30 s.
async function eventually(what, probe) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(what + ": not within 30 s");
    await sleep(200);
  }
}

async function main() {
  // 1. Connect: initialize, the negotiated version, the server's identity.
  const { client, transport } = await connect();
  expect(client.getServerVersion()?.name === "glassbox", "serverInfo.name is glassbox");
  expect(transport.protocolVersion === LATEST_PROTOCOL_VERSION,
         `negotiated ${transport.protocolVersion}, expected ${LATEST_PROTOCOL_VERSION}`);
  expect(typeof transport.sessionId === "string" && transport.sessionId.length >= 32,
         "an Mcp-Session-Id of 128 bits or more");
  const caps = client.getServerCapabilities();
  expect(caps?.tools && caps?.resources, "tools and resources capabilities");

  // 2. Tools, with input and output schemas.
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  expect(JSON.stringify(names) === JSON.stringify(["explain_trace", "list_evaluations", "list_traces", "resolve_intent",
                                                  "search_graph", "show_evaluation"]),
         "tools/list names " + names.join(","));
  expect(tools.every((t) => t.inputSchema?.type === "object" && t.outputSchema?.type === "object"),
         "every tool has an inputSchema and an outputSchema");

  // 3. Every tool. callTool validates structuredContent against the outputSchema itself.
  const asked = await client.callTool({ name: "resolve_intent", arguments: { question: opts.question } });
  const answer = asked.structuredContent ?? {};
  expect(!asked.isError, "resolve_intent: " + JSON.stringify(asked.content));
  expect(typeof answer.answer === "string" && answer.answer.length > 0, "resolve_intent: an answer");
  // The answer of POST /api/v1/query (docs/http.md §3), without the bus's own fields.
  expect(["end_of_stream", "explain_triples", "message_type", "in_token", "session", "response"].every((k) => !(k in answer)),
         "resolve_intent: no wire fields, got " + Object.keys(answer).join(","));
  expect(typeof answer.usage?.input_tokens === "number", "resolve_intent: usage.input_tokens");
  expect(typeof answer.trace_id === "string" && answer.trace_id.startsWith("urn:glassbox:"),
         "resolve_intent: a trace id, got " + answer.trace_id);
  expect(Array.isArray(answer.citations) && Array.isArray(answer.sources), "resolve_intent: citations and sources");
  expect(JSON.parse(asked.content.at(-1).text).trace_id === answer.trace_id, "resolve_intent: the JSON text block");
  console.log("resolve_intent:", JSON.stringify(answer.answer).slice(0, 160), "trace", answer.trace_id);

  if (opts.real) {
    // The arguments reach the query worker: an explicit engine is the one that answers.
    // `query` is another name for the question (older clients).
    const docs = await client.callTool({ name: "resolve_intent", arguments: {
      query: "What happened to Saltspire Light in the Great Gale?", mode: "document-rag", session_id: "mcp-interop-1" } });
    const routed = docs.structuredContent ?? {};
    expect(!docs.isError && routed.answered_by === "document-rag" && routed.route?.method === "explicit",
           "resolve_intent mode document-rag: answered by " + routed.answered_by + ", route " + JSON.stringify(routed.route));
    expect(routed.citations.some((c) => c.kind === "chunk"), "resolve_intent mode document-rag: chunk citations");
  }

  const found = await client.callTool({ name: "search_graph", arguments: { query: opts.search, limit: 5 } });
  const hits = found.structuredContent ?? {};
  expect(!found.isError && (hits.edges?.length ?? 0) + (hits.chunks?.length ?? 0) > 0,
         "search_graph: edges or chunks for " + JSON.stringify(opts.search));
  expect((hits.edges?.length ?? 0) <= 5 && (hits.chunks?.length ?? 0) <= 5, "search_graph: the limit holds");

  // The trace is stored a moment after the answer (the collector's group commit).
  const listed = await eventually("list_traces shows the run", async () => {
    const r = await client.callTool({ name: "list_traces", arguments: { limit: 20 } });
    const sessions = r.structuredContent?.sessions ?? [];
    return sessions.some((s) => s.session === answer.trace_id) ? r : null;
  });
  expect(!listed.isError, "list_traces");

  const explained = await eventually("explain_trace of a complete run", async () => {
    const r = await client.callTool({ name: "explain_trace", arguments: { trace: answer.trace_id, max_triples: 50 } });
    return !r.isError && r.structuredContent?.summary?.status === "complete" ? r : null;
  });
  const view = explained.structuredContent;
  console.log("explain_trace:", view.steps.map((s) => "  ".repeat(s.depth) + s.type).join(" | "),
              `(${view.triples_total} triples)`);
  console.log("search_graph:", (hits.edges ?? []).length, "edges,", (hits.chunks ?? []).length, "chunks; first:",
              JSON.stringify((hits.edges ?? [])[0]?.text ?? (hits.chunks ?? [])[0]?.title));
  expect(view.steps.length > 0 && view.steps[0].type === "Question", "explain_trace: the first step is the Question");
  expect(view.triples.length > 0 && view.triples.length <= 50, "explain_trace: at most max_triples triples");
  expect(explained.content[0].text.includes("Question"), "explain_trace: a readable step list");
  if (opts.real) {
    const types = new Set(view.steps.map((s) => s.type));
    expect(types.has("RoutingDecision") && types.has("Conclusion"), "explain_trace: routing and conclusion steps, got " + [...types]);
    expect(view.steps.some((s) => s.depth > 0), "explain_trace: the engine's sub-run is nested");
  }

  // 3a. Evaluation runs (`glassbox eval`'s records). The stub holds one run of three questions;
  // the real gateway's store may hold none. callTool validates both against their outputSchema.
  const evals = await client.callTool({ name: "list_evaluations", arguments: { limit: 5 } });
  expect(!evals.isError && Array.isArray(evals.structuredContent?.runs) && typeof evals.structuredContent?.total === "number",
         "list_evaluations: runs and total, got " + JSON.stringify(evals.content));
  if (!opts.real) {
    const run = evals.structuredContent.runs[0];
    expect(run?.name === "canned-eval" && run.metrics?.hits1 > 0.6 && !("bins" in run.metrics),
           "list_evaluations: the run's metrics, got " + JSON.stringify(run));
    const shownEval = await client.callTool({ name: "show_evaluation", arguments: { name: "canned-eval", rows_limit: 2 } });
    const page = shownEval.structuredContent ?? {};
    expect(!shownEval.isError && page.rows?.length === 2 && page.rows_total === 3 && page.next_rows_offset === 2,
           "show_evaluation: a page of 2 of 3 rows, got " + JSON.stringify(shownEval.content));
    expect(page.metrics?.ece === 0.1 && page.metrics?.accuracy_at_coverage?.length === 2 && page.rows[0].verdict === "hit",
           "show_evaluation: ECE, accuracy at coverage and the rows' verdicts");
  }
  const noEval = await client.callTool({ name: "show_evaluation", arguments: { name: "no-such-evaluation" } });
  expect(noEval.isError && noEval.content[0].text.startsWith("NotFound"),
         "show_evaluation of an unknown run: isError NotFound, got " + JSON.stringify(noEval.content));
  console.log("list_evaluations:", evals.structuredContent.runs.length, "of", evals.structuredContent.total, "runs");

  // 3b. Progress: a call with onprogress (the SDK sends params._meta.progressToken) is answered
  // as a stream, one notification per step of the run, then the result.
  const steps = [];
  const watched = await client.callTool({ name: "resolve_intent", arguments: { question: opts.question } }, undefined,
                                        { onprogress: (p) => steps.push(p) });
  expect(!watched.isError && watched.structuredContent?.answer?.length > 0, "resolve_intent with onprogress: an answer");
  expect(steps.length >= 1, "resolve_intent with onprogress: progress notifications, got " + steps.length);
  expect(steps.every((p, i) => i === 0 || p.progress > steps[i - 1].progress), "progress increases: " + steps.map((p) => p.progress));
  expect(steps.every((p) => typeof p.message === "string" && p.message.length > 0), "every progress notification has a message");
  console.log("progress:", steps.map((p) => p.message).join(" | "));

  // 4. Resources: the trace by its URI, the listing, the template.
  const read = await client.readResource({ uri: answer.trace_id });
  const shown = JSON.parse(read.contents[0].text);
  expect(shown.session?.session === answer.trace_id && shown.events.length > 0, "resources/read: the trace's show reply");
  const { resources } = await client.listResources();
  expect(resources.some((r) => r.uri === answer.trace_id), "resources/list includes the trace");
  const { resourceTemplates } = await client.listResourceTemplates();
  expect(resourceTemplates.length === 1 && resourceTemplates[0].uriTemplate.startsWith("urn:glassbox:"),
         "resources/templates/list");
  const missing = await rejection(client.readResource({ uri: "urn:glassbox:00000000-dead-beef-0000-000000000000:question" }));
  expect(missing instanceof McpError && missing.code === -32002, "resources/read of an unknown trace: -32002, got " + missing);

  // 5. Tool errors are results with isError and the typed error.
  const unknownTrace = await client.callTool({ name: "explain_trace", arguments: { trace: "urn:glassbox:00000000-dead-beef-0000-000000000000:question" } });
  expect(unknownTrace.isError && unknownTrace.content[0].text.startsWith("NotFound"),
         "explain_trace of an unknown trace: isError NotFound, got " + JSON.stringify(unknownTrace.content));
  const badArgs = await client.callTool({ name: "search_graph", arguments: { query: "x", limit: 1000 } });
  expect(badArgs.isError && badArgs.content[0].text.startsWith("InvalidRequest"), "search_graph limit 1000: isError InvalidRequest");

  // 6. Protocol errors are JSON-RPC errors.
  const noMethod = await rejection(client.request({ method: "prompts/list", params: {} }, EmptyResultSchema));
  expect(noMethod instanceof McpError && noMethod.code === -32601, "an unknown method: -32601, got " + noMethod);
  const noTool = await rejection(client.callTool({ name: "no_such_tool", arguments: {} }));
  expect(noTool instanceof McpError && noTool.code === -32602, "an unknown tool: -32602, got " + noTool);

  // 7. The transport's own rules, checked with raw HTTP.
  const session = { "mcp-session-id": transport.sessionId, "mcp-protocol-version": transport.protocolVersion };
  const ping = { jsonrpc: "2.0", id: 99, method: "ping" };
  expect((await fetch(url, { method: "GET", headers: { accept: "text/event-stream", ...session } })).status === 405, "GET: 405");
  expect((await rawPost({ ...session, origin: "http://evil.example" }, ping)).status === 403, "a foreign Origin: 403");
  expect((await rawPost({ ...session, origin: `http://localhost:${url.port}` }, ping)).status === 200, "a loopback Origin: 200");
  expect((await rawPost({ ...session, "mcp-protocol-version": "1999-01-01" }, ping)).status === 400, "an unsupported MCP-Protocol-Version: 400");
  expect((await rawPost({ "mcp-protocol-version": transport.protocolVersion }, ping)).status === 400, "no session id: 400");
  const parse = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json", ...session }, body: "{nope" });
  expect(parse.status === 400 && (await parse.json()).error?.code === -32700, "a body that is not JSON: -32700");
  const batch = await rawPost(session, [ping, ping]);
  expect(batch.status === 400, "a batch in 2025-11-25: 400");

  // 7b. Cancellation. A question asked with mode agent runs until cancelled (the gateway test's
  // agent holds it; the stub's backend waits). Each way of cancelling ends its run: the trace,
  // found by a word of its question, ends with status error (Cancelled) rather than complete.
  const endOf = (word) => eventually("the trace of the run holding " + word + " ends", async () => {
    const r = await client.callTool({ name: "list_traces", arguments: { search: word, limit: 5 } });
    const row = (r.structuredContent?.sessions ?? [])[0];
    return row && row.status !== "running" ? row : null;
  });
  const held = (word) => ({ name: "resolve_intent", arguments: { question: `Which ships did the yard build ${word}?`, mode: "agent" } });

  // The SDK's AbortSignal: it sends notifications/cancelled.
  const aborted = nonce("sdkcancel");
  const controller = new AbortController();
  const late = await rejection(client.callTool(held(aborted), undefined, {
    signal: controller.signal, onprogress: () => controller.abort("the test gives up") }));
  expect(late !== null, "an aborted call rejects");
  const abortedRow = await endOf(aborted);
  expect(abortedRow.status === "error", "a call cancelled by the SDK: its trace ends with status error, got " + abortedRow.status);
  expect((await client.ping()) !== undefined && !(await client.callTool({ name: "list_traces", arguments: { limit: 1 } })).isError,
         "the session works after a cancelled call");

  // notifications/cancelled by hand: the call's own stream ends without a response.
  const manual = nonce("rawcancel");
  const streamed = await rawPost(session, { jsonrpc: "2.0", id: 501, method: "tools/call",
                                            params: { ...held(manual), _meta: { progressToken: "p-501" } } });
  expect(streamed.status === 200 && streamed.headers.get("content-type")?.startsWith("text/event-stream"),
         "a call asking for progress is answered as a stream");
  const next = sseMessages(streamed);
  const first = await within(30000, "the first progress notification", next());
  expect(first?.method === "notifications/progress" && first.params.progressToken === "p-501" && first.params.progress > 0,
         "the stream starts with progress: " + JSON.stringify(first));
  const ack = await rawPost(session, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 501, reason: "test" } });
  expect(ack.status === 202, "notifications/cancelled: 202");
  const rest = [];
  for (let m = await within(30000, "the cancelled stream ends", next()); m; m = await within(30000, "the cancelled stream ends", next())) rest.push(m);
  expect(rest.every((m) => m.method === "notifications/progress"), "the cancelled call's stream ends without a response: " + JSON.stringify(rest.filter((m) => !m.method)));
  const manualRow = await endOf(manual);
  expect(manualRow.status === "error", "a call cancelled by notification: its trace ends with status error, got " + manualRow.status);
  const stale = await rawPost(session, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 501 } });
  expect(stale.status === 202, "cancelling a finished request is accepted and ignored");

  // The HTTP client goes away: closing the stream cancels the run.
  const dropped = nonce("dropcancel");
  const hangUp = new AbortController();
  const open = await fetch(url, { method: "POST", signal: hangUp.signal, headers: {
    "content-type": "application/json", accept: "application/json, text/event-stream", ...session },
    body: JSON.stringify({ jsonrpc: "2.0", id: 502, method: "tools/call", params: { ...held(dropped), _meta: { progressToken: 502 } } }) });
  const firstDropped = await within(30000, "progress before hanging up", sseMessages(open)());
  expect(firstDropped?.method === "notifications/progress", "progress before hanging up");
  hangUp.abort();
  const droppedRow = await endOf(dropped);
  expect(droppedRow.status === "error", "a call whose client left: its trace ends with status error, got " + droppedRow.status);

  // DELETE of the session cancels its calls in flight.
  const doomed = await connect();
  const deleted = nonce("deletecancel");
  let stepped;
  const someStep = new Promise((resolve) => { stepped = resolve; });
  const orphan = doomed.client.callTool(held(deleted), undefined, { onprogress: () => stepped(), timeout: 120000 });
  orphan.catch(() => {});
  await within(30000, "progress before DELETE", someStep);
  await doomed.transport.terminateSession();
  const deletedRow = await endOf(deleted);
  expect(deletedRow.status === "error", "a call of a deleted session: its trace ends with status error, got " + deletedRow.status);
  await doomed.client.close();
  for (const row of [abortedRow, manualRow, droppedRow, deletedRow]) {
    expect(typeof row.error === "string" && row.error.startsWith("Cancelled"), "the trace's error is Cancelled, got " + row.error);
  }
  console.log("cancelled runs:", [abortedRow, manualRow, droppedRow, deletedRow].map((r) => r.session + " " + r.error).join(", "));

  // 8. Ending a session: DELETE, then the id is unknown.
  await transport.terminateSession();
  expect((await rawPost(session, ping)).status === 404, "after DELETE the session is gone (404)");
  await client.close();

  // 9. A session left idle expires: the client sees 404, and a new session works.
  const idle = await connect();
  await idle.client.ping();
  await sleep(idleMs + 500);
  const expired = await rejection(idle.client.listTools());
  expect(expired && expired.code === 404, "an expired session: the client sees 404, got " + expired);
  await idle.client.close();
  const fresh = await connect();
  expect((await fresh.client.listTools()).tools.length === 6, "a new session after expiry works");
  await fresh.client.close();
}

try {
  await main();
} catch (err) {
  failures.push(String(err?.stack ?? err));
  console.log("FAIL:", err?.stack ?? err);
}
console.log(`${checks} checks, ${failures.length} failures`);
process.exit(failures.length ? 1 : 0);
