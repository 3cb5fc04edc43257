// The outform dashboard: reads the api/ routes next to this page and draws them with Chart.js.
// Every value goes into the page as text (textContent), never as markup.
"use strict";

const KEY_SLOT = "outform-dashboard-key";
const STAGE_COLORS = {
  extract: "#2f6fdb", syntactic: "#8e44ad", tolerant: "#e67e22",
  semantic: "#16a085", custom: "#7f8c8d", validate: "#c0392b",
};
const PALETTE = ["#2f6fdb", "#16a085", "#e67e22", "#8e44ad", "#c0392b", "#2c3e50", "#d4ac0d", "#7f8c8d"];
const charts = {};

function $(id) { return document.getElementById(id); }

function params() {
  const form = new FormData($("filters"));
  const out = new URLSearchParams();
  for (const [name, value] of form.entries()) { if (value) out.set(name, value); }
  return out;
}

async function api(path, query) {
  const headers = {};
  const key = sessionStorage.getItem(KEY_SLOT);
  if (key) headers.Authorization = "Bearer " + key;
  const response = await fetch("api/" + path + (query ? "?" + query : ""), { headers });
  if (response.status === 401) throw Object.assign(new Error("unauthorized"), { status: 401 });
  const body = await response.json();
  if (!response.ok) throw new Error((body.error && body.error.message) || response.statusText);
  return body;
}

function text(value, digits) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number" && digits !== undefined) return value.toFixed(digits);
  return String(value);
}

function percent(share) {
  return share === null || share === undefined ? "–" : (100 * share).toFixed(1) + "%";
}

