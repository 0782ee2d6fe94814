// The viewer's parsing code without a browser (node --test): the SSE reader and the trace model
// of gateway/web/, loaded as the page loads them (plain scripts filling window.GB).
// node --test model_test.mjs   (GLASSBOX_WEB_DIR overrides where gateway/web/ is)
import {test} from "node:test";
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {join, dirname} from "node:path";
import {fileURLToPath} from "node:url";
import vm from "node:vm";

const web = process.env.GLASSBOX_WEB_DIR || join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "gateway", "web");
const context = {window: {}, TextDecoder, performance};
vm.createContext(context);
for (const file of ["trace-model.js", "api.js"]) vm.runInContext(readFileSync(join(web, file), "utf8"), context, {filename: file});
const GB = context.window.GB;

const GBNS = "https://glassbox.dev/ns#", PROV = "http://www.w3.org/ns/prov#", RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const XSD = "http://www.w3.org/2001/XMLSchema#";
const iri = (i) => ({t: "i", i});
const lit = (v, dt) => (dt ? {t: "l", v: String(v), dt: XSD + dt} : {t: "l", v: String(v)});
const triple = (s, p, o) => ({s: iri(s), p: iri(p), o, g: "urn:graph:retrieval"});

function parseAll(pieces) {
  const events = [];
  const parser = new GB.api.SseParser((e) => events.push(e));
  for (const piece of pieces) parser.push(piece);
  return events;
}

test("SSE: events cut anywhere, CRLF and CR line ends, comments and multi-line data", () => {
  const text = ": keep-alive\r\nevent: step\r\nid: 1\r\ndata: {\"a\":1}\r\n\r\n" +
    "event: answer.delta\rid: 2\rdata: line one\rdata: line two\r\r" +
    "data: no event name\n\n";
  const whole = parseAll([text]);
  for (let cut = 1; cut < text.length; cut++) {
    assert.deepEqual(parseAll([text.slice(0, cut), text.slice(cut)]).map((e) => JSON.stringify(e)),
      whole.map((e) => JSON.stringify(e)), "cut at " + cut);
  }
  assert.equal(whole.length, 3);
  assert.deepEqual({...whole[0]}, {event: "step", id: "1", data: "{\"a\":1}"});
  assert.equal(whole[1].data, "line one\nline two");
  assert.equal(whole[2].event, "message");
});

test("SSE: an event without a blank line after it is not dispatched", () => {
  assert.equal(parseAll(["event: done\ndata: {}\n"]).length, 0);
  assert.equal(parseAll(["event: done\ndata: {}\n", "\n"]).length, 1);
});

