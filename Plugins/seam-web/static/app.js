// The timers page: one EventSource (/events) brings a snapshot of the groups, timers and the
// latest sessions whenever a query channel changes; countdowns run here between snapshots, on
// the server's clock (its time at each snapshot corrects this one's). Every name is user data:
// it is written with textContent, never as HTML.
"use strict";

let state = { groups: [], timers: [], sessions: [], connected: false };
let clockOffset = 0; // server seconds minus this machine's, at the last snapshot

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else if (k === "onclick") node.addEventListener("click", v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

function now() { return Date.now() / 1000 + clockOffset; }
function seconds(date) { return date ? Date.parse(date) / 1000 : null; }

function clock(s) {
  s = Math.max(0, Math.ceil(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(r)}` : `${m}:${two(r)}`;
}

function short(seconds) {
  const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), r = seconds % 60;
  let out = "";
  if (h > 0) out += `${h}h`;
  if (m > 0 || (h > 0 && r > 0)) out += `${m}m`;
  if (r > 0 || out === "") out += `${r}s`;
  return out;
}

function steps(value) {
  if (Array.isArray(value)) return value;
  try { return JSON.parse(value || "[]"); } catch { return []; }
}

function showError(message) {
  const e = document.getElementById("error");
  e.textContent = message || "";
  e.hidden = !message;
}

async function post(path, body) {
  showError("");
  let response;
  try {
    response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  } catch {
    showError("the page's server is not answering");
    return null;
  }
  const reply = await response.json().catch(() => ({}));
  if (!response.ok) {
    showError(reply.error || `refused (${response.status})`);
    return null;
  }
  return reply;
}

// MARK: - Sessions

function remaining(s) {
  const end = seconds(s.stepEndsAt);
  if (end === null) return 0;
  if (s.state === "paused") return end - (seconds(s.pausedAt) ?? now());
  if (s.state === "finished") return 0;
  return end - now();
}

function sessionCard(s) {
  const list = steps(s.steps);
  const step = list[s.stepIndex] || { label: "", seconds: 0 };
  const rounds = s.repeatCount || 1;
  const card = el("article", { class: `session ${s.state}`, "data-uuid": s.uuid });
  const buttons = el("div", { class: "actions" });
  const act = (action, label) => buttons.append(el("button", { "data-action": action, onclick: () => post("/api/action", { action, session: s.uuid }) }, label));
  if (s.state === "running") act("pause", "Pause");
  if (s.state === "paused") act("resume", "Resume");
  if (s.state !== "finished") { act("skip", "Skip"); act("reset", "Reset"); act("stop", "Stop"); }
  else act("clear", "Clear");
  card.append(
    el("div", { class: "name" }, el("strong", {}, s.name || "(no name)"), " ", el("span", { class: "state" }, s.state)),
    el("div", { class: "countdown" }, s.state === "finished" ? "done" : clock(remaining(s))),
    el("div", { class: "position" }, list.length ? `${step.label} · step ${s.stepIndex + 1} of ${list.length}` : "",
       rounds > 1 ? ` · round ${s.round + 1} of ${rounds}` : ""),
    el("progress", { max: 1, value: 0 }),
    s.note ? el("div", { class: "note" }, s.note) : "",
    buttons);
  return card;
}

function tickSessions() {
  for (const card of document.querySelectorAll(".session")) {
    const s = state.sessions.find((x) => x.uuid === card.dataset.uuid);
    if (!s) continue;
    const list = steps(s.steps);
    const total = (list[s.stepIndex] || {}).seconds || 0;
    const left = remaining(s);
    if (s.state !== "finished") card.querySelector(".countdown").textContent = clock(left);
    card.querySelector("progress").value = s.state === "finished" ? 1 : total > 0 ? Math.min(1, Math.max(0, 1 - left / total)) : 0;
  }
}

// MARK: - Timers

function timerRow(t) {
  const list = steps(t.steps);
  return el("div", { class: "timer", "data-uuid": t.uuid },
    el("span", { class: "name" }, t.name, " ", el("span", { class: "steps" },
      list.map((x) => `${x.label} ${short(x.seconds)}`).join(", ") + ((t.repeatCount || 1) > 1 ? ` × ${t.repeatCount}` : ""))),
    el("button", { "data-action": "start", onclick: () => post("/api/action", { action: "start", timer: t.uuid }) }, "Start"),
    el("button", { "data-action": "edit", onclick: () => editTimer(t) }, "Edit"));
}

function editTimer(t) {
  const form = document.getElementById("timer-form");
  form.uuid.value = t.uuid;
  form.name.value = t.name;
  form.steps.value = steps(t.steps).map((x) => `${x.label}=${short(x.seconds)}`).join("\n");
  form.repeat.value = t.repeatCount || 1;
  form.group.value = t.groupUUID || "";
  document.getElementById("form-title").textContent = `Edit ${t.name}`;
  document.getElementById("save-timer").textContent = "Save";
  document.getElementById("cancel-edit").hidden = false;
}

function resetForm() {
  const form = document.getElementById("timer-form");
  form.reset();
  form.uuid.value = "";
  document.getElementById("form-title").textContent = "Add a timer";
  document.getElementById("save-timer").textContent = "Add";
  document.getElementById("cancel-edit").hidden = true;
}

// MARK: - Rendering

function render() {
  const status = document.getElementById("status");
  status.textContent = state.connected ? "live" : "seamd is not answering; reconnecting…";
  status.classList.toggle("down", !state.connected);

  const sessions = document.getElementById("sessions");
  sessions.replaceChildren(...state.sessions.filter((s) => s.state !== "finished" || now() - (seconds(s.finishedAt) || 0) < 3600).map(sessionCard));
  tickSessions();

  const byGroup = new Map();
  for (const t of state.timers) {
    const key = t.groupUUID || "";
    if (!byGroup.has(key)) byGroup.set(key, []);
    byGroup.get(key).push(t);
  }
  const timers = document.getElementById("timers");
  const sections = [];
  for (const g of [...state.groups, { uuid: "", name: "Not in a group" }]) {
    const list = byGroup.get(g.uuid) || [];
    if (list.length === 0) continue;
    sections.push(el("div", { class: "group", "data-uuid": g.uuid }, el("h3", {}, g.name), ...list.map(timerRow)));
  }
  timers.replaceChildren(...sections);

  const select = document.getElementById("timer-form").group;
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "" }, "(none)"), ...state.groups.map((g) => el("option", { value: g.uuid }, g.name)));
  select.value = chosen;
}

function connect() {
  const source = new EventSource("/events");
  source.onmessage = (event) => {
    const snapshot = JSON.parse(event.data);
    clockOffset = snapshot.serverTime - Date.now() / 1000;
    state = snapshot;
    render();
  };
  source.onerror = () => {
    // The browser reconnects by itself (retry: 1000); meanwhile the page says so.
    state.connected = false;
    const status = document.getElementById("status");
    status.textContent = "the page's server is not answering; reconnecting…";
    status.classList.add("down");
  };
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("flash").addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = e.target;
    if (await post("/api/action", { action: "flash", duration: f.duration.value, name: f.name.value })) f.reset();
  });
  document.getElementById("timer-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = e.target;
    const reply = await post("/api/timers", { uuid: f.uuid.value || null, name: f.name.value, steps: f.steps.value,
                                              repeat: f.repeat.value, group: f.group.value || null });
    if (reply) resetForm();
  });
  document.getElementById("cancel-edit").addEventListener("click", resetForm);
  setInterval(tickSessions, 250);
  connect();
});
