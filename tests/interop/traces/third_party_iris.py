#!/usr/bin/python3
"""A third-party worker's IRIs N-Triples rejects enter a trace rewritten, and rdflib reads the trace.

Issue 16 point 12. Starts `glassbox up` on ephemeral ports in a fresh home, then a GBW01 worker
written here from docs/protocol.md §5 (pyzmq, not glassbox's explain builder) that answers each
request with two explain messages whose session, step, parent, graph and triple IRIs include
`not a uri <>"\\n`, `urn:x y`, a relative IRI and a bad datatype, then REPLY. Checks that the
trace is stored complete under its rewritten session IRI, that `glassbox traces show --format
ntriples|nquads|turtle` and `glassbox traces export` parse with rdflib, that every IRI in them is
absolute and free of what an N-Triples IRIREF forbids, and that nothing was lost (each rewritten
IRI is there, the literals unchanged).

Exit 0 when every check passes, 1 on a failure, 77 when rdflib or pyzmq is absent.
"""
import json
import os
import re
import sys

SKIP = 77
try:
    import rdflib
    import zmq  # noqa: F401  (glassbox_up.ExplainWorker speaks it)
except ImportError as e:
    print("SKIP: %s (python3-rdflib, python3-zmq) is not installed for %s" % (e.name, sys.executable))
    sys.exit(SKIP)

import glassbox_up  # noqa: E402  (beside this script)

SERVICE = "third-party"
BAD = 'not a uri <>"\n'
SPACED = "urn:x y"
# What schema::explain::writable_iri makes of them (docs/traces.md §1).
BAD_REWRITTEN = "urn:glassbox:iri:not%20a%20uri%20%3C%3E%22%0A"
SPACED_REWRITTEN = "urn:x%20y"
FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\\x7f]')
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def iri(value):
    return {"t": "i", "i": value}


def explain_bodies():
    """The worker's two explain messages for the session SPACED: open, then complete."""
    common = {"message_type": "explain", "session": SPACED, "service": SERVICE, "worker": SERVICE + "/py",
              "parent_uri": BAD, "explain_graph": "urn:graph:{third}"}
    first = dict(common, seq=0, explain_id=BAD, end_of_trace=False, trace_status="", explain_triples=[
        {"s": iri(SPACED), "p": iri("https://glassbox.dev/ns#query"), "o": {"t": "l", "v": "third-party question"}},
        {"s": iri(BAD), "p": iri(SPACED), "o": iri("relative/thing")},
        {"s": iri("urn:ok"), "p": iri("urn:ok"), "o": {"t": "l", "v": "1", "dt": "urn:dt x"}, "g": "urn:g|h"},
    ])
    last = dict(common, seq=1, explain_id="urn:step `two`", end_of_trace=True, trace_status="complete",
                explain_triples=[{"s": iri(SPACED), "p": iri("urn:ok"), "o": {"t": "l", "v": "kept <as> \"is\""}}])
    return [first, last]


class Run(glassbox_up.UpPipeline):
    def check_graph(self, name, graph):
        """Every IRI rdflib read is absolute and holds nothing an IRIREF forbids."""
        iris = set()
        for quad in graph.quads((None, None, None, None)) if isinstance(graph, rdflib.ConjunctiveGraph) \
                else ((s, p, o, None) for s, p, o in graph):
            for node in quad:
                if isinstance(node, rdflib.Graph):
                    node = node.identifier
                if isinstance(node, rdflib.URIRef):
                    iris.add(str(node))
                elif isinstance(node, rdflib.Literal) and node.datatype is not None:
                    iris.add(str(node.datatype))
        for value in iris:
            self.expect(SCHEME.match(value) and not FORBIDDEN.search(value), "%s: IRI %r" % (name, value))
        return iris


def main():
    args = glassbox_up.glassbox_and_workdir()

    r = Run(args.glassbox, args.workdir)
    worker = None
    try:
        endpoint = r.start()
        r.wait_for("the trace service", lambda: r.run("traces", "stats", "--json", check=False).returncode == 0)
        worker = glassbox_up.ExplainWorker(endpoint, SERVICE, explain_bodies, curve=r.curve_keys("worker"))
        worker.start()
        worker.ready.wait(5)

        def call():
            proc = r.run("call", SERVICE, "{}", check=False)
            return proc if proc.returncode == 0 else None
        called = r.wait_for("the third-party service", call)
        r.expect(b"done" in called.stdout, "call: %r" % called.stdout)

        def complete():
            listed = json.loads(r.run("traces", "list", "--json", "--kind", SERVICE).stdout)
            return [s for s in listed["sessions"] if s["status"] == "complete"]
        sessions = r.wait_for("the third-party trace", complete)
        uri = sessions[0]["session"]
        r.expect(uri == SPACED_REWRITTEN, "session stored as %r, not %r" % (uri, SPACED_REWRITTEN))

        stats = json.loads(r.run("traces", "stats", "--json").stdout)
        collector = stats.get("collector", {})
        r.expect(collector.get("iris_rewritten", 0) > 0, "stats: no rewritten IRIs counted: %r" % collector)
        r.expect(stats.get("quarantined") == 0, "stats: quarantined %r" % stats.get("quarantined"))

        found = set()
        for fmt, rdflib_fmt, ext in (("ntriples", "nt", ".nt"), ("nquads", "nquads", ".nq"), ("turtle", "turtle", ".ttl")):
            path = os.path.join(args.workdir, "third-party" + ext)
            with open(path, "wb") as f:
                f.write(r.run("traces", "show", uri, "--format", fmt).stdout)
            graph = rdflib.ConjunctiveGraph() if rdflib_fmt == "nquads" else rdflib.Graph()
            try:
                graph.parse(path, format=rdflib_fmt)
            except Exception as e:
                r.expect(False, "%s: rdflib rejects it: %s" % (path, e))
                continue
            r.expect(len(graph) == 4, "%s: %d triples, not 4" % (path, len(graph)))
            found |= r.check_graph(path, graph)
            literals = {str(o) for o in graph.objects() if isinstance(o, rdflib.Literal)}
            r.expect({"third-party question", "1", 'kept <as> "is"'} <= literals, "%s: literals %r" % (path, literals))
        for expected in (BAD_REWRITTEN, SPACED_REWRITTEN, "urn:glassbox:iri:relative/thing", "urn:dt%20x"):
            r.expect(expected in found, "%r is not in the shown trace: %r" % (expected, sorted(found)))

        export = os.path.join(args.workdir, "export.nq")
        with open(export, "wb") as f:
            f.write(r.run("traces", "export", "--since", "2000-01-01T00:00:00Z").stdout)
        graph = rdflib.ConjunctiveGraph()
        try:
            graph.parse(export, format="nquads")
            r.expect(len(graph) == 4, "export: %d quads, not 4" % len(graph))
            r.check_graph(export, graph)
        except Exception as e:
            r.expect(False, "%s: rdflib rejects it: %s" % (export, e))
        r.expect(worker.error is None, "worker: %s" % worker.error)
    finally:
        if worker is not None:
            worker.stop()
        r.stop()
    return r.summary()


if __name__ == "__main__":
    sys.exit(main())