// A routed question: the query run (Question, RoutingDecision, Conclusion) and a graph-RAG
// sub-run called from the RoutingDecision, whose Synthesis cites one kept edge.
function routedTrace() {
  const q = "urn:glassbox:11111111-1111-4111-8111-111111111111:", r = "urn:glassbox:22222222-2222-4222-8222-222222222222:";
  const answer = "Oskar Brenn founded the yard \u{1F6A2} here.";
  const ev = (seq, id, triples, state = "open") => ({seq, explain_id: id, state, received: "", triples});
  const sub = {
    session: {session: r + "question", service: "graph-rag", parent: q + "question", status: "complete"},
    events: [
      ev(0, r + "question", [triple(r + "question", RDF + "type", iri(GBNS + "Question")),
        triple(r + "question", PROV + "used", iri(q + "routing"))]),
      ev(1, r + "focus", [triple(r + "focus", RDF + "type", iri(GBNS + "Focus")),
        triple(r + "focus", GBNS + "durationMs", lit(22, "integer")), triple(r + "focus", GBNS + "inputTokens", lit(370, "integer")),
        triple(r + "focus", GBNS + "outputTokens", lit(580, "integer")), triple(r + "focus", GBNS + "selectedEdge", iri(r + "focus:edge:0")),
        triple(r + "focus:edge:0", RDF + "type", iri(GBNS + "EdgeSelection")),
        triple(r + "focus:edge:0", RDF + "subject", iri("urn:kg:yard")), triple(r + "focus:edge:0", RDF + "predicate", iri("urn:kg:foundedBy")),
        triple(r + "focus:edge:0", RDF + "object", iri("urn:kg:oskar")), triple(r + "focus:edge:0", GBNS + "score", lit("0.6", "double")),
        triple(r + "focus:edge:0", GBNS + "reasoning", lit("names the founder")), triple(r + "focus:edge:0", GBNS + "dataTier", lit(1, "integer")),
        triple(r + "focus:edge:0", GBNS + "sourceChunk", iri("file:///d.md#chunk-0")),
        triple("file:///d.md#chunk-0", PROV + "wasDerivedFrom", iri("file:///d.md")),
        triple("file:///d.md#chunk-0", GBNS + "charOffset", lit(100, "integer")), triple("file:///d.md#chunk-0", GBNS + "charLength", lit(50, "integer"))]),
      ev(2, r + "synthesis", [triple(r + "synthesis", RDF + "type", iri(GBNS + "Synthesis")),
        triple(r + "synthesis", GBNS + "answerText", lit(answer)), triple(r + "synthesis", GBNS + "citation", iri(r + "synthesis:citation:0")),
        triple(r + "synthesis:citation:0", GBNS + "spanStart", lit(0, "integer")), triple(r + "synthesis:citation:0", GBNS + "spanEnd", lit(31, "integer")),
        triple(r + "synthesis:citation:0", GBNS + "supportedBy", iri(r + "focus:edge:0"))], "complete"),
    ],
    subtraces: [],
  };
  return {
    answer,
    show: {
      session: {session: q + "question", service: "query", parent: null, status: "complete", question: "Who founded the yard?"},
      events: [
        ev(0, q + "question", [triple(q + "question", RDF + "type", iri(PROV + "Activity")), triple(q + "question", RDF + "type", iri(GBNS + "Question")),
          triple(q + "question", GBNS + "query", lit("Who founded the yard?"))]),
        ev(1, q + "routing", [triple(q + "routing", RDF + "type", iri(GBNS + "RoutingDecision")), triple(q + "routing", GBNS + "engine", lit("graph-rag"))]),
        ev(2, q + "conclusion", [triple(q + "conclusion", RDF + "type", iri(GBNS + "Conclusion")), triple(q + "conclusion", GBNS + "answerText", lit(answer)),
          triple(q + "conclusion", PROV + "wasDerivedFrom", iri(r + "synthesis")), triple(q + "conclusion", GBNS + "aggregateTier", lit(1, "integer"))], "complete"),
      ],
      subtraces: [sub],
    },
    q, r,
  };
}

test("model: a stored trace's runs, steps, nesting and costs", () => {
  const {show, q, r} = routedTrace();
  const m = new GB.TraceModel();
  m.addStored(show, null);
  assert.equal(m.runs.size, 2);
  assert.equal(m.steps.size, 6);
  assert.equal(m.root.session, q + "question");
  assert.equal(m.runs.get(r + "question").parentStep, q + "routing", "the sub-run hangs under the step it prov:used");
  assert.deepEqual([...m.steps.values()].map((s) => String(s.type)),
    ["Question", "RoutingDecision", "Conclusion", "Question", "Focus", "Synthesis"]);
  assert.deepEqual({...m.cost(r + "focus")}, {durationMs: 22, inTokens: 370, outTokens: 580, model: ""});
  assert.deepEqual({...m.totals()}, {inTokens: 370, outTokens: 580});
  assert.equal(m.root.status, "complete");
});

