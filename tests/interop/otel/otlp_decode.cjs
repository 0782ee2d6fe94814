// Decodes an OTLP/HTTP trace request body (ExportTraceServiceRequest) in either encoding with the
// official OpenTelemetry JavaScript package's generated protobufjs root, and returns it as one
// plain object for both: ids as lowercase hex, 64-bit numbers as decimal strings, enums as
// numbers. Shared by decode.mjs (the encoder's interop test) and receiver.mjs (the exporter's).
"use strict";

const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");

const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const kIdFields = ["traceId", "spanId", "parentSpanId"];
const kObjectOptions = { longs: String, enums: Number, bytes: String, defaults: false };

// Calls fn(span) for each span of a request object.
function eachSpan(request, fn) {
  for (const rs of request.resourceSpans || []) {
    for (const ss of rs.scopeSpans || []) {
      for (const span of ss.spans || []) fn(span);
    }
  }
}

function isHex(text) {
  return typeof text === "string" && /^([0-9a-fA-F]{2})*$/.test(text);
}

// OTLP/JSON spells ids as hex (not proto3 JSON's base64): turn them into bytes for fromObject.
function idsToBytes(request) {
  eachSpan(request, (span) => {
    for (const field of kIdFields) {
      if (span[field] === undefined || span[field] === "") continue;
      if (!isHex(span[field])) throw new Error(`${field} is not hex: ${JSON.stringify(span[field])}`);
      span[field] = Buffer.from(span[field], "hex");
    }
  });
  return request;
}

// toObject gives bytes as base64: back to hex.
function idsToHex(request) {
  eachSpan(request, (span) => {
    for (const field of kIdFields) {
      if (typeof span[field] === "string") span[field] = Buffer.from(span[field], "base64").toString("hex");
    }
  });
  return request;
}

// The request in `buffer` (a Buffer or Uint8Array) sent with `contentType`. Throws on a body
// that does not decode, does not verify, or has a content type that is neither encoding.
function decodeRequest(buffer, contentType) {
  const type = String(contentType || "").split(";")[0].trim().toLowerCase();
  let message;
  if (type === "application/x-protobuf" || type === "application/protobuf") {
    message = Request.decode(buffer);
  } else if (type === "application/json") {
    message = Request.fromObject(idsToBytes(JSON.parse(Buffer.from(buffer).toString("utf8"))));
    const problem = Request.verify(message);
    if (problem) throw new Error(`the JSON request does not verify: ${problem}`);
  } else {
    throw new Error(`unknown content type ${JSON.stringify(contentType)}`);
  }
  return idsToHex(Request.toObject(message, kObjectOptions));
}

module.exports = { decodeRequest, eachSpan };
