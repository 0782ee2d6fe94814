// The page's controller: asking (a live SSE stream), the trace list, opening a stored trace,
// and the views they share. window.GB.viewer exposes the state a test reads (what was rendered
// and how long it took).
"use strict";
(function (GB) {
  const {h, StepTree, renderAnswer, normaliseCitation, citationCard, renderChunks, confidenceBadge, affectedBanner,
    renderComparison, renderEvalFigures, renderEvalRows} = GB.views;
  const $ = (id) => document.getElementById(id);

  const state = {
    model: null, tree: null, trace: "", live: null, tail: null,
    chunkTexts: new Map(), sources: new Map(), citations: [],
    pinned: null, eventCount: 0, redraw: 0, listNext: null, generation: 0,
    ticked: [],  // the sessions ticked in the list, to compare (two at most, the last two)
    evalNext: null, evalOpen: "", chartUrls: [],  // the evaluation list's next page, the run open
  };
  const STEP_FIRST = 120, STEP_BATCH = 300;
  const viewer = {state, lastRender: null, ready: false};
  GB.viewer = viewer;

  function setStatus(text) { $("status").textContent = text; }

  // ---- the trace view ------------------------------------------------------------------
  function resetView(title) {
    state.generation++;
    state.model = new GB.TraceModel();
    state.tree = new StepTree($("steps"), state.model);
    state.chunkTexts = new Map();
    state.sources = new Map();
    state.citations = [];
    state.trace = "";
    state.eventCount = 0;
    $("steps").replaceChildren();
    $("events").replaceChildren();
    $("event-count").textContent = "";
    $("step-count").textContent = "";
    $("run-title").textContent = title;
    $("run-meta").replaceChildren();
    $("downloads").replaceChildren();
    $("run-error").hidden = true;
    $("answer").replaceChildren();
    $("answer-meta").replaceChildren();
    showConfidence(null);
    $("graph").replaceChildren(h("p", {class: "muted"}, "No edges explored."));
    $("graph-note").textContent = "";
    $("chunks").tBodies[0].replaceChildren();
    $("chunk-note").textContent = "";
    hidePopover(true);
    showTraceView(true);
    affectedBanner($("affected"), [], "");
  }

  // The one-trace view, or (false) the side-by-side view of two.
  function showTraceView(on) { showView(on ? "trace" : "compare"); }

  // One of the main views: "trace", "compare" (two traces) or "eval" (an evaluation run).
  function showView(which) {
    $("run-header").hidden = which !== "trace";
    $("trace-columns").hidden = which !== "trace";
    $("compare-view").hidden = which !== "compare";
    $("eval-view").hidden = which !== "eval";
    if (which !== "trace") $("affected").hidden = true;
    if (which !== "eval") state.evalOpen = "";
  }

  // "key value" items, the empty ones left out.
  function meta(box, parts) {
    box.replaceChildren();
    for (const [k, v] of parts) {
      if (v === "" || v === null || v === undefined) continue;
      const item = h("span", {class: "meta-item"});
      item.appendChild(h("b", null, k + " "));
      item.appendChild(document.createTextNode(String(v)));
      box.appendChild(item);
    }
  }

  // The run's cost with its sub-runs' (docs/traces.md, "Cost"); "" when it has none to show.
  function costText(spend) {
    if (!spend) return "";
    const none = spend.unpriced.length ? "no price for " + spend.unpriced.join(", ") : "";
    if (spend.cost === null) return none;
    return GB.formatCost(spend.cost) + " " + spend.currency + (none ? " (" + none + ")" : "");
  }

  function runMeta(extra) {
    const m = state.model, root = m.root;
    const t = m.totals();
    const s = root && root.summary;
    meta($("run-meta"), [["status", root ? root.status : ""], ["kind", root ? root.service : ""],
      ["duration", s && s.duration_ms !== undefined && s.duration_ms !== null ? s.duration_ms + " ms" : ""],
      ["started", s ? s.started : ""], ["steps", m.steps.size], ["runs", m.runs.size],
      ["triples", m.tripleCount], ["tokens", t.inTokens + "↓ " + t.outTokens + "↑"], ["cost", costText(m.runSpend(root))]].concat(extra || []));
    $("step-count").textContent = "(" + m.steps.size + " in " + m.runs.size + " run" + (m.runs.size === 1 ? "" : "s") + ")";
  }

  function downloads(id) {
    const box = $("downloads");
    box.replaceChildren(h("b", null, "download "));
    const short = id.replace(/^urn:glassbox:/, "").slice(0, 8);
    for (const [label, fmt, ext] of [["JSON", "", "json"], ["Turtle", "turtle", "ttl"], ["N-Triples", "ntriples", "nt"],
      ["N-Quads", "nquads", "nq"], ["JSON-LD", "jsonld", "jsonld"]]) {
      const a = h("a", {href: GB.api.traceUrl(id, fmt), download: "trace-" + short + "." + ext, class: "dl"}, label);
      a.addEventListener("click", (ev) => {
        if (!GB.api.token()) return;  // no token: the plain link works
        ev.preventDefault();
        GB.api.download(a.getAttribute("href"), a.getAttribute("download")).catch((e) => showError(e.message));
      });
      box.appendChild(a);
    }
    const link = h("a", {href: "#trace=" + encodeURIComponent(id), class: "dl"}, "link");
    box.appendChild(link);
  }

  // The gateway wants a token (started with --tokens): ask for one.
  function needToken(e) {
    if (!e || (e.status !== 401 && e.status !== 403)) return false;
    $("auth").hidden = false;
    $("auth-note").textContent = e.status === 401 ? "this gateway wants a bearer token" : "the token lacks the scope: " + e.message;
    return true;
  }

  function showError(text) {
    const e = $("run-error");
    e.textContent = text;
    e.hidden = false;
  }

  function logEvent(name, text) {
    state.eventCount++;
    $("event-count").textContent = "(" + state.eventCount + ")";
    const li = h("li", {class: "ev ev-" + name.replace(/\./g, "-")});
    li.appendChild(h("span", {class: "badge"}, name));
    li.appendChild(document.createTextNode(" " + text));
    $("events").appendChild(li);
  }

  // The graph and the chunk table from what the model holds now: a live stream's steps and a
  // stored trace fill the same model, so both draw the same explored subgraph.
  function drawRetrieval() {
    const m = state.model;
    const key = (e) => GB.termValue(e.s) + " " + GB.termValue(e.p) + " " + GB.termValue(e.o);
    const kept = m.keptEdges().map((e) => ({s: e.s, p: e.p, o: e.o, kept: true, score: e.score,
      reasoning: e.reasoning, selection: e.uri, tier: e.tier, document: e.document}));
    const keptKeys = new Set(kept.map(key));
    // The explored edges Focus did not keep (a kept one is drawn once, highlighted).
    const explored = m.exploredEdges().filter((e) => e.s && e.p && e.o && !keptKeys.has(key(e)))
      .map((e) => ({s: e.s, p: e.p, o: e.o, kept: false, hop: e.hop, explored: e.uri}));
    const edges = kept.concat(explored);
    if (edges.length) {
      const r = GB.graph.draw($("graph"), edges, m.seeds(), (e, g) => selectEdge(e, g));
      $("graph-note").textContent = "(" + r.nodes + " nodes, " + r.shown + (r.shown < r.total ? " of " + r.total : "") +
        " edges: " + kept.length + " kept, " + explored.length + " explored and not kept)";
    }
    renderChunks($("chunks").tBodies[0], $("chunk-note"), $("chunk-more"), m.chunks(), state.chunkTexts);
  }

  function scheduleRetrieval() {
    if (state.redraw) return;
    state.redraw = setTimeout(() => { state.redraw = 0; drawRetrieval(); }, 200);
  }

  function selectEdge(e, g) {
    for (const x of document.querySelectorAll(".edge.selected")) x.classList.remove("selected");
    g.classList.add("selected");
    const c = state.citations.find((x) => x.selection === e.selection);
    const card = c || normaliseCitation({selection: e.selection, kind: "edge", spans: []}, state.model);
    showPopover(card, g, true);
  }

  // ---- the answer and its citations ----------------------------------------------------
  // The answer's confidence badge, and the evidence it opens; none when the answer has no
  // confidence (an old trace, an engine without one).
  function showConfidence(conf) {
    const panel = $("confidence-evidence");
    panel.replaceChildren();
    panel.hidden = true;
    if (conf) $("answer-confidence").replaceChildren(confidenceBadge(conf, panel));
    else $("answer-confidence").replaceChildren();
  }

  function showAnswer(text, citations, extra, confidence) {
    state.citations = citations;
    showConfidence(confidence || null);
    renderAnswer($("answer"), text, citations, (mark, c) => {
      mark.addEventListener("mouseenter", () => showPopover(c, mark, false));
      mark.addEventListener("mouseleave", () => hidePopover(false));
      mark.addEventListener("focus", () => showPopover(c, mark, false));
      mark.addEventListener("click", () => showPopover(c, mark, true));
    });
    meta($("answer-meta"), extra);
  }

  // Lights up a citation's claims in the answer, its chunk row and its kept edge.
  function highlight(c, on) {
    for (const el of document.querySelectorAll(".lit")) el.classList.remove("lit");
    if (!on || !c) return;
    for (const el of document.querySelectorAll(".claim")) {
      if (el.dataset.cites.split(" ").includes(String(c.n))) el.classList.add("lit");
    }
    for (const el of document.querySelectorAll("#view [data-selection]")) {
      if (el.dataset.selection === c.selection) el.classList.add("lit");
    }
  }

  function showPopover(c, anchor, pin) {
    if (state.pinned && !pin) return;
    const pop = $("popover");
    pop.replaceChildren(citationCard(c));
    if (pin) {
      const close = h("button", {type: "button", class: "close", "aria-label": "close"}, "×");
      close.addEventListener("click", () => hidePopover(true));
      pop.prepend(close);
      state.pinned = c;
    }
    pop.hidden = false;
    pop.dataset.n = c.n === undefined ? "" : String(c.n);
    const r = anchor.getBoundingClientRect();
    const w = Math.min(460, window.innerWidth - 16);
    pop.style.width = w + "px";
    pop.style.left = Math.max(8, Math.min(window.innerWidth - w - 8, r.left)) + "px";
    const below = r.bottom + 8;
    pop.style.top = (below + 220 > window.innerHeight ? Math.max(8, r.top - 8 - pop.offsetHeight) : below) + "px";
    highlight(c, true);
  }

  function hidePopover(force) {
    if (state.pinned && !force) return;
    state.pinned = null;
    $("popover").hidden = true;
    highlight(null, false);
  }

  function answerFromModel() {
    const a = state.model.answer();
    if (!a) { $("answer").replaceChildren(h("p", {class: "muted"}, "No answer in this trace.")); return; }
    const citations = a.citations.map((c) => normaliseCitation(c, state.model));
    showAnswer(a.text, citations, [["short answer", a.shortAnswer], ["derivation", a.derivation],
      ["aggregate tier", a.tier ? GB.views.tierText(a.tier) : ""], ["citations", citations.length]], a.confidence);
  }

  // ---- a live question -----------------------------------------------------------------
  function onStreamEvent(name, d) {
    if (d && d.trace && !state.trace) state.trace = d.trace;
    switch (name) {
      case "run.started":
        logEvent(name, (d.mode || "") + " " + (d.collection || "") + " " + (d.request_id || ""));
        break;
      case "step": {
        const body = d.explain || {};
        if (!body.session) body.session = d.session;
        if (!body.explain_id) body.explain_id = d.step;
        if (body.parent_uri === undefined && d.parent) body.parent_uri = d.parent;
        const step = state.model.addMessage(body);
        state.tree.show(step);
        state.tree.adopt();
        runMeta();
        if (step.type === "Exploration" || step.type === "Focus") scheduleRetrieval();
        setStatus("running: " + state.model.steps.size + " steps");
        return;  // steps show in the tree, not the event log
      }
      case "route.decided":
        logEvent(name, d.engine + " by " + d.method + (d.rules_fired && d.rules_fired.length ? " (" + d.rules_fired.join(", ") + ")" : "") +
          (d.confidence !== undefined ? ", confidence " + d.confidence : ""));
        break;
      case "retrieval.results":
        // Edges (kept and explored) are drawn from the step's own triples, in the model.
        for (const it of d.items || []) {
          if (d.kind === "chunks" && it.chunk && it.text) state.chunkTexts.set(it.chunk, it.text);
        }
        logEvent(name, (d.items || []).length + " " + d.kind);
        scheduleRetrieval();
        break;
      case "tool.call": logEvent(name, "#" + d.iteration + " " + d.tool + " " + JSON.stringify(d.args || {})); break;
      case "tool.result": logEvent(name, "#" + d.iteration + " " + d.tool + (d.ok ? " ok " : " failed ") + (d.summary || "")); break;
      case "escalation": logEvent(name, d.from + " → " + d.to + ": " + d.reason); break;
      case "answer.retract": {
        // The reflection took that run's text back (docs/http.md §3): what follows replaces it.
        const box = $("answer");
        box.replaceChildren();
        box.dataset.streaming = "";
        logEvent(name, (d.engine || "") + " run " + d.run + (d.reason ? ": " + d.reason : ""));
        break;
      }
      case "answer.delta": {
        const box = $("answer");
        if (box.dataset.streaming !== "1") { box.replaceChildren(); box.dataset.streaming = "1"; }
        box.appendChild(document.createTextNode(d.text || ""));
        return;
      }
      case "citation": {
        const src = d.source;
        if (src) state.sources.set(src.chunk || src.document, src);
        // The cited passage stands in the chunk table until retrieval results bring more.
        if (src && src.chunk && src.text && !state.chunkTexts.has(src.chunk)) state.chunkTexts.set(src.chunk, src.text);
        logEvent(name, "[" + d.n + "] " + d.kind + " " + (src ? (src.title || src.document) : d.source_ref || ""));
        break;
      }
      case "answer.done": {
        // What was on screen before the answer came: the steps shown as they streamed in.
        viewer.stepsBeforeAnswer = $("steps").querySelectorAll("details.step").length;
        $("answer").dataset.streaming = "";
        const citations = (d.citations || []).map((c) => {
          const src = state.sources.get(c.chunk || c.document) || {};
          return normaliseCitation(Object.assign({}, src, c, {text: c.text || src.text}), state.model);
        });
        const p = d.provenance || {};
        // The answer's schema: docs/http.md §3 (`answer` the whole text, `short_answer`, `usage`).
        showAnswer(d.answer || "", citations, [["short answer", d.short_answer], ["answered by", d.answered_by],
          ["derivation", (p.derivation || []).join(" > ")],
          ["aggregate tier", p.aggregate_tier ? GB.views.tierText(p.aggregate_tier) : ""], ["citations", citations.length],
          ["usage", d.usage ? d.usage.input_tokens + "↓ " + d.usage.output_tokens + "↑" : ""]], GB.confidenceOfAnswer(d));
        logEvent(name, citations.length + " citations");
        break;
      }
      case "error": showError((d.type || "Error") + ": " + (d.message || "")); logEvent(name, d.type + ": " + d.message); break;
      case "done":
        logEvent(name, (d.status || "") + " " + (d.termination_reason || ""));
        // The trace's end (a live tail's catch-up reads stored steps, which carry no status).
        if (d.status && state.model.root) state.model.root.status = d.status;
        if (state.trace) downloads(state.trace);
        drawRetrieval();
        runMeta([["ended", d.termination_reason || d.status]]);
        break;
      default: logEvent(name, JSON.stringify(d).slice(0, 200));
    }
  }

  async function ask(ev) {
    if (ev) ev.preventDefault();
    const query = $("question").value.trim();
    if (!query) return;
    stopStreams();
    resetView(query);
    $("answer").replaceChildren(h("p", {class: "muted"}, "Working…"));
    viewer.stepsBeforeAnswer = null;
    const body = {question: query, mode: $("mode").value};
    if ($("collection").value.trim()) body.collection = $("collection").value.trim();
    const ctl = new AbortController();
    state.live = ctl;
    // A later question or trace replaces this view: what this one learns after that is not shown.
    const generation = state.generation;
    const current = () => generation === state.generation;
    $("ask-button").disabled = true;
    $("stop-button").disabled = false;
    const t0 = performance.now();
    setStatus("asking…");
    try {
      await GB.api.streamQuery(body, (name, d, id) => { if (current()) onStreamEvent(name, d, id); }, ctl.signal);
      if (current()) setStatus("answered in " + Math.round(performance.now() - t0) + " ms");
    } catch (e) {
      if (!current()) return;
      if (e.name === "AbortError") stopped();
      else { needToken(e); showError((e.type || "Error") + ": " + e.message); setStatus("failed"); }
    } finally {
      if (state.live === ctl) state.live = null;
      if (current()) {
        $("ask-button").disabled = false;
        $("stop-button").disabled = true;
        refreshList();
      }
    }
  }

  // The question was stopped (Stop): closing the stream makes the gateway cancel its run, and
  // the broker ends its trace with status error (docs/http.md §3). The list shows that end once
  // the broker has written it.
  function stopped() {
    setStatus("stopped");
    logEvent("stopped", "by you: the gateway cancels the run");
    const answer = $("answer");
    if (answer.dataset.streaming !== "1") answer.replaceChildren(h("p", {class: "muted"}, "Stopped before an answer."));
    // The header's status too: no more steps come to say otherwise (the stored trace ends error).
    const root = state.model.root;
    if (root && root.status === "running") root.status = "stopped";
    runMeta([["ended", "stopped"]]);
    if (state.trace) downloads(state.trace);
    setTimeout(() => refreshList(), 1500);
  }

  function stopStreams() {
    if (state.live) state.live.abort();
    if (state.tail) state.tail.abort();
    state.live = state.tail = null;
  }

  // ---- a stored trace --------------------------------------------------------------------
  // Builds the model and every view from a `show` reply; returns the milliseconds it took from
  // t0 (default: now; openTrace passes the time before the JSON parse), layout included: the
  // figure the 10,000-triple test bounds.
  function renderStored(show, t0) {
    if (t0 === undefined) t0 = performance.now();
    const summary = show.session || {};
    resetView(summary.question || summary.session || "trace");
    state.trace = summary.session || "";
    state.model.addStored(show, null);
    const steps = document.createDocumentFragment();
    const holder = $("steps");
    // Build the tree detached, insert it once.
    const detached = h("div");
    state.tree.container = detached;
    const order = [];
    const visit = (run) => {
      order.push(run);
      for (const r of state.model.runs.values()) if (r !== run && r.summary && r.summary.parent === run.session) visit(r);
    };
    visit(state.model.root);
    for (const r of state.model.runs.values()) if (!order.includes(r)) order.push(r);
    const all = [];
    for (const run of order) for (const step of run.steps) all.push(step);
    // The first rows are built with the view; the rest follow in batches, a timer tick apart,
    // so an agent run of a thousand steps shows at once and fills in behind (callers always
    // come before the sub-runs they called, so each sub-run finds its place).
    const first = Math.min(all.length, STEP_FIRST);
    for (let i = 0; i < first; i++) state.tree.show(all[i]);
    state.tree.adopt();
    while (detached.firstChild) steps.appendChild(detached.firstChild);
    holder.appendChild(steps);
    state.tree.container = holder;
    const generation = state.generation;
    let next = first, record = null;
    const more = () => {
      if (generation !== state.generation) return;  // another trace replaced this one
      const end = Math.min(all.length, next + STEP_BATCH);
      for (; next < end; next++) state.tree.show(all[next]);
      state.tree.adopt();
      if (next < all.length) { setTimeout(more, 0); return; }
      record.all_steps_ms = performance.now() - t0;
      $("render-info").textContent += "; all " + all.length + " step rows in " + record.all_steps_ms.toFixed(1) + " ms";
    };
    const tSteps = performance.now();
    runMeta();
    answerFromModel();
    drawRetrieval();
    if (state.trace) downloads(state.trace);
    knowledgeChanges(show);
    const tViews = performance.now();
    document.body.getBoundingClientRect();  // force the layout into the measurement
    void holder.offsetHeight;
    const ms = performance.now() - t0;
    record = viewer.lastRender = {ms, triples: state.model.tripleCount, steps: state.model.steps.size,
      runs: state.model.runs.size, trace: state.trace, first_steps: first, all_steps_ms: next < all.length ? null : ms,
      phases: {model_and_steps: tSteps - t0, answer_graph_chunks: tViews - tSteps, layout: performance.now() - tViews}};
    $("render-info").textContent = "rendered " + state.model.tripleCount.toLocaleString("en") + " triples, " +
      state.model.steps.size + " steps in " + ms.toFixed(1) + " ms" + (next < all.length ? " (first " + first + " step rows)" : "");
    if (next < all.length) setTimeout(more, 0);
    return ms;
  }

  // A stored trace's links to other runs: the banner when knowledge its answer rested on changed
  // (its detail's `affected`), and a replayed run's way back to the run it revises.
  function knowledgeChanges(show) {
    affectedBanner($("affected"), GB.affectedOf(show), state.trace);
    const original = GB.revisionOf(state.model);
    if (original && state.trace) {
      $("downloads").appendChild(h("a", {href: GB.compareHash(original, state.trace), class: "dl compare-original",
        title: "this run asks " + original + " again (prov:wasRevisionOf)"}, "compare with the original"));
    }
  }

  // ---- two traces side by side -----------------------------------------------------------
  async function openCompare(a, b) {
    stopStreams();
    state.generation++;
    const generation = state.generation;
    showTraceView(false);
    $("compare-summary").replaceChildren();
    $("compare-a").replaceChildren(h("p", {class: "muted"}, "Loading…"));
    $("compare-b").replaceChildren();
    setStatus("comparing…");
    try {
      const reply = await GB.api.compareTraces(a, b);
      if (generation !== state.generation) return;
      const sides = GB.comparisonSides(reply);
      renderComparison($("compare-summary"), $("compare-a"), $("compare-b"), sides);
      viewer.lastCompare = {a: sides.a.session, b: sides.b.session, answerChanged: sides.answerChanged};
      setStatus("comparing two runs");
    } catch (e) {
      if (generation !== state.generation) return;
      needToken(e);
      $("compare-a").replaceChildren(h("p", {class: "error"}, (e.type || "Error") + ": " + e.message));
      viewer.lastCompare = {error: (e.type || "Error") + ": " + e.message};
      setStatus("could not compare");
    }
  }

  // A list row's tick: the last two ticked are the ones compared.
  function onTick(box) {
    const session = box.closest("tr[data-session]").dataset.session;
    state.ticked = state.ticked.filter((s) => s !== session);
    if (box.checked) state.ticked.push(session);
    while (state.ticked.length > 2) {
      const dropped = state.ticked.shift();
      const other = $("trace-list").querySelector(`tr[data-session="${CSS.escape(dropped)}"] input.tick`);
      if (other) other.checked = false;
    }
    $("trace-compare").disabled = state.ticked.length !== 2;
  }

  async function openTrace(id) {
    stopStreams();
    setStatus("loading trace…");
    try {
      const text = await GB.api.showTraceText(id);
      const t0 = performance.now();
      const show = JSON.parse(text);
      const ms = renderStored(show, t0);
      setStatus("trace open (" + ms.toFixed(0) + " ms)");
      for (const tr of $("trace-list").tBodies[0].rows) tr.classList.toggle("current", tr.dataset.session === state.trace);
      if (show.session && show.session.status === "running") tail(state.trace);
    } catch (e) {
      resetView("trace " + id);
      needToken(e);
      showError((e.type || "Error") + ": " + e.message);
      setStatus("could not open the trace");
    }
  }

  // A running trace keeps growing: its live tail adds the steps that follow.
  async function tail(id) {
    const ctl = new AbortController();
    state.tail = ctl;
    const generation = state.generation;
    try {
      const response = await fetch(GB.api.traceUrl(id) + "/events", {headers: GB.api.headers({Accept: "text/event-stream"}), signal: ctl.signal});
      if (!response.ok || !response.body) return;
      const parser = new GB.api.SseParser((ev) => {
        if (generation !== state.generation) return;  // another view replaced this trace
        let d; try { d = JSON.parse(ev.data); } catch (e) { return; }
        if (ev.event === "step") {
          if (!state.model.steps.has(d.step)) onStreamEvent("step", d);
        } else if (ev.event === "done") {
          // The stream of a question brings its answer as events; a tail has only the steps.
          answerFromModel();
          onStreamEvent("done", d);
          setStatus("trace ended: " + (d.status || ""));
          refreshList();
        }
      });
      const reader = response.body.getReader(), decoder = new TextDecoder();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, {stream: true}));
      }
    } catch (e) { /* aborted, or the tail is not offered: the stored view stands */ }
  }

  // ---- the trace list --------------------------------------------------------------------
  function filters(after) {
    const since = $("trace-since").value;
    return {search: $("trace-search").value.trim(), kind: $("trace-kind").value, status: $("trace-status").value,
      all: $("trace-all").checked ? "true" : "", since: since ? since + "T00:00:00Z" : "", limit: 50, after: after || ""};
  }

  let listSeq = 0;
  async function refreshList(more) {
    const seq = ++listSeq;
    const body = $("trace-list").tBodies[0];
    try {
      const reply = await GB.api.listTraces(filters(more ? state.listNext : ""));
      if (seq !== listSeq) return;  // a newer filter won
      const frag = document.createDocumentFragment();
      for (const s of reply.sessions || []) {
        const tr = h("tr", {"data-session": s.session, tabindex: "0", class: s.session === state.trace ? "current" : ""});
        const tick = h("input", {type: "checkbox", class: "tick", "aria-label": "compare this trace"});
        tick.checked = state.ticked.includes(s.session);
        tr.appendChild(h("td", {class: "pick"})).appendChild(tick);
        tr.appendChild(h("td", {class: "dot status-" + s.status, title: s.status}, "●"));
        const q = h("td", {class: "q", title: s.question || ""}, GB.views.clip(s.question || "(no question)", 80));
        if (s.subtraces) q.appendChild(h("span", {class: "muted"}, " +" + s.subtraces));
        tr.appendChild(q);
        tr.appendChild(h("td", null, s.kind || s.service || ""));
        tr.appendChild(h("td", {title: s.started || ""}, (s.started || "").replace("T", " ").slice(5, 19)));
        tr.appendChild(h("td", null, s.duration_ms === null || s.duration_ms === undefined ? "" : s.duration_ms));
        frag.appendChild(tr);
      }
      if (more) body.appendChild(frag); else body.replaceChildren(frag);
      state.listNext = reply.next || null;
      $("trace-more").hidden = !state.listNext;
      $("trace-total").textContent = "(" + body.rows.length + " of " + reply.total + (reply.total_exact === false ? "+" : "") + ")";
    } catch (e) {
      if (seq !== listSeq) return;
      needToken(e);
      body.replaceChildren(h("tr", null));
      body.rows[0].appendChild(h("td", {colspan: "6", class: "error"}, "could not list traces: " + e.message));
    }
  }

  function onListClick(ev) {
    if (ev.target.closest("td.pick")) {
      if (ev.target.matches("input.tick")) onTick(ev.target);
      return;
    }
    const tr = ev.target.closest("tr[data-session]");
    if (!tr) return;
    const hash = "#trace=" + encodeURIComponent(tr.dataset.session);
    if (location.hash === hash) openTrace(tr.dataset.session); else location.hash = hash;
  }

  function fromHash() {
    const pair = GB.parseCompareHash(location.hash);
    if (pair) return openCompare(pair.a, pair.b);
    const e = /^#eval=(.+)$/.exec(location.hash);
    if (e) return openEval(decodeURIComponent(e[1]));
    const m = /^#trace=(.+)$/.exec(location.hash);
    if (m) openTrace(decodeURIComponent(m[1]));
  }

  // ---- evaluation runs (glassbox eval; docs/evaluation.md, "Evaluation runs") -------------
  const when = (t) => (t || "").replace("T", " ").slice(0, 16);

  let evalSeq = 0;
  async function refreshEvals(more) {
    const seq = ++evalSeq;
    const body = $("eval-list").tBodies[0];
    try {
      const reply = await GB.api.listEvals(more ? state.evalNext : 0);
      if (seq !== evalSeq) return;
      const frag = document.createDocumentFragment();
      for (const r of reply.runs || []) {
        const s = r.summary || {};
        const tr = h("tr", {"data-eval": r.name, tabindex: "0", class: r.name === state.evalOpen ? "current" : ""});
        tr.appendChild(h("td", {class: "name mono", title: r.name}, GB.views.clip(r.name, 40)));
        tr.appendChild(h("td", {title: r.set_path || ""}, r.set || ""));
        tr.appendChild(h("td", null, GB.views.share(s.hits1)));
        tr.appendChild(h("td", null, typeof s.ece === "number" ? GB.views.share(s.ece) : "–"));
        tr.appendChild(h("td", {title: r.recorded || ""}, when(r.recorded).slice(5)));
        frag.appendChild(tr);
      }
      if (more) body.appendChild(frag); else body.replaceChildren(frag);
      state.evalNext = reply.next_offset === null || reply.next_offset === undefined ? null : reply.next_offset;
      $("eval-more").hidden = state.evalNext === null;
      $("eval-total").textContent = "(" + body.rows.length + " of " + reply.total + ")";
    } catch (e) {
      if (seq !== evalSeq) return;
      needToken(e);
      body.replaceChildren(h("tr", null));
      body.rows[0].appendChild(h("td", {colspan: "5", class: "error"}, "could not list evaluation runs: " + e.message));
    }
  }

  function onEvalListClick(ev) {
    const tr = ev.target.closest("tr[data-eval]");
    if (!tr) return;
    const hash = "#eval=" + encodeURIComponent(tr.dataset.eval);
    if (location.hash === hash) openEval(tr.dataset.eval); else location.hash = hash;
  }

  // Loads a chart into its <img>; resolves true once the image decoded (the test reads it).
  async function loadChart(img, path, generation) {
    img.removeAttribute("src");
    const url = await GB.api.chartObjectUrl(path);
    if (generation !== state.generation) { URL.revokeObjectURL(url); return false; }
    state.chartUrls.push(url);
    img.src = url;
    await img.decode();
    return img.naturalWidth > 0;
  }

  async function openEval(name) {
    stopStreams();
    state.generation++;
    const generation = state.generation;
    for (const url of state.chartUrls) URL.revokeObjectURL(url);
    state.chartUrls = [];
    showView("eval");
    state.evalOpen = name;
    for (const tr of $("eval-list").tBodies[0].rows) tr.classList.toggle("current", tr.dataset.eval === name);
    $("eval-title").textContent = "Evaluation run " + name;
    $("eval-meta").replaceChildren();
    $("eval-error").hidden = true;
    $("eval-figures").tBodies[0].replaceChildren();
    $("eval-rows").tBodies[0].replaceChildren();
    $("eval-row-count").textContent = "";
    for (const id of ["eval-reliability", "eval-risk"]) $(id).removeAttribute("src");
    viewer.lastEval = null;
    setStatus("loading evaluation run…");
    try {
      const {run} = await GB.api.showEval(name);
      if (generation !== state.generation) return;
      meta($("eval-meta"), [["set", run.set], ["file", run.set_path], ["engine", run.engine],
        ["collection", run.collection || "default"], ["started", when(run.started)], ["finished", when(run.finished)],
        ["recorded", when(run.recorded)]]);
      renderEvalFigures($("eval-figures").tBodies[0], run.summary);
      const rows = Array.isArray(run.rows) ? run.rows : [];
      renderEvalRows($("eval-rows").tBodies[0], rows);
      const questions = run.summary && run.summary.questions;
      $("eval-row-count").textContent = "(" + rows.length + (questions > rows.length ? " of " + questions : "") + ")";
      const figures = {};
      for (const tr of $("eval-figures").tBodies[0].rows) figures[tr.dataset.figure] = tr.cells[1].textContent;
      viewer.lastEval = {name: run.name, figures, rows: rows.length, charts: {reliability: false, risk_coverage: false}};
      setStatus("evaluation run open");
      const charts = run.charts || {};
      const loaded = await Promise.allSettled([loadChart($("eval-reliability"), charts.reliability, generation),
        loadChart($("eval-risk"), charts.risk_coverage, generation)]);
      if (generation !== state.generation) return;
      viewer.lastEval.charts = {reliability: loaded[0].status === "fulfilled" && loaded[0].value,
        risk_coverage: loaded[1].status === "fulfilled" && loaded[1].value};
      const failed = loaded.find((r) => r.status === "rejected");
      if (failed) {
        $("eval-error").textContent = "a chart could not be shown: " + failed.reason.message;
        $("eval-error").hidden = false;
      }
    } catch (e) {
      if (generation !== state.generation) return;
      needToken(e);
      $("eval-error").textContent = (e.type || "Error") + ": " + e.message;
      $("eval-error").hidden = false;
      viewer.lastEval = {error: (e.type || "Error") + ": " + e.message};
      setStatus("could not open the evaluation run");
    }
  }

  // ---- wiring ----------------------------------------------------------------------------
  function init() {
    $("ask").addEventListener("submit", ask);
    $("question").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) ask(ev);
    });
    $("stop-button").addEventListener("click", () => stopStreams());
    $("auth").hidden = !GB.api.token();
    $("auth").addEventListener("submit", (ev) => {
      ev.preventDefault();
      GB.api.setToken($("token").value.trim());
      $("token").value = "";
      $("auth-note").textContent = GB.api.token() ? "token set for this tab" : "token cleared";
      refreshList();
      refreshEvals();
    });
    let debounce = 0;
    $("trace-search").addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(() => refreshList(), 250); });
    for (const id of ["trace-kind", "trace-status", "trace-all", "trace-since"]) $(id).addEventListener("change", () => refreshList());
    $("trace-refresh").addEventListener("click", () => refreshList());
    $("trace-more").addEventListener("click", () => refreshList(true));
    $("trace-compare").addEventListener("click", () => {
      if (state.ticked.length === 2) location.hash = GB.compareHash(state.ticked[0], state.ticked[1]);
    });
    $("compare-close").addEventListener("click", () => {
      if (state.trace) location.hash = "#trace=" + encodeURIComponent(state.trace);
      else { resetView("No trace open"); history.replaceState(null, "", location.pathname); }
    });
    $("trace-list").addEventListener("click", onListClick);
    $("eval-list").addEventListener("click", onEvalListClick);
    $("eval-list").addEventListener("keydown", (ev) => { if (ev.key === "Enter") onEvalListClick(ev); });
    $("eval-refresh").addEventListener("click", () => refreshEvals());
    $("eval-more").addEventListener("click", () => refreshEvals(true));
    $("eval-close").addEventListener("click", () => {
      if (state.trace) location.hash = "#trace=" + encodeURIComponent(state.trace);
      else { resetView("No trace open"); history.replaceState(null, "", location.pathname); }
    });
    $("trace-list").addEventListener("keydown", (ev) => { if (ev.key === "Enter") onListClick(ev); });
    $("open-file").addEventListener("change", async (ev) => {
      const file = ev.target.files[0];
      if (!file) return;
      try { renderStored(JSON.parse(await file.text())); setStatus("opened " + file.name); } catch (e) { showError("not a trace: " + e.message); }
    });
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") hidePopover(true);
      const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
      if (ev.key === "/" && !typing) { ev.preventDefault(); $("trace-search").focus(); }
    });
    document.addEventListener("click", (ev) => {
      if (state.pinned && !ev.target.closest("#popover, .cite, .edge")) hidePopover(true);
    });
    window.addEventListener("hashchange", fromHash);
    refreshList();
    refreshEvals();
    fromHash();
    viewer.ready = true;
  }

  viewer.openTrace = openTrace;
  viewer.openCompare = openCompare;
  viewer.openEval = openEval;
  viewer.refreshEvals = refreshEvals;
  viewer.renderStored = renderStored;
  viewer.refreshList = refreshList;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})(window.GB = window.GB || {});
