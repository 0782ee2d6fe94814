#!/usr/bin/python3
"""Real graph-RAG and document-RAG traces, read back and checked by rdflib, rapper and the PROV check.

Starts `glassbox up` (every worker) on ephemeral ports in a fresh home, loads the sample knowledge
(ops/sample), asks one graph-RAG and one document-RAG question (re-ranked, so its trace has a Focus
step) with `glassbox invoke --json`, and checks: every line is one wire message, the explain steps
come in the order of their chain, the trace collector stored exactly the triples the stream
carried, every `traces show` format parses with rdflib (and rapper for Turtle/N-Triples) to the
stored triples (the checks of tests/interop/traces, reused), and the PROV check
(tests/interop/vocabulary/prov_check.py) against ../shared/data/prov/prov-o.ttl and the glassbox
ontology holds for both traces.

Exit 0 when every check passes, 1 on a failure, 77 when rdflib, ../shared or the trace collector
is absent.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
rdflib = interop_scripts.require_rdflib()

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "traces"))
import trace_rdf  # noqa: E402
from run_traces_interop import Pipeline  # noqa: E402

SAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "ops", "sample"))
GB = "https://glassbox.dev/ns#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDF_TYPE = RDF + "type"

CHAINS = [
    ("graph-rag", "Who founded the shipyard that built the MV Curlew?", [],
     ["Question", "Grounding", "Exploration", "Focus", "Synthesis"]),
    ("document-rag", "What happened to Saltspire Light in the Great Gale?", ["--doc-limit", "3"],
     ["Question", "Grounding", "Exploration", "Focus", "Synthesis"]),
]


def wait_for_services(p, services):
    waiting = list(services)

    def all_registered():
        while waiting:
            proc = p.run("call", "mmi.service", waiting[0], timeout_ms=2000, check=False)
            if proc.returncode != 0 or b"200" not in proc.stdout:
                return False
            waiting.pop(0)
        return True
    interop_scripts.poll_until(all_registered, 30, 0.1)
    return waiting


def plain_triples(body):
    """An explain message's triples as triple objects, in either form (docs/protocol.md §8.1): a
    dictionary body's [s, p, o(, g)] indexes resolved into its explain_terms."""
    if body.get("explain_terms") is None:
        return body.get("explain_triples", [])
    terms = body["explain_terms"]
    out = []
    for entry in body.get("explain_triples", []):
        t = {"s": terms[entry[0]], "p": terms[entry[1]], "o": terms[entry[2]]}
        graph = terms[entry[3]]["i"] if len(entry) == 4 else body.get("explain_graph", "")
        if graph:
            t["g"] = graph
        out.append(t)
    return out


def step_type(body):
    """The gb: class of an explain message's own step."""
    for t in plain_triples(body):
        if t["s"].get("i") == body["explain_id"] and t["p"].get("i") == RDF_TYPE:
            iri = t["o"].get("i", "")
            if iri.startswith(GB):
                return iri[len(GB):]
    return None


def invoke(p, service, question, extra, steps):
    """Runs `glassbox invoke --json`, checks the stream, returns (session, the quads it carried)."""
    proc = p.run("invoke", service, "--json", "-q", question, *extra)
    messages = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    p.expect(messages and messages[-1].get("kind") == "final", "%s: the stream does not end with its FINAL" % service)
    p.expect(all(set(m) >= {"kind", "body"} for m in messages), "%s: a line is not a wire message" % service)
    explains = [m["body"] for m in messages if m["kind"] == "explain"]
    p.expect([step_type(e) for e in explains] == steps,
             "%s: steps %r, expected %r" % (service, [step_type(e) for e in explains], steps))
    final = messages[-1]["body"]
    session = final.get("session", "")
    p.expect(session.startswith("urn:glassbox:") and all(e["session"] == session for e in explains),
             "%s: one session for every message (%r)" % (service, session))
    p.expect(explains and explains[-1]["end_of_trace"] and explains[-1]["trace_status"] == "complete",
             "%s: the last explain message does not complete the trace" % service)
    p.expect(final.get("explain_id") == explains[-1]["explain_id"], "%s: explain_id is not the Synthesis" % service)
    sent = set()
    for e in explains:
        for t in plain_triples(e):
            sent.add((trace_rdf.term(t["s"]), trace_rdf.term(t["p"]), trace_rdf.term(t["o"]), t.get("g") or ""))
    return session, sent


