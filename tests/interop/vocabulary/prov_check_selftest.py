#!/usr/bin/python3
"""prov_check must find each planted violation in data/bad_trace.nq (so a passing trace check
means something). Usage: prov_check_selftest.py --prov prov-o.ttl --ontology glassbox.ttl"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
interop_scripts.require_rdflib("rdflib")
sys.path.insert(0, HERE)
import prov_check  # noqa: E402

EXPECTED = [
    "urn:t:q is both a prov:Entity and a prov:Activity",       # gb:Synthesis ⊑ prov:Entity
    "urn:t:q http://www.w3.org/ns/prov#startedAtTime",          # not an xsd:dateTime
    "object is not a http://www.w3.org/ns/prov#Entity",          # derived from an activity
    "generatedAtTime",                                           # typed xsd:string
    "madeUpProperty is not declared in PROV-O",
    "urn:t:a uses http://www.w3.org/ns/prov#wasAttributedTo but is not a http://www.w3.org/ns/prov#Entity",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prov", required=True)
    ap.add_argument("--ontology", required=True)
    args = ap.parse_args()
    if prov_check.reference_missing(args.prov):
        return SKIP
    problems = prov_check.check([os.path.join(HERE, "data", "bad_trace.nq")], args.prov, [args.ontology])
    missing = [e for e in EXPECTED if not any(e in p for p in problems)]
    for p in problems:
        print("found:", p)
    for m in missing:
        print("FAIL: not detected:", m)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
