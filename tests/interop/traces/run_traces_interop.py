#!/usr/bin/python3
"""The real pipeline, read back by `glassbox traces` and checked by rdflib, rapper and the PROV check.

Starts `glassbox up` (broker, echo, trace collector) on ephemeral ports in a fresh home, watches the
explain topic with `traces tail`, sends echo requests with `glassbox call`, waits until
`traces list --json` shows them complete, then checks: every `show` format parses with rdflib
(and rapper for Turtle/N-Triples) to exactly the stored triples, the PROV check holds, a UUID
prefix resolves, an unknown or ambiguous id exits 2 with a clear error, a failed echo shows an
error trace with its error, an echo called with parent_uri is nested as a sub-trace, `export` is N-Quads
holding every shown triple, and `tail --count` saw the events.

Exit 0 when every check passes, 1 on a failure, 77 when rdflib, ../shared or the trace collector
is absent.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import interop_scripts  # noqa: E402

SKIP = interop_scripts.SKIP
rdflib = interop_scripts.require_rdflib()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import glassbox_up  # noqa: E402
import trace_rdf  # noqa: E402

QUESTIONS = ["ping", 'quote " and backslash \\ here', "line one\nline two\ttab", "unicode \u00e9\u4e2d\U0001F600"]


class Pipeline(glassbox_up.UpPipeline):
    def wait_for_trace_service(self):
        last = None

        def answered():
            nonlocal last
            last = self.run("traces", "stats", "--json", timeout_ms=2000, check=False)
            return last.returncode == 0
        if interop_scripts.poll_until(answered, 20):
            return True
        print("SKIP: the trace service did not answer (is the trace collector started by glassbox up?):",
              last.stderr.decode().strip() if last else "")
        return False

    def wait_complete(self, count):
        def listed_when_complete():
            listed = json.loads(self.run("traces", "list", "--json", "--kind", "echo", "--limit", "1000").stdout)
            done = [s for s in listed["sessions"] if s["status"] == "complete"]
            return listed["sessions"] if len(done) >= count else None
        sessions = interop_scripts.poll_until(listed_when_complete, 30)
        if sessions is None:
            raise RuntimeError("the echo traces did not become complete within 30 s")
        return sessions

    def check_show(self, session):
        uri = session["session"]
        name = uri.split(":")[2][:8]
        reply = json.loads(self.run("traces", "show", uri, "--format", "json").stdout)
        quads = trace_rdf.reply_quads(reply)
        self.expect(len(quads) > 0, "%s: no triples shown" % uri)
        self.expect(reply["session"]["session"] == uri, "%s: show answered %s" % (uri, reply["session"]["session"]))
        files = []
        for fmt, ext, rdflib_fmt, rapper in (("turtle", ".ttl", "turtle", "turtle"), ("ntriples", ".nt", "nt", "ntriples"),
                                             ("jsonld", ".jsonld", "json-ld", None), ("nquads", ".nq", "nquads", None)):
            path = os.path.join(self.workdir, name + ext)
            with open(path, "wb") as f:
                f.write(self.run("traces", "show", uri, "--format", fmt).stdout)
            try:
                n = trace_rdf.check_rdflib(path, rdflib_fmt, quads)
                self.expect(True, "")
                if rapper:
                    self.checks += trace_rdf.check_rapper(path, rapper, n) is not None
            except Exception as e:
                self.expect(False, "%s: %s" % (path, e))
            if ext in (".ttl", ".nt"):
                files.append(path)
        tree = self.run("traces", "show", uri, "--show-sources").stdout.decode()
        self.expect("Synthesis" in tree and uri in tree, "%s: the tree has no Synthesis step:\n%s" % (uri, tree))
        self.expect("Status        complete" in tree, "%s: the tree shows no complete status" % uri)
        # A unique prefix of the UUID resolves to the same session.
        uuid = uri.split(":")[2]
        by_prefix = json.loads(self.run("traces", "show", uuid[:13], "--json").stdout)
        self.expect(by_prefix["session"]["session"] == uri, "%s: the prefix %s resolved elsewhere" % (uri, uuid[:13]))
        return files, quads

    def check_rdf_formats(self, uri, reply, tag):
        quads = trace_rdf.reply_quads(reply)
        for fmt, ext, rdflib_fmt in (("turtle", ".ttl", "turtle"), ("ntriples", ".nt", "nt"),
                                     ("jsonld", ".jsonld", "json-ld"), ("nquads", ".nq", "nquads")):
            path = os.path.join(self.workdir, tag + ext)
            with open(path, "wb") as f:
                f.write(self.run("traces", "show", uri, "--format", fmt).stdout)
            try:
                trace_rdf.check_rdflib(path, rdflib_fmt, quads)
                self.expect(True, "")
            except Exception as e:
                self.expect(False, "%s: %s" % (path, e))
        return [os.path.join(self.workdir, tag + ext) for ext in (".ttl", ".nt")]

    def check_error_and_subtrace(self, parent_uri):
        """An echo asked to fail gives an error trace; one called with parent_uri a nested sub-trace."""
        failed = self.run("call", "echo", json.dumps({"question": "fail me", "fail": "Internal"}), check=False)
        self.expect(failed.returncode != 0, "echo with fail: exit 0")

        def error_session():
            listed = json.loads(self.run("traces", "list", "--json", "--status", "error").stdout)
            return [s for s in listed["sessions"] if s["question"] == "fail me"]
        uri = self.wait_for("the error trace", error_session)[0]["session"]
        tree = self.run("traces", "show", uri).stdout.decode()
        self.expect("Status        error" in tree and "\nERROR  Internal: echo was asked to fail" in tree,
                    "error trace tree:\n" + tree)
        reply = json.loads(self.run("traces", "show", uri, "--json").stdout)
        files = self.check_rdf_formats(uri, reply, "error")

        caller = parent_uri.rsplit(":", 1)[0] + ":synthesis"
        self.run("call", "echo", json.dumps({"question": "sub-run", "parent_uri": caller}))

        def nested():
            shown = json.loads(self.run("traces", "show", parent_uri, "--json").stdout)
            subs = shown.get("subtraces") or []
            return shown if subs and subs[0]["session"]["status"] == "complete" else None
        reply = self.wait_for("the sub-trace", nested)
        tree = self.run("traces", "show", parent_uri).stdout.decode()
        self.expect("\u2514\u2500 called from synthesis" in tree and "    Question      sub-run" in tree,
                    "sub-trace tree:\n" + tree)
        files += self.check_rdf_formats(parent_uri, reply, "with_subtrace")
        return files

    def check_bad_ids(self, sessions):
        unknown = self.run("traces", "show", "ffffffff-ffff-4fff-8fff-ffffffffffff", check=False)
        self.expect(unknown.returncode == 2 and b"NotFound" in unknown.stderr,
                    "unknown id: exit %d, %r" % (unknown.returncode, unknown.stderr))
        nonsense = self.run("traces", "show", "urn:not:a:trace", check=False)
        self.expect(nonsense.returncode == 2, "unknown URI: exit %d, %r" % (nonsense.returncode, nonsense.stderr))
        # An ambiguous prefix: the longest prefix two sessions share (send more echoes until one exists).
        uuids = sorted(s["session"].split(":")[2] for s in sessions)
        best = ""
        for a, b in zip(uuids, uuids[1:]):
            common = os.path.commonprefix([a, b])
            if len(common) > len(best):
                best = common
        self.expect(best != "", "no two sessions share a UUID prefix")
        if best:
            ambiguous = self.run("traces", "show", best, check=False)
            stderr = ambiguous.stderr.decode()
            matching = [s["session"] for s in sessions if s["session"].split(":")[2].startswith(best)]
            self.expect(ambiguous.returncode == 2 and "InvalidRequest" in stderr and all(m in stderr for m in matching),
                        "ambiguous prefix %s: exit %d, %r" % (best, ambiguous.returncode, stderr))

    def check_export(self, shown_quads):
        proc = self.run("traces", "export", "--since", "1h", timeout_ms=60000)
        path = os.path.join(self.workdir, "export.nq")
        with open(path, "wb") as f:
            f.write(proc.stdout)
        self.expect(b"exported" in proc.stderr, "export: no summary on stderr: %r" % proc.stderr)
        ds = rdflib.Dataset()
        try:
            ds.parse(path, format="nquads")
        except Exception as e:
            self.expect(False, "export: rdflib cannot parse N-Quads: %s" % e)
            return
        exported = {(s, p, o) for s, p, o, _ in ds.quads((None, None, None, None))}
        missing = [q for q in shown_quads if (q[0], q[1], q[2]) not in exported and not isinstance(q[0], rdflib.BNode)]
        self.expect(not missing, "export lacks %d shown triples, e.g. %r" % (len(missing), missing[:1]))
        graphs = {str(getattr(c, "identifier", c)) for _, _, _, c in ds.quads((None, None, None, None))}
        self.expect(graphs == {trace_rdf.RETRIEVAL_GRAPH}, "export graphs: %r" % graphs)


def main():
    args = trace_rdf.parse_args("--glassbox")
    if args is None:
        return SKIP

    p = Pipeline(args.glassbox, args.workdir)
    try:
        p.start()
        if not p.wait_for_trace_service():
            return SKIP
        tail_out = open(os.path.join(args.workdir, "tail.jsonl"), "wb")
        tail = subprocess.Popen([args.glassbox, "traces", "tail", "--home", p.home, "--kind", "echo", "--json",
                                 "--count", "2", "--timeout-ms", "30000"], stdout=tail_out, stderr=subprocess.PIPE)
        # PUB/SUB: the subscription must reach the broker before the first event.
        p.wait_for("the tail's subscription reaches the broker", lambda: json.loads(
            p.run("status", "--json").stdout).get("topic", {}).get("subscriptions", 0) >= 1)

        sent = 0
        for question in QUESTIONS:
            p.run("call", "echo", json.dumps({"question": question}))
            sent += 1
        sessions = p.wait_complete(sent)
        # More sessions until two UUIDs share a prefix (at most 17 needed: 16 hex digits).
        while len({s["session"].split(":")[2][0] for s in sessions}) == len(sessions) and sent < 17:
            p.run("call", "echo", json.dumps({"question": "more %d" % sent}))
            sent += 1
            sessions = p.wait_complete(sent)

        tail_rc = tail.wait(timeout=40)
        tail_out.close()
        with open(tail_out.name, encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
        p.expect(tail_rc == 0, "tail --count 2: exit %d, %r" % (tail_rc, tail.stderr.read()))
        p.expect(len(events) == 2 and all(e["kind"] == "echo" for e in events), "tail events: %r" % events)
        p.expect(all(e["step_type"] in ("Question", "Synthesis") for e in events), "tail step types: %r" % events)

        table = p.run("traces", "list").stdout.decode()
        p.expect(table.startswith("SESSION") and all(s["session"].split(":")[2] in table for s in sessions[:5]),
                 "list table:\n" + table)
        questions = {s["question"] for s in sessions}
        p.expect(all(q in questions for q in QUESTIONS), "list questions: %r" % questions)

        files = []
        shown = set()
        for session in sessions[:len(QUESTIONS)]:
            session_files, quads = p.check_show(session)
            files += session_files
            shown |= quads
        files += p.check_error_and_subtrace(sessions[0]["session"])
        problem = trace_rdf.prov_check(args, files)
        p.expect(problem is None, "prov_check: %s" % problem)
        p.check_bad_ids(sessions)
        p.check_export(shown)
    finally:
        p.stop()
    return p.summary()


if __name__ == "__main__":
    sys.exit(main())