test("model: a stored trace's costs per step and per run (docs/traces.md, \"Cost\")", () => {
  const {show, q, r} = routedTrace();
  show.session.cost = 0.0035;
  show.session.currency = "EUR";
  show.session.unpriced = ["local-llama"];
  show.subtraces[0].events[1].costs = [{step: r + "focus", model: "gpt-4o", input_tokens: 370, output_tokens: 580, cost: 0.0035, currency: "EUR"}];
  show.subtraces[0].events[2].costs = [{step: r + "synthesis", model: "local-llama", input_tokens: 10, output_tokens: 5, cost: null, currency: "EUR"}];
  const m = new GB.TraceModel();
  m.addStored(show, null);
  const priced = m.spend(r + "focus");
  assert.deepEqual([priced.cost, priced.currency, priced.unpriced.length], [0.0035, "EUR", 0]);
  const none = m.spend(r + "synthesis");
  assert.equal(none.cost, null, "no price: no cost, not 0");
  assert.deepEqual([...none.unpriced], ["local-llama"]);
  assert.equal(m.spend(q + "routing"), null, "a step without model calls");
  const run = m.runSpend(m.root);
  assert.equal(run.cost, 0.0035);
  assert.equal(run.currency, "EUR");
  assert.deepEqual([...run.unpriced], ["local-llama"]);
  assert.deepEqual([0.0035, 1.5, 0, 0.000123456, null].map(GB.formatCost), ["0.0035", "1.5", "0", "0.000123", "-"]);
});

test("model: the query's answer borrows the sub-run's citations, resolved to their source", () => {
  const {show, answer, r} = routedTrace();
  const m = new GB.TraceModel();
  m.addStored(show, null);
  const a = m.answer();
  assert.equal(a.text, answer);
  assert.equal(a.tier, 1);
  assert.equal(a.citations.length, 1);
  const c = a.citations[0];
  assert.equal(c.n, 1);
  assert.equal(c.kind, "edge");
  assert.equal(c.uri, r + "focus:edge:0");
  assert.equal(JSON.stringify(c.spans), JSON.stringify([{start: 0, end: 31}]));
  assert.equal(c.document, "file:///d.md", "the chunk's document");
  assert.equal(c.charOffset, 100);
  assert.equal(c.charEnd, 150);
  assert.equal(c.tier, 1);
  assert.equal(c.score, 0.6);
  assert.equal(c.reasoning, "names the founder");
  assert.equal(c.text, "yard foundedBy oskar");
  assert.equal(m.keptEdges().length, 1);
});

// The confidence a concluding step states (schema/explain_builder.cpp): gb:answerConfidence,
// gb:calibrator, gb:abstained when withheld, and one gb:EvidenceFeature per feature, `effect`
// null for one the calibrator did not use.
function confidenceTriples(step, value, features, abstained) {
  const out = [triple(step, GBNS + "answerConfidence", lit(value, "double")),
    triple(step, GBNS + "calibrator", lit("2026-11-30/graph-rag"))];
  if (abstained) out.push(triple(step, GBNS + "abstained", lit("true", "boolean")));
  features.forEach(([name, v, effect], i) => {
    const f = step + ":feature:" + i;
    out.push(triple(step, GBNS + "evidenceFeature", iri(f)), triple(f, RDF + "type", iri(PROV + "Entity")),
      triple(f, RDF + "type", iri(GBNS + "EvidenceFeature")), triple(f, GBNS + "featureName", lit(name)),
      triple(f, GBNS + "featureValue", lit(v, "double")));
    if (effect !== null) out.push(triple(f, GBNS + "featureEffect", lit(effect, "double")));
  });
  return out;
}
const FEATURES = [["answered", 1, null], ["path_hops", 2, -0.31], ["margin", 0.2296, 0.8412], ["competitors", 2.3026, 0.05],
  ["seed_match", 1, null]];

test("model: the answer's confidence, its calibrator and its features, the strongest effect first", () => {
  const {show, q, r} = routedTrace();
  // The routed query's Conclusion states the winner's confidence; the sub-run's Synthesis its own.
  show.events[2].triples.push(...confidenceTriples(q + "conclusion", "0.8237", FEATURES, false));
  show.subtraces[0].events[2].triples.push(...confidenceTriples(r + "synthesis", "0.5", [], false));
  const m = new GB.TraceModel();
  m.addStored(show, null);
  const c = m.answer().confidence;
  assert.ok(c, "the answer has a confidence");
  assert.equal(c.value, 0.8237, "the Conclusion's own gb:answerConfidence, not the sub-run's");
  assert.equal(c.words, "likely");
  assert.equal(c.calibrator, "2026-11-30/graph-rag");
  assert.equal(c.abstained, false);
  assert.deepEqual([...c.features.map((f) => f.name)], ["margin", "path_hops", "competitors", "answered", "seed_match"],
    "sorted by |effect|, the unused ones last in the engine's order");
  assert.deepEqual({...c.features[0]}, {uri: q + "conclusion:feature:2", name: "margin", value: 0.2296, effect: 0.8412});
  assert.equal(c.features[1].effect, -0.31);
  assert.equal(c.features[3].effect, null);
  assert.equal(m.confidence(r + "synthesis").value, 0.5);
  assert.equal(m.confidence(r + "synthesis").features.length, 0);
});

