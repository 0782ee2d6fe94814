// The explored subgraph as SVG: a small force-directed layout (repulsion between every pair,
// springs along edges, a pull to the centre, cooling), run a fixed number of rounds before
// anything is drawn, so the drawing costs one DOM insertion.
"use strict";
(function (GB) {
  const SVG = "http://www.w3.org/2000/svg";
  const MAX_EDGES = 150;  // beyond this a drawing is unreadable
  // The layout costs n²/2 pair updates a round: rounds are cut to stay within this many, so a
  // large graph gets a rougher layout instead of a slow page (110 nodes: ~50 rounds).
  const PAIR_BUDGET = 300000;
  const MAX_ROUNDS = 160, MIN_ROUNDS = 40;
  // Above this many edges their labels overlap into noise (and cost layout): the predicate and
  // score stay in each edge's tooltip.
  const LABELLED_EDGES = 80;
  // Above this many nodes only the seeds and the ends of the best kept edges are named (the
  // rest in their tooltips): a hundred overlapping names read as noise and cost layout.
  const LABELLED_NODES = 60, NAMED_EDGES = 25;

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function layout(nodes, edges, width, height) {
    const n = nodes.length;
    const k = Math.sqrt((width * height) / Math.max(n, 1)) * 0.75;
    const x = new Float64Array(n), y = new Float64Array(n), dx = new Float64Array(n), dy = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      // Deterministic start: a spiral, seeds in the middle.
      const a = i * 2.399963, r = k * 0.5 * Math.sqrt(i + 1);
      x[i] = width / 2 + r * Math.cos(a);
      y[i] = height / 2 + r * Math.sin(a);
    }
    const rounds = Math.max(MIN_ROUNDS, Math.min(MAX_ROUNDS, Math.floor(PAIR_BUDGET / Math.max(1, (n * n) / 2))));
    let t = width / 8;
    const cooling = Math.pow(1 / t, 1 / rounds);  // from width/8 down to 1 over the rounds
    for (let round = 0; round < rounds; round++) {
      dx.fill(0); dy.fill(0);
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          let ex = x[i] - x[j], ey = y[i] - y[j];
          let d2 = ex * ex + ey * ey;
          if (d2 < 0.01) { ex = 0.1 * (i - j); ey = 0.1; d2 = ex * ex + ey * ey; }
          const f = (k * k) / d2;
          dx[i] += ex * f; dy[i] += ey * f; dx[j] -= ex * f; dy[j] -= ey * f;
        }
      }
      for (const e of edges) {
        const ex = x[e.a] - x[e.b], ey = y[e.a] - y[e.b];
        const d = Math.sqrt(ex * ex + ey * ey) || 0.01;
        const f = d / k;
        dx[e.a] -= ex * f; dy[e.a] -= ey * f; dx[e.b] += ex * f; dy[e.b] += ey * f;
      }
      for (let i = 0; i < n; i++) {
        dx[i] += (width / 2 - x[i]) * 0.02; dy[i] += (height / 2 - y[i]) * 0.02;
        const d = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
        const step = Math.min(d, t);
        x[i] += (dx[i] / d) * step; y[i] += (dy[i] / d) * step;
      }
      t = Math.max(t * cooling, 1);
    }
    return {x, y};
  }

  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

  // edges: [{s, p, o (terms or strings), kept, score, reasoning, selection; explored (its
  // gb:ExploredEdge URI), hop}]; seeds: [IRI].
  // onSelect(edge) when a kept edge is clicked. Returns {svg, shown, total}.
  function draw(container, edgesIn, seeds, onSelect) {
    const kept = edgesIn.filter((e) => e.kept);
    const explored = edgesIn.filter((e) => !e.kept);
    const chosen = kept.slice(0, MAX_EDGES).concat(explored.slice(0, Math.max(0, MAX_EDGES - kept.length)));
    const index = new Map(), nodes = [];
    const node = (term) => {
      const key = GB.isIri(term) || typeof term === "string" ? GB.termValue(term) : "lit:" + GB.termText(term);
      let i = index.get(key);
      if (i === undefined) {
        i = nodes.length;
        index.set(key, i);
        nodes.push({key, label: typeof term === "string" ? GB.shortName(term) : GB.termText(term),
          literal: !(GB.isIri(term) || typeof term === "string"), seed: false, kept: false});
      }
      return i;
    };
    for (const s of seeds) node(s);
    const edges = chosen.map((e) => ({a: node(e.s), b: node(e.o), e}));
    for (const s of seeds) nodes[index.get(s)].seed = true;
    for (const x of edges) if (x.e.kept) { nodes[x.a].kept = true; nodes[x.b].kept = true; }
    const named = nodes.length <= LABELLED_NODES ? null : new Set();
    if (named) {
      edges.filter((x) => x.e.kept).slice(0, NAMED_EDGES).forEach((x) => { named.add(x.a); named.add(x.b); });
      nodes.forEach((n, i) => { if (n.seed) named.add(i); });
    }

    const width = Math.max(360, Math.min(1400, 95 * Math.sqrt(nodes.length + 1))), height = width * 0.62;
    const pos = layout(nodes, edges, width, height);
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (let i = 0; i < nodes.length; i++) {
      minX = Math.min(minX, pos.x[i]); maxX = Math.max(maxX, pos.x[i]);
      minY = Math.min(minY, pos.y[i]); maxY = Math.max(maxY, pos.y[i]);
    }
    if (!nodes.length) { minX = minY = 0; maxX = width; maxY = height; }
    const pad = 80;
    const view = [minX - pad, minY - pad, maxX - minX + 2 * pad, maxY - minY + 2 * pad];
    const svg = el("svg", {class: "graph", viewBox: view.join(" "), role: "img",
      "aria-label": "explored subgraph: " + nodes.length + " nodes, " + edges.length + " edges"});
    el("defs", {}, svg).innerHTML =  // a constant marker, no untrusted text
      '<marker id="arrow" viewBox="0 0 10 10" refX="18" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker>';
    const gEdges = el("g", {class: "edges"}, svg);
    const gNodes = el("g", {class: "nodes"}, svg);
    // Explored edges first so kept ones are drawn on top.
    edges.sort((p, q) => (p.e.kept === q.e.kept ? 0 : p.e.kept ? 1 : -1));
    for (const x of edges) {
      const e = x.e;
      const g = el("g", {class: e.kept ? "edge kept" : "edge explored"}, gEdges);
      if (e.selection) g.setAttribute("data-selection", e.selection);
      if (e.explored) g.setAttribute("data-explored", e.explored);
      const w = e.kept ? 1.5 + 3 * Math.max(0, Math.min(1, e.score || 0)) : 1;
      el("line", {x1: pos.x[x.a], y1: pos.y[x.a], x2: pos.x[x.b], y2: pos.y[x.b], "stroke-width": w,
        "marker-end": "url(#arrow)"}, g);
      if (edges.length <= LABELLED_EDGES) {
        const label = el("text", {x: (pos.x[x.a] + pos.x[x.b]) / 2, y: (pos.y[x.a] + pos.y[x.b]) / 2 - 3,
          class: "edge-label"}, g);
        label.textContent = clip(GB.termText(e.p), 28) + (e.kept && e.score !== null && e.score !== undefined ?
          " " + e.score.toFixed(2) : "");
      }
      const title = el("title", {}, g);
      title.textContent = GB.termText(e.s) + " " + GB.termText(e.p) + " " + GB.termText(e.o) +
        (e.kept ? "\nkept, score " + e.score + (e.reasoning ? "\n" + e.reasoning : "") :
          "\nexplored" + (e.hop ? " at hop " + e.hop : "") + ", not kept");
      if (e.kept && onSelect) {
        g.setAttribute("tabindex", "0");
        g.addEventListener("click", () => onSelect(e, g));
        g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") onSelect(e, g); });
      }
      e.element = g;
    }
    nodes.forEach((n, i) => {
      const g = el("g", {class: "node" + (n.seed ? " seed" : "") + (n.kept ? " kept" : "") +
        (n.literal ? " literal" : "")}, gNodes);
      el("circle", {cx: pos.x[i], cy: pos.y[i], r: n.seed ? 9 : 6}, g);
      if (!named || named.has(i)) el("text", {x: pos.x[i] + 10, y: pos.y[i] + 4}, g).textContent = clip(n.label, 32);
      el("title", {}, g).textContent = n.key;
    });
    enablePanZoom(svg, view);
    container.replaceChildren(svg);
    return {svg, shown: edges.length, total: edgesIn.length, nodes: nodes.length};
  }

  // Wheel zooms around the pointer, dragging pans: both only move the viewBox.
  function enablePanZoom(svg, view) {
    let v = view.slice(), drag = null;
    const apply = () => svg.setAttribute("viewBox", v.join(" "));
    svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = svg.getBoundingClientRect();
      const fx = (ev.clientX - r.left) / r.width, fy = (ev.clientY - r.top) / r.height;
      const f = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      const w = v[2] * f, h = v[3] * f;
      v = [v[0] + (v[2] - w) * fx, v[1] + (v[3] - h) * fy, w, h];
      apply();
    }, {passive: false});
    svg.addEventListener("pointerdown", (ev) => { drag = {x: ev.clientX, y: ev.clientY, v: v.slice()}; });
    svg.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      v[0] = drag.v[0] - (ev.clientX - drag.x) * (v[2] / r.width);
      v[1] = drag.v[1] - (ev.clientY - drag.y) * (v[3] / r.height);
      apply();
    });
    const end = () => { drag = null; };
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointerleave", end);
    svg.addEventListener("dblclick", () => { v = view.slice(); apply(); });
  }

  GB.graph = {draw, MAX_EDGES};
})(window.GB = window.GB || {});
