#!/usr/bin/python3
"""Outside tools read what the trace renderers write: builder-made `show` replies in every format.

rdflib parses every Turtle, N-Triples, N-Quads and JSON-LD file and finds exactly the stored
triples (same count, isomorphic graph; the quad formats keep urn:graph:retrieval); rapper parses
the Turtle and N-Triples with the same count; the PROV check passes on the traces.

Usage: check_renderers.py --dump-exe trace_render_dump --prov prov-o.ttl --ontology glassbox.ttl
                          --prov-check prov_check.py --workdir DIR
Exit 0 when every check passes, 1 on a failure, 77 when rdflib or ../shared is absent.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
rdflib = interop_scripts.require_rdflib()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_rdf  # noqa: E402

FORMATS = [(".ttl", "turtle", "turtle"), (".nt", "nt", "ntriples"), (".nq", "nquads", None),
           (".jsonld", "json-ld", None)]


def main():
    args = trace_rdf.parse_args("--dump-exe")
    if args is None:
        return SKIP

    subprocess.run([args.dump_exe, args.workdir], check=True, timeout=60)
    expected = trace_rdf.load_json(os.path.join(args.workdir, "expected.json"))
    failures = []
    checks = 0
    for name, counts in sorted(expected.items()):
        reply = trace_rdf.load_json(os.path.join(args.workdir, name + ".json"))
        quads = trace_rdf.reply_quads(reply)
        if len(quads) != counts["quads"]:
            failures.append("%s: the renderer kept %d quads, the reply has %d distinct" %
                            (name, counts["quads"], len(quads)))
        for ext, fmt, rapper_syntax in FORMATS:
            path = os.path.join(args.workdir, name + ext)
            try:
                n = trace_rdf.check_rdflib(path, fmt, quads)
                checks += 1
                if n != counts["triples"]:
                    failures.append("%s: rdflib %d triples, renderer says %d" % (path, n, counts["triples"]))
                if rapper_syntax and trace_rdf.check_rapper(path, rapper_syntax, n) is not None:
                    checks += 1
            except Exception as e:  # a parser error is a failure of this format, not of the run
                failures.append("%s: %s" % (path, e))
    # PROV conformance of the rendered traces (the hard-literals one carries made-up terms on purpose).
    prov_files = [os.path.join(args.workdir, n + ext) for n in ("echo", "graph_rag") for ext in (".ttl", ".nt")]
    problem = trace_rdf.prov_check(args, prov_files)
    checks += 1
    if problem is not None:
        failures.append("prov_check: " + problem)

    for failure in failures:
        print("FAIL:", failure)
    print("%d checks, %d failures" % (checks, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