test("model: a withheld answer says so; a trace without a confidence has none", () => {
  const {show, q} = routedTrace();
  let m = new GB.TraceModel();
  m.addStored(show, null);
  assert.equal(m.answer().confidence, null, "an old trace: no confidence, no badge");
  show.events[2].triples.push(...confidenceTriples(q + "conclusion", "0.18", [["margin", 0.01, -1.2]], true));
  m = new GB.TraceModel();
  m.addStored(show, null);
  const c = m.answer().confidence;
  assert.equal(c.abstained, true);
  assert.equal(c.value, 0.18);
  assert.equal(c.words, "unlikely");
  assert.deepEqual(["very likely", "likely", "uncertain", "unlikely"], [0.9, 0.7, 0.4, 0.3999].map(GB.confidenceWords));
});

test("model: the confidence of the gateway's answer JSON (answer.done) in the trace's shape", () => {
  const c = GB.confidenceOfAnswer({confidence: 0.9745, confidence_words: "very likely", calibrator: "2026-11-30/graph-rag",
    abstained: false, evidence: [{name: "answered", value: 1}, {name: "margin", value: 0.2296, effect: 0.1723},
      {name: "hop_excess", value: 1, effect: -0.5}, {value: 3}, null]});
  assert.equal(c.value, 0.9745);
  assert.equal(c.words, "very likely");
  assert.equal(c.calibrator, "2026-11-30/graph-rag");
  assert.equal(c.abstained, false);
  assert.deepEqual([...c.features.map((f) => [f.name, f.effect])], [["hop_excess", -0.5], ["margin", 0.1723], ["answered", null]],
    "a feature without a name is left out");
  assert.equal(GB.confidenceOfAnswer({confidence: null, evidence: [{name: "answered", value: 1}]}), null,
    "an engine without a confidence: none");
  assert.equal(GB.confidenceOfAnswer({confidence: 0.3, abstained: true}).words, "unlikely", "words from the figure when the answer gives none");
  assert.equal(GB.confidenceOfAnswer({confidence: 0.3, abstained: true}).abstained, true);
});

test("model: live messages in any order, a redelivered one adds nothing", () => {
  const m = new GB.TraceModel();
  const body = (seq, id, triples, extra) => Object.assign({message_type: "explain", session: "urn:glassbox:s:question", seq,
    service: "agent", worker: "w", explain_id: id, explain_triples: triples, end_of_trace: false, trace_status: ""}, extra || {});
  const analysis = [triple("urn:glassbox:s:analysis:0", RDF + "type", iri(GBNS + "Analysis")),
    triple("urn:glassbox:s:analysis:0", RDF + "type", iri(GBNS + "ToolUse")),
    triple("urn:glassbox:s:analysis:0", GBNS + "action", lit("graph-rag"))];
  const step = m.addMessage(body(1, "urn:glassbox:s:analysis:0", analysis));
  assert.equal(step.type, "Analysis");
  assert.equal(step.toolUse, true);
  m.addMessage(body(1, "urn:glassbox:s:analysis:0", analysis));
  assert.equal(m.tripleCount, 3, "the same (session, seq) again adds no triple");
  m.addMessage(body(2, "urn:glassbox:s:conclusion", [triple("urn:glassbox:s:conclusion", RDF + "type", iri(GBNS + "Conclusion"))],
    {end_of_trace: true, trace_status: "complete"}));
  assert.equal(m.root.status, "complete");
  assert.equal(m.root.steps.length, 2);
});

