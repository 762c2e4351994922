// The wavecrew cockpit page. Everything an agent or a task wrote is put in
// the page with textContent (never innerHTML): markup in it shows as text.
"use strict";

const TOKEN = document.querySelector('meta[name="wavecrew-token"]').content;
const q = (id) => document.getElementById(id);
const state = { run: null, tasks: new Map(), open: null, paused: false, source: null, refreshTimer: null, awaiting: new Set(), comments: [] };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

async function api(path) {
  const sep = path.includes("?") ? "&" : "?";
  const r = await fetch(path + sep + "token=" + encodeURIComponent(TOKEN), { cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function act(name, task) {
  const r = await fetch("/api/action/" + name, {
    method: "POST",
    headers: { "content-type": "application/json", "x-wavecrew-token": TOKEN },
    body: JSON.stringify(task ? { task } : {}),
  });
  const body = await r.json();
  q("notice").textContent = r.ok ? body.message : "refused: " + body.error;
  return r.ok;
}

function totals() {
  const counts = {};
  for (const t of state.tasks.values()) {
    const k = state.awaiting.has(t.id) ? "awaiting" : t.state;
    counts[k] = (counts[k] || 0) + 1;
  }
  const box = q("totals");
  box.replaceChildren();
  const run = state.run;
  const left = run.critical_path.filter((id) => (state.tasks.get(id) || {}).state !== "completed").length;
  const spent = run.cost && run.cost.run ? run.cost.run : null;
  const items = [
    ["done", counts.completed || 0],
    ["running", counts.in_progress || 0],
    ["pending", counts.pending || 0],
    ["awaiting review", counts.awaiting || 0],
    ["failed", (counts.failed || 0) + (counts.blocked || 0)],
    ["skipped", counts.skipped || 0],
    ["tasks", state.tasks.size],
    ["critical path left", left + " of " + run.critical_path.length],
    ["cost", spent ? costText(spent) : "–"],
    ["time", elapsed()],
  ];
  for (const [label, value] of items) {
    const d = el("div", "total");
    d.dataset.total = label;
    d.append(el("b", null, value), el("span", null, label));
    box.append(d);
  }
}

function costText(c) {
  const parts = [];
  if (c.usd != null) parts.push("$" + Number(c.usd).toFixed(2));
  const tokens = (c.input_tokens || 0) + (c.output_tokens || 0);
  if (tokens) parts.push(tokens + " tokens");
  return parts.join(", ") || "–";
}

function taskBox(t) {
  const b = el("button", "task");
  b.type = "button";
  b.id = "task-" + t.id;
  b.dataset.id = t.id;
  b.dataset.state = t.state;
  if (state.awaiting.has(t.id)) b.dataset.review = "awaiting";
  if (t.critical) b.classList.add("critical");
  b.append(el("span", "state", stateText(t)), el("span", "id", t.id), el("span", "title", t.title));
  b.addEventListener("click", () => openTask(t.id));
  return b;
}

function stateText(t) {
  if (state.awaiting.has(t.id)) return "awaiting review";
  // A running task's host (over hosts: the one a coordinator sent it to).
  return t.state === "in_progress" && t.host ? t.state + " on " + t.host : t.state;
}

function renderGraph() {
  const run = state.run;
  const waves = q("waves");
  waves.replaceChildren();
  const placed = new Set();
  run.waves.forEach((ids, i) => {
    const col = el("div", "wave");
    col.append(el("h3", null, "wave " + (i + 1)));
    for (const id of ids) {
      const t = state.tasks.get(id);
      if (t) { col.append(taskBox(t)); placed.add(id); }
    }
    waves.append(col);
  });
  const rest = [...state.tasks.values()].filter((t) => !placed.has(t.id));
  if (rest.length) {
    const col = el("div", "wave");
    col.append(el("h3", null, "not in a wave"));
    rest.forEach((t) => col.append(taskBox(t)));
    waves.append(col);
  }
}

function renderMergeQueue() {
  const box = q("merge-queue");
  box.replaceChildren();
  const mq = state.run.merge_queue;
  if (!mq) { box.append(el("p", null, "This session runs in place: no merge queue.")); return; }
  box.append(el("p", null, "Integration branch " + (mq.branch || "?")));
  const section = (title, list, fmt) => {
    const p = el("div");
    p.append(el("strong", null, title + " (" + (list ? list.length : 0) + ")"));
    const ul = el("ul");
    ul.id = "mq-" + title.replace(/ /g, "-");
    (list || []).forEach((x) => ul.append(el("li", null, fmt(x))));
    p.append(ul);
    box.append(p);
  };
  section("awaiting review", [...state.awaiting], (x) => x);
  section("landed", mq.landed, (x) => x.task + " " + String(x.commit || "").slice(0, 10));
  section("waiting", mq.waiting, (x) => x.task + (x.branch ? " on " + x.branch : ""));
  section("conflicts", mq.conflicts, (x) => (x.task || "") + " " + JSON.stringify(x.files || []));
  const blocked = (mq.blocked || []).filter((x) => !state.awaiting.has(typeof x === "string" ? x : x.task));
  section("blocked", blocked, (x) => (typeof x === "string" ? x : x.task || JSON.stringify(x)));
}

// The merge queue follows its records: a landing moves a task from
// waiting to landed, a conflict is listed.
function mergeRecord(m) {
  const mq = state.run && state.run.merge_queue;
  const d = m.data || {};
  if (!mq || !d.task_id) return;
  mq.waiting = mq.waiting || [];
  mq.landed = mq.landed || [];
  mq.conflicts = mq.conflicts || [];
  if (m.type === "task_merged") {
    mq.waiting = mq.waiting.filter((w) => w.task !== d.task_id);
    mq.landed.push({ task: d.task_id, commit: d.merge_commit || "" });
  } else if (m.type === "merge_conflict") {
    mq.conflicts.push({ task: d.task_id, files: d.files || [] });
  } else if (m.type === "task_unblocked" && !mq.waiting.some((w) => w.task === d.task_id)) {
    mq.waiting.push({ task: d.task_id, branch: null });
  } else {
    return;
  }
  renderMergeQueue();
}

// The session's clock: from its first record to now while a task runs,
// else to its last record.
function elapsed() {
  const run = state.run;
  if (!run || !run.started_at) return "–";
  const running = [...state.tasks.values()].some((t) => t.state === "in_progress");
  const ms = running ? Date.now() - Date.parse(run.started_at) : run.duration_ms || 0;
  return Math.round(ms / 1000) + " s";
}

setInterval(() => {
  const box = document.querySelector('[data-total="time"] b');
  if (box) box.textContent = elapsed();
}, 1000);

function addActivity(m) {
  const li = el("li");
  li.append(el("span", "ts", String(m.ts || "").slice(11, 19)), el("span", null, m.summary));
  const list = q("activity");
  list.append(li);
  while (list.children.length > 300) list.firstChild.remove();
  list.scrollTop = list.scrollHeight;
}

function setPaused(p) {
  state.paused = p;
  q("paused").hidden = !p;
  q("pause").hidden = p;
  q("resume").hidden = !p;
}

async function load() {
  const v = await api("/api/session");
  state.run = v.run;
  state.tasks = new Map(v.run.tasks.map((t) => [t.id, t]));
  state.awaiting = new Set(v.awaiting_review);
  for (const r of v.running || []) {
    const t = state.tasks.get(r.id);
    if (t) t.host = r.host;
  }
  q("session-id").textContent = v.run.session_id;
  q("session-status").textContent = v.run.status;
  q("goal").textContent = v.run.task_description;
  setPaused(v.paused);
  renderGraph();
  renderMergeQueue();
  totals();
  q("activity").replaceChildren();
  v.recent.forEach(addActivity);
  connect(v.bus_offset, v.store_since);
  if (state.open) openTask(state.open);
}

function connect(offset, since) {
  if (state.source) state.source.close();
  const es = new EventSource("/api/events?token=" + encodeURIComponent(TOKEN) + "&from=" + offset + "&since=" + since);
  state.source = es;
  es.onopen = () => { q("live").textContent = "live"; };
  es.onerror = () => {
    // A new connection would start from the old offset: read the session
    // again instead, and follow on from where it ends.
    es.close();
    q("live").textContent = "reconnecting…";
    setTimeout(() => load().catch(() => {}), 1000);
  };
  es.addEventListener("record", (e) => {
    const m = JSON.parse(e.data);
    addActivity(m);
    const id = m.data && m.data.task_id;
    if (id && id === state.open) refreshSoon();
    mergeRecord(m);
  });
  es.addEventListener("task", (e) => {
    const c = JSON.parse(e.data);
    const t = state.tasks.get(c.id);
    if (!t) { reloadSoon(); return; }
    t.state = c.state;
    t.error = c.error;
    t.host = c.host || null;
    const wasAwaiting = state.awaiting.has(c.id);
    if (c.awaiting_review) state.awaiting.add(c.id); else state.awaiting.delete(c.id);
    const b = q("task-" + c.id);
    if (b) {
      b.dataset.state = c.state;
      if (c.awaiting_review) b.dataset.review = "awaiting"; else delete b.dataset.review;
      b.querySelector(".state").textContent = stateText(t);
    }
    if (wasAwaiting !== !!c.awaiting_review) renderMergeQueue();
    totals();
    if (c.id === state.open) refreshSoon();
  });
  es.addEventListener("control", (e) => setPaused(JSON.parse(e.data).paused));
}

let reloadTimer = null;
function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(() => load().catch((e) => { q("notice").textContent = String(e); }), 300);
}

function refreshSoon() {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(() => { if (state.open) openTask(state.open, true); }, 200);
}

function eventLine(ev) {
  // The agent's own stream: a line of JSON in its CLI's shape, or text.
  if (typeof ev === "string") return ["text", ev];
  const item = ev.item || {};
  const kind = item.type || ev.type || "event";
  const first = (...xs) => xs.find((x) => typeof x === "string" && x.length);
  let text = first(item.text, item.command, item.message, ev.text, ev.content, ev.result, ev.message);
  if (!text && ev.message && Array.isArray(ev.message.content)) {
    text = ev.message.content.map((c) => c.text || (c.name ? c.name + " " + JSON.stringify(c.input || {}) : "")).join(" ");
  }
  return [kind, text || JSON.stringify(ev)];
}

async function openTask(id, keepDiff) {
  state.open = id;
  const d = await api("/api/task/" + encodeURIComponent(id));
  const t = d.task;
  const report = state.tasks.get(id) || {};
  q("detail").hidden = false;
  q("detail-title").textContent = id + ": " + (t.subject || report.title || "");
  q("detail-state").textContent = t.status;
  q("detail").dataset.state = t.status;
  const meta = [];
  if (t.status === "in_progress" && t.lease && t.lease.host) {
    // pid 0: a host of `wavecrew run --engine` runs it; its attempt's
    // files and agent events come home when it ends.
    meta.push("running on " + t.lease.host + (t.lease.pid === 0 ? " (remote: its events arrive when the attempt comes home)" : ""));
  }
  if (report.role) meta.push("role " + report.role);
  if (report.wave) meta.push("wave " + report.wave);
  if (report.backend) meta.push("backend " + report.backend);
  if (report.usage) meta.push(costText(report.usage));
  // The governor: how long its attempts waited for their backend, and
  // whether that backend is paused now.
  const gov = (report.attempts || []).map((a) => a.governor).filter((g) => g && g.waited_ms);
  if (gov.length) {
    const g = gov[gov.length - 1];
    meta.push("governor: waited " + g.waited_ms + " ms" + (g.waited_for ? " for " + g.waited_for.join(", ") : ""));
  }
  const paused = ((state.run.cost || {}).paused || []).find((p) => p.backend === report.backend);
  if (paused) meta.push("backend " + paused.backend + " paused until " + paused.until + ": " + paused.reason);
  q("detail-meta").textContent = meta.join(" · ");
  q("detail-error").textContent = (t.result && t.result.error) || "";
  const awaiting = !!(t.result && t.result.awaiting_review && t.status === "blocked");
  q("review").hidden = !awaiting;
  q("detail").dataset.review = awaiting ? "awaiting" : "";
  if (!awaiting || q("review").dataset.branch !== String(t.result.branch)) {
    // A new piece of work to review: no note or comment carried over.
    q("review").dataset.branch = awaiting ? String(t.result.branch) : "";
    if (!keepDiff) { state.comments = []; q("review-note").value = ""; renderComments(); }
  }
  q("retry").disabled = !["failed", "blocked"].includes(t.status);
  q("cancel").disabled = t.status !== "in_progress";
  q("validation").textContent = report.validation ? JSON.stringify(report.validation, null, 2) : "no validation recorded";
  if (!keepDiff) { q("diff").hidden = true; q("diff").replaceChildren(); }
  const box = q("attempts");
  box.replaceChildren();
  for (const a of d.attempts.slice().reverse()) {
    const s = el("section", "attempt");
    s.dataset.attempt = a.attempt;
    const oc = a.outcome && a.outcome.outcome;
    const outcome = !a.outcome ? "running" : (oc && oc.class) || String(oc || "");
    const host = a.outcome && a.outcome.host ? " · on " + a.outcome.host : "";
    s.append(el("h3", null, "Attempt " + a.attempt + " · " + outcome + host));
    const events = el("ol", "events");
    for (const ev of a.events) {
      const [kind, text] = eventLine(ev);
      const li = el("li", "event");
      li.append(el("span", "kind", kind), el("span", "text", text));
      events.append(li);
    }
    s.append(el("h4", null, "Agent events (" + a.events.length + ")"), events);
    const prompt = el("details");
    prompt.append(el("summary", null, "Prompt"), el("pre", "prompt", a.prompt || ""));
    s.append(prompt);
    if (a.stderr) {
      const err = el("details");
      err.append(el("summary", null, "stderr"), el("pre", null, a.stderr));
      s.append(err);
    }
    box.append(s);
  }
}

async function showDiff() {
  const id = state.open;
  const d = await api("/api/task/" + encodeURIComponent(id) + "/diff");
  const pre = q("diff");
  pre.replaceChildren();
  pre.hidden = false;
  if (d.diff == null) { pre.textContent = "No branch of its own yet (it ran in place, or has not committed)."; return; }
  if (!d.diff.length) { pre.textContent = d.live ? "Nothing changed in its worktree yet." : "The branch changes nothing."; return; }
  if (d.live) pre.append(el("span", "hunk", "Work in progress in its worktree, not committed yet (as it is now):\n"));
  // Each line of the task's version of a file can take a comment: its
  // file (from "+++ b/…") and line (from the hunk's "+start" on).
  let file = null;
  let next = 0;
  for (const line of d.diff.split("\n")) {
    let cls = null;
    let at = null;
    if (line.startsWith("+++ ")) file = line.startsWith("+++ b/") ? line.slice(6) : null;
    else if (line.startsWith("--- ")) cls = null;
    else if (line.startsWith("@@")) {
      cls = "hunk";
      const m = /\+(\d+)/.exec(line);
      next = m ? Number(m[1]) : 0;
    } else if (line.startsWith("+")) { cls = "add"; at = next++; }
    else if (line.startsWith("-")) cls = "del";
    else if (line.startsWith(" ")) at = next++;
    const span = el("span", cls, line + "\n");
    if (file && at) {
      span.classList.add("line");
      span.dataset.file = file;
      span.dataset.line = at;
      span.addEventListener("click", () => commentForm(span));
    }
    pre.append(span);
  }
}

function commentForm(span) {
  if (span.nextSibling && span.nextSibling.classList && span.nextSibling.classList.contains("comment-form")) return;
  const form = el("div", "comment-form");
  const input = el("input");
  input.placeholder = "Comment on " + span.dataset.file + " line " + span.dataset.line;
  const add = el("button", null, "Add");
  add.type = "button";
  add.addEventListener("click", () => {
    if (!input.value.trim()) return;
    state.comments.push({ file: span.dataset.file, line: Number(span.dataset.line), text: input.value });
    form.remove();
    renderComments();
  });
  form.append(input, add);
  span.after(form);
  input.focus();
}

function renderComments() {
  const ul = q("review-comments");
  ul.replaceChildren();
  state.comments.forEach((c, i) => {
    const li = el("li", null, c.file + " line " + c.line + ": " + c.text);
    const x = el("button", null, "remove");
    x.type = "button";
    x.addEventListener("click", () => { state.comments.splice(i, 1); renderComments(); });
    li.append(" ", x);
    ul.append(li);
  });
}

async function review(approve) {
  const id = state.open;
  const body = approve ? { task: id } : { task: id, note: q("review-note").value, comments: state.comments };
  const r = await fetch("/api/action/" + (approve ? "approve" : "reject"), {
    method: "POST",
    headers: { "content-type": "application/json", "x-wavecrew-token": TOKEN },
    body: JSON.stringify(body),
  });
  const answer = await r.json();
  q("notice").textContent = r.ok ? answer.message : "refused: " + answer.error;
  if (r.ok) { state.comments = []; q("review-note").value = ""; renderComments(); }
}

q("pause").addEventListener("click", () => act("pause").then((ok) => ok && setPaused(true)));
q("resume").addEventListener("click", () => act("resume").then((ok) => ok && setPaused(false)));
q("retry").addEventListener("click", () => act("retry", state.open).then(() => openTask(state.open)));
q("cancel").addEventListener("click", () => act("cancel", state.open));
q("approve").addEventListener("click", () => review(true));
q("reject").addEventListener("click", () => review(false));
q("show-diff").addEventListener("click", () => showDiff().catch((e) => { q("diff").hidden = false; q("diff").textContent = String(e); }));
q("detail-close").addEventListener("click", () => { state.open = null; q("detail").hidden = true; });
load().catch((e) => { q("notice").textContent = "could not read the session: " + e; });
