// The trace model: explain messages (docs/protocol.md §8) with their triples in the compact
// term encoding (docs/vocabulary.md §6), indexed by subject so that every view reads a step's
// properties in O(1). The same model is fed by a live SSE stream (one `step` event at a time)
// and by a stored trace (`GET /api/v1/traces/{id}`), so both look the same.
"use strict";
(function (GB) {
  const NS = {
    gb: "https://glassbox.dev/ns#",
    prov: "http://www.w3.org/ns/prov#",
    rdf: "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    rdfs: "http://www.w3.org/2000/01/rdf-schema#",
    xsd: "http://www.w3.org/2001/XMLSchema#",
  };
  const RDF_TYPE = NS.rdf + "type";
  const gb = (local) => NS.gb + local;
  const prov = (local) => NS.prov + local;

  // Step types, most specific first: a ToolUse is also an Analysis, a Question an Activity.
  const STEP_TYPES = ["Question", "RoutingDecision", "Grounding", "Exploration", "Focus", "Synthesis",
    "ToolUse", "Analysis", "Observation", "Escalation", "Conclusion"];

  // A cost as the CLI shows it (docs/traces.md, "Cost"): "-" for none, at most 2 decimals from 1 up,
  // else 3 significant digits ("0.00123"), trailing zeros dropped.
  function formatCost(v) {
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) return "-";
    if (v === 0) return "0";
    const decimals = v >= 1 ? 2 : Math.min(10, 2 - Math.floor(Math.log10(v)));
    let text = v.toFixed(decimals);
    if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
    return text === "0" ? "~0" : text;
  }

  // A term's plain value: the IRI, the literal's lexical form, the blank node's label.
  function termValue(t) {
    if (t === null || t === undefined) return "";
    if (typeof t === "string") return t;
    if (t.i !== undefined) return t.i;
    if (t.v !== undefined) return t.v;
    if (t.d !== undefined) return "_:" + t.d;
    if (t.tr !== undefined) return "<< " + termValue(t.tr.s) + " " + termValue(t.tr.p) + " " + termValue(t.tr.o) + " >>";
    return "";
  }
  const isIri = (t) => t && (t.t === "i" || (t.t === undefined && t.i !== undefined));
  const isLiteral = (t) => t && (t.t === "l" || (t.t === undefined && t.v !== undefined));

  // A readable short name for an IRI: its prefixed form for known namespaces, else the part
  // after the last '#' or '/' (an IRI ending in one keeps its last segment).
  function shortName(iri) {
    for (const p in NS) if (iri.startsWith(NS[p])) return p + ":" + iri.slice(NS[p].length);
    const m = /[#/:]([^#/:]+)[#/:]?$/.exec(iri);
    return m ? decodeSafe(m[1]) : iri;
  }
  function decodeSafe(s) {
    try { return decodeURIComponent(s); } catch (e) { return s; }
  }
  // How a term reads in a table cell (Turtle-like, never HTML).
  function termText(t) {
    if (isIri(t)) return shortName(t.i);
    if (isLiteral(t)) {
      if (t.dt && t.dt.startsWith(NS.xsd) && t.dt !== NS.xsd + "string") {
        const dt = t.dt.slice(NS.xsd.length);
        if (dt === "integer" || dt === "double" || dt === "decimal" || dt === "boolean") return t.v;
        return JSON.stringify(t.v) + "^^xsd:" + dt;
      }
      return JSON.stringify(t.v) + (t.ln ? "@" + t.ln : "");
    }
    return termValue(t);
  }

  // The confidence in words, as the engines say it (reasoner/answer_confidence.cpp).
  function confidenceWords(p) {
    return p >= 0.9 ? "very likely" : p >= 0.7 ? "likely" : p >= 0.4 ? "uncertain" : "unlikely";
  }
  // Evidence features, the strongest effect on the log-odds first; those the calibrator did not
  // use (no effect) after them, in the order the engine measured them.
  function sortFeatures(features) {
    const weight = (f) => (f.effect === null ? -1 : Math.abs(f.effect));
    return features.map((f, i) => [f, i]).sort((a, b) => weight(b[0]) - weight(a[0]) || a[1] - b[1]).map((x) => x[0]);
  }
  const numberOr = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  // The confidence of an answer as the gateway's JSON states it (docs/http.md §3: `confidence`,
  // `confidence_words`, `calibrator`, `abstained`, `evidence`), in the shape of
  // TraceModel.confidence(); null when the answer has none.
  function confidenceOfAnswer(d) {
    const value = d ? numberOr(d.confidence) : null;
    if (value === null) return null;
    const features = (Array.isArray(d.evidence) ? d.evidence : []).filter((f) => f && typeof f.name === "string")
      .map((f) => ({uri: "", name: f.name, value: numberOr(f.value), effect: numberOr(f.effect)}));
    return {value, words: typeof d.confidence_words === "string" && d.confidence_words ? d.confidence_words : confidenceWords(value),
      calibrator: typeof d.calibrator === "string" ? d.calibrator : "", abstained: d.abstained === true,
      features: sortFeatures(features)};
  }

  class Step {
    constructor(uri, run, seq) {
      this.uri = uri;
      this.run = run;
      this.seq = seq;
      this.triples = [];
      this.type = "";
      this.toolUse = false;
      this.status = "";
      this.error = null;
      this.costs = null;  // the stored step's model calls with their cost (docs/traces.md, "Cost")
    }
  }

  class Run {
    constructor(session) {
      this.session = session;
      this.service = "";
      this.worker = "";
      this.parentStep = "";      // the calling step (parent_uri), "" for a top-level run
      this.steps = [];
      this.summary = null;       // the stored session summary, when read from the store
      this.status = "running";
    }
  }

  class TraceModel {
    constructor() {
      this.subjects = new Map();  // subject IRI -> Map(predicate IRI -> [object term])
      this.runs = new Map();      // session URI -> Run
      this.steps = new Map();     // explain URI -> Step
      this.root = null;           // the first (top-level) run
      this.tripleCount = 0;
    }

    run(session) {
      let r = this.runs.get(session);
      if (!r) {
        r = new Run(session);
        this.runs.set(session, r);
        if (!this.root) this.root = r;
      }
      return r;
    }

    index(triple) {
      const s = termValue(triple.s), p = termValue(triple.p);
      let props = this.subjects.get(s);
      if (!props) { props = new Map(); this.subjects.set(s, props); }
      const list = props.get(p);
      if (list) list.push(triple.o); else props.set(p, [triple.o]);
      this.tripleCount++;
    }

    // One explain message: {session, seq, service, worker, parent_uri, explain_id,
    // explain_triples, trace_status, error}. Returns the Step (a redelivered seq adds nothing).
    addMessage(msg) {
      const run = this.run(msg.session);
      if (msg.service) run.service = msg.service;
      if (msg.worker) run.worker = msg.worker;
      if (msg.parent_uri) run.parentStep = msg.parent_uri;
      const uri = msg.explain_id || (msg.session + "#" + msg.seq);
      let step = this.steps.get(uri);
      if (step && step.run === run && step.seq === msg.seq) return step;
      if (!step) {
        step = new Step(uri, run, msg.seq);
        this.steps.set(uri, step);
        run.steps.push(step);
      }
      const triples = msg.explain_triples || msg.triples || [];
      for (let i = 0; i < triples.length; i++) {
        step.triples.push(triples[i]);
        this.index(triples[i]);
      }
      if (msg.trace_status) { step.status = msg.trace_status; run.status = msg.trace_status; }
      if (msg.error) step.error = msg.error;
      if (Array.isArray(msg.costs)) step.costs = msg.costs;
      this.classify(step);
      return step;
    }

    // A stored trace (the trace service's `show` reply), sub-traces included.
    addStored(show, parentRun) {
      const summary = show.session || {};
      const run = this.run(summary.session);
      run.summary = summary;
      run.service = summary.service || summary.kind || run.service;
      run.worker = summary.worker || run.worker;
      run.status = summary.status || run.status;
      for (const ev of show.events || []) {
        this.addMessage({session: summary.session, seq: ev.seq, explain_id: ev.explain_id,
          triples: ev.triples, trace_status: ev.state === "open" ? "" : ev.state, costs: ev.costs});
      }
      // The calling step is what the sub-run's Question prov:used (docs/vocabulary.md §2).
      if (parentRun && !run.parentStep) {
        run.parentStep = this.first(summary.session, prov("used")) || parentRun.session;
      }
      for (const sub of show.subtraces || []) this.addStored(sub, run);
      return run;
    }

    classify(step) {
      const types = this.all(step.uri, RDF_TYPE).map(termValue);
      step.toolUse = types.includes(gb("ToolUse"));
      for (const t of STEP_TYPES) {
        if (types.includes(gb(t))) { step.type = t === "ToolUse" ? "Analysis" : t; return; }
      }
      if (!step.type) step.type = step.error ? "Error" : (step.status ? "End" : "Step");
    }

    all(subject, predicate) {
      const props = this.subjects.get(subject);
      return (props && props.get(predicate)) || [];
    }
    // The first object's plain value, or "".
    first(subject, predicate) {
      const list = this.all(subject, predicate);
      return list.length ? termValue(list[0]) : "";
    }
    num(subject, predicate) {
      const v = this.first(subject, predicate);
      return v === "" ? null : Number(v);
    }
    gb(subject, local) { return this.first(subject, gb(local)); }
    gbNum(subject, local) { return this.num(subject, gb(local)); }
    gbAll(subject, local) { return this.all(subject, gb(local)).map(termValue); }
    types(subject) { return this.all(subject, RDF_TYPE).map(termValue); }

    // Duration, tokens and model of one step.
    cost(uri) {
      return {durationMs: this.gbNum(uri, "durationMs"), inTokens: this.gbNum(uri, "inputTokens"),
        outTokens: this.gbNum(uri, "outputTokens"), model: this.gb(uri, "model")};
    }

    // What a stored step's model calls cost, as the trace collector priced them: {cost (null: none
    // priced), currency, unpriced: [models without a price]}; null for a step with none (or live).
    spend(uri) {
      const step = this.steps.get(uri);
      if (!step || !step.costs || !step.costs.length) return null;
      let cost = null, currency = "";
      const unpriced = [];
      for (const c of step.costs) {
        if (typeof c.cost === "number") { cost = (cost || 0) + c.cost; currency = currency || c.currency || ""; }
        else if (c.model && !unpriced.includes(c.model)) unpriced.push(c.model);
      }
      return {cost, currency, unpriced};
    }

    // The stored run's cost with its sub-runs' (its summary): as spend(), null when not stored.
    runSpend(run) {
      const s = run && run.summary;
      if (!s || (s.cost === undefined && !s.unpriced)) return null;
      return {cost: typeof s.cost === "number" ? s.cost : null, currency: s.currency || "", unpriced: s.unpriced || []};
    }

    totals() {
      let inTokens = 0, outTokens = 0;
      for (const step of this.steps.values()) {
        const c = this.cost(step.uri);
        inTokens += c.inTokens || 0;
        outTokens += c.outTokens || 0;
      }
      return {inTokens, outTokens};
    }

    // A selection (edge or chunk) as the views show it.
    selection(uri) {
      const types = this.types(uri);
      const edge = types.includes(gb("EdgeSelection"));
      const chunk = this.gb(uri, "sourceChunk");
      let document = this.gb(uri, "sourceDocument");
      if (!document && chunk) document = this.first(chunk, prov("wasDerivedFrom"));
      const offset = chunk ? this.gbNum(chunk, "charOffset") : null;
      const length = chunk ? this.gbNum(chunk, "charLength") : null;
      const sel = {
        uri, kind: edge ? "edge" : "chunk", score: this.gbNum(uri, "score"),
        tier: this.gbNum(uri, "dataTier"), reasoning: this.gb(uri, "reasoning"),
        concept: this.gb(uri, "concept"), chunk, document,
        charOffset: offset, charEnd: offset !== null && length !== null ? offset + length : null,
        derivedFrom: this.all(uri, prov("wasDerivedFrom")).map(termValue),
      };
      if (edge) {
        Object.assign(sel, this.statement(uri));
        sel.text = [sel.s, sel.p, sel.o].map(termText).join(" ");
      } else {
        // A re-ranked chunk derives from the retrieved one, which holds the fusion figures.
        const from = sel.derivedFrom.find((d) => this.types(d).includes(gb("ChunkSelection")));
        const fusionOf = from || uri;
        for (const f of ["vectorRank", "vectorScore", "keywordRank", "keywordScore", "titleRank",
          "titleScore", "linkRank"]) sel[f] = this.gbNum(fusionOf, f);
        if (!sel.chunk && from) {
          const base = this.selection(from);
          Object.assign(sel, {chunk: base.chunk, document: base.document, charOffset: base.charOffset,
            charEnd: base.charEnd, tier: sel.tier === null ? base.tier : sel.tier});
        }
      }
      return sel;
    }

    // The answer of the top-level run: its Conclusion or Synthesis, and the citations that
    // go with that text (a routed query's Conclusion borrows the winning sub-run's).
    answer() {
      const root = this.root;
      if (!root) return null;
      let step = null;
      for (const s of root.steps) {
        if ((s.type === "Conclusion" || s.type === "Synthesis") && this.gb(s.uri, "answerText") !== "") step = s;
      }
      if (!step) return null;
      const text = this.gb(step.uri, "answerText");
      let cited = step.uri;
      const seen = new Set();
      while (cited && !seen.has(cited) && this.all(cited, gb("citation")).length === 0) {
        seen.add(cited);
        cited = this.all(cited, prov("wasDerivedFrom")).map(termValue)
          .find((d) => this.steps.has(d) && this.gb(d, "answerText") === text) || "";
      }
      const bySelection = new Map();
      for (const c of cited ? this.all(cited, gb("citation")).map(termValue) : []) {
        const span = {start: this.gbNum(c, "spanStart"), end: this.gbNum(c, "spanEnd")};
        for (const sel of this.gbAll(c, "supportedBy")) {
          let entry = bySelection.get(sel);
          if (!entry) { entry = Object.assign(this.selection(sel), {spans: []}); bySelection.set(sel, entry); }
          entry.spans.push(span);
        }
      }
      // Numbered in order of first appearance, as the RAG workers number them (docs/rag.md §1).
      const citations = [...bySelection.values()].sort((a, b) => Math.min(...a.spans.map((s) => s.start)) -
        Math.min(...b.spans.map((s) => s.start)));
      citations.forEach((c, i) => { c.n = i + 1; });
      return {step: step.uri, text, shortAnswer: this.gb(step.uri, "shortAnswer"), citations,
        derivation: this.gb(step.uri, "derivationChain"), tier: this.gbNum(step.uri, "aggregateTier"),
        confidence: this.confidence(step.uri)};
    }

    // How far to trust the answer a Synthesis or Conclusion states (docs/confidence.md): the
    // calibrated probability and its words, the calibrator, whether the answer was withheld, and
    // the evidence features behind it ({uri, name, value, effect}, the strongest effect first).
    // null when the step states no confidence (an old trace, an engine without one).
    confidence(uri) {
      const value = this.gbNum(uri, "answerConfidence");
      if (value === null || !Number.isFinite(value)) return null;
      const features = this.gbAll(uri, "evidenceFeature").map((f) => ({uri: f, name: this.gb(f, "featureName"),
        value: this.gbNum(f, "featureValue"), effect: this.gbNum(f, "featureEffect")}));
      const abstained = this.gb(uri, "abstained");
      return {value, words: confidenceWords(value), calibrator: this.gb(uri, "calibrator"),
        abstained: abstained === "true" || abstained === "1", features: sortFeatures(features)};
    }

    // The fact a reified statement (an EdgeSelection, an ExploredEdge) stands for: {s, p, o} as
    // terms. A part that is itself a statement (a quoted triple, reified as <uri>:s|p|o) comes
    // back as a quoted-triple term.
    statement(uri, depth) {
      const part = (predicate) => {
        const t = this.all(uri, NS.rdf + predicate)[0];
        if (isIri(t) && (depth || 0) < 4 && this.all(t.i, NS.rdf + "subject").length) {
          return {t: "t", tr: this.statement(t.i, (depth || 0) + 1)};
        }
        return t;
      };
      return {s: part("subject"), p: part("predicate"), o: part("object")};
    }

    // Kept edges (EdgeSelections of every Focus) and seed entities (Explorations).
    keptEdges() {
      const out = [];
      for (const step of this.steps.values()) {
        if (step.type !== "Focus") continue;
        for (const e of this.gbAll(step.uri, "selectedEdge")) out.push(this.selection(e));
      }
      return out;
    }
    // Explored edges (graph RAG Explorations' gb:exploredEdge, kept or not: traversal order),
    // each {uri, s, p, o, hop}.
    exploredEdges() {
      const out = [];
      for (const step of this.steps.values()) {
        if (step.type !== "Exploration") continue;
        for (const e of this.gbAll(step.uri, "exploredEdge")) {
          out.push(Object.assign({uri: e, hop: this.gbNum(e, "hop")}, this.statement(e)));
        }
      }
      return out;
    }
    seeds() {
      const out = [];
      for (const step of this.steps.values()) {
        if (step.type === "Exploration") for (const s of this.gbAll(step.uri, "seedEntity")) out.push(s);
      }
      return out;
    }
    // Retrieved chunks (Exploration) and re-ranked ones (Focus), each with its step.
    chunks() {
      const out = [];
      for (const step of this.steps.values()) {
        const pred = step.type === "Exploration" ? "retrievedChunk" : step.type === "Focus" ? "selectedChunk" : "";
        if (!pred) continue;
        const stage = pred === "retrievedChunk" ? "retrieved" : "re-ranked";
        this.gbAll(step.uri, pred).forEach((c) => out.push(Object.assign(this.selection(c), {stage})));
      }
      return out;
    }
  }

  // ---- knowledge changes and comparisons (docs/traces.md, "Replay and compare") --------------

  // A term as the trace service sends it (compact JSON), or a plain string, as a table cell reads.
  const anyTermText = (t) => (t === null || t === undefined ? "" : typeof t === "string" ? t : termText(t));
  const CHANGE_KINDS = {"replace": "replaced by a new load", "forget-source": "source forgotten",
    "forget-fact": "fact retracted", "forget-document": "document forgotten"};

  // A fact as a change lists it: {s, p, o} terms, or an N-Triples line ("<s> <p> <o> ."), read as
  // "S p O" with IRIs by their short names.
  function factText(f) {
    if (typeof f === "string") {
      return f.trim().replace(/\s*\.$/, "").replace(/<([^<>\s]*)>/g, (m, i) => shortName(i));
    }
    return [f.s, f.p, f.o].map(anyTermText).join(" ");
  }

  // The changes a trace's detail says its answer rested on (its `affected` list: the change, when,
  // its kind, the facts and sources it took away), each {change, at, kind, kindText, facts:
  // ["S p O"], sources}; [] when the trace is not affected or the list is malformed.
  function affectedOf(show) {
    const list = show && Array.isArray(show.affected) ? show.affected : [];
    return list.filter((a) => a && typeof a === "object").map((a) => ({
      change: typeof a.change === "string" ? a.change : "",
      at: typeof a.at === "string" ? a.at : "",
      kind: typeof a.kind === "string" ? a.kind : "",
      kindText: CHANGE_KINDS[a.kind] || (typeof a.kind === "string" && a.kind ? a.kind : "changed"),
      facts: (Array.isArray(a.facts) ? a.facts : []).filter((f) => f && (typeof f === "object" || typeof f === "string"))
        .map(factText),
      sources: (Array.isArray(a.sources) ? a.sources : []).filter((x) => typeof x === "string"),
    }));
  }

  // The Question a run revises (prov:wasRevisionOf: `glassbox traces replay`), or "".
  function revisionOf(model) {
    return model && model.root ? model.first(model.root.session, prov("wasRevisionOf")) : "";
  }

  // The two sides of a `compare` reply (GET /api/v1/traces/compare) as the side-by-side view shows
  // them: each run's answer, confidence and sources, each source and fact marked "kept", "added"
  // (only in b) or "removed" (only in a).
  function comparisonSides(c) {
    const added = new Set(c.sources_added || []), removed = new Set(c.sources_removed || []);
    const factKey = (f) => [f.s, f.p, f.o].map(anyTermText).join(" ");
    const factsAdded = new Set((c.facts_added || []).map(factKey));
    const factsRemoved = new Set((c.facts_removed || []).map(factKey));
    const side = (run, which) => {
      const mark = (inChange) => (inChange ? (which === "a" ? "removed" : "added") : "kept");
      const r = run || {};
      return {
        session: r.session || "", kind: r.kind || "", status: r.status || "", started: r.started || "",
        durationMs: typeof r.duration_ms === "number" ? r.duration_ms : null, question: r.question || "",
        answer: r.answer || "", shortAnswer: r.short_answer || "",
        confidence: typeof r.confidence === "number" ? r.confidence : null, abstained: r.abstained === true,
        models: r.models || [], revisionOf: r.revision_of || "",
        sources: (r.sources || []).map((uri) => ({uri, mark: mark((which === "a" ? removed : added).has(uri))})),
        facts: (r.facts || []).map((f) => ({text: factKey(f), mark: mark((which === "a" ? factsRemoved : factsAdded).has(factKey(f)))})),
      };
    };
    return {a: side(c.a, "a"), b: side(c.b, "b"), answerChanged: c.answer_changed === true,
      shortAnswerChanged: c.short_answer_changed === true,
      confidenceChange: typeof c.confidence_change === "number" ? c.confidence_change : null,
      revises: c.b_revises_a === true,
      counts: {sourcesAdded: added.size, sourcesRemoved: removed.size, sourcesKept: c.sources_kept || 0,
        factsAdded: factsAdded.size, factsRemoved: factsRemoved.size, factsKept: c.facts_kept || 0}};
  }

  // The hash of the side-by-side view of runs a and b, and back: #/compare/<a>/<b>.
  const compareHash = (a, b) => "#/compare/" + encodeURIComponent(a) + "/" + encodeURIComponent(b);
  function parseCompareHash(hash) {
    const m = /^#\/compare\/([^/]+)\/([^/]+)$/.exec(hash || "");
    if (!m) return null;
    try { return {a: decodeURIComponent(m[1]), b: decodeURIComponent(m[2])}; } catch (e) { return null; }
  }

  GB.affectedOf = affectedOf;
  GB.revisionOf = revisionOf;
  GB.comparisonSides = comparisonSides;
  GB.compareHash = compareHash;
  GB.parseCompareHash = parseCompareHash;
  GB.NS = NS;
  GB.termValue = termValue;
  GB.formatCost = formatCost;
  GB.termText = termText;
  GB.shortName = shortName;
  GB.isIri = isIri;
  GB.TraceModel = TraceModel;
  GB.confidenceWords = confidenceWords;
  GB.confidenceOfAnswer = confidenceOfAnswer;
})(window.GB = window.GB || {});
