// The views of one trace: the step tree (runs nested under the step that called them), the
// answer with its citation markers and its confidence badge, the chunk table. Every untrusted
// text goes in through textContent; elements are built detached and inserted once.
"use strict";
(function (GB) {
  function h(tag, attrs, text) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) {
      if (k === "class") e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  const clip = (s, n) => (s && s.length > n ? s.slice(0, n - 1) + "…" : s || "");
  const fmtNum = (v) => (v === null || v === undefined || Number.isNaN(v) ? "" : String(v));
  const fmtScore = (v) => (v === null || v === undefined || Number.isNaN(v) ? "" :
    Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3));
  const percent = (p) => Math.round(Math.max(0, Math.min(1, p)) * 100) + " %";
  const TIERS = {1: "authoritative", 2: "curated", 3: "extracted", 4: "inferred"};
  const tierText = (t) => (t ? t + " (" + (TIERS[t] || "?") + ")" : "");

  // The step's URI after its run's prefix: "analysis:0", "focus", "question".
  function stepName(step) {
    const m = /^urn:glassbox:[0-9a-f-]{36}:(.*)$/.exec(step.uri);
    return m ? m[1] : GB.shortName(step.uri);
  }

  // One line saying what the step found or decided.
  function stepSummary(m, step) {
    const u = step.uri;
    switch (step.type) {
      case "Question": return m.gb(u, "query");
      case "RoutingDecision": return "→ " + m.gb(u, "engine") + " by " + m.gb(u, "routingMethod") +
        (m.gbAll(u, "ruleFired").length ? " (" + m.gbAll(u, "ruleFired").join(", ") + ")" : "") +
        (m.gbNum(u, "confidence") !== null ? ", confidence " + fmtScore(m.gbNum(u, "confidence")) : "");
      case "Grounding": return "concepts: " + m.gbAll(u, "concept").join(", ");
      case "Exploration": return [m.gb(u, "edgeCount") && m.gb(u, "edgeCount") + " edges",
        m.gb(u, "chunkCount") && m.gb(u, "chunkCount") + " chunks",
        m.gbAll(u, "seedEntity").length && "seeds " + m.gbAll(u, "seedEntity").map(GB.shortName).join(", ")]
        .filter(Boolean).join(", ");
      case "Focus": return [m.gb(u, "edgeCount") && m.gb(u, "edgeCount") + " edges kept",
        m.gb(u, "chunkCount") && m.gb(u, "chunkCount") + " chunks kept"].filter(Boolean).join(", ");
      case "Synthesis": case "Conclusion": {
        const conf = m.confidence(u);
        return clip(m.gb(u, "answerText"), 160) +
          (m.gb(u, "terminationReason") ? " [" + m.gb(u, "terminationReason") + "]" : "") +
          (conf ? " (" + (conf.abstained ? "withheld, " : "") + "confidence " + percent(conf.value) + ")" : "");
      }
      case "Analysis": return "#" + m.gb(u, "iteration") + " " + clip(m.gb(u, "thought"), 120) +
        (step.toolUse ? " → " + m.gb(u, "action") + " " + clip(m.gb(u, "arguments"), 80) : "");
      case "Observation": return "#" + m.gb(u, "iteration") + " " + (m.gb(u, "toolStatus") === "error" ? "[error] " : "") +
        clip(m.gb(u, "observation"), 140);
      case "Escalation": return m.gb(u, "fromEngine") + " → " + m.gb(u, "engine") + ": " + m.gb(u, "reason") +
        (m.gbNum(u, "relevance") !== null ? " (relevance " + fmtScore(m.gbNum(u, "relevance")) + ")" : "");
      default: return step.error ? step.error.type + ": " + step.error.message : step.status || "";
    }
  }

  // The details of a step, built when it is first opened: its own properties, then every
  // triple of its message.
  function stepDetails(m, step) {
    const box = h("div", {class: "step-body"});
    const props = m.subjects.get(step.uri);
    if (props) {
      const dl = h("dl", {class: "props"});
      for (const [p, objects] of props) {
        if (p === GB.NS.rdf + "type") continue;
        dl.appendChild(h("dt", null, GB.shortName(p)));
        dl.appendChild(h("dd", null, objects.map((o) => (o.v !== undefined ? o.v : GB.termText(o))).join("\n")));
      }
      box.appendChild(dl);
    }
    if (step.error) box.appendChild(h("p", {class: "error"}, step.error.type + ": " + step.error.message));
    const table = h("table", {class: "triples"});
    const head = h("tr");
    for (const c of ["subject", "predicate", "object"]) head.appendChild(h("th", null, c));
    table.appendChild(head);
    const frag = document.createDocumentFragment();
    for (const t of step.triples) {
      const tr = h("tr");
      tr.appendChild(h("td", {title: GB.termValue(t.s)}, GB.termText(t.s)));
      tr.appendChild(h("td", {title: GB.termValue(t.p)}, GB.termText(t.p)));
      tr.appendChild(h("td", {title: GB.termValue(t.o)}, GB.termText(t.o)));
      frag.appendChild(tr);
    }
    table.appendChild(frag);
    box.appendChild(h("p", {class: "muted"}, step.triples.length + " triples"));
    box.appendChild(table);
    return box;
  }

  class StepTree {
    constructor(container, model) {
      this.container = container;
      this.model = model;
      this.rows = new Map();   // step URI -> its wrapper (the row and the sub-runs it called)
      this.runs = new Map();   // session -> run element
    }

    runElement(run) {
      let el = this.runs.get(run.session);
      if (el) return el;
      el = h("div", {class: "run", "data-session": run.session});
      const head = h("div", {class: "run-head"});
      head.appendChild(h("span", {class: "badge service"}, run.service || "run"));
      head.appendChild(h("span", {class: "mono", title: run.session}, GB.shortName(run.session.replace(/:question$/, ""))));
      head.appendChild(h("span", {class: "run-status"}));
      el.appendChild(head);
      el.appendChild(h("div", {class: "run-steps"}));
      this.runs.set(run.session, el);
      const root = this.model.root;
      const caller = run.parentStep && this.rows.get(run.parentStep);
      if (caller) caller.querySelector(":scope > .children").appendChild(el);
      else if (run !== root && root && this.runs.has(root.session)) this.runs.get(root.session).appendChild(el);
      else this.container.appendChild(el);
      return el;
    }

    updateRun(run) {
      const el = this.runElement(run);
      const s = el.querySelector(".run-status");
      s.textContent = run.status;
      s.className = "run-status status-" + run.status;
      el.querySelector(".service").textContent = run.service || "run";
    }

    // Adds the step's row, or refreshes it when a later message adds to the same step.
    show(step) {
      const m = this.model;
      const row = h("details", {class: "step type-" + step.type});
      const sum = h("summary");
      sum.appendChild(h("span", {class: "badge type"}, step.type + (step.toolUse ? " · tool" : "")));
      sum.appendChild(h("span", {class: "name mono"}, stepName(step)));
      sum.appendChild(h("span", {class: "what"}, stepSummary(m, step)));
      const c = m.cost(step.uri);
      const cost = h("span", {class: "cost"});
      if (c.durationMs !== null) cost.appendChild(h("span", {class: "ms", title: "gb:durationMs"}, c.durationMs + " ms"));
      if (c.inTokens !== null || c.outTokens !== null) {
        cost.appendChild(h("span", {class: "tok", title: "gb:inputTokens / gb:outputTokens"},
          fmtNum(c.inTokens) + "↓ " + fmtNum(c.outTokens) + "↑"));
      }
      if (c.model) cost.appendChild(h("span", {class: "model"}, c.model));
      // What the step's model calls cost, as the trace collector priced them (stored traces).
      const spend = m.spend(step.uri);
      if (spend) {
        cost.appendChild(h("span", {class: "price", title: spend.unpriced.length ? "no price for " + spend.unpriced.join(", ") : "costs.prices"},
          spend.cost === null ? "no price" : GB.formatCost(spend.cost) + " " + spend.currency + (spend.unpriced.length ? " +?" : "")));
      }
      sum.appendChild(cost);
      row.appendChild(sum);
      const body = h("div", {class: "step-detail"});
      row.appendChild(body);
      row.addEventListener("toggle", () => {
        if (row.open && !body.firstChild) body.appendChild(stepDetails(m, step));
      });
      // The sub-runs a step called sit beside its <details>, so they show while it is closed.
      const old = this.rows.get(step.uri);
      if (old) {
        old.replaceChild(row, old.querySelector(":scope > details.step"));
      } else {
        const wrap = h("div", {class: "step-wrap", "data-step": step.uri});
        wrap.appendChild(row);
        wrap.appendChild(h("div", {class: "children"}));
        this.runElement(step.run).querySelector(".run-steps").appendChild(wrap);
        this.rows.set(step.uri, wrap);
      }
      this.updateRun(step.run);
      return row;
    }

    // A sub-run whose calling step was shown after it moves under that step.
    adopt() {
      for (const run of this.model.runs.values()) {
        const el = this.runs.get(run.session);
        const caller = run.parentStep && this.rows.get(run.parentStep);
        if (el && caller && el.parentNode !== caller.querySelector(":scope > .children")) {
          caller.querySelector(":scope > .children").appendChild(el);
        }
      }
    }
  }

  // Citations in one shape, whether from the stream's FINAL (snake case, docs/rag.md §1) or
  // read from the trace (TraceModel.answer()).
  function normaliseCitation(c, model) {
    const sel = c.selection || c.uri || "";
    const fromTrace = model && sel && model.subjects.has(sel) ? model.selection(sel) : null;
    const pick = (...v) => v.find((x) => x !== undefined && x !== null && x !== "");
    return {
      n: c.n, spans: c.spans || [], kind: pick(c.kind, fromTrace && fromTrace.kind, "chunk"), selection: sel,
      text: pick(c.text, fromTrace && fromTrace.kind === "edge" ? fromTrace.text : undefined, ""),
      document: pick(c.document, fromTrace && fromTrace.document, ""), title: c.title || "",
      chunk: pick(c.chunk, fromTrace && fromTrace.chunk, ""),
      offset: pick(c.char_offset, c.charOffset, fromTrace && fromTrace.charOffset),
      end: pick(c.char_end, c.charEnd, fromTrace && fromTrace.charEnd),
      tier: pick(c.tier, fromTrace && fromTrace.tier), score: pick(c.score, fromTrace && fromTrace.score),
      reasoning: pick(c.reasoning, fromTrace && fromTrace.reasoning, ""),
    };
  }

  // The answer text with a marker [n] after each cited claim; the claim's characters carry
  // the numbers of the citations covering them, so a marker can light up its claim.
  function renderAnswer(container, text, citations, onMarker) {
    const chars = Array.from(text);  // spans count Unicode code points
    const cuts = new Set([0, chars.length]);
    const ends = new Map();
    for (const c of citations) {
      for (const s of c.spans) {
        const start = Math.max(0, Math.min(chars.length, s.start)), end = Math.max(start, Math.min(chars.length, s.end));
        cuts.add(start); cuts.add(end);
        if (!ends.has(end)) ends.set(end, []);
        if (!ends.get(end).includes(c)) ends.get(end).push(c);
      }
    }
    const points = [...cuts].sort((a, b) => a - b);
    const frag = document.createDocumentFragment();
    for (let i = 0; i < points.length; i++) {
      const at = points[i];
      for (const c of (ends.get(at) || []).sort((a, b) => a.n - b.n)) {
        const mark = h("button", {type: "button", class: "cite cite-" + c.kind, "data-n": c.n,
          "aria-label": "citation " + c.n}, "[" + c.n + "]");
        onMarker(mark, c);
        frag.appendChild(mark);
      }
      if (i + 1 === points.length) break;
      const piece = chars.slice(at, points[i + 1]).join("");
      const covering = citations.filter((c) => c.spans.some((s) => s.start <= at && s.end >= points[i + 1]));
      if (!covering.length) { frag.appendChild(document.createTextNode(piece)); continue; }
      const span = h("span", {class: "claim", "data-cites": covering.map((c) => c.n).join(" ")}, piece);
      frag.appendChild(span);
    }
    container.replaceChildren(frag);
  }

  // The popover's content for one citation.
  function citationCard(c) {
    const card = document.createDocumentFragment();
    const head = h("div", {class: "pop-head"});
    head.appendChild(h("span", {class: "badge cite-" + c.kind}, "[" + c.n + "] " + c.kind));
    if (c.tier) head.appendChild(h("span", {class: "badge tier tier-" + c.tier}, "tier " + tierText(c.tier)));
    if (c.score !== undefined && c.score !== null) head.appendChild(h("span", {class: "muted"}, "score " + fmtScore(c.score)));
    card.appendChild(head);
    if (c.text) card.appendChild(h("blockquote", {class: "source-text"}, c.text));
    else card.appendChild(h("p", {class: "muted"}, "(the source text is not kept in the trace; its place is below)"));
    const dl = h("dl", {class: "props"});
    const row = (k, v) => { if (v !== "" && v !== undefined && v !== null) { dl.appendChild(h("dt", null, k)); dl.appendChild(h("dd", null, v)); } };
    row("document", c.title ? c.title + "\n" + c.document : c.document);
    row("chunk", c.chunk);
    if (c.offset !== undefined && c.offset !== null) row("offsets", "chars " + c.offset + "–" + (c.end !== undefined && c.end !== null ? c.end : "?"));
    row("reasoning", c.reasoning);
    row("claims", c.spans.map((s) => s.start + "–" + s.end).join(", "));
    row("selection", c.selection);
    card.appendChild(dl);
    return card;
  }

  // The answer's calibrated confidence (docs/confidence.md) as a disclosure button: its words and
  // per cent in text (the band's colour only repeats the words), "withheld" when the answer was;
  // it opens `panel`, filled with the evidence features behind the figure. conf is
  // TraceModel.confidence()'s shape.
  function confidenceBadge(conf, panel) {
    const band = conf.abstained ? "withheld" : conf.words.replace(/[^a-z]+/g, "-");
    const button = h("button", {type: "button", class: "confidence conf-" + band, "aria-expanded": "false",
      "aria-controls": panel.id, "data-confidence": String(conf.value),
      title: "the calibrated probability that the short answer is right: show the evidence behind it"});
    button.appendChild(h("span", {class: "sr"}, "confidence: "));
    button.appendChild(document.createTextNode((conf.abstained ? "withheld · " : "") + conf.words + " · " + percent(conf.value)));
    button.appendChild(h("span", {class: "caret", "aria-hidden": "true"}, "▾"));
    panel.replaceChildren(confidenceEvidence(conf));
    panel.hidden = true;
    button.addEventListener("click", () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      panel.hidden = !open;
    });
    return button;
  }

  // The features behind a confidence, the strongest effect on the log-odds first, each marked
  // raised or lowered in words, then the calibrator that weighed them.
  function confidenceEvidence(conf) {
    const box = document.createDocumentFragment();
    box.appendChild(h("p", {class: "muted"}, "The calibrated probability that the short answer is right: " +
      conf.value.toFixed(3) + (conf.abstained ? ". Below the floor asked for, so the answer was withheld: it says it does not know." : ".")));
    if (conf.features.length) {
      const table = h("table", {class: "list features"});
      const head = h("tr");
      for (const c of ["feature", "value", "effect on the log-odds"]) head.appendChild(h("th", null, c));
      table.appendChild(h("thead")).appendChild(head);
      const body = h("tbody");
      for (const f of conf.features) {
        const way = f.effect === null || f.effect === 0 ? "none" : f.effect > 0 ? "raised" : "lowered";
        const tr = h("tr", {class: "feature effect-" + way, "data-feature": f.name,
          "data-effect": f.effect === null ? "" : String(f.effect)});
        tr.appendChild(h("td", {class: "mono"}, f.name));
        tr.appendChild(h("td", null, f.value === null ? "" : Number.isInteger(f.value) ? String(f.value) : fmtScore(f.value)));
        tr.appendChild(h("td", {class: "effect"}, way === "raised" ? "▲ raised +" + fmtScore(f.effect) :
          way === "lowered" ? "▼ lowered −" + fmtScore(-f.effect) : f.effect === null ? "— not weighed" : "no effect"));
        body.appendChild(tr);
      }
      table.appendChild(body);
      box.appendChild(table);
      if (conf.features.some((f) => f.effect === null)) {
        box.appendChild(h("p", {class: "muted"}, "Not weighed: measured and recorded, but not a feature of this calibrator's fit."));
      }
    } else {
      box.appendChild(h("p", {class: "muted"}, "No evidence features recorded."));
    }
    const cal = h("p", {class: "calibrator"});
    cal.appendChild(h("b", null, "calibrator "));
    cal.appendChild(h("span", {class: "mono"}, conf.calibrator || "(not named)"));
    box.appendChild(cal);
    return box;
  }

  // The first rows are built with the view; the rest on demand, so a run that retrieved a
  // thousand chunks does not lay out a thousand rows before the page answers.
  const CHUNK_FIRST = 40, CHUNK_MAX = 2000;
  function chunkRow(c, texts) {
    const tr = h("tr", {"data-selection": c.uri});
    const n = /:chunk:(\d+)$/.exec(c.uri);
    tr.appendChild(h("td", null, n ? Number(n[1]) + 1 : ""));
    tr.appendChild(h("td", null, c.stage));
    const cell = h("td", {title: c.chunk || c.uri});
    // "great-gale.md#chunk-0": the file and the chunk, where the short name would say "chunk-0".
    cell.appendChild(h("div", {class: "mono"}, (c.chunk || c.uri).replace(/^.*\//, "")));
    const text = texts && texts.get(c.chunk);
    if (text) cell.appendChild(h("div", {class: "chunk-text"}, clip(text, 240)));
    if (c.reasoning) cell.appendChild(h("div", {class: "muted"}, c.reasoning));
    tr.appendChild(cell);
    tr.appendChild(h("td", null, fmtScore(c.score)));
    tr.appendChild(h("td", null, fmtNum(c.tier)));
    const pair = (rank, score) => (rank === null || rank === undefined ? "" : "#" + rank + (score !== null && score !== undefined ? " " + fmtScore(score) : ""));
    tr.appendChild(h("td", null, pair(c.vectorRank, c.vectorScore)));
    tr.appendChild(h("td", null, pair(c.keywordRank, c.keywordScore)));
    tr.appendChild(h("td", null, pair(c.titleRank, c.titleScore)));
    tr.appendChild(h("td", null, pair(c.linkRank, null)));
    return tr;
  }

  function renderChunks(tbody, note, more, chunks, texts) {
    const fill = (from, to) => {
      const frag = document.createDocumentFragment();
      for (let i = from; i < to; i++) frag.appendChild(chunkRow(chunks[i], texts));
      return frag;
    };
    const first = Math.min(chunks.length, CHUNK_FIRST), all = Math.min(chunks.length, CHUNK_MAX);
    tbody.replaceChildren(fill(0, first));
    note.textContent = chunks.length ? "(" + chunks.length + ")" : "";
    more.hidden = all <= first;
    more.textContent = "show " + (all - first) + " more" + (all < chunks.length ? " (of " + (chunks.length - first) + ")" : "");
    more.onclick = () => { tbody.appendChild(fill(first, all)); more.hidden = true; };
  }

  // The banner over a trace whose answer rested on knowledge that changed since (GB.affectedOf's
  // entries): each change with its kind, time and IRI, the facts and sources it took away, and how
  // to ask again. Hidden when there is none.
  function affectedBanner(box, entries, session) {
    box.replaceChildren();
    box.hidden = entries.length === 0;
    if (!entries.length) return;
    box.appendChild(h("h2", null, "This answer rested on knowledge that changed"));
    const list = h("ul", {class: "changes"});
    for (const e of entries) {
      const li = h("li", {class: "change", "data-change": e.change, "data-kind": e.kind});
      const head = h("div");
      head.appendChild(h("b", null, e.kindText));
      if (e.at) head.appendChild(document.createTextNode(" at " + e.at));
      if (e.change) head.appendChild(h("span", {class: "mono change-iri", title: e.change}, " " + e.change));
      li.appendChild(head);
      if (e.facts.length) {
        const facts = h("ul", {class: "facts"});
        for (const f of e.facts) facts.appendChild(h("li", {class: "mono fact"}, f));
        li.appendChild(h("div", {class: "muted"}, e.facts.length === 1 ? "the fact it used:" : "the " + e.facts.length + " facts it used:"));
        li.appendChild(facts);
      }
      if (e.sources.length) li.appendChild(h("div", {class: "sources"}, "sources: " + e.sources.join(", ")));
      list.appendChild(li);
    }
    box.appendChild(list);
    if (session) box.appendChild(h("p", {class: "muted"}, "Ask it again and compare: glassbox traces replay " + session));
  }

  const percentOrNone = (p) => (p === null ? "none" : percent(p));

  // One side of the side-by-side view (GB.comparisonSides' a or b): its run, question, answer,
  // confidence, sources and facts, those only on this side marked added (b) or removed (a).
  function compareSide(box, side, which, changed) {
    box.replaceChildren();
    const head = h("div", {class: "compare-run"});
    head.appendChild(h("span", {class: "badge side"}, which));
    head.appendChild(h("a", {href: "#trace=" + encodeURIComponent(side.session), class: "mono", title: side.session},
      side.session.replace(/^urn:glassbox:/, "").replace(/:question$/, "")));
    head.appendChild(h("span", {class: "badge service"}, side.kind || "run"));
    head.appendChild(h("span", {class: "run-status status-" + side.status}, side.status));
    if (side.durationMs !== null) head.appendChild(h("span", {class: "muted"}, side.durationMs + " ms"));
    if (side.started) head.appendChild(h("span", {class: "muted"}, side.started));
    box.appendChild(head);
    box.appendChild(h("p", {class: "compare-question"}, side.question));
    const answer = h("div", {class: "answer compare-answer" + (changed ? " changed" : "")}, side.answer || "(no answer)");
    box.appendChild(answer);
    const facts = h("dl", {class: "props"});
    const row = (k, v, cls) => { facts.appendChild(h("dt", null, k)); facts.appendChild(h("dd", cls ? {class: cls} : null, v)); };
    if (side.shortAnswer) row("short answer", side.shortAnswer, "short-answer");
    row("confidence", percentOrNone(side.confidence) + (side.abstained ? " (withheld)" : ""), "confidence-value");
    row("models", side.models.join(", ") || "-");
    box.appendChild(facts);
    const list = (title, items, cls) => {
      box.appendChild(h("h3", null, title + " (" + items.length + ")"));
      const ul = h("ul", {class: "compare-list " + cls});
      for (const it of items) {
        const sign = it.mark === "added" ? "+ " : it.mark === "removed" ? "− " : "";
        ul.appendChild(h("li", {class: "mark-" + it.mark, "data-mark": it.mark}, sign + (it.uri || it.text)));
      }
      box.appendChild(ul);
    };
    list("sources", side.sources, "sources");
    list("facts", side.facts, "facts");
  }

  function renderComparison(summary, boxA, boxB, sides) {
    compareSide(boxA, sides.a, "a", sides.answerChanged);
    compareSide(boxB, sides.b, "b", sides.answerChanged);
    summary.replaceChildren();
    const item = (k, v, cls) => {
      const span = h("span", {class: "meta-item" + (cls ? " " + cls : "")});
      span.appendChild(h("b", null, k + " "));
      span.appendChild(document.createTextNode(v));
      summary.appendChild(span);
    };
    item("answer", sides.answerChanged ? "changed" : "unchanged", sides.answerChanged ? "answer-changed" : "answer-same");
    const change = sides.confidenceChange;
    item("confidence", percentOrNone(sides.a.confidence) + " → " + percentOrNone(sides.b.confidence) +
      (change === null ? "" : " (" + (change > 0 ? "+" : "") + Math.round(change * 100) + " points)"));
    const c = sides.counts;
    item("sources", "+" + c.sourcesAdded + " −" + c.sourcesRemoved + " =" + c.sourcesKept);
    item("facts", "+" + c.factsAdded + " −" + c.factsRemoved + " =" + c.factsKept);
    if (sides.revises) item("b", "revises a (prov:wasRevisionOf)");
  }

  // ---- evaluation runs (glassbox eval; docs/evaluation.md, "Evaluation runs") -----------------
  // A share as `glassbox eval` prints it: one decimal, "–" when there is none.
  const share = (v) => (typeof v === "number" && Number.isFinite(v) ? (v * 100).toFixed(1) + " %" : "–");

  // The figures of a run's summary, in the order `glassbox eval` prints them: [key, label, text,
  // value]; each row carries its figure's key and raw value (data-figure, data-value).
  function evalFigures(summary) {
    const s = summary || {};
    const out = [["questions", "questions", fmtNum(s.questions), s.questions],
      ["errors", "errors", fmtNum(s.errors), s.errors], ["abstained", "abstained", fmtNum(s.abstained), s.abstained],
      ["hits1", "Hits@1", share(s.hits1), s.hits1], ["exact", "exact match", share(s.exact), s.exact],
      ["f1", "F1", share(s.f1), s.f1],
      ["ece", "calibration error (ECE)", typeof s.ece === "number" ? share(s.ece) : "not measured", s.ece]];
    for (const p of Array.isArray(s.accuracy_at_coverage) ? s.accuracy_at_coverage : []) {
      if (typeof p.coverage !== "number") continue;
      const pc = Math.round(p.coverage * 100);
      out.push(["accuracy_at_" + pc, "accuracy at " + pc + " % coverage", share(p.accuracy), p.accuracy]);
    }
    if (s.list_questions) {
      out.push(["list_questions", "list questions", fmtNum(s.list_questions), s.list_questions]);
      out.push(["complete", "list answers complete", share(s.complete), s.complete]);
    }
    return out;
  }

  function renderEvalFigures(tbody, summary) {
    const frag = document.createDocumentFragment();
    for (const [key, label, text, value] of evalFigures(summary)) {
      const tr = h("tr", {"data-figure": key, "data-value": value === null || value === undefined ? "" : String(value)});
      tr.appendChild(h("th", {scope: "row"}, label));
      tr.appendChild(h("td", null, text));
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
  }

  // One row per question, its trace a link that opens it (#trace=…).
  function renderEvalRows(tbody, rows) {
    const frag = document.createDocumentFragment();
    for (const r of rows) {
      const verdict = String(r.verdict || (r.error ? "error" : r.hit ? "hit" : "miss"));
      const tr = h("tr", {"data-id": String(r.id), "data-verdict": verdict});
      tr.appendChild(h("td", {class: "mono"}, clip(String(r.id), 40)));
      tr.appendChild(h("td", {class: "verdict-" + verdict.replace(/[^a-z]/g, "")}, verdict));
      tr.appendChild(h("td", null, typeof r.confidence === "number" ? percent(r.confidence) : ""));
      tr.appendChild(h("td", null, typeof r.f1 === "number" ? r.f1.toFixed(2) : ""));
      const q = h("td", {class: "q", title: r.question || ""}, clip(r.question || "", 200));
      if (r.error) q.appendChild(h("div", {class: "error"}, clip(String(r.error), 300)));
      tr.appendChild(q);
      const cell = h("td");
      if (typeof r.trace === "string" && r.trace) {
        cell.appendChild(h("a", {href: "#trace=" + encodeURIComponent(r.trace), class: "mono trace-link", title: r.trace},
          r.trace.replace(/^urn:glassbox:/, "").replace(/:question$/, "").slice(0, 8)));
      } else {
        cell.appendChild(h("span", {class: "muted"}, "no trace"));
      }
      tr.appendChild(cell);
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
  }

  GB.views = {h, clip, fmtScore, tierText, StepTree, renderAnswer, normaliseCitation, citationCard, renderChunks,
    confidenceBadge, affectedBanner, renderComparison, evalFigures, renderEvalFigures, renderEvalRows, share};
})(window.GB = window.GB || {});
