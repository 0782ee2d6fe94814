#!/usr/bin/python3
"""The OTLP encoder read by the official OpenTelemetry JavaScript decoder, for real stored runs.

Starts `glassbox up` in a fresh home, loads the sample graph and documents, asks one question of
graph-rag, document-rag, agent (which calls a tool, a sub-run) and query (which routes to a
sub-run), then for each run writes the OpenTelemetry spans the trace store gives
(otlp_payload_dump: TraceStore::otel_spans, encode_export_request) in protobuf and in OTLP/JSON and
decodes both with @opentelemetry/otlp-transformer's ExportTraceServiceRequest (decode.mjs). Checks:
- each decoded span is the span written: ids, parent, name, kind, times, status and every
  attribute with its type (nothing lost, nothing added), the resource and the scope;
- against `glassbox traces show --json` (the run as glassbox shows it): one trace whose id is the
  top-level run's UUID, one root span (the run, SERVER), a run span for the run and every sub-run
  (span id FNV-1a 64 of its session URI), a span for every stored step under its run's span, each
  sub-run under the span of the step that called it (prov:used: the tool call's span for an
  agent's tool, else the step's), every parent link inside the trace, the GenAI attributes the
  steps' triples imply (models, tokens, tool names, retrieved ids and scores), an `embeddings`
  span under every step that records an embeddings call (each of its attributes, its parent and
  times from the step's gb:embedding* triples), and no span the run does not imply.

Exit 0 when every check passes, 1 on a failure, 77 when node or tests/interop/otel/node_modules is
absent.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
import interop_scripts  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "traces"))
import glassbox_up  # noqa: E402

SKIP = interop_scripts.SKIP
QUESTION = "Who designed Greyhollow Light?"
ENGINES = ["graph-rag", "document-rag", "agent", "query"]
ENCODINGS = [("payload.pb", "application/x-protobuf"), ("payload.json", "application/json")]
GB = "https://glassbox.dev/ns#"
PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def fnv1a64_hex(text):
    h = 0xcbf29ce484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % (h or 0xcbf29ce484222325)


def ms_of(xsd):
    t = datetime.datetime.strptime(xsd, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return round(t.timestamp() * 1000)


# ---- the decoded request in the dump's shape ---------------------------------------------------

def value_of(any_value):
    """An OTLP AnyValue as otlp_payload_dump writes an attribute value."""
    if "stringValue" in any_value:
        return {"string": any_value["stringValue"]}
    if "intValue" in any_value:
        return {"int": str(any_value["intValue"])}
    if "doubleValue" in any_value:
        return {"double": any_value["doubleValue"]}
    if "boolValue" in any_value:
        return {"bool": any_value["boolValue"]}
    if "arrayValue" in any_value:
        values = [value_of(v) for v in any_value["arrayValue"].get("values", [])]
        kinds = {next(iter(v)) for v in values}
        if kinds == {"double"} or not kinds:
            # An empty array is written only for ids (strings); doubles are never empty.
            return {"doubles": [v["double"] for v in values]} if kinds else {"strings": []}
        if kinds == {"string"}:
            return {"strings": [v["string"] for v in values]}
        if kinds == {"int"}:
            return {"ints": [v["int"] for v in values]}
    return {"unexpected": any_value}


def attributes_of(key_values, problems, where):
    out = {}
    for kv in key_values or []:
        if kv["key"] in out:
            problems.append("%s: attribute %s twice" % (where, kv["key"]))
        out[kv["key"]] = value_of(kv.get("value", {}))
    return out


def decoded_spans(request, problems, where):
    """The spans of a decoded request, each in the dump's shape; checks its resource and scope."""
    spans = []
    resource_spans = request.get("resourceSpans", [])
    if len(resource_spans) != 1:
        problems.append("%s: %d resourceSpans" % (where, len(resource_spans)))
        return spans
    resource = attributes_of(resource_spans[0].get("resource", {}).get("attributes"), problems, where)
    if resource.get("service.name") != {"string": "glassbox-interop"} or \
            resource.get("telemetry.sdk.name") != {"string": "glassbox"}:
        problems.append("%s: resource %s" % (where, resource))
    for scope_spans in resource_spans[0].get("scopeSpans", []):
        if scope_spans.get("scope", {}).get("name") != "glassbox":
            problems.append("%s: scope %s" % (where, scope_spans.get("scope")))
        for s in scope_spans.get("spans", []):
            status = s.get("status", {})
            spans.append({"traceId": s.get("traceId", ""), "spanId": s.get("spanId", ""),
                          "parentSpanId": s.get("parentSpanId", ""), "name": s.get("name", ""),
                          "kind": s.get("kind", 0), "startTimeUnixNano": s.get("startTimeUnixNano", "0"),
                          "endTimeUnixNano": s.get("endTimeUnixNano", "0"),
                          "attributes": attributes_of(s.get("attributes"), problems, where),
                          "status": {"code": status.get("code", 0), "message": status.get("message", "")}})
    return spans


