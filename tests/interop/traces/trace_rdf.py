#!/usr/bin/python3
"""Shared checks for `glassbox traces` RDF output: rdflib and rapper parse it, and it holds exactly the stored triples.

Used by check_renderers.py (builder-made replies) and run_traces_interop.py (the real pipeline).
"""
import json
import re
import shutil
import subprocess
import sys

import rdflib
from rdflib.compare import isomorphic

RETRIEVAL_GRAPH = "urn:graph:retrieval"


def parse_args(executable_option):
    """The options both scripts take: `executable_option` (the program they run) plus the PROV
    paths and a work folder. None when PROV-O is absent (../shared missing): the caller skips."""
    import argparse
    import os
    parser = argparse.ArgumentParser()
    parser.add_argument(executable_option, required=True)
    for option in ("--prov", "--ontology", "--prov-check", "--workdir"):
        parser.add_argument(option, required=True)
    args = parser.parse_args()
    if not os.path.exists(args.prov):
        print("SKIP: PROV-O not found at", args.prov, "(../shared is absent)")
        return None
    return args


class CheckFailed(Exception):
    pass


def term(value):
    """The rdflib term of a compact wire term (docs/vocabulary.md §6)."""
    kind = value.get("t")
    if kind == "i" or (kind is None and "i" in value):
        return rdflib.URIRef(value["i"])
    if kind == "b" or (kind is None and "d" in value):
        return rdflib.BNode(value["d"])
    if kind == "l" or (kind is None and "v" in value):
        dt = value.get("dt") or None
        if dt == "http://www.w3.org/2001/XMLSchema#string":
            dt = None
        lang = value.get("ln") or None
        return rdflib.Literal(value["v"], datatype=None if lang else (rdflib.URIRef(dt) if dt else None), lang=lang)
    raise CheckFailed("quoted triples are not RDF 1.1: %r" % (value,))


def reply_quads(reply):
    """Every (s, p, o, g) stored in a `show` reply, sub-traces included, as a set."""
    quads = set()

    def walk(trace):
        for event in trace.get("events") or []:
            for t in event.get("triples") or []:
                quads.add((term(t["s"]), term(t["p"]), term(t["o"]), t.get("g") or ""))
        for sub in trace.get("subtraces") or []:
            walk(sub)

    walk(reply)
    return quads


def graph_of(triples):
    g = rdflib.Graph()
    for s, p, o in triples:
        g.add((s, p, o))
    return g


def expected_graph(quads):
    return graph_of({(s, p, o) for s, p, o, _ in quads})


def parse_triples(path, fmt):
    """rdflib's triples of a file, all graphs merged, and the per-graph counts."""
    ds = rdflib.Dataset()
    if fmt in ("turtle", "nt"):
        g = rdflib.Graph()
        g.parse(path, format=fmt)
        return g, {"": len(g)}
    ds.parse(path, format=fmt)
    merged = rdflib.Graph()
    per_graph = {}
    for s, p, o, c in ds.quads((None, None, None, None)):
        merged.add((s, p, o))
        name = "" if c is None else str(getattr(c, "identifier", c))
        if name.startswith("urn:x-rdflib:"):
            name = ""
        per_graph[name] = per_graph.get(name, 0) + 1
    return merged, per_graph


def check_rdflib(path, fmt, quads):
    """The file parses with rdflib and holds exactly the stored triples (and, for quad formats, graphs)."""
    want = expected_graph(quads)
    got, per_graph = parse_triples(path, fmt)
    if len(got) != len(want):
        raise CheckFailed("%s (%s): rdflib found %d triples, %d stored" % (path, fmt, len(got), len(want)))
    if not isomorphic(got, want):
        raise CheckFailed("%s (%s): rdflib's triples differ from the stored ones" % (path, fmt))
    if fmt in ("nquads", "json-ld"):
        want_graphs = {}
        for _, _, _, g in quads:
            want_graphs[g] = want_graphs.get(g, 0) + 1
        if per_graph != want_graphs:
            raise CheckFailed("%s (%s): graphs %r, stored %r" % (path, fmt, per_graph, want_graphs))
    return len(got)


def check_rapper(path, syntax, count):
    """rapper parses the file (-c counts) and finds `count` triples; None when rapper is absent."""
    rapper = shutil.which("rapper")
    if rapper is None:
        return None
    proc = subprocess.run([rapper, "-i", syntax, "-c", path], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise CheckFailed("rapper -i %s %s failed: %s" % (syntax, path, proc.stderr.strip()))
    match = re.search(r"returned (\d+) triples", proc.stderr)
    if not match or int(match.group(1)) != count:
        raise CheckFailed("rapper -i %s %s: %s (expected %d triples)" % (syntax, path, proc.stderr.strip(), count))
    return count


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def prov_check(args, files):
    """../vocabulary/prov_check.py (args.prov_check, with args.prov and args.ontology) on `files`:
    None when they conform to PROV-O, else what it printed."""
    proc = subprocess.run([sys.executable, args.prov_check, "--prov", args.prov, "--ontology", args.ontology]
                          + files, capture_output=True, text=True, timeout=300)
    return None if proc.returncode == 0 else proc.stdout + proc.stderr
