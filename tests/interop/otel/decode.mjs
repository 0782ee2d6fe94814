// node decode.mjs FILE CONTENT-TYPE: decodes an OTLP trace request body with the official
// OpenTelemetry JavaScript package (otlp_decode.cjs) and prints it as JSON (ids in hex, 64-bit
// numbers as decimal strings). Exit 1 with the reason on a body that does not decode.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { decodeRequest } = require("./otlp_decode.cjs");

const [file, contentType] = process.argv.slice(2);
if (!file || !contentType) {
  process.stderr.write("usage: node decode.mjs FILE CONTENT-TYPE\n");
  process.exit(2);
}
try {
  process.stdout.write(JSON.stringify(decodeRequest(readFileSync(file), contentType)) + "\n");
} catch (error) {
  process.stderr.write(`${file}: ${error.message}\n`);
  process.exit(1);
}