def compare(written, decoded, problems, where):
    """Every span and every field as written, in order."""
    if len(written) != len(decoded):
        problems.append("%s: %d spans written, %d decoded" % (where, len(written), len(decoded)))
        return
    for w, d in zip(written, decoded):
        for field in w:
            if w[field] != d[field]:
                problems.append("%s: span %s (%s): %s written %s, decoded %s"
                                % (where, w["spanId"], w["name"], field, json.dumps(w[field])[:300],
                                   json.dumps(d[field])[:300]))


# ---- the spans against the run as glassbox shows it ---------------------------------------------

def triples_about(run, subject):
    for event in run["events"]:
        for t in event["triples"]:
            if t["s"].get("i") == subject:
                yield t["p"].get("i"), t["o"]


EMBEDDING_FACTS = {GB + "embeddingModel": "model", GB + "embeddingInputs": "inputs",
                   GB + "embeddingDimensions": "dimensions", GB + "embeddingStartedAt": "started",
                   GB + "embeddingDurationMs": "duration"}


def step_facts(run, step):
    facts = {"types": set(), "model": None, "in": None, "out": None, "action": None, "retrieved": [],
             "embedding": {}}
    for p, o in triples_about(run, step):
        if p in EMBEDDING_FACTS:
            facts["embedding"][EMBEDDING_FACTS[p]] = o.get("v")
        elif p == RDF_TYPE:
            facts["types"].add(o.get("i"))
        elif p == GB + "model":
            facts["model"] = o.get("v")
        elif p == GB + "inputTokens":
            facts["in"] = o.get("v")
        elif p == GB + "outputTokens":
            facts["out"] = o.get("v")
        elif p == GB + "action":
            facts["action"] = o.get("v")
        elif p in (GB + "exploredEdge", GB + "retrievedChunk"):
            facts["retrieved"].append(o.get("i"))
    return facts


def expected_documents(run, retrieved):
    """gen_ai.retrieval.documents as the run's triples imply it: each retrieved id, in order, with
    its gb:score where it has one."""
    documents = []
    for item in retrieved:
        document = {"id": item}
        for p, o in triples_about(run, item):
            if p == GB + "score":
                document["score"] = float(o.get("v"))
                break
        documents.append(document)
    return documents


def retrieval_documents(attrs):
    """The decoded gen_ai.retrieval.documents (JSON text), or None."""
    value = attrs.get("gen_ai.retrieval.documents")
    if not value or "string" not in value:
        return None
    try:
        return json.loads(value["string"])
    except ValueError:
        return None


def check_embeddings(step, call, step_span, top, by_id, problems, where):
    """The span of the embeddings call `step` records: every field and attribute as its triples
    imply."""
    span = by_id.get(fnv1a64_hex(step + "#embeddings"))
    if span is None:
        problems.append("%s: no embeddings span for step %s" % (where, step))
        return
    model = call.get("model")
    start_ns = ms_of(call["started"]) * 1000000
    expected = {"glassbox.step.iri": {"string": step},
                "glassbox.step.type": {"string": "EmbeddingsCall"},
                "glassbox.trace.iri": {"string": top},
                "gen_ai.operation.name": {"string": "embeddings"},
                "gen_ai.embeddings.dimension.count": {"int": call["dimensions"]},
                "glassbox.embeddings.inputs": {"int": call["inputs"]}}
    if model:
        expected["gen_ai.request.model"] = {"string": model}
        expected["gen_ai.response.model"] = {"string": model}
        if model.startswith("glassbox-"):
            expected["gen_ai.provider.name"] = {"string": "glassbox"}
    checks = [(span["name"] == ("embeddings " + model if model else "embeddings"), "name"),
              (span["kind"] == 3, "kind is not CLIENT"),
              (span["parentSpanId"] == step_span, "parent is not the step's span"),
              (span["startTimeUnixNano"] == str(start_ns), "start"),
              (span["endTimeUnixNano"] == str(start_ns + int(call["duration"]) * 1000000), "end"),
              (span["status"] == {"code": 0, "message": ""}, "status"),
              (span["attributes"] == expected, "attributes, expected %s" % json.dumps(expected))]
    for ok, what in checks:
        if not ok:
            problems.append("%s: embeddings of %s: %s (span %s)" % (where, step, what, json.dumps(span)[:600]))


