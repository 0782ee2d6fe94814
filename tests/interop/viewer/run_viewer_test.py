#!/usr/bin/python3
"""The web trace viewer in headless Chromium against the real pipeline (issue 19, "Web trace viewer").

Starts `glassbox up` (broker, workers, trace collector and the HTTP gateway on a free loopback port) in
a fresh home, loads ops/sample, and stores two synthetic traces of over 10,000 triples through the real
path: GBW01 workers written here (glassbox_up.ExplainWorker) answer one request each, one with a
graph-RAG shaped trace (Question, Grounding, an Exploration of 250 retrieved chunks, a Focus of 450
kept edges, a Synthesis with citations), one with an agent shaped trace of 922 steps; the broker spools
them and the trace collector stores them like any other. Then viewer_test.mjs (puppeteer-core driving
Debian's chromium) asks questions in the page, follows a citation, opens the stored trace (its
confidence badge checked against the trace's gb:answerConfidence, its evidence features opened) and
the synthetic ones from the list (render bounded to 300 ms), opens a question from the list while it runs
(its live tail), stops one from the page, opens the evaluation run `glassbox eval` recorded (its figures
against the API, both SVG charts rendered), and saves screenshots under --workdir/screenshots. The
extractive model waits LLM_DELAY_MS before each answer, so that a question runs for seconds.

Exit 0 when every check passes, 1 on a failure, 77 (skip, with the reason) when chromium, node, the
npm package puppeteer-core (ops/install-deps installs it), pyzmq or the gateway is missing.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "traces"))
import glassbox_up  # noqa: E402
import interop_scripts  # noqa: E402  (glassbox_up put tests/support on the path)

SERVICE = "viewer-synthetic"
STEPS_SERVICE = "viewer-synthetic-steps"
STEPS_QUESTION = "synthetic thousand-step trace"
QUESTION = "Who founded the shipyard that built the MV Curlew?"
AGENT_QUESTION = "Where was the designer of Saltspire Light born?"
# Asked while the test watches: one opened from the list while it runs (its live tail), one
# stopped from the page.
TAIL_QUESTION = "Who designed Greyhollow Light?"
STOP_QUESTION = "Who founded the shipyard that built the Saltspire Light tender?"
# Every answer of the extractive model waits this long (llm.extractive_delay_ms): a question then
# runs for seconds, as with a real model, so the test can open it while it runs and stop it
# before it ends.
LLM_DELAY_MS = "700"
# Issue 36: a question over a small knowledge base that then changes (`load rdf --replace`): its
# trace is marked affected (the banner), and its replay is compared with it side by side.
CHANGES_COLLECTION = "changes"
CHANGES_QUESTION = "Who founded the shipyard that built the MV Curlew?"
# Markup in the trace's texts must reach the page as text: the test checks nothing of it runs.
SYNTHETIC_QUESTION = "synthetic ten-thousand-triple trace <img src=x onerror=\"window.__injected=true\">"
GB = "https://glassbox.dev/ns#"
PROV = "http://www.w3.org/ns/prov#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"


def iri(v):
    return {"t": "i", "i": v}


def lit(v, dt=None):
    term = {"t": "l", "v": str(v)}
    if dt:
        term["dt"] = XSD + dt
    return term


class SyntheticTrace:
    """A graph-RAG shaped trace: `chunks` retrieved chunks (17 triples each) and `edges` kept edges (13
    each) make 250 * 17 + 450 * 13 = 10,100 triples, about 10,200 with the steps around them."""

    def __init__(self, chunks=250, edges=450):
        self.chunks = chunks
        self.edges = edges

    def bodies(self):
        run = "urn:glassbox:%s:" % uuid.uuid4()
        q = run + "question"
        worker = "urn:glassbox:agent:worker:" + SERVICE
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        messages = []

        def step(name, triples, end=False):
            messages.append({"message_type": "explain", "session": q, "seq": len(messages), "service": SERVICE,
                             "worker": SERVICE + "/py", "explain_id": run + name if name else q,
                             "explain_graph": "urn:graph:retrieval",
                             "explain_triples": [{"s": iri(s), "p": iri(p), "o": o, "g": "urn:graph:retrieval"}
                                                 for s, p, o in triples],
                             "end_of_trace": end, "trace_status": "complete" if end else ""})

        def entity(uri, cls, prev, ms):
            out = [(uri, RDF + "type", iri(PROV + "Entity")), (uri, RDF + "type", iri(GB + cls)),
                   (uri, PROV + "wasGeneratedBy", iri(q)), (uri, PROV + "generatedAtTime", lit(now, "dateTime")),
                   (uri, GB + "durationMs", lit(ms, "integer"))]
            if prev:
                out.append((uri, PROV + "wasDerivedFrom", iri(prev)))
            return out

        step("", [(q, RDF + "type", iri(PROV + "Activity")), (q, RDF + "type", iri(GB + "Question")),
                  (q, GB + "query", lit(SYNTHETIC_QUESTION)), (q, PROV + "startedAtTime", lit(now, "dateTime")),
                  (q, PROV + "wasAssociatedWith", iri(worker)), (worker, RDF + "type", iri(PROV + "SoftwareAgent")),
                  (worker, RDF + "type", iri(GB + "Worker"))])
        g = run + "grounding"
        step("grounding", entity(g, "Grounding", "", 3) + [(g, GB + "concept", lit("concept %d" % i)) for i in range(20)]
             + [(g, GB + "inputTokens", lit(120, "integer")), (g, GB + "outputTokens", lit(30, "integer"))])
        x = run + "exploration"
        triples = entity(x, "Exploration", g, 9) + [(x, GB + "chunkCount", lit(self.chunks, "integer"))]
        triples += [(x, GB + "seedEntity", iri("urn:synthetic:entity:%d" % i)) for i in range(5)]
        for i in range(self.chunks):
            sel, doc = x + ":chunk:%d" % i, "urn:synthetic:doc:%d" % (i % 40)
            chunk = doc + "#chunk-%d" % i
            triples += [(x, GB + "retrievedChunk", iri(sel)), (sel, RDF + "type", iri(PROV + "Entity")),
                        (sel, RDF + "type", iri(GB + "ChunkSelection")), (sel, GB + "score", lit(1.0 / (i + 1), "double")),
                        (sel, GB + "dataTier", lit(2, "integer")), (sel, GB + "vectorRank", lit(i + 1, "integer")),
                        (sel, GB + "vectorScore", lit(0.9 - i / 1000, "double")),
                        (sel, GB + "keywordRank", lit(self.chunks - i, "integer")),
                        (sel, GB + "keywordScore", lit(3.5, "double")), (sel, GB + "sourceChunk", iri(chunk)),
                        (sel, GB + "sourceDocument", iri(doc)), (sel, PROV + "wasDerivedFrom", iri(chunk)),
                        (chunk, RDF + "type", iri(PROV + "Entity")), (chunk, RDF + "type", iri(GB + "Chunk")),
                        (chunk, PROV + "wasDerivedFrom", iri(doc)), (chunk, GB + "charOffset", lit(i * 100, "integer")),
                        (chunk, GB + "charLength", lit(100, "integer"))]
        step("exploration", triples)
        f = run + "focus"
        triples = entity(f, "Focus", x, 14) + [(f, GB + "edgeCount", lit(self.edges, "integer"))]
        for i in range(self.edges):
            sel = f + ":edge:%d" % i
            triples += [(f, GB + "selectedEdge", iri(sel)), (sel, RDF + "type", iri(PROV + "Entity")),
                        (sel, RDF + "type", iri(GB + "EdgeSelection")), (sel, RDF + "type", iri(RDF + "Statement")),
                        (sel, RDF + "subject", iri("urn:synthetic:entity:%d" % (i % 150))),
                        (sel, RDF + "predicate", iri("urn:synthetic:relation:%d" % (i % 12))),
                        (sel, RDF + "object", iri("urn:synthetic:entity:%d" % ((i * 7 + 3) % 150))),
                        (sel, GB + "score", lit(1.0 - i / self.edges, "double")), (sel, GB + "concept", lit("concept %d" % (i % 20))),
                        (sel, GB + "reasoning", lit("edge %d <b>kept</b> for the test" % i)),
                        (sel, GB + "dataTier", lit(1 + i % 4, "integer")),
                        (sel, GB + "sourceDocument", iri("urn:synthetic:doc:%d" % (i % 40))),
                        (sel, PROV + "wasDerivedFrom", iri("urn:synthetic:doc:%d" % (i % 40)))]
        step("focus", triples)
        s = run + "synthesis"
        answer = "A synthetic answer <script>window.__injected=true</script> with ten cited claims. " * 10
        triples = entity(s, "Synthesis", f, 20) + [(s, GB + "answerText", lit(answer))]
        for i in range(10):
            c = s + ":citation:%d" % i
            start = i * (len(answer) // 10)
            triples += [(s, GB + "citation", iri(c)), (c, RDF + "type", iri(PROV + "Entity")),
                        (c, RDF + "type", iri(GB + "Citation")), (c, GB + "spanStart", lit(start, "integer")),
                        (c, GB + "spanEnd", lit(start + 40, "integer")), (c, GB + "supportedBy", iri(f + ":edge:%d" % i))]
        triples += [(q, PROV + "endedAtTime", lit(now, "dateTime")), (q, GB + "status", lit("complete"))]
        step("synthesis", triples, end=True)
        self.triples = sum(len(m["explain_triples"]) for m in messages)
        return messages


class ManyStepsTrace:
    """An agent shaped trace: `iterations` tool uses (13 triples each) and their observations (9 each):
    460 * 22 = 10,120 triples in 922 steps, each its own explain message."""

    def __init__(self, iterations=460):
        self.iterations = iterations

    def bodies(self):
        run = "urn:glassbox:%s:" % uuid.uuid4()
        q = run + "question"
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        messages = []

        def step(uri, triples, end=False):
            messages.append({"message_type": "explain", "session": q, "seq": len(messages), "service": STEPS_SERVICE,
                             "worker": STEPS_SERVICE + "/py", "explain_id": uri, "explain_graph": "urn:graph:retrieval",
                             "explain_triples": [{"s": iri(s), "p": iri(p), "o": o, "g": "urn:graph:retrieval"}
                                                 for s, p, o in triples],
                             "end_of_trace": end, "trace_status": "complete" if end else ""})

        def entity(uri, classes, prev):
            return [(uri, RDF + "type", iri(PROV + "Entity"))] + [(uri, RDF + "type", iri(GB + c)) for c in classes] + [
                (uri, PROV + "wasGeneratedBy", iri(q)), (uri, PROV + "generatedAtTime", lit(now, "dateTime")),
                (uri, PROV + "wasDerivedFrom", iri(prev))]

        step(q, [(q, RDF + "type", iri(PROV + "Activity")), (q, RDF + "type", iri(GB + "Question")),
                 (q, GB + "query", lit(STEPS_QUESTION)), (q, PROV + "startedAtTime", lit(now, "dateTime"))])
        prev = q
        for i in range(self.iterations):
            a, o = run + "analysis:%d" % i, run + "observation:%d" % i
            step(a, entity(a, ["Analysis", "ToolUse"], prev) + [
                (a, GB + "durationMs", lit(3, "integer")), (a, GB + "inputTokens", lit(300 + i, "integer")),
                (a, GB + "outputTokens", lit(20, "integer")), (a, GB + "iteration", lit(i, "integer")),
                (a, GB + "thought", lit("iteration %d: look further" % i)), (a, GB + "action", lit("graph-rag")),
                (a, GB + "arguments", lit('{"question": "hop %d"}' % i))])
            step(o, entity(o, ["Observation"], a) + [
                (o, GB + "durationMs", lit(5, "integer")), (o, GB + "iteration", lit(i, "integer")),
                (o, GB + "observation", lit("observed fact %d" % i)), (o, GB + "toolStatus", lit("ok"))])
            prev = o
        c = run + "conclusion"
        step(c, entity(c, ["Conclusion"], prev) + [(c, GB + "answerText", lit("the last hop")),
                                                   (q, PROV + "endedAtTime", lit(now, "dateTime")),
                                                   (q, GB + "status", lit("complete"))], end=True)
        self.triples = sum(len(m["explain_triples"]) for m in messages)
        return messages


def changes_knowledge(founder):
    """The knowledge base of the changes collection, its shipyard founded by `founder`."""
    return ("@prefix ex: <https://example.org/kb/> .\n"
            "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
            "ex:Curlew rdfs:label \"MV Curlew\" ; ex:builtBy ex:Yard .\n"
            "ex:Yard rdfs:label \"Brenn Shipyard\" ; ex:foundedBy ex:%s .\n"
            "ex:%s rdfs:label \"%s Brenn\" .\n"
            "ex:builtBy rdfs:label \"was built by\" .\n"
            "ex:foundedBy rdfs:label \"was founded by\" .\n" % (founder, founder, founder))


def change_and_replay(up, workdir):
    """The real path of a knowledge change (issue 36): a graph-RAG question over a file, the file
    loaded again with --replace after one fact changed, then `glassbox traces replay` of the run.
    Returns (the run, its replay, whether the store marked the run affected within 30 s)."""
    kb = os.path.join(workdir, "changes.ttl")
    with open(kb, "w") as f:
        f.write(changes_knowledge("Oskar"))
    up.run("load", "rdf", kb, "--collection", CHANGES_COLLECTION, timeout_ms=60000)
    asked = up.run("invoke", "graph-rag", "-q", CHANGES_QUESTION, "--collection", CHANGES_COLLECTION,
                   "--json", timeout_ms=60000)
    final = json.loads(asked.stdout.decode().strip().splitlines()[-1])["body"]
    original = final["session"]
    up.wait_for("the changes question's trace", lambda: json.loads(
        up.run("traces", "show", original, "--json").stdout)["session"]["status"] == "complete")
    with open(kb, "w") as f:
        f.write(changes_knowledge("Elin"))
    replaced = up.run("load", "rdf", kb, "--collection", CHANGES_COLLECTION, "--replace", timeout_ms=60000,
                      check=False)
    up.expect(replaced.returncode == 0, "load rdf --replace (issue 36, H1): exit %d: %s"
              % (replaced.returncode, replaced.stderr.decode().strip()))
    affected = interop_scripts.poll_until(lambda: json.loads(
        up.run("traces", "show", original, "--json").stdout).get("affected"), 30)
    up.expect(bool(affected), "the run over the replaced fact is marked affected in its detail (issue 36, H2)")
    replayed = up.run("traces", "replay", original, "--json", timeout_ms=120000)
    replay = json.loads(replayed.stdout)["replay"]
    return original, replay, bool(affected)


def evaluate(up, workdir):
    """`glassbox eval` of a two-question set through the real pipeline (issue 35): it records the run,
    its rows and its two charts in the trace store, where the gateway serves them. Returns its name."""
    questions = os.path.join(workdir, "viewer-set.jsonl")
    with open(questions, "w") as f:
        f.write(json.dumps({"id": "curlew", "question": QUESTION, "answers": ["Oskar Brenn"]}) + "\n")
        f.write(json.dumps({"id": "wrong", "question": TAIL_QUESTION, "answers": ["Nobody Here"]}) + "\n")
    out = os.path.join(workdir, "viewer-eval")
    ran = up.run("eval", questions, "--engine", "graph-rag", "--out", out, "--json", timeout_ms=180000)
    record = json.loads(ran.stdout)["record"]
    up.expect(record.get("name") == "viewer-eval", "glassbox eval recorded its run: %s" % record)
    return "viewer-eval"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip(reason):
    print("SKIP:", reason)
    return SKIP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glassbox", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--chromium", default=os.environ.get("GLASSBOX_CHROMIUM", "chromium"))
    parser.add_argument("--node", default="node")
    parser.add_argument("--max-render-ms", default="300")
    args = parser.parse_args()

    chromium = shutil.which(args.chromium)
    node = shutil.which(args.node)
    if not chromium:
        return skip("chromium is not installed (apt-get install chromium; ops/install-deps does it)")
    if not node:
        return skip("node is not installed (apt-get install nodejs npm)")
    if not os.path.isdir(os.path.join(HERE, "node_modules", "puppeteer-core")):
        return skip("the npm package puppeteer-core is not installed in %s (ops/install-deps runs npm ci there)" % HERE)
    try:
        import zmq  # noqa: F401  (the synthetic worker speaks it)
    except ImportError:
        return skip("pyzmq (python3-zmq) is not installed for " + sys.executable)
    usage = subprocess.run([args.glassbox, "up", "--help"], capture_output=True, text=True).stdout
    if "--gateway-listen" not in usage:
        return skip("this glassbox up starts no gateway (no --gateway-listen)")

    port = free_port()
    url = "http://127.0.0.1:%d" % port
    os.environ["GLASSBOX_LLM_EXTRACTIVE_DELAY_MS"] = LLM_DELAY_MS  # inherited by glassbox up's workers
    up = glassbox_up.UpPipeline(args.glassbox, args.workdir)
    workers = []
    try:
        endpoint = up.start(["--gateway-listen", "127.0.0.1:%d" % port])
        for service in ("store", "embeddings", "llm", "graph-rag", "document-rag", "query", "trace"):
            up.wait_for("the %s service" % service, lambda s=service: b"200" in up.run("call", "mmi.service", s, check=False).stdout)
        up.wait_for("the gateway", lambda: http_ok(url + "/"))
        sample = os.path.join(args.source_dir, "ops", "sample")
        up.run("load", "rdf", os.path.join(sample, "orrin.ttl"), "--tier", "1", timeout_ms=60000)
        up.run("load", "docs", os.path.join(sample, "docs"), timeout_ms=60000)

        synthetic, many = SyntheticTrace(), ManyStepsTrace()
        workers = [glassbox_up.ExplainWorker(endpoint, SERVICE, synthetic.bodies, curve=up.curve_keys("worker")),
                   glassbox_up.ExplainWorker(endpoint, STEPS_SERVICE, many.bodies, curve=up.curve_keys("worker"))]
        for worker in workers:
            worker.start()
            worker.ready.wait(5)
            up.wait_for("the %s service" % worker.service,
                        lambda w=worker: up.run("call", w.service, "{}", check=False).returncode == 0)

            def stored(kind=worker.service):
                listed = json.loads(up.run("traces", "list", "--json", "--kind", kind).stdout)
                return [s for s in listed["sessions"] if s["status"] == "complete"]
            up.wait_for("the %s trace" % worker.service, stored)
        print("synthetic traces: %d and %d triples stored through the broker and the trace collector"
              % (synthetic.triples, many.triples))
        # Their work is done: stopped now, they cannot miss heartbeats while the browser runs.
        for worker in workers:
            up.expect(worker.error is None, "the %s worker: %s" % (worker.service, worker.error))
            worker.stop()

        changed, replayed, _ = change_and_replay(up, args.workdir)
        print("knowledge change: run %s, replayed as %s" % (changed, replayed))
        eval_run = evaluate(up, args.workdir)
        print("evaluation run %s recorded" % eval_run)

        cmd = [node, os.path.join(HERE, "viewer_test.mjs"), "--url", url, "--chromium", chromium,
               "--changed-trace", changed, "--replayed-trace", replayed, "--eval-run", eval_run,
               "--shots", os.path.join(args.workdir, "screenshots"), "--question", QUESTION, "--agent-question", AGENT_QUESTION,
               "--synthetic-question", "synthetic ten-thousand-triple", "--synthetic-triples", str(synthetic.triples),
               "--steps-question", STEPS_QUESTION, "--steps-triples", str(many.triples),
               "--tail-question", TAIL_QUESTION, "--stop-question", STOP_QUESTION,
               "--max-render-ms", args.max_render_ms]
        proc = subprocess.run(cmd, cwd=HERE, timeout=600)
        print("screenshots in", os.path.join(args.workdir, "screenshots"))
        up.expect(proc.returncode == 0, "viewer_test.mjs exited %d" % proc.returncode)
    finally:
        for worker in workers:
            worker.stop()
        up.stop()
    return 1 if up.failures else 0


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except Exception:
        return False


if __name__ == "__main__":
    sys.exit(main())
