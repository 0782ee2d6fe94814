#!/usr/bin/python3
"""rapper and glassbox's RDF reader (serd) agree on how many statements a file holds.

Checks the shared PathQuestion files (kb.nt, labels.nt), the same data re-serialised by rapper as
Turtle and N-Quads (rapper's prefixes and layout, not ours), and the fixtures beside this script in
every format. For each file: `rapper -i FORMAT -c FILE` prints "Parsing returned N triples" on
stderr; `rdf_count FILE` prints the reader's count on stdout; they must be equal.

Exit 0 when every count matches, 1 on a mismatch or a failure, 77 when rapper or ../shared is
absent.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

SKIP = 77
RAPPER = "/usr/bin/rapper"
FORMATS = {".nt": "ntriples", ".nq": "nquads", ".ttl": "turtle", ".trig": "trig"}
TIMEOUT = 120  # seconds per process


def rapper_count(path, syntax):
    proc = subprocess.run([RAPPER, "-i", syntax, "-c", path], capture_output=True, text=True,
                          timeout=TIMEOUT)
    match = re.search(r"Parsing returned (\d+) (triples|statements)", proc.stderr)
    if proc.returncode != 0 or not match or "Error" in proc.stderr:
        raise RuntimeError("rapper failed on %s: %s" % (path, proc.stderr.strip()))
    return int(match.group(1))


def reader_count(rdf_count, path):
    proc = subprocess.run([rdf_count, path], capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError("rdf_count failed on %s: %s" % (path, proc.stderr.strip()))
    return int(proc.stdout.strip())


def reserialise(source, workdir, output, suffix):
    """The same statements written by rapper in another syntax."""
    target = os.path.join(workdir, os.path.basename(source) + suffix)
    with open(target, "wb") as out:
        proc = subprocess.run([RAPPER, "-q", "-i", "ntriples", "-o", output, source], stdout=out,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError("rapper could not write %s: %s" % (target, proc.stderr.decode()))
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rdf-count", required=True)
    parser.add_argument("--shared", required=True, help="the shared data folder")
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()

    if not os.access(RAPPER, os.X_OK):
        print("SKIP: rapper (raptor2-utils) is not installed at", RAPPER)
        return SKIP
    pathquestion = os.path.join(args.shared, "kg-pathquestion")
    if not os.path.isfile(os.path.join(pathquestion, "kb.nt")):
        print("SKIP: no shared data at", pathquestion)
        return SKIP

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    files = []
    for name in ("kb.nt", "labels.nt"):
        source = os.path.join(pathquestion, name)
        files.append(source)
        files.append(reserialise(source, args.workdir, "turtle", ".ttl"))
        files.append(reserialise(source, args.workdir, "nquads", ".nq"))
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    files += sorted(os.path.join(fixtures, f) for f in os.listdir(fixtures)
                    if os.path.splitext(f)[1] in FORMATS)

    failures = 0
    for path in files:
        syntax = FORMATS[os.path.splitext(path)[1]]
        try:
            expected = rapper_count(path, syntax)
            got = reader_count(args.rdf_count, path)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
            print("FAIL", path, error)
            failures += 1
            continue
        status = "ok  " if got == expected and expected > 0 else "FAIL"
        if status != "ok  ":
            failures += 1
        print("%s %-8s rapper %7d  glassbox %7d  %s" % (status, syntax, expected, got, path))
    print("%d files, %d failures" % (len(files), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