test("terms read as Turtle-like text, never as markup", () => {
  assert.equal(GB.termText(lit("<b>x</b>")), "\"<b>x</b>\"");
  assert.equal(GB.termText(lit(5, "integer")), "5");
  assert.equal(GB.termText(lit("2025-01-02T03:04:05.678Z", "dateTime")), "\"2025-01-02T03:04:05.678Z\"^^xsd:dateTime");
  assert.equal(GB.termText({t: "l", v: "chat", ln: "fr"}), "\"chat\"@fr");
  assert.equal(GB.termText(iri(GBNS + "Question")), "gb:Question");
  assert.equal(GB.termText(iri("https://glassbox.dev/sample/orrin/Curlew")), "Curlew");
  assert.equal(GB.termValue({t: "t", tr: {s: iri("urn:a"), p: iri("urn:b"), o: lit("c")}}), "<< urn:a urn:b c >>");
});

// A graph-RAG run's Exploration (explored edges, kept or not, one with a quoted subject) and
// Focus (one kept edge): what the graph draws grey and what it highlights.
function exploredTrace() {
  const r = "urn:glassbox:33333333-3333-4333-8333-333333333333:", x = r + "exploration", f = r + "focus";
  const edge = (uri, s, p, o, hop) => [triple(x, GBNS + "exploredEdge", iri(uri)), triple(uri, RDF + "type", iri(GBNS + "ExploredEdge")),
    triple(uri, RDF + "type", iri(RDF + "Statement")), triple(uri, RDF + "subject", s), triple(uri, RDF + "predicate", p),
    triple(uri, RDF + "object", o), triple(uri, GBNS + "hop", lit(hop, "integer"))];
  const quoted = x + ":edge:2:s";
  const exploration = [triple(x, RDF + "type", iri(GBNS + "Exploration")), triple(x, GBNS + "edgeCount", lit(3, "integer")),
    triple(x, GBNS + "seedEntity", iri("urn:kg:yard")),
    ...edge(x + ":edge:0", iri("urn:kg:yard"), iri("urn:kg:foundedBy"), iri("urn:kg:oskar"), 1),
    ...edge(x + ":edge:1", iri("urn:kg:oskar"), iri("urn:kg:born"), lit("Brinehaven"), 2),
    ...edge(x + ":edge:2", iri(quoted), iri("urn:kg:saidBy"), iri("urn:kg:clerk"), 2),
    triple(quoted, RDF + "type", iri(RDF + "Statement")), triple(quoted, RDF + "subject", iri("urn:kg:yard")),
    triple(quoted, RDF + "predicate", iri("urn:kg:built")), triple(quoted, RDF + "object", iri("urn:kg:curlew"))];
  const focus = [triple(f, RDF + "type", iri(GBNS + "Focus")), triple(f, GBNS + "selectedEdge", iri(f + ":edge:0")),
    triple(f + ":edge:0", RDF + "type", iri(GBNS + "EdgeSelection")), triple(f + ":edge:0", RDF + "subject", iri("urn:kg:yard")),
    triple(f + ":edge:0", RDF + "predicate", iri("urn:kg:foundedBy")), triple(f + ":edge:0", RDF + "object", iri("urn:kg:oskar")),
    triple(f + ":edge:0", GBNS + "score", lit("0.9", "double"))];
  return {r, x, f, exploration, focus};
}

