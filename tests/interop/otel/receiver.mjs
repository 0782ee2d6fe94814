// node receiver.mjs --out FILE [--port N] [--down FILE]: an OTLP/HTTP trace receiver on
// 127.0.0.1 (a random port unless --port) for the exporter's integration test. Prints
// "port N" once it listens. Each POST /v1/traces body is decoded with the official OpenTelemetry
// JavaScript package (otlp_decode.cjs: http/protobuf or http/json as its Content-Type says) and
// each span appended to FILE as one JSON line: the span as decoded (ids hex, 64-bit numbers as
// decimal strings) plus `attrs` (its attributes as a plain object), `resource` (the resource's),
// `scope`, `content_type` and `authorization` (the request's header). Answers 200 with an empty
// ExportTraceServiceResponse in the request's encoding; 503 while the --down file exists; 400
// (and a line on stderr) for a body that does not decode. Runs until killed.
import { appendFileSync, existsSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { decodeRequest } = require("./otlp_decode.cjs");

function option(name) {
  const at = process.argv.indexOf(name);
  return at > 0 && at + 1 < process.argv.length ? process.argv[at + 1] : undefined;
}

const out = option("--out");
const down = option("--down");
const port = Number(option("--port") || 0);
if (!out) {
  process.stderr.write("usage: node receiver.mjs --out FILE [--port N] [--down FILE]\n");
  process.exit(2);
}

// An AnyValue as a plain value: strings, numbers (int64 as decimal strings), booleans, arrays.
function plain(value) {
  if (!value) return null;
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return String(value.intValue);
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return (value.arrayValue.values || []).map(plain);
  if ("kvlistValue" in value) return attributes(value.kvlistValue.values);
  return null;
}

function attributes(list) {
  const outAttrs = {};
  for (const kv of list || []) outAttrs[kv.key] = plain(kv.value);
  return outAttrs;
}

function lines(request, contentType, authorization) {
  const text = [];
  for (const rs of request.resourceSpans || []) {
    const resource = attributes(rs.resource && rs.resource.attributes);
    for (const ss of rs.scopeSpans || []) {
      const scope = ss.scope ? ss.scope.name : "";
      for (const span of ss.spans || []) {
        const line = { ...span, attrs: attributes(span.attributes), resource, scope };
        line.content_type = contentType;
        line.authorization = authorization;
        text.push(JSON.stringify(line) + "\n");
      }
    }
  }
  return text.join("");
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const contentType = String(req.headers["content-type"] || "");
    const json = contentType.startsWith("application/json");
    if (req.method !== "POST" || req.url !== "/v1/traces") {
      res.writeHead(404).end();
      return;
    }
    if (down && existsSync(down)) {
      res.writeHead(503, { "Content-Type": "text/plain" }).end("down");
      return;
    }
    let request;
    try {
      request = decodeRequest(Buffer.concat(chunks), contentType);
    } catch (error) {
      process.stderr.write(`receiver: a request does not decode: ${error.message}\n`);
      res.writeHead(400, { "Content-Type": "text/plain" }).end(error.message);
      return;
    }
    appendFileSync(out, lines(request, contentType, String(req.headers.authorization || "")));
    res.writeHead(200, { "Content-Type": json ? "application/json" : "application/x-protobuf" });
    res.end(json ? "{}" : Buffer.alloc(0));
  });
});

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`port ${server.address().port}\n`);
});