function when(seconds) {
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

function cell(row, value, className) {
  const td = document.createElement("td");
  td.textContent = text(value);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function fillTable(id, rows, build) {
  const body = $(id).querySelector("tbody");
  body.replaceChildren();
  for (const item of rows) {
    const row = document.createElement("tr");
    build(row, item);
    body.appendChild(row);
  }
}

function runLink(row, runId) {
  const td = document.createElement("td");
  if (runId) {
    const link = document.createElement("a");
    link.textContent = "open";
    link.dataset.run = runId;
    link.addEventListener("click", () => openRun(runId));
    td.appendChild(link);
  }
  row.appendChild(td);
}

function setOptions(select, values, all) {
  const chosen = select.value;
  select.replaceChildren(new Option(all, ""));
  for (const value of values) select.appendChild(new Option(value, value));
  if (chosen && !values.includes(chosen)) select.appendChild(new Option(chosen, chosen));
  select.value = chosen;
}

function draw(id, config) {
  if (charts[id]) charts[id].destroy();
  config.options = Object.assign(
    { responsive: true, maintainAspectRatio: false, animation: false,
      plugins: { legend: { position: "bottom" } } },
    config.options || {},
  );
  charts[id] = new Chart($(id), config);
}

function bucketLabel(start, seconds) {
  const date = start.replace("T", " ").replace("Z", "");
  return seconds >= 86400 ? date.slice(0, 10) : date.slice(5, 16);
}

function series(buckets, field) {
  const names = new Set();
  for (const bucket of buckets) for (const name of Object.keys(bucket[field])) names.add(name);
  return [...names].sort().map((name, index) => ({
    label: name,
    data: buckets.map((bucket) => bucket[field][name] || 0),
    backgroundColor: STAGE_COLORS[name] || PALETTE[index % PALETTE.length],
    borderColor: STAGE_COLORS[name] || PALETTE[index % PALETTE.length],
  }));
}

function renderOverview(data) {
  const totals = data.totals;
  $("kpi-runs").textContent = text(totals.runs);
  $("kpi-interventions").textContent = text(totals.interventions_per_100_runs, 1);
  $("kpi-reask").textContent = percent(totals.reask_rate);
  $("kpi-abort").textContent = percent(totals.abort_rate);
  $("kpi-failed").textContent = text(totals.failed_runs);
  $("kpi-calls").textContent = text(totals.provider_calls);
  setOptions($("step"), data.filters.steps, "all steps");
  setOptions($("model"), data.filters.models, "all models");

  const trend = data.trend;
  const labels = trend.buckets.map((b) => bucketLabel(b.start, trend.bucket_seconds));
  draw("chart-stages", {
    type: "bar",
    data: { labels, datasets: series(trend.buckets, "by_stage") },
    options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
  });
  draw("chart-models", {
    type: "line",
    data: { labels, datasets: series(trend.buckets, "by_model") },
    options: { scales: { y: { beginAtZero: true } } },
  });
  const rate = (part, whole) => (whole ? (100 * part) / whole : null);
  draw("chart-rates", {
    type: "line",
    data: {
      labels,
      datasets: [
        { label: "re-asked runs %", data: trend.buckets.map((b) => rate(b.reasked_runs, b.runs)),
          borderColor: PALETTE[2], backgroundColor: PALETTE[2], spanGaps: true },
        { label: "stream aborts per 100 runs", data: trend.buckets.map((b) => rate(b.stream_aborts, b.runs)),
          borderColor: PALETTE[4], backgroundColor: PALETTE[4], spanGaps: true },
      ],
    },
    options: { scales: { y: { beginAtZero: true } } },
  });
  draw("chart-latency", {
    type: "bar",
    data: {
      labels: data.latency.map((row) => row.model),
      datasets: ["p50", "p90", "p99"].map((q, index) => ({
        label: q,
        data: data.latency.map((row) => row["latency_ms_" + q]),
        backgroundColor: PALETTE[index],
      })),
    },
    options: { scales: { y: { beginAtZero: true } } },
  });

  const list = $("recommendations");
  list.replaceChildren();
  for (const item of data.recommendations) {
    const li = document.createElement("li");
    li.textContent = item.message;
    li.dataset.kind = item.kind;
    list.appendChild(li);
  }
  if (!data.recommendations.length) {
    const li = document.createElement("li");
    li.textContent = "none: nothing crosses the thresholds";
    list.appendChild(li);
  }
  fillTable("transforms", data.top_transforms, (row, item) => {
    cell(row, item.stage); cell(row, item.transform);
    cell(row, item.count, "num"); cell(row, text(item.per_100_runs, 1), "num");
  });
  fillTable("steps", data.top_steps, (row, item) => {
    cell(row, item.step); cell(row, item.runs, "num"); cell(row, item.interventions, "num");
    cell(row, text(item.per_100_runs, 1), "num"); cell(row, percent(item.reask_rate), "num");
  });
  fillTable("native", data.native, (row, item) => {
    cell(row, item.model); cell(row, item.applied, "num"); cell(row, item.skipped, "num");
    cell(row, item.reasons.map((r) => r.reason + " (" + r.count + ")").join("; "));
  });
}

function renderFailures(rows) {
  fillTable("failures", rows, (row, item) => {
    cell(row, when(item.time)); cell(row, item.name); cell(row, item.step); cell(row, item.model);
    cell(row, item.attempt, "num");
    const hint = cell(row, "");
    hint.textContent = item.hint.join("\n");
    hint.style.whiteSpace = "pre-line";
    runLink(row, item.run_id);
  });
}

function renderRuns(rows) {
  fillTable("runs", rows, (row, item) => {
    cell(row, when(item.started)); cell(row, item.step); cell(row, item.model); cell(row, item.mode);
    cell(row, item.outcome || "running"); cell(row, item.attempts, "num");
    cell(row, item.changes, "num"); cell(row, text(item.latency_ms, 0), "num");
    runLink(row, item.run_id);
  });
}

function term(list, name, value) {
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.textContent = text(value);
  list.append(dt, dd);
}

async function openRun(runId) {
  const detail = await api("runs/" + encodeURIComponent(runId));
  const run = detail.run;
  $("run-id").textContent = run.run_id;
  const info = $("run-info");
  info.replaceChildren();
  term(info, "step", run.step);
  term(info, "agent", run.agent);
  term(info, "tags", run.tags.join(", "));
  term(info, "model", run.model);
  term(info, "mode", run.mode);
  term(info, "why this mode", run.mode_reason);
  const format = detail.format;
  term(info, "native format", format ? (format.native ? "applied (" + format.mechanism + ")" : "skipped: " + format.reason) : null);
  term(info, "outcome", run.outcome || "running");
  term(info, "attempts", run.attempts);
  const envelope = detail.envelope;
  if (envelope) {
    if (envelope.confidence !== null) {
      term(info, "confidence", text(envelope.confidence, 2));
      const band = envelope.confidence > 0.8 ? "high" : envelope.confidence > 0.6 ? "medium" : "low";
      info.lastElementChild.className = "confidence " + band;
    }
    if (envelope.sources.length) {
      const shown = envelope.sources.slice(0, 3).join(", ");
      const more = envelope.sources.length - 3;
      term(info, "sources", more > 0 ? shown + " and " + more + " more" : shown);
      info.lastElementChild.title = envelope.sources.join("\n");
    }
  }
  const holder = $("run-attempts");
  holder.replaceChildren();
  for (const attempt of detail.attempts) {
    const box = document.createElement("div");
    box.className = "attempt";
    box.dataset.attempt = attempt.number;
    const title = document.createElement("h3");
    const call = attempt.call;
    title.textContent = "Attempt " + attempt.number + (call
      ? " · " + text(call.latency_ms, 0) + " ms · HTTP " + text(call.status) +
        " · " + call.tokens.input_tokens + " in / " + call.tokens.output_tokens + " out tokens"
      : "");
    box.appendChild(title);
    if (attempt.abort) {
      const p = document.createElement("p");
      p.textContent = "stream cut at character " + attempt.abort.offset + ": " + attempt.abort.reason;
      box.appendChild(p);
    }
    if (attempt.violations.length) {
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = "invalid: " + attempt.violations.join("; ");
      box.appendChild(p);
    }
    if (attempt.asked) {
      const p = document.createElement("p");
      p.textContent = "asked again (" + attempt.asked.reason + "): " +
        (attempt.asked.fields.length ? attempt.asked.fields.join(", ") : "the whole reply");
      box.appendChild(p);
    }
    if (attempt.changes.length) {
      const table = document.createElement("table");
      table.className = "changes";
      const head = table.createTHead().insertRow();
      for (const name of ["stage", "path", "transform", "before", "after", "lossy"]) {
        const th = document.createElement("th");
        th.textContent = name;
        head.appendChild(th);
      }
      const body = table.createTBody();
      for (const change of attempt.changes) {
        const row = body.insertRow();
        cell(row, change.stage); cell(row, change.path || "/"); cell(row, change.transform);
        cell(row, change.before); cell(row, change.after); cell(row, change.lossy ? "yes" : "no");
      }
      box.appendChild(table);
    }
    holder.appendChild(box);
  }
  $("run").hidden = false;
  history.replaceState(null, "", "#run=" + encodeURIComponent(runId));
  document.body.dataset.run = run.run_id;
  $("run").scrollIntoView();
}

async function load() {
  document.body.dataset.state = "loading";
  $("status").textContent = "loading…";
  const query = params();
  query.set("buckets", "24");
  try {
    const [overview, failures, runs] = await Promise.all([
      api("overview", query), api("failures", query), api("runs", query),
    ]);
    renderOverview(overview);
    renderFailures(failures);
    renderRuns(runs);
    $("status").textContent = "window " + overview.window.since.replace("T", " ").replace("Z", "") +
      " to " + overview.window.until.replace("T", " ").replace("Z", "") + " UTC";
    document.body.dataset.state = "ready";
    const opened = new URLSearchParams(location.hash.slice(1)).get("run");
    if (opened) await openRun(opened);
  } catch (error) {
    if (error.status === 401) {
      $("main").hidden = true;
      $("login").hidden = false;
      if (sessionStorage.getItem(KEY_SLOT)) $("login-error").textContent = "that key was refused";
      document.body.dataset.state = "login";
      return;
    }
    $("status").textContent = "could not load: " + error.message;
    document.body.dataset.state = "error";
  }
}

$("filters").addEventListener("submit", (event) => { event.preventDefault(); load(); });
for (const id of ["window", "step", "model"]) $(id).addEventListener("change", load);
$("run-close").addEventListener("click", () => {
  $("run").hidden = true;
  delete document.body.dataset.run;
  history.replaceState(null, "", location.pathname + location.search);
});
$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY_SLOT, $("key").value);
  $("login").hidden = true;
  $("main").hidden = false;
  load();
});
load();