test("model: explored edges, kept or not, in traversal order with their hop, from a stored trace", () => {
  const {r, x, exploration, focus} = exploredTrace();
  const ev = (seq, id, triples, state = "open") => ({seq, explain_id: id, state, received: "", triples});
  const m = new GB.TraceModel();
  m.addStored({session: {session: r + "question", service: "graph-rag", status: "complete"},
    events: [ev(0, x, exploration), ev(1, r + "focus", focus, "complete")], subtraces: []}, null);
  const explored = m.exploredEdges();
  assert.deepEqual([...explored.map((e) => e.uri)], [x + ":edge:0", x + ":edge:1", x + ":edge:2"]);
  assert.deepEqual([...explored.map((e) => e.hop)], [1, 2, 2]);
  assert.deepEqual([GB.termValue(explored[0].s), GB.termValue(explored[0].p), GB.termValue(explored[0].o)],
    ["urn:kg:yard", "urn:kg:foundedBy", "urn:kg:oskar"]);
  assert.equal(GB.termText(explored[1].o), "\"Brinehaven\"", "a literal object stays a literal");
  assert.equal(GB.termValue(explored[2].s), "<< urn:kg:yard urn:kg:built urn:kg:curlew >>", "a quoted subject reads as its triple");
  // The kept edge is the first explored one: the same fact.
  const kept = m.keptEdges();
  assert.equal(kept.length, 1);
  assert.equal(kept[0].score, 0.9);
  const key = (e) => [e.s, e.p, e.o].map(GB.termValue).join(" ");
  assert.equal(key(kept[0]), key(explored[0]));
  assert.deepEqual([...m.seeds()], ["urn:kg:yard"]);
});

test("model: explored edges from live step events, as the stream delivers them", () => {
  const {r, x, f, exploration, focus} = exploredTrace();
  const m = new GB.TraceModel();
  const body = (seq, id, triples) => ({message_type: "explain", session: r + "question", seq, service: "graph-rag",
    explain_id: id, explain_triples: triples, end_of_trace: false, trace_status: ""});
  assert.equal(m.exploredEdges().length, 0);
  m.addMessage(body(2, x, exploration));
  assert.equal(m.exploredEdges().length, 3, "the Exploration alone brings the explored subgraph");
  assert.equal(m.keptEdges().length, 0);
  m.addMessage(body(3, f, focus));
  assert.equal(m.keptEdges().length, 1);
  m.addMessage(body(2, x, exploration));
  assert.equal(m.exploredEdges().length, 3, "a redelivered Exploration adds no edge");
});

// ---- knowledge changes and comparisons (issue 36) --------------------------------------------

test("affected: the detail's changes in one shape, kinds in words, malformed entries left out", () => {
  const show = {session: {session: "urn:glassbox:x:question"}, events: [], affected: [
    {change: "urn:glassbox:c1:question", at: "2026-11-30T10:00:00.000Z", kind: "replace",
      facts: [{s: iri("urn:kg:yard"), p: iri("urn:kg:foundedBy"), o: iri("urn:kg:oskar")}], sources: ["file:///kb.ttl"]},
    {change: "urn:glassbox:c2:question", at: "2026-11-30T11:00:00.000Z", kind: "forget-fact",
      facts: [{s: "urn:kg:yard", p: "urn:kg:builtIn", o: lit(1866, "gYear")}]},
    {change: "urn:glassbox:c3:question", kind: "replace", facts: ["<https://example.org/kb/Yard> <https://example.org/kb/foundedBy> <https://example.org/kb/Oskar> .", 7]},
    "not an entry", null,
  ]};
  const a = GB.affectedOf(show);
  assert.equal(a.length, 3);
  assert.equal(a[0].change, "urn:glassbox:c1:question");
  assert.equal(a[0].kindText, "replaced by a new load");
  assert.deepEqual([...a[0].facts], ["yard foundedBy oskar"]);
  assert.deepEqual([...a[0].sources], ["file:///kb.ttl"]);
  assert.equal(a[1].kindText, "fact retracted");
  assert.equal(a[1].facts[0], "urn:kg:yard urn:kg:builtIn \"1866\"^^xsd:gYear", "plain strings stay as they are");
  assert.deepEqual([...a[1].sources], []);
  assert.deepEqual([...a[2].facts], ["Yard foundedBy Oskar"], "an N-Triples line, its IRIs by short name; a number is no fact");
  assert.equal(GB.affectedOf({session: {}}).length, 0, "no affected: none");
  assert.equal(GB.affectedOf({affected: "yes"}).length, 0, "a malformed list: none");
});

