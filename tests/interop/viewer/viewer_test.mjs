// Drives the trace viewer (gateway/web/) in headless Chromium against a running gateway:
// asks a question and watches its steps arrive before the answer, opens a citation's source,
// opens the stored trace from the list, checks the answer's confidence badge against the trace
// and opens the evidence features behind it, checks the RDF download, opens a running question from
// the list and follows its live tail to the end, stops a question with Stop, and opens a
// 10,000-triple trace, bounding its render time, and opens an evaluation run `glassbox eval`
// recorded from the keyboard: both SVG charts render and its figures are the API's.
// run_viewer_test.py starts the pipeline (with a model that takes its time) and calls this.
//
// node viewer_test.mjs --url http://127.0.0.1:PORT --chromium /usr/bin/chromium --shots DIR
//      --question "…" [--agent-question "…"] [--synthetic-question "…" --synthetic-triples N]
//      [--steps-question "…" --steps-triples N] [--tail-question "…"] [--stop-question "…"]
//      [--changed-trace SESSION --replayed-trace SESSION] [--eval-run NAME] [--max-render-ms 300]
// Prints one line per check and "N passed, N failed"; exit 0 when every check passes.
import {mkdirSync} from "node:fs";
import {join} from "node:path";
import puppeteer from "puppeteer-core";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const maxRenderMs = Number(args["max-render-ms"] || 300);
mkdirSync(args.shots, {recursive: true});

let passed = 0, failed = 0;
function check(ok, what, detail) {
  if (ok) passed++; else failed++;
  console.log((ok ? "ok   " : "FAIL ") + what + (detail !== undefined ? ": " + detail : ""));
  return ok;
}