def check_step(run, step, by_id, run_span, top, expected_ids, problems, where):
    span = by_id.get(fnv1a64_hex(step))
    if span is None:
        problems.append("%s: no span for step %s" % (where, step))
        return
    expected_ids.add(span["spanId"])
    attrs = span["attributes"]
    checks = [(span["parentSpanId"] == run_span, "parent is not the run span"),
              (attrs.get("glassbox.step.iri") == {"string": step}, "glassbox.step.iri")]
    facts = step_facts(run, step)
    if GB + "ToolUse" in facts["types"] and facts["action"]:
        expected_ids.add(fnv1a64_hex(step + "#execute_tool"))
    if facts["embedding"]:
        expected_ids.add(fnv1a64_hex(step + "#embeddings"))
        check_embeddings(step, facts["embedding"], span["spanId"], top, by_id, problems, where)
    if GB + "Exploration" in facts["types"]:
        checks += [(span["name"].startswith("retrieval"), "an Exploration is not a retrieval span"),
                   (attrs.get("gen_ai.operation.name") == {"string": "retrieval"}, "operation"),
                   (attrs.get("glassbox.retrieval.count") == {"int": str(len(facts["retrieved"]))},
                    "retrieved count"),
                   (retrieval_documents(attrs) == expected_documents(run, facts["retrieved"]),
                    "retrieved ids and scores")]
    elif facts["model"] and (facts["in"] or facts["out"]):
        checks += [(span["name"] == "chat " + facts["model"], "not chat <model>"),
                   (attrs.get("gen_ai.request.model") == {"string": facts["model"]}, "request model"),
                   (attrs.get("gen_ai.usage.input_tokens") == {"int": facts["in"]}, "input tokens"),
                   (attrs.get("gen_ai.usage.output_tokens") == {"int": facts["out"]}, "output tokens")]
    for ok, what in checks:
        if not ok:
            problems.append("%s: step %s: %s (span %s)" % (where, step, what, json.dumps(span)[:400]))


def calling_step(run):
    for p, o in triples_about(run, run["session"]["session"]):
        if p == PROV + "used":
            return o.get("i")
    return None


def check_run(run, top, by_id, expected_ids, problems, where, parent_run=None):
    session = run["session"]["session"]
    span = by_id.get(fnv1a64_hex(session))
    if span is None:
        problems.append("%s: no span for run %s" % (where, session))
        return
    expected_ids.add(span["spanId"])
    attrs = span["attributes"]
    expect_parent = ""
    if parent_run is not None:
        calling = calling_step(run)
        tool = fnv1a64_hex(calling + "#execute_tool") if calling else None
        expect_parent = tool if tool in by_id else fnv1a64_hex(calling or parent_run)
    checks = [(span["name"] == "invoke_agent " + run["session"]["kind"], "name"),
              (span["kind"] == (2 if parent_run is None else 1), "kind"),
              (span["parentSpanId"] == expect_parent, "parent %s, expected %s" % (span["parentSpanId"], expect_parent)),
              (span["startTimeUnixNano"] == str(ms_of(run["session"]["started"]) * 1000000), "start"),
              (span["endTimeUnixNano"] == str(ms_of(run["session"]["ended"]) * 1000000), "end"),
              (attrs.get("glassbox.trace.iri") == {"string": top}, "glassbox.trace.iri"),
              (attrs.get("glassbox.run.iri") == {"string": session}, "glassbox.run.iri"),
              (attrs.get("gen_ai.operation.name") == {"string": "invoke_agent"}, "operation"),
              (attrs.get("glassbox.run.status") == {"string": run["session"]["status"]}, "status")]
    for ok, what in checks:
        if not ok:
            problems.append("%s: run %s: %s" % (where, session, what))
    for event in run["events"]:
        if event["explain_id"] != session:
            check_step(run, event["explain_id"], by_id, span["spanId"], top, expected_ids, problems,
                       where)
    for sub in run["subtraces"]:
        check_run(sub, top, by_id, expected_ids, problems, where, session)


def count_runs(run):
    return 1 + sum(count_runs(sub) for sub in run["subtraces"])