test("revision: a replayed run names the run it revises, another run none", () => {
  const {show, q} = routedTrace();
  const m = new GB.TraceModel();
  m.addStored(show, null);
  assert.equal(GB.revisionOf(m), "");
  show.events[0].triples.push(triple(q + "question", PROV + "wasRevisionOf", iri("urn:glassbox:old:question")));
  const revised = new GB.TraceModel();
  revised.addStored(show, null);
  assert.equal(GB.revisionOf(revised), "urn:glassbox:old:question");
});

test("compare: each side's sources and facts marked kept, added (b) or removed (a)", () => {
  const fact = (o) => ({s: iri("urn:kg:yard"), p: iri("urn:kg:foundedBy"), o: iri("urn:kg:" + o)});
  const built = {s: iri("urn:kg:curlew"), p: iri("urn:kg:builtBy"), o: iri("urn:kg:yard")};
  const reply = {
    a: {session: "urn:glassbox:a:question", kind: "graph-rag", status: "complete", question: "who?", answer: "Oskar",
      short_answer: "Oskar", confidence: 0.9, abstained: false, models: ["m"], sources: ["file:///old.ttl", "file:///same.ttl"],
      facts: [built, fact("oskar")], revision_of: null, duration_ms: 20},
    b: {session: "urn:glassbox:b:question", kind: "graph-rag", status: "complete", question: "who?", answer: "Elin",
      short_answer: "Elin", confidence: 0.6, abstained: false, models: ["m"], sources: ["file:///new.ttl", "file:///same.ttl"],
      facts: [built, fact("elin")], revision_of: "urn:glassbox:a:question", duration_ms: null},
    answer_changed: true, short_answer_changed: true, confidence_change: -0.3,
    sources_added: ["file:///new.ttl"], sources_removed: ["file:///old.ttl"], sources_kept: 1,
    facts_added: [fact("elin")], facts_removed: [fact("oskar")], facts_kept: 1, b_revises_a: true,
  };
  const s = GB.comparisonSides(reply);
  assert.equal(s.answerChanged, true);
  assert.equal(s.revises, true);
  assert.equal(s.confidenceChange, -0.3);
  assert.deepEqual(s.a.sources.map((x) => x.uri + " " + x.mark), ["file:///old.ttl removed", "file:///same.ttl kept"]);
  assert.deepEqual(s.b.sources.map((x) => x.uri + " " + x.mark), ["file:///new.ttl added", "file:///same.ttl kept"]);
  assert.deepEqual(s.a.facts.map((x) => x.mark), ["kept", "removed"]);
  assert.deepEqual(s.b.facts.map((x) => x.text + " " + x.mark), ["curlew builtBy yard kept", "yard foundedBy elin added"]);
  assert.equal(s.a.confidence, 0.9);
  assert.equal(s.a.durationMs, 20);
  assert.equal(s.b.durationMs, null);
  assert.equal(s.b.revisionOf, "urn:glassbox:a:question");
  assert.deepEqual({...s.counts}, {sourcesAdded: 1, sourcesRemoved: 1, sourcesKept: 1, factsAdded: 1, factsRemoved: 1, factsKept: 1});
  const same = GB.comparisonSides({a: reply.a, b: reply.a, answer_changed: false, sources_kept: 2, facts_kept: 2});
  assert.equal(same.answerChanged, false);
  assert.ok(same.a.sources.every((x) => x.mark === "kept") && same.b.facts.every((x) => x.mark === "kept"));
  assert.equal(same.confidenceChange, null);
});

test("compare: the side-by-side view's hash carries both ids, any characters in them", () => {
  const a = "urn:glassbox:11111111-1111-4111-8111-111111111111:question", b = "4e1d/odd id#";
  const hash = GB.compareHash(a, b);
  assert.match(hash, /^#\/compare\/[^/]+\/[^/]+$/);
  assert.deepEqual({...GB.parseCompareHash(hash)}, {a, b});
  assert.equal(GB.parseCompareHash("#trace=" + encodeURIComponent(a)), null);
  assert.equal(GB.parseCompareHash("#/compare/only-one"), null);
  assert.equal(GB.parseCompareHash("#/compare/%E0%A4%A/b"), null, "a malformed escape is no pair");
});