const browser = await puppeteer.launch({
  executablePath: args.chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
const errors = [];
try {
  const page = await browser.newPage();
  await page.setViewport({width: 1500, height: 1000});
  page.on("pageerror", (e) => errors.push("pageerror: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
  page.setDefaultTimeout(60000);

  // ---- the page loads and lists the stored traces ----
  await page.goto(args.url + "/", {waitUntil: "load"});
  await page.waitForFunction(() => window.GB && window.GB.viewer && window.GB.viewer.ready);
  await page.waitForFunction(() => document.querySelectorAll("#trace-list tbody tr[data-session]").length > 0);
  check(true, "the page loads and lists stored traces");

  // ---- ask: the steps arrive live, then the answer ----
  await page.evaluate(() => {
    // Records when the first step row and the finished answer appear.
    window.__seen = {firstStep: 0, answer: 0, steps: []};
    new MutationObserver(() => {
      const now = performance.now();
      const rows = document.querySelectorAll("#steps details.step");
      if (rows.length && !window.__seen.firstStep) window.__seen.firstStep = now;
      if (rows.length !== window.__seen.steps.length) window.__seen.steps.push(now);
      if (document.querySelector("#answer .cite, #answer .claim") && !window.__seen.answer) window.__seen.answer = now;
    }).observe(document.body, {childList: true, subtree: true});
  });
  await page.type("#question", args.question);
  await page.click("#ask-button");
  await page.waitForFunction(() => [...document.querySelectorAll("#events .badge")].some((b) => b.textContent === "done"),
    {timeout: 120000});
  const live = await page.evaluate(() => ({
    seen: window.__seen,
    before: window.GB.viewer.stepsBeforeAnswer,
    types: [...document.querySelectorAll("#steps details.step")].map((d) => d.querySelector(".badge.type").textContent),
    nested: document.querySelectorAll("#steps .run .run").length,
    costs: document.querySelectorAll("#steps .cost .ms").length,
    tokens: document.querySelectorAll("#steps .cost .tok").length,
    answer: document.getElementById("answer").textContent,
    cites: document.querySelectorAll("#answer button.cite").length,
    error: document.getElementById("run-error").hidden ? "" : document.getElementById("run-error").textContent,
    events: [...document.querySelectorAll("#events .badge")].map((b) => b.textContent),
  }));
  check(!live.error, "the question ran without an error", live.error);
  check(live.types.length >= 4, "the live steps are shown", live.types.join(", "));
  check(live.types.includes("Question") && live.types.includes("RoutingDecision"), "the route step is shown");
  check(live.types.some((t) => t === "Synthesis" || t === "Conclusion"), "a synthesis or conclusion step is shown");
  check(live.nested >= 1, "the engine's sub-run is nested under its caller", live.nested);
  check(live.costs >= 3 && live.tokens >= 1, "steps carry durations and tokens", live.costs + " durations, " + live.tokens + " token counts");
  // Each step event adds its row when it is read, so the rows are there before answer.done is;
  // how many screen updates that took depends on how the browser cut the stream into reads.
  check(live.before >= 4 && live.before <= live.types.length, "steps were shown before the answer",
    live.before + " of " + live.types.length + " rows");
  check(live.seen.firstStep > 0 && live.seen.answer > 0 && live.seen.firstStep <= live.seen.answer,
    "the first step row came no later than the answer", JSON.stringify({firstStep: live.seen.firstStep, answer: live.seen.answer}));
  console.log("figure: the step list changed in " + live.seen.steps.length + " screen updates while the question ran");
  check(live.answer.trim().length > 10, "the answer is shown", JSON.stringify(live.answer.slice(0, 120)));
  check(live.cites >= 1, "the answer has citation markers", live.cites);
  check(live.events.includes("answer.done") && live.events[live.events.length - 1] === "done", "answer.done then done", live.events.join(" "));
  const liveGraph = await page.evaluate(() => ({explored: document.querySelectorAll("svg.graph .edge.explored").length,
    kept: document.querySelectorAll("svg.graph .edge.kept").length}));
  check(liveGraph.explored > 0 && liveGraph.kept > 0, "the live view draws the explored subgraph: explored edges grey, kept ones highlighted",
    liveGraph.kept + " kept, " + liveGraph.explored + " explored");
  const liveBadge = await page.evaluate(() => {
    const b = document.querySelector("#answer-confidence button.confidence");
    return b ? {text: b.textContent, value: b.dataset.confidence} : null;
  });
  check(liveBadge !== null && /\b\d{1,3} %/.test(liveBadge.text), "the live answer shows its confidence badge",
    liveBadge && liveBadge.text);
  await page.screenshot({path: join(args.shots, "1-live-answer.png"), fullPage: true});

  // ---- a citation opens its source ----
  if (live.cites) {
    await page.click("#answer button.cite");
    await page.waitForSelector("#popover:not([hidden])");
    const pop = await page.evaluate(() => {
      const p = document.getElementById("popover");
      const dts = [...p.querySelectorAll("dt")].map((d) => d.textContent);
      const dd = (name) => { const i = dts.indexOf(name); return i < 0 ? "" : p.querySelectorAll("dd")[i].textContent; };
      return {text: p.textContent, document: dd("document"), selection: dd("selection"),
        quote: (p.querySelector(".source-text") || {}).textContent || "", tier: (p.querySelector(".tier") || {}).textContent || "",
        lit: document.querySelectorAll("#answer .claim.lit").length};
    });
    check(pop.document.length > 0, "the citation shows its document", pop.document);
    check(/^urn:glassbox:.*:(focus:edge|exploration:chunk|focus:chunk):\d+$/.test(pop.selection), "the citation names its selection", pop.selection);
    check(pop.quote.length > 0, "the citation shows the supporting text", JSON.stringify(pop.quote.slice(0, 100)));
    check(/tier [1-4]/.test(pop.tier), "the citation shows its data tier", pop.tier);
    check(pop.lit >= 1, "the cited claim is highlighted", pop.lit);
    await page.screenshot({path: join(args.shots, "2-citation.png")});
    await page.keyboard.press("Escape");
  }
  const asked = await page.evaluate(() => window.GB.viewer.state.trace);
  check(/^urn:glassbox:[0-9a-f-]{36}:question$/.test(asked), "the stream named its trace", asked);

  // ---- the stored trace opens from the list ----
  await page.waitForFunction((s) => document.querySelector(`#trace-list tr[data-session="${s}"]`), {}, asked);
  const stored = await openFromList(page, asked);
  const shown = await page.evaluate(async (s) => {
    const show = await (await fetch("/api/v1/traces/" + encodeURIComponent(s))).json();
    let events = 0;
    const walk = (t) => { events += t.events.length; (t.subtraces || []).forEach(walk); };
    walk(show);
    return {events, rows: document.querySelectorAll("#steps details.step").length,
      answer: document.getElementById("answer").textContent, cites: document.querySelectorAll("#answer button.cite").length,
      nested: document.querySelectorAll("#steps .run .run").length};
  }, asked);
  check(stored.trace === asked, "the stored trace opens from the list", stored.trace);
  check(shown.rows === shown.events && shown.rows > 0, "every stored event is a step row", shown.rows + " rows, " + shown.events + " events");
  check(shown.nested >= 1, "the stored sub-run is nested", shown.nested);
  check(shown.answer.trim() === live.answer.trim(), "the stored answer is the streamed one");
  check(shown.cites === live.cites, "the stored answer has the same citations", shown.cites + " vs " + live.cites);
  const storedGraph = await page.evaluate(() => ({explored: document.querySelectorAll("svg.graph .edge.explored").length,
    kept: document.querySelectorAll("svg.graph .edge.kept").length}));
  check(storedGraph.explored === liveGraph.explored && storedGraph.kept === liveGraph.kept,
    "the stored trace draws the same explored subgraph as the live view", storedGraph.kept + " kept, " + storedGraph.explored + " explored");
  // A step opens to its triples.
  await page.click("#steps details.step summary");
  await page.waitForSelector("#steps details.step[open] table.triples");
  const triples = await page.evaluate(() => document.querySelectorAll("#steps details.step[open] table.triples tr").length);
  check(triples > 1, "an opened step lists its triples", triples);
  await page.screenshot({path: join(args.shots, "3-stored-trace.png"), fullPage: true});
  await confidenceBadge(page, asked, liveBadge);

  // ---- its RDF downloads ----
  const rdf = await page.evaluate(async () => {
    const out = {};
    for (const a of document.querySelectorAll("#downloads a.dl")) {
      if (a.textContent === "link") continue;
      const r = await fetch(a.getAttribute("href"));
      out[a.textContent] = {status: r.status, type: r.headers.get("content-type") || "", body: (await r.text()).slice(0, 4000)};
    }
    return out;
  });
  check(rdf.Turtle && rdf.Turtle.status === 200 && /turtle/.test(rdf.Turtle.type) && /^@prefix gb: /m.test(rdf.Turtle.body) &&
    /\bgb:Question\b/.test(rdf.Turtle.body), "the Turtle download holds the trace", rdf.Turtle && rdf.Turtle.status + " " + rdf.Turtle.type);
  check(rdf["N-Triples"] && rdf["N-Triples"].status === 200 && /n-triples/.test(rdf["N-Triples"].type) &&
    /^<urn:glassbox:[^>]*> <[^>]*> /m.test(rdf["N-Triples"].body),
    "the N-Triples download holds the trace", rdf["N-Triples"] && rdf["N-Triples"].status + " " + rdf["N-Triples"].type);

  // ---- the trace list filters ----
  await page.click("#trace-search", {clickCount: 3});
  await page.type("#trace-search", "no question reads like this zzqx");
  await page.waitForFunction(() => document.querySelectorAll("#trace-list tbody tr[data-session]").length === 0);
  check(true, "a search with no match empties the list");
  await page.click("#trace-search", {clickCount: 3});
  await page.keyboard.press("Backspace");

  // ---- an agent's iterations and tool calls arrive live ----
  if (args["agent-question"]) {
    await page.click("#question", {clickCount: 3});
    await page.keyboard.press("Backspace");
    await page.type("#question", args["agent-question"]);
    await page.select("#mode", "agent");
    await page.keyboard.down("Control");
    await page.keyboard.press("Enter");  // Ctrl+Enter asks
    await page.keyboard.up("Control");
    await page.waitForFunction(() => document.getElementById("run-title").textContent !== "" &&
      [...document.querySelectorAll("#events .badge")].some((b) => b.textContent === "done"), {timeout: 120000});
    const agent = await page.evaluate(() => ({
      types: [...document.querySelectorAll("#steps details.step")].map((d) => d.querySelector(".badge.type").textContent),
      events: [...document.querySelectorAll("#events .badge")].map((b) => b.textContent),
      answer: document.getElementById("answer").textContent,
    }));
    check(agent.types.some((t) => t.startsWith("Analysis")) && agent.types.includes("Observation"),
      "the agent's iterations are shown", agent.types.join(", "));
    check(agent.events.includes("tool.call") && agent.events.includes("tool.result"), "its tool calls are logged", agent.events.join(" "));
    check(agent.answer.trim().length > 0, "the agent's answer is shown", JSON.stringify(agent.answer.slice(0, 100)));
    await page.screenshot({path: join(args.shots, "5-agent.png"), fullPage: true});
  }

  // ---- a running trace opened from the list keeps growing through its live tail ----
  if (args["tail-question"]) await liveTail(page, args["tail-question"]);

  // ---- Stop cancels an asked question ----
  if (args["stop-question"]) await stopQuestion(page, args["stop-question"]);

  // ---- 10,000-triple traces render within the bound ----
  // A graph-RAG shape (a few steps, hundreds of edges and chunks) ...
  if (args["synthetic-question"]) {
    const big = await openBig(page, "the graph-RAG shaped trace", args["synthetic-question"], Number(args["synthetic-triples"] || 10000));
    const safe = await page.evaluate(() => ({
      injected: window.__injected === true,
      // The evaluation view's two chart images are the page's own (hidden here).
      img: [...document.querySelectorAll("#view img, #trace-list img")].filter((i) => !i.closest("#eval-view")).length,
      title: document.getElementById("run-title").textContent,
      edges: document.querySelectorAll("svg.graph .edge.kept").length,
      chunks: document.querySelectorAll("#chunks tbody tr").length,
    }));
    check(!safe.injected && safe.img === 0 && safe.title.includes("<img"), "markup in a trace is shown as text, never run", safe.title);
    check(safe.edges > 0, "the synthetic trace's kept edges are drawn", safe.edges + " (of " + big.triples + " triples)");
    check(safe.chunks > 0, "the synthetic trace's chunks are listed", safe.chunks);
    const badges = await page.evaluate(() => document.querySelectorAll("#answer-confidence button").length);
    check(badges === 0, "a trace whose answer states no confidence shows no confidence badge", badges);
    await page.screenshot({path: join(args.shots, "4-synthetic-10k.png"), fullPage: false});
  }
  // ... and an agent shape (about a thousand steps): the first rows within the bound, the rest after.
  if (args["steps-question"]) {
    const big = await openBig(page, "the thousand-step trace", args["steps-question"], Number(args["steps-triples"] || 10000));
    await page.waitForFunction(() => window.GB.viewer.lastRender.all_steps_ms !== null, {timeout: 30000});
    const rows = await page.evaluate(() => ({rows: document.querySelectorAll("#steps details.step").length,
      all: window.GB.viewer.lastRender.all_steps_ms, first: window.GB.viewer.lastRender.first_steps}));
    check(rows.rows === big.steps, "every step of the thousand-step trace gets its row", rows.rows + " rows, " + big.steps + " steps");
    console.log("figure: thousand-step trace: first " + rows.first + " rows in the render, all " + rows.rows + " in " + rows.all.toFixed(1) + " ms");
    await page.screenshot({path: join(args.shots, "6-synthetic-steps.png"), fullPage: false});
  }
  // ---- a knowledge change: the affected banner, and the replay beside its original ----
  if (args["changed-trace"]) await knowledgeChanges(page, args["changed-trace"], args["replayed-trace"]);
  // ---- an evaluation run: its figures, its two charts and its questions' traces ----
  if (args["eval-run"]) await evaluationRun(page, args["eval-run"]);
  check(errors.length === 0, "no script errors in the page", errors.join(" | "));
} catch (e) {
  check(false, "the browser session", e.stack || String(e));
} finally {
  await browser.close();
}
console.log(passed + " passed, " + failed + " failed");
process.exit(failed ? 1 : 0);

// Finds a trace by its question in the list and opens it until one render is within the bound,
// ten times at most: the bound holds for the fastest; the figures of all are printed (the
// machine's two cores are shared with other tests and builds; an open can lose the CPU to them).
async function openBig(page, what, search, minTriples) {
  await page.click("#trace-search", {clickCount: 3});
  await page.type("#trace-search", search);
  // The one row left must be the trace searched for (not what an earlier search left).
  await page.waitForFunction((q) => {
    const rows = document.querySelectorAll("#trace-list tbody tr[data-session]");
    return rows.length === 1 && rows[0].querySelector("td.q").title.includes(q);
  }, {}, search);
  const session = await page.evaluate(() => document.querySelector("#trace-list tbody tr[data-session]").dataset.session);
  const runs = [];
  for (let i = 0; i < 10 && !(runs.length && runs[runs.length - 1].ms <= maxRenderMs && i >= 3); i++) {
    if (i) await page.evaluate(() => { window.GB.viewer.lastRender = null; });
    runs.push(await openFromList(page, session));
  }
  const best = runs.reduce((a, b) => (b.ms < a.ms ? b : a));
  check(best.triples >= minTriples, what + ": its triples are all read", best.triples);
  check(best.ms <= maxRenderMs, what + " renders within " + maxRenderMs + " ms", best.ms.toFixed(1) + " ms for " +
    best.triples + " triples, " + best.steps + " steps");
  for (const r of runs) {
    console.log("figure: " + what + ": render_ms=" + r.ms.toFixed(1) + " triples=" + r.triples + " steps=" + r.steps + " phases=" +
      JSON.stringify(Object.fromEntries(Object.entries(r.phases).map(([k, v]) => [k, Number(v.toFixed(1))]))));
  }
  return best;
}

// Asks `question` outside the page (the REST API, as another client would), opens its trace from
// the list while it runs, and watches the live tail (GET /api/v1/traces/{id}/events) bring the
// steps that follow, sub-runs included, until the trace's end.
async function liveTail(page, question) {
  const asked = fetch(args.url + "/api/v1/query", {method: "POST", headers: {"Content-Type": "application/json", Accept: "application/json"},
    body: JSON.stringify({question})}).then(async (r) => ({status: r.status, body: await r.json()}));
  const session = await until(async () => {
    const list = await (await fetch(args.url + "/api/v1/traces?status=running&search=" + encodeURIComponent(question))).json();
    return (list.sessions || []).map((s) => s.session)[0];
  }, 30000, "the asked question's running trace is listed");
  await page.click("#trace-search", {clickCount: 3});
  await page.type("#trace-search", question);
  await page.waitForFunction((s) => document.querySelector(`#trace-list tr[data-session="${s}"]`), {timeout: 30000}, session);
  const opened = await openFromList(page, session);
  const atOpen = await page.evaluate(() => ({status: window.GB.viewer.state.model.root.status,
    rows: document.querySelectorAll("#steps details.step").length, tailing: window.GB.viewer.state.tail !== null}));
  check(atOpen.status === "running" && atOpen.tailing, "a running trace opens from the list and follows its live tail",
    atOpen.status + ", " + opened.steps + " steps at open");
  await page.screenshot({path: join(args.shots, "7-live-tail-running.png"), fullPage: true});
  await page.waitForFunction(() => [...document.querySelectorAll("#events .badge")].some((b) => b.textContent === "done"), {timeout: 120000});
  const answer = await asked;
  // The collector stores the trace after the broker's spool has it (the client's answer waits
  // for the spool, not for the store): read it back until its end is stored, 15 s at most.
  let stored;
  for (const until = Date.now() + 15000; ;) {
    stored = await (await fetch(args.url + "/api/v1/traces/" + encodeURIComponent(session))).json();
    if (stored.session.status !== "running" || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  let events = 0;
  const walk = (t) => { events += t.events.length; (t.subtraces || []).forEach(walk); };
  walk(stored);
  const end = await page.evaluate(() => ({rows: document.querySelectorAll("#steps details.step").length,
    nested: document.querySelectorAll("#steps .run .run").length,
    done: [...document.querySelectorAll("#events li.ev-done")].map((li) => li.textContent).join(" | "),
    meta: document.getElementById("run-meta").textContent, status: window.GB.viewer.state.model.root.status,
    answer: document.getElementById("answer").textContent, cites: document.querySelectorAll("#answer button.cite").length,
    explored: document.querySelectorAll("svg.graph .edge.explored").length, kept: document.querySelectorAll("svg.graph .edge.kept").length,
    types: [...document.querySelectorAll("#steps details.step")].map((d) => d.querySelector(".badge.type").textContent)}));
  check(answer.status === 200 && stored.session.status === "complete", "the question asked elsewhere completed",
    answer.status + ", trace " + stored.session.status);
  check(end.rows > atOpen.rows, "new steps arrived through the live tail", atOpen.rows + " rows at open, " + end.rows + " at the end");
  check(end.rows === events, "every step of the trace and its sub-runs is a row at the end", end.rows + " rows, " + events + " stored events");
  check(end.nested >= 1, "the sub-run that arrived live is nested under its caller", end.nested);
  check(end.types.includes("Conclusion"), "the trace's last step came through the tail", end.types.join(", "));
  check(/complete/.test(end.done) && /ended complete/.test(end.meta) && end.status === "complete",
    "the tail ends with the trace's end status", end.done + " / " + end.meta);
  check(end.answer.replace(/\[\d+\]/g, "").trim() === answer.body.answer.trim() && end.cites >= 1, "the tailed trace's answer and citations are shown at its end",
    JSON.stringify(end.answer.slice(0, 100)) + ", " + end.cites + " citations");
  check(end.explored > 0 && end.kept > 0, "its explored subgraph is drawn: explored edges grey, kept ones highlighted",
    end.kept + " kept, " + end.explored + " explored");
  await page.screenshot({path: join(args.shots, "8-live-tail-done.png"), fullPage: true});
  await page.click("#trace-search", {clickCount: 3});
  await page.keyboard.press("Backspace");
}

// Asks `question` in the page, presses Stop once its first steps are shown, and checks that the
// page says it stopped and that its trace ends with an error (Cancelled), not complete.
async function stopQuestion(page, question) {
  await page.click("#question", {clickCount: 3});
  await page.keyboard.press("Backspace");
  await page.type("#question", question);
  await page.select("#mode", "auto");
  await page.click("#ask-button");
  await page.waitForFunction(() => document.querySelectorAll("#steps details.step").length >= 1 && window.GB.viewer.state.trace &&
    !document.getElementById("stop-button").disabled, {timeout: 60000});
  await page.click("#stop-button");
  await page.waitForFunction(() => document.getElementById("status").textContent === "stopped", {timeout: 10000});
  const page1 = await page.evaluate(() => ({trace: window.GB.viewer.state.trace,
    events: [...document.querySelectorAll("#events .badge")].map((b) => b.textContent),
    meta: document.getElementById("run-meta").textContent, answer: document.getElementById("answer").textContent,
    ask: document.getElementById("ask-button").disabled, stop: document.getElementById("stop-button").disabled}));
  check(page1.events.includes("stopped") && !page1.events.includes("answer.done") && !page1.events.includes("done"),
    "the page shows the question stopped before its answer", page1.events.join(" "));
  check(/ended stopped/.test(page1.meta) && !/running/.test(page1.meta) && /Stopped/.test(page1.answer),
    "the run's header and answer say it stopped (not running)", page1.meta);
  check(!page1.ask && page1.stop, "Ask is enabled again and Stop disabled");
  const stored = await until(async () => {
    const r = await fetch(args.url + "/api/v1/traces/" + encodeURIComponent(page1.trace));
    if (r.status !== 200) return null;
    const t = await r.json();
    return t.session.status === "running" ? null : t;
  }, 30000, "the stopped trace ends");
  check(stored.session.status === "error", "the stopped question's trace ends with status error, not complete", stored.session.status);
  check(JSON.stringify(stored).includes("Cancelled"), "the trace says it was cancelled");
  // The list shows that end (the page reads the list again after a stop).
  await page.click("#trace-refresh");
  await page.waitForFunction((s) => { const tr = document.querySelector(`#trace-list tr[data-session="${s}"] td.dot`);
    return tr && tr.classList.contains("status-error"); }, {timeout: 20000}, page1.trace);
  check(true, "the trace list shows the stopped trace as an error");
  await page.screenshot({path: join(args.shots, "9-stopped.png"), fullPage: true});
}

// The stored trace's confidence badge says what the trace's concluding step states
// (gb:answerConfidence, read here from the API's JSON, not through the page's model) and what the
// live answer said; clicked, it lists every gb:EvidenceFeature by name, the strongest effect
// first, with the calibrator; Enter (the keyboard) closes it again.
async function confidenceBadge(page, session, liveBadge) {
  const trace = await page.evaluate(async (s) => {
    const show = await (await fetch("/api/v1/traces/" + encodeURIComponent(s))).json();
    const G = "https://glassbox.dev/ns#";
    const value = (t) => (t.i !== undefined ? t.i : t.v);
    const props = new Map();
    for (const ev of show.events) {
      for (const t of ev.triples) {
        const key = value(t.s) + " " + value(t.p);
        if (!props.has(key)) props.set(key, []);
        props.get(key).push(value(t.o));
      }
    }
    const one = (s, p) => (props.get(s + " " + G + p) || [])[0];
    const stating = [...new Set(show.events.flatMap((ev) => ev.triples).filter((t) => value(t.p) === G + "answerConfidence")
      .map((t) => value(t.s)))];
    if (stating.length !== 1) return {stating};
    const step = stating[0];
    const features = (props.get(step + " " + G + "evidenceFeature") || []).map((f) => ({name: one(f, "featureName"),
      effect: one(f, "featureEffect") === undefined ? null : Number(one(f, "featureEffect"))}));
    return {stating, step, value: Number(one(step, "answerConfidence")), calibrator: one(step, "calibrator") || "",
      abstained: one(step, "abstained") === "true", features};
  }, session);
  if (!check(trace.stating.length === 1, "the trace's run states one gb:answerConfidence", trace.stating.join(", "))) return;
  const badge = await page.evaluate(() => {
    const b = document.querySelector("#answer-confidence button.confidence");
    return b ? {text: b.textContent, value: b.dataset.confidence, expanded: b.getAttribute("aria-expanded"),
      controls: b.getAttribute("aria-controls"), panelHidden: document.getElementById("confidence-evidence").hidden} : null;
  });
  if (!check(badge !== null, "the stored trace shows a confidence badge")) return;
  const pct = Math.round(trace.value * 100);
  const words = trace.value >= 0.9 ? "very likely" : trace.value >= 0.7 ? "likely" : trace.value >= 0.4 ? "uncertain" : "unlikely";
  const shown = /(\d{1,3}) %/.exec(badge.text);
  check(shown && Number(shown[1]) === pct && Number(badge.value) === trace.value,
    "the badge's percentage is the trace's gb:answerConfidence", badge.text + " vs " + trace.value);
  const expected = (trace.abstained ? "withheld · " : "") + words + " · " + pct + " %";
  check(badge.text.includes(": " + expected), "the badge says the confidence in words and per cent (withheld only when abstained)",
    JSON.stringify(badge.text) + ", expected " + JSON.stringify(expected));
  check(liveBadge && liveBadge.value === badge.value, "the live answer's badge (answer.done) said the same",
    (liveBadge && liveBadge.text) + " / " + badge.text);
  check(badge.expanded === "false" && badge.panelHidden && badge.controls === "confidence-evidence",
    "the badge starts closed: aria-expanded false, its evidence hidden");
  await page.click("#answer-confidence button.confidence");
  await page.waitForSelector("#confidence-evidence:not([hidden]) tr.feature", {visible: true, timeout: 5000});
  const open = await page.evaluate(() => ({
    expanded: document.querySelector("#answer-confidence button.confidence").getAttribute("aria-expanded"),
    rows: [...document.querySelectorAll("#confidence-evidence tr.feature")].map((tr) => ({name: tr.dataset.feature,
      effect: tr.dataset.effect === "" ? null : Number(tr.dataset.effect), text: tr.querySelector("td.effect").textContent})),
    calibrator: (document.querySelector("#confidence-evidence .calibrator") || {}).textContent || "",
  }));
  check(open.expanded === "true", "clicked, the badge is expanded (aria-expanded true)");
  const names = (list) => list.map((f) => f.name).sort().join(", ");
  check(trace.features.length > 0 && names(open.rows) === names(trace.features),
    "the evidence lists the trace's gb:EvidenceFeatures by name", open.rows.length + " rows: " + names(open.rows));
  const weights = open.rows.map((r) => (r.effect === null ? -1 : Math.abs(r.effect)));
  check(weights.every((w, i) => i === 0 || weights[i - 1] >= w) && trace.features.every((f) =>
    open.rows.some((r) => r.name === f.name && r.effect === f.effect)), "the features are sorted by |effect|, each with its effect",
  open.rows.map((r) => r.name + "=" + r.effect).join(", "));
  check(open.rows.every((r) => (r.effect > 0 ? /raised/.test(r.text) : r.effect < 0 ? /lowered/.test(r.text) : !/raised|lowered/.test(r.text))),
    "each feature says in words whether it raised or lowered the confidence", open.rows.map((r) => r.text).join(" | "));
  check(trace.calibrator !== "" && open.calibrator.includes(trace.calibrator), "the evidence names the calibrator", open.calibrator);
  await page.screenshot({path: join(args.shots, "3b-confidence.png"), fullPage: false});
  await page.focus("#answer-confidence button.confidence");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#confidence-evidence", {hidden: true, timeout: 5000});
  const closed = await page.evaluate(() => document.querySelector("#answer-confidence button.confidence").getAttribute("aria-expanded"));
  check(closed === "false", "Enter on the focused badge closes the evidence again", closed);
}

// Issue 36. `changed`: a run whose fact a `load rdf --replace` changed, so its detail lists the
// change (`affected`); `replayed`: its replay (`glassbox traces replay`), a revision of it. The
// banner says what changed, as the API's detail does; the replay links to its original, and the
// two open side by side (from that link and from two ticked rows of the list), the answers, the
// confidence and the sources and facts only one side has marked.
async function knowledgeChanges(page, changed, replayed) {
  const detail = await page.evaluate(async (s) => (await fetch("/api/v1/traces/" + encodeURIComponent(s))).json(), changed);
  await page.evaluate((s) => { location.hash = "#trace=" + encodeURIComponent(s); }, changed);
  await page.waitForFunction((s) => window.GB.viewer.lastRender && window.GB.viewer.lastRender.trace === s, {timeout: 30000}, changed);
  const banner = await page.evaluate(() => {
    const b = document.getElementById("affected");
    return {hidden: getComputedStyle(b).display === "none", text: b.textContent, top: b.getBoundingClientRect().top,
      headerTop: document.getElementById("run-header").getBoundingClientRect().top,
      changes: [...b.querySelectorAll("li.change")].map((li) => ({change: li.dataset.change, kind: li.dataset.kind,
        facts: [...li.querySelectorAll("li.fact")].map((f) => f.textContent)}))};
  });
  const affected = Array.isArray(detail.affected) ? detail.affected : [];
  check(affected.length > 0, "the changed run's detail lists the change it rested on (affected: H1's --replace, H2's marking)",
    JSON.stringify(affected).slice(0, 300));
  check(!banner.hidden && /This answer rested on knowledge that changed/.test(banner.text) && banner.top < banner.headerTop,
    "the affected banner shows at the top of the trace", banner.text.slice(0, 200));
  check(affected.length === banner.changes.length && affected.every((a, i) => banner.changes[i].change === a.change &&
    banner.changes[i].kind === a.kind && banner.text.includes(a.at)), "the banner names each change, its kind and time",
  JSON.stringify(banner.changes));
  check(banner.changes.some((c) => c.facts.some((f) => /foundedBy/.test(f) && /Oskar/.test(f))),
    "the banner shows the fact that changed", JSON.stringify(banner.changes.map((c) => c.facts)));
  await page.screenshot({path: join(args.shots, "10-affected-banner.png"), fullPage: false});

  // The replay links back to its original, and the link opens the two side by side.
  await page.evaluate((s) => { location.hash = "#trace=" + encodeURIComponent(s); }, replayed);
  await page.waitForFunction((s) => window.GB.viewer.lastRender && window.GB.viewer.lastRender.trace === s, {timeout: 30000}, replayed);
  const link = await page.evaluate(() => {
    const a = document.querySelector("#downloads a.compare-original");
    return a ? a.getAttribute("href") : "";
  });
  check(link === "#/compare/" + encodeURIComponent(changed) + "/" + encodeURIComponent(replayed),
    "a replayed trace offers \"compare with the original\"", link);
  const notAffected = await page.evaluate(() => getComputedStyle(document.getElementById("affected")).display === "none");
  check(notAffected, "the replay, asked after the change, shows no banner");
  if (link) {
    await page.click("#downloads a.compare-original");
    await sideBySide(page, changed, replayed, "from the replay's link");
    await page.screenshot({path: join(args.shots, "11-side-by-side.png"), fullPage: true});
  }

  // Two rows ticked in the list open the same view.
  await page.evaluate((s) => { location.hash = "#trace=" + encodeURIComponent(s); }, changed);
  await page.waitForFunction((s) => window.GB.viewer.lastRender && window.GB.viewer.lastRender.trace === s, {timeout: 30000}, changed);
  await page.click("#trace-search", {clickCount: 3});
  await page.keyboard.press("Backspace");
  await page.click("#trace-refresh");
  // The list is read again (the search's debounce) while this runs: each box is found and clicked
  // in one step in the page, and a list read again keeps what was ticked.
  for (const s of [changed, replayed]) {
    await page.waitForFunction((x) => {
      const box = document.querySelector(`#trace-list tr[data-session="${x}"] input.tick`);
      if (!box) return false;
      if (!box.checked) box.click();
      return box.checked;
    }, {timeout: 30000}, s);
  }
  await page.waitForFunction((x, y) => {
    const ticked = window.GB.viewer.state.ticked;
    return ticked.length === 2 && ticked.includes(x) && ticked.includes(y);
  }, {timeout: 10000}, changed, replayed);
  const stayed = await page.evaluate(() => window.GB.viewer.state.trace);
  check(stayed === changed, "ticking a row does not open it", stayed);
  const enabled = await page.evaluate(() => !document.getElementById("trace-compare").disabled);
  check(enabled, "two ticked rows enable compare");
  await page.evaluate(() => { window.GB.viewer.lastCompare = null; });
  await page.click("#trace-compare");
  await sideBySide(page, changed, replayed, "from two ticked rows");
}

// The side-by-side view of runs a and b as the compare endpoint says them.
async function sideBySide(page, a, b, how) {
  await page.waitForFunction(() => window.GB.viewer.lastCompare, {timeout: 30000});
  const api = await page.evaluate(async (x, y) => (await fetch("/api/v1/traces/compare?a=" + encodeURIComponent(x) +
    "&b=" + encodeURIComponent(y))).json(), a, b);
  const view = await page.evaluate(() => {
    const side = (id) => {
      const box = document.getElementById(id);
      return {answer: (box.querySelector(".compare-answer") || {}).textContent || "",
        confidence: (box.querySelector(".confidence-value") || {}).textContent || "",
        session: (box.querySelector(".compare-run a") || {}).title || "",
        marks: [...box.querySelectorAll("ul.compare-list li")].map((li) => li.dataset.mark + " " + li.textContent)};
    };
    const shown = (id) => getComputedStyle(document.getElementById(id)).display !== "none";
    return {shown: shown("compare-view"), traceHidden: !shown("trace-columns") && !shown("run-header"),
      last: window.GB.viewer.lastCompare, summary: document.getElementById("compare-summary").textContent,
      a: side("compare-a"), b: side("compare-b")};
  });
  check(view.shown && view.traceHidden && !view.last.error && view.last.a === a && view.last.b === b,
    "the two runs open side by side " + how, JSON.stringify(view.last));
  check(view.a.session === a && view.b.session === b, "each side names its run", view.a.session + " | " + view.b.session);
  check(view.a.answer === api.a.answer && view.b.answer === api.b.answer && view.a.answer !== view.b.answer,
    "both answers are shown, and they differ", JSON.stringify([view.a.answer.slice(0, 80), view.b.answer.slice(0, 80)]));
  check(/answer changed/.test(view.summary) && api.answer_changed === true, "the view says the answer changed", view.summary);
  const pct = (p) => (typeof p === "number" ? Math.round(p * 100) + " %" : "none");
  check(view.a.confidence.startsWith(pct(api.a.confidence)) && view.b.confidence.startsWith(pct(api.b.confidence)),
    "each side shows its confidence", view.a.confidence + " → " + view.b.confidence);
  check(view.a.marks.some((m) => /^removed − .*foundedBy.*Oskar/.test(m)) && view.b.marks.some((m) => /^added \+ .*foundedBy.*Elin/.test(m)),
    "the fact only the original used is marked removed, the one only the replay used added",
    JSON.stringify([view.a.marks, view.b.marks]));
  check(api.sources_kept >= 1 && view.b.marks.filter((m) => m.startsWith("kept ")).length >= api.sources_kept,
    "the sources both used are marked kept", JSON.stringify(view.b.marks));
}

// Polls `probe` until it returns something truthy, `ms` at most; throws naming `what` after that.
async function until(probe, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(what + ": not within " + ms + " ms");
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Clicks the list row of a session and waits until the viewer has rendered it.
async function openFromList(page, session) {
  await page.click(`#trace-list tr[data-session="${session}"] td.q`);
  await page.waitForFunction((s) => window.GB.viewer.lastRender && window.GB.viewer.lastRender.trace === s, {timeout: 60000}, session);
  return page.evaluate(() => window.GB.viewer.lastRender);
}

// Opens the evaluation run `name` from the Evaluations list with the keyboard (Tab to its row,
// Enter), and checks what the page shows against GET /api/v1/evals/{name}: every figure as
// `glassbox eval` prints it, both charts decoded as SVG images, one row per question, and a
// question's trace link that opens its trace.
async function evaluationRun(page, name) {
  await page.evaluate(() => window.GB.viewer.refreshEvals());
  const row = `#eval-list tr[data-eval="${name}"]`;
  await page.waitForSelector(row);
  await page.focus(row);
  await page.keyboard.press("Enter");
  await page.waitForFunction((n) => {
    const e = window.GB.viewer.lastEval;
    return e && (e.error || (e.name === n && e.charts.reliability && e.charts.risk_coverage));
  }, {timeout: 30000}, name).catch(() => {});
  const shown = await page.evaluate(() => ({
    last: window.GB.viewer.lastEval, hash: location.hash, visible: !document.getElementById("eval-view").hidden,
    traceHidden: document.getElementById("trace-columns").hidden,
    figures: [...document.querySelectorAll("#eval-figures tr[data-figure]")].map((tr) =>
      ({key: tr.dataset.figure, text: tr.cells[1].textContent})),
    charts: ["eval-reliability", "eval-risk"].map((id) => {
      const img = document.getElementById(id);
      return {w: img.naturalWidth, h: img.naturalHeight, src: img.src.slice(0, 5), alt: img.alt};
    }),
    rows: [...document.querySelectorAll("#eval-rows tbody tr")].map((tr) =>
      ({id: tr.dataset.id, verdict: tr.dataset.verdict, link: (tr.querySelector("a.trace-link") || {}).href || ""})),
    listed: document.querySelector(`#eval-list tr.current`) ? document.querySelector(`#eval-list tr.current`).dataset.eval : "",
  }));
  check(shown.last && !shown.last.error, "the evaluation run opens from the list with Enter", JSON.stringify(shown.last));
  check(shown.visible && shown.traceHidden && shown.hash === "#eval=" + encodeURIComponent(name),
    "the evaluation view replaces the trace view and is linkable", shown.hash);
  check(shown.listed === name, "the open run is marked in the list", shown.listed);
  const api = await page.evaluate(async (n) => {
    const r = await fetch("/api/v1/evals/" + encodeURIComponent(n), {headers: {Accept: "application/json"}});
    return r.json();
  }, name);
  const s = api.run.summary;
  const pc = (v) => (v * 100).toFixed(1) + " %";
  const expected = {questions: String(s.questions), errors: String(s.errors), abstained: String(s.abstained),
    hits1: pc(s.hits1), exact: pc(s.exact), f1: pc(s.f1), ece: s.ece === null ? "not measured" : pc(s.ece)};
  for (const p of s.accuracy_at_coverage) expected["accuracy_at_" + Math.round(p.coverage * 100)] = pc(p.accuracy);
  const got = Object.fromEntries(shown.figures.map((f) => [f.key, f.text]));
  const wrong = Object.keys(expected).filter((k) => got[k] !== expected[k]);
  check(wrong.length === 0 && Object.keys(expected).length >= 7, "the run's figures are the API's, as glassbox eval prints them",
    wrong.map((k) => k + ": " + got[k] + " != " + expected[k]).join("; ") || Object.keys(expected).length + " figures");
  check(s.accuracy_at_coverage.length === 0 || ["accuracy_at_100", "accuracy_at_80", "accuracy_at_50"].every((k) => k in got),
    "accuracy at 100, 80 and 50 % coverage is shown", Object.keys(got).join(", "));
  for (const [i, chart] of ["reliability diagram", "risk-coverage curve"].entries()) {
    const c = shown.charts[i];
    check(c.w === 400 && c.h === 400 && c.src === "blob:" && c.alt.length > 0, "the " + chart + " renders inline as an SVG image",
      JSON.stringify(c));
  }
  const svg = await page.evaluate(async (path) => {
    const r = await fetch(path, {headers: {Accept: "image/svg+xml"}});
    return {status: r.status, type: r.headers.get("content-type"), csp: r.headers.get("content-security-policy") || "",
      nosniff: r.headers.get("x-content-type-options"), body: (await r.text()).slice(0, 200)};
  }, api.run.charts.reliability);
  check(svg.status === 200 && svg.type === "image/svg+xml" && /default-src 'none'/.test(svg.csp) && svg.nosniff === "nosniff" &&
    /<svg/.test(svg.body), "the chart is served as image/svg+xml with a CSP and nosniff", JSON.stringify(svg));
  check(shown.rows.length === api.run.rows.length && shown.rows.length === s.questions,
    "one row per question", shown.rows.length + " rows, " + api.run.rows.length + " in the API");
  check(shown.rows.every((r, i) => r.id === api.run.rows[i].id && r.verdict === api.run.rows[i].verdict),
    "each row's id and verdict are the API's", JSON.stringify(shown.rows));
  await page.screenshot({path: join(args.shots, "evaluation-run.png"), fullPage: true});
  const withTrace = api.run.rows.find((r) => r.trace);
  if (check(withTrace !== undefined, "a question's row names its trace")) {
    const link = `#eval-rows tr[data-id="${withTrace.id}"] a.trace-link`;
    await page.focus(link);
    await page.keyboard.press("Enter");
    await page.waitForFunction((t) => window.GB.viewer.state.trace === t && !document.getElementById("trace-columns").hidden,
      {timeout: 30000}, withTrace.trace).catch(() => {});
    const opened = await page.evaluate(() => ({trace: window.GB.viewer.state.trace,
      evalHidden: document.getElementById("eval-view").hidden}));
    check(opened.trace === withTrace.trace && opened.evalHidden, "the row's trace link opens its trace", opened.trace);
  }
}
