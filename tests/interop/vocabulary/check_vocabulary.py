#!/usr/bin/python3
"""Runs vocabulary_dump (every explain builder, a sample run of each chain) and checks that
the output parses, that every predicate and rdf:type object is declared in glassbox.ttl, in
PROV-O, or is an RDF/RDFS/XSD/OWL term, that every gb: term of vocabulary.hpp is declared
with a label and comment, that TrustGraph links point into TrustGraph's namespace, and that
the traces pass prov_check.

Usage: check_vocabulary.py --dump-exe PATH --ontology glassbox.ttl --prov prov-o.ttl --workdir DIR
Exit 0 ok, 1 failures, 77 skip (rdflib or PROV-O reference missing).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prov_check  # noqa: E402  (puts tests/support on the path)
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
rdflib = interop_scripts.require_rdflib("rdflib")
from rdflib import OWL, RDF, RDFS, URIRef  # noqa: E402
from rdflib.namespace import SKOS  # noqa: E402

GB = "https://glassbox.dev/ns#"
TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
BUILTIN = ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://www.w3.org/2000/01/rdf-schema#",
           "http://www.w3.org/2001/XMLSchema#", "http://www.w3.org/2002/07/owl#")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump-exe", required=True)
    ap.add_argument("--ontology", required=True)
    ap.add_argument("--prov", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    if prov_check.reference_missing(args.prov, " (is ../shared present?)"):
        return SKIP

    os.makedirs(args.workdir, exist_ok=True)
    dump = os.path.join(args.workdir, "explain_chains.nq")
    terms_file = os.path.join(args.workdir, "gb_terms.txt")
    subprocess.run([args.dump_exe, dump, terms_file], check=True)

    problems = []
    onto = rdflib.Graph().parse(args.ontology, format="turtle")
    prov = rdflib.Graph().parse(args.prov, format="turtle")
    declared = {s for s in onto.subjects(RDF.type, None)} | {s for s in prov.subjects(RDF.type, None)}
    gb_declared = {s for s in onto.subjects(RDF.type, None) if str(s).startswith(GB)}

    # The ontology: every gb: term has a label and a comment; links point at TrustGraph.
    for term in gb_declared:
        for what in (RDFS.label, RDFS.comment):
            if onto.value(term, what) is None:
                problems.append(f"glassbox.ttl: {term} has no {what}")
    links = 0
    for link in (OWL.equivalentClass, OWL.equivalentProperty, SKOS.closeMatch):
        for s, o in onto.subject_objects(link):
            links += 1
            if not str(o).startswith(TG):
                problems.append(f"glassbox.ttl: {s} {link} {o} is not a TrustGraph term")
    if links < 20:
        problems.append(f"glassbox.ttl: only {links} TrustGraph links")
    for s, o in onto.subject_objects(RDFS.subClassOf):
        if isinstance(o, URIRef) and str(o).startswith(PROV) and (o, RDF.type, None) not in prov:
            problems.append(f"glassbox.ttl: superclass {o} is not in PROV-O")
    question = URIRef(GB + "Question")
    if (question, RDFS.subClassOf, URIRef(PROV + "Activity")) not in onto:
        problems.append("glassbox.ttl: gb:Question is not a prov:Activity")

    # vocabulary.hpp's terms are all declared.
    with open(terms_file, encoding="utf-8") as f:
        code_terms = {URIRef(line.strip()) for line in f if line.strip()}
    for t in sorted(code_terms - gb_declared):
        problems.append(f"vocabulary.hpp term {t} is not declared in glassbox.ttl")
    for t in sorted(gb_declared - code_terms):
        problems.append(f"glassbox.ttl term {t} has no constant in vocabulary.hpp")

    # The dumped traces.
    try:
        data = prov_check.load_data(dump)
    except Exception as exc:  # noqa: BLE001
        print(f"FAIL: {dump} does not parse: {exc}")
        return 1
    ds = rdflib.Dataset()
    ds.parse(dump, format="nquads")
    graphs = {str(c.identifier) for c in ds.contexts() if len(c) > 0}
    if graphs != {"urn:graph:retrieval"}:
        problems.append(f"triples outside urn:graph:retrieval: {graphs}")
    if len(data) < 200:
        problems.append(f"only {len(data)} triples dumped")
    used = set(data.predicates()) | set(data.objects(None, RDF.type))
    for iri in sorted(used):
        if iri in declared or str(iri).startswith(BUILTIN):
            continue
        problems.append(f"{iri} is used as a predicate or class but declared nowhere")
    problems.extend(prov_check.check([dump], args.prov, [args.ontology]))

    return interop_scripts.report(
        problems, f"{len(data)} triples, {len(used)} predicates/classes, all declared; PROV-O holds")


if __name__ == "__main__":
    sys.exit(main())
