#!/usr/bin/python3
"""PROV-O conformance check for RDF files (explain traces, N-Quads/N-Triples/Turtle/TriG).

Checks, against the PROV-O ontology (and any extra ontologies, for their subclasses):
  1. every prov: term used is declared in prov-o.ttl;
  2. no node is both a prov:Entity and a prov:Activity (types closed under rdfs:subClassOf);
  3. rdfs:domain / rdfs:range of prov properties (and of properties declared as their
     rdfs:subPropertyOf) hold for typed nodes; literal ranges need that datatype;
  4. PROV times are xsd:dateTime literals with a valid lexical form.

Usage: prov_check.py --prov prov-o.ttl [--ontology extra.ttl]... FILE...
Exit 0 when clean, 1 on violations, 77 when a prerequisite is missing (ctest skip).
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
rdflib = interop_scripts.require_rdflib("rdflib")
from rdflib import RDF, RDFS, XSD, Literal, URIRef  # noqa: E402

PROV = "http://www.w3.org/ns/prov#"
TIME_PROPERTIES = {PROV + n for n in ("startedAtTime", "endedAtTime", "generatedAtTime",
                                       "invalidatedAtTime", "atTime")}
DATETIME = re.compile(r"^-?\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$")

FORMATS = {".nq": "nquads", ".nt": "nt", ".ttl": "turtle", ".trig": "trig"}


def load_data(path):
    fmt = FORMATS.get(os.path.splitext(path)[1], "nquads")
    ds = rdflib.Dataset()
    ds.parse(path, format=fmt)
    graph = rdflib.Graph()
    for s, p, o, _ in ds.quads((None, None, None, None)):
        graph.add((s, p, o))
    return graph


def closure(start, parents):
    seen, todo = set(), list(start)
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        todo.extend(parents.get(x, ()))
    return seen


def check(files, prov_path, ontologies=()):
    """Returns a list of violation messages (empty when every file conforms)."""
    schema = rdflib.Graph()
    schema.parse(prov_path, format="turtle")
    prov_declared = {s for s in schema.subjects(RDF.type, None) if str(s).startswith(PROV)}
    for path in ontologies:
        schema.parse(path, format="turtle")

    sub_class, sub_prop = {}, {}
    for s, o in schema.subject_objects(RDFS.subClassOf):
        sub_class.setdefault(s, set()).add(o)
    for s, o in schema.subject_objects(RDFS.subPropertyOf):
        sub_prop.setdefault(s, set()).add(o)

    def constraints(prop):
        """(domain, range) pairs of prov properties that prop is, or is a subproperty of."""
        out = []
        for q in closure([prop], sub_prop):
            if not str(q).startswith(PROV):
                continue
            for d in schema.objects(q, RDFS.domain) or []:
                out.append(("domain", q, d))
            for r in schema.objects(q, RDFS.range) or []:
                out.append(("range", q, r))
        return [c for c in out if isinstance(c[2], URIRef)]  # unions are left unchecked

    problems = []
    for path in files:
        try:
            data = load_data(path)
        except Exception as exc:  # noqa: BLE001 - any parse failure is a finding
            problems.append(f"{path}: does not parse: {exc}")
            continue
        types = {}
        for s, o in data.subject_objects(RDF.type):
            types.setdefault(s, set()).add(o)
        closed = {n: closure(t, sub_class) for n, t in types.items()}

        for term in set(data.predicates()) | set(data.objects(None, RDF.type)) | set(data.all_nodes()):
            if isinstance(term, URIRef) and str(term).startswith(PROV) and term not in prov_declared:
                problems.append(f"{path}: {term} is not declared in PROV-O")

        entity, activity = URIRef(PROV + "Entity"), URIRef(PROV + "Activity")
        for node, ts in closed.items():
            if entity in ts and activity in ts:
                problems.append(f"{path}: {node} is both a prov:Entity and a prov:Activity")

        for s, p, o in data:
            for kind, prop, cls in constraints(p):
                if kind == "domain":
                    if s in closed and cls not in closed[s]:
                        problems.append(f"{path}: {s} uses {prop} but is not a {cls}")
                    continue
                if str(cls).startswith(str(XSD)):
                    if not isinstance(o, Literal) or o.datatype != cls:
                        problems.append(f"{path}: {s} {prop} {o!r}: expected a {cls} literal")
                elif isinstance(o, Literal):
                    problems.append(f"{path}: {s} {prop} has literal {o!r}, range is {cls}")
                elif o in closed and cls not in closed[o]:
                    problems.append(f"{path}: {s} {prop} {o}: object is not a {cls}")
            if str(p) in TIME_PROPERTIES:
                if not (isinstance(o, Literal) and o.datatype == XSD.dateTime
                        and DATETIME.match(str(o))):
                    problems.append(f"{path}: {s} {p} {o!r}: expected an xsd:dateTime")
    return problems


def reference_missing(prov, note=""):
    """True, having said SKIP, when the PROV-O reference file `prov` is absent."""
    if os.path.exists(prov):
        return False
    print(f"SKIP: PROV-O reference not found at {prov}{note}")
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prov", required=True, help="path to prov-o.ttl")
    parser.add_argument("--ontology", action="append", default=[],
                        help="extra ontology (Turtle) whose subclasses and subproperties count")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if reference_missing(args.prov):
        return SKIP
    problems = check(args.files, args.prov, args.ontology)
    return interop_scripts.report(problems, f"{len(args.files)} file(s) conform to PROV-O")


if __name__ == "__main__":
    sys.exit(main())