def check_explored_edges(p, quads):
    """The stored graph-RAG trace records the explored subgraph (docs/vocabulary.md): the
    Exploration's gb:exploredEdge statements, as many as gb:edgeCount (up to the first 500), each
    with its hop, and every edge Focus kept among them."""
    by_subject = {}
    for s, pr, o, _ in quads:
        by_subject.setdefault(str(s), {}).setdefault(str(pr), []).append(o)

    def values(subject, predicate):
        return by_subject.get(str(subject), {}).get(predicate, [])

    def fact(statement):
        return tuple(str(values(statement, RDF + part)[0]) if len(values(statement, RDF + part)) == 1 else None
                     for part in ("subject", "predicate", "object"))

    exploration = next(s for s, props in by_subject.items() if GB + "Exploration" in map(str, props.get(RDF_TYPE, [])))
    focus = next(s for s, props in by_subject.items() if GB + "Focus" in map(str, props.get(RDF_TYPE, [])))
    # Numbered in traversal order (<exploration>:edge:N); the stored quads are a set.
    explored = sorted(values(exploration, GB + "exploredEdge"), key=lambda e: int(str(e).rsplit(":", 1)[1]))
    count = int(values(exploration, GB + "edgeCount")[0])
    p.expect(len(explored) == min(count, 500) and count > 0,
             "graph-rag: %d explored edges recorded, gb:edgeCount %d" % (len(explored), count))
    typed = [e for e in explored if {GB + "ExploredEdge", RDF + "Statement"} <= set(map(str, values(e, RDF_TYPE)))]
    p.expect(len(typed) == len(explored), "graph-rag: %d explored edges are not typed gb:ExploredEdge, rdf:Statement"
             % (len(explored) - len(typed)))
    hops = [int(values(e, GB + "hop")[0]) for e in explored if len(values(e, GB + "hop")) == 1]
    p.expect(len(hops) == len(explored) and all(h >= 1 for h in hops) and hops == sorted(hops),
             "graph-rag: every explored edge has its hop, in traversal order (%r)" % hops[:20])
    facts = {fact(e) for e in explored}
    p.expect(None not in {x for f in facts for x in f}, "graph-rag: an explored edge lacks its subject, predicate or object")
    kept = [fact(e) for e in values(focus, GB + "selectedEdge")]
    p.expect(kept and all(k in facts for k in kept),
             "graph-rag: %d of %d kept edges are not among the explored ones" % (sum(k not in facts for k in kept), len(kept)))
    print("graph-rag: %d explored edges stored (gb:edgeCount %d), %d kept among them" % (len(explored), count, len(kept)))


def main():
    args = trace_rdf.parse_args("--glassbox")
    if args is None:
        return SKIP
    p = Pipeline(args.glassbox, args.workdir)
    files = []
    try:
        p.start()
        if not p.wait_for_trace_service():
            return SKIP
        missing = wait_for_services(p, ["store", "embeddings", "llm", "graph-rag", "document-rag"])
        p.expect(not missing, "glassbox up: no worker registered for %r" % missing)
        if missing:
            return 1
        p.run("load", "rdf", os.path.join(SAMPLE, "orrin.ttl"), "--tier", "1")
        p.run("load", "docs", os.path.join(SAMPLE, "docs"))

        for service, question, extra, steps in CHAINS:
            session, sent = invoke(p, service, question, extra, steps)

            def stored_complete():
                proc = p.run("traces", "show", session, "--format", "json", check=False)
                if proc.returncode != 0:
                    return None
                reply = json.loads(proc.stdout)
                done = reply["session"]["status"] == "complete" and len(reply["events"]) == len(steps)
                return reply if done else None

            reply = p.wait_for(service + " trace stored complete", stored_complete)
            stored = trace_rdf.reply_quads(reply)
            p.expect(stored == sent, "%s: the collector stored %d quads, the stream carried %d (%d differ)"
                     % (service, len(stored), len(sent), len(stored ^ sent)))
            p.expect(all(g == trace_rdf.RETRIEVAL_GRAPH for _, _, _, g in stored),
                     "%s: a triple outside %s" % (service, trace_rdf.RETRIEVAL_GRAPH))
            if service == "graph-rag":
                check_explored_edges(p, stored)
            session_files, _ = p.check_show({"session": session})
            files += session_files

        problem = trace_rdf.prov_check(args, files)
        p.expect(problem is None, "prov_check: %s" % problem)
    finally:
        p.stop()
    return p.summary()


if __name__ == "__main__":
    sys.exit(main())