def check_against_show(shown, spans, problems, where):
    top = shown["session"]["session"]
    trace_id = top.split(":")[2].replace("-", "")
    by_id = {s["spanId"]: s for s in spans}
    if len(by_id) != len(spans):
        problems.append("%s: span ids repeat" % where)
    roots = [s for s in spans if not s["parentSpanId"]]
    if len(roots) != 1 or roots[0]["spanId"] != fnv1a64_hex(top):
        problems.append("%s: roots %s" % (where, [r["name"] for r in roots]))
    for s in spans:
        if s["traceId"] != trace_id:
            problems.append("%s: span %s in trace %s, not %s" % (where, s["name"], s["traceId"], trace_id))
        if s["parentSpanId"] and s["parentSpanId"] not in by_id:
            problems.append("%s: span %s has a parent outside the trace" % (where, s["name"]))
        if int(s["endTimeUnixNano"]) < int(s["startTimeUnixNano"]):
            problems.append("%s: span %s ends before it starts" % (where, s["name"]))
    runs = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == {"string": "invoke_agent"}]
    if len(runs) != count_runs(shown):
        problems.append("%s: %d run spans for %d runs" % (where, len(runs), count_runs(shown)))
    expected_ids = set()
    check_run(shown, top, by_id, expected_ids, problems, where)
    for s in spans:
        if s["spanId"] not in expected_ids:
            problems.append("%s: span %s (%s) is none the run implies" % (where, s["spanId"], s["name"]))


# ---- the pipeline ------------------------------------------------------------------------------

def ask(pipeline, engine):
    out = pipeline.run("invoke", engine, "-q", QUESTION, timeout_ms=30000).stdout.decode()
    for line in out.splitlines():
        if line.startswith("trace: "):
            return line.split()[1]
    raise RuntimeError("%s printed no trace: %s" % (engine, out[-500:]))


def shown_when_ended(pipeline, session):
    def ended(run):
        return run["session"]["status"] != "running" and all(ended(s) for s in run["subtraces"])

    def show():
        proc = pipeline.run("traces", "show", session, "--json", check=False)
        if proc.returncode != 0:
            return None
        run = json.loads(proc.stdout)
        return run if ended(run) else None
    shown = interop_scripts.poll_until(show, 30)
    if shown is None:
        raise RuntimeError("the trace %s did not end within 30 s" % session)
    return shown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glassbox", required=True)
    parser.add_argument("--dump-exe", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--node", default="node")
    args = parser.parse_args()
    node = shutil.which(args.node)
    if node is None:
        print("SKIP: node is not installed")
        return SKIP
    if not os.path.isdir(os.path.join(HERE, "node_modules", "@opentelemetry", "otlp-transformer")):
        print("SKIP: tests/interop/otel/node_modules is absent (ops/install-deps runs npm ci there)")
        return SKIP

    pipeline = glassbox_up.UpPipeline(args.glassbox, args.workdir)
    pipeline.start()
    try:
        pipeline.run("load", "rdf", os.path.join(REPO, "ops", "sample", "orrin.ttl"), timeout_ms=60000)
        pipeline.run("load", "docs", os.path.join(REPO, "ops", "sample", "docs"), timeout_ms=60000)
        runs = {engine: shown_when_ended(pipeline, ask(pipeline, engine)) for engine in ENGINES}
    finally:
        pipeline.stop()

    problems = []
    spans_checked = 0
    for engine, shown in runs.items():
        session = shown["session"]["session"]
        out = os.path.join(args.workdir, "payloads", engine)
        dump = subprocess.run([args.dump_exe, os.path.join(pipeline.home, "traces.db"), session, out],
                              capture_output=True, timeout=60)
        if dump.returncode != 0:
            problems.append("%s: otlp_payload_dump: %s" % (engine, dump.stderr.decode()))
            continue
        with open(os.path.join(out, "spans.json")) as f:
            written = json.load(f)
        check_against_show(shown, written, problems, engine)
        if engine == "agent" and not any(s["name"].startswith("execute_tool ") for s in written):
            problems.append("agent: no execute_tool span")
        if engine in ("graph-rag", "document-rag", "query") and \
                not any(s["name"].startswith("embeddings ") for s in written):
            problems.append("%s: no embeddings span" % engine)
        if engine in ("agent", "query") and count_runs(shown) < 2:
            problems.append("%s: the run has no sub-run to check" % engine)
        for name, content_type in ENCODINGS:
            where = "%s %s" % (engine, content_type)
            decoded = subprocess.run([node, os.path.join(HERE, "decode.mjs"), os.path.join(out, name), content_type],
                                     capture_output=True, timeout=60)
            if decoded.returncode != 0:
                problems.append("%s: the official decoder refused it: %s" % (where, decoded.stderr.decode()))
                continue
            spans = decoded_spans(json.loads(decoded.stdout), problems, where)
            compare(written, spans, problems, where)
            spans_checked += len(spans)
    return interop_scripts.report(
        problems, "%d spans of %d runs decoded from protobuf and JSON as written" % (spans_checked, len(runs)))


if __name__ == "__main__":
    sys.exit(main())
