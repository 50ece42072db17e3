// world-aws UI: plain JavaScript over the documented HTTP API (same origin), no framework, no network
// beyond the server that served this file. Two pages, chosen by the URL's hash:
//   #/?status=&workflow=&attribute=&from=&to=   the runs, newest first, paged by the API's cursor,
//                          filtered, a search by run id, and a form to start one
//   #/runs/<run_id>        one run: its Gantt, result or error with stacks, event log, actions
// Live: each page polls the API (the runs every 2 s, a run every second until it ends) without reload.
"use strict";
(() => {
  const TERMINAL = new Set(["completed", "failed", "cancelled"]);
  const AUDIT_LABELS = { cancel: "cancelled by", resume: "resumed by", fork: "forked by" };
  const STATUSES = ["pending", "running", "completed", "failed", "cancelled"];
  const PAGE_SIZE = 20;
  const LONG_JSON_CHARS = 120;
  const MAX_GANTT_ROWS = 400; // redrawn 4 times a second while the run runs: a long run shows its first ones
  const main = document.getElementById("main");
  let current = null; // the page shown: {stop()}
  let notice = null; // a line the next list page shows once (what a deletion erased)

  // --- small helpers ------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") el.textContent = value;
      else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      // Through the CSSOM: the Content-Security-Policy refuses style attributes.
      else if (name === "style") for (const [prop, v] of Object.entries(value)) el.style.setProperty(prop, v);
      else el.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  async function api(method, path, body) {
    const init = { method, headers: { accept: "application/json" } };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const answer = await fetch(path, init);
    let document = null;
    try { document = await answer.json(); } catch (_) { /* not JSON: reported below */ }
    if (!answer.ok) {
      const message = document && document.error ? document.error.message
        : (document && document.message) || answer.statusText;
      throw new Error(`${method} ${path}: ${answer.status} ${message}`);
    }
    return document;
  }

  function problem(error) {
    const el = document.getElementById("problem");
    el.textContent = error ? String(error.message || error) : "";
    el.hidden = !error;
  }

  function parseJson(text, what) {
    try { return JSON.parse(text); } catch (e) { throw new Error(`${what}: not valid JSON (${e.message})`); }
  }

  const ms = (iso) => (iso ? Date.parse(iso) : NaN);
  const shortName = (name) => String(name || "").split(".").pop();

  function duration(seconds) {
    if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "";
    if (seconds < 10) return `${Math.round(seconds * 1000)} ms`;
    if (seconds < 600) return `${seconds.toFixed(1)} s`;
    return `${(seconds / 60).toFixed(1)} min`;
  }

  // This browser's time zone, as it names it ("UTC", "GMT+1", "CET"): every time shown carries it.
  const ZONE = (new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(new Date())
    .find((part) => part.type === "timeZoneName") || { value: "" }).value;

  function when(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${ZONE}`;
  }

  // A datetime-local field's value (this browser's zone) as an ISO instant for the API; "" stays "".
  const instant = (local) => (local ? new Date(local).toISOString() : "");

  const badge = (status) => h("span", { class: `badge ${status}`, "data-testid": "status", text: status });

  // Polls fn every `period` ms (the next call once the previous one finished) until stopped.
  function poller(fn, period) {
    let timer = null;
    let stopped = false;
    const live = document.getElementById("live");
    const tick = async () => {
      if (stopped) return;
      let again = true;
      try { again = (await fn()) !== false; problem(null); } catch (e) { problem(e); }
      if (!stopped && again) timer = setTimeout(tick, period);
      else live.classList.remove("on");
    };
    live.classList.add("on");
    tick();
    return { stop() { stopped = true; clearTimeout(timer); live.classList.remove("on"); } };
  }

  // --- the runs -------------------------------------------------------------------------------

  function listPage(query) {
    const filters = {};
    for (const key of ["status", "workflow", "attribute", "from", "to"]) filters[key] = query.get(key) || "";
    const cursors = [null];
    let index = 0;
    let next = null;
    const setFilters = () => {
      const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
      location.hash = `#/?${q}`;
    };
    const statusSelect = h("select", { "data-testid": "filter-status", onchange: (e) => { filters.status = e.target.value; setFilters(); } },
      h("option", { value: "", text: "any" }), STATUSES.map((s) => h("option", { value: s, text: s, selected: s === filters.status })));
    const workflowSelect = h("select", { "data-testid": "filter-workflow", onchange: (e) => { filters.workflow = e.target.value; setFilters(); } },
      h("option", { value: "", text: "any" }));
    const field = (key, attrs) => h("input", { ...attrs, "data-testid": `filter-${key}`, value: filters[key],
      onchange: (e) => { filters[key] = e.target.value.trim(); setFilters(); } });
    const attribute = field("attribute", { type: "text", placeholder: "name=value", size: 14 });
    const from = field("from", { type: "datetime-local", step: 1 });
    const to = field("to", { type: "datetime-local", step: 1 });
    const search = h("input", { type: "search", placeholder: "run id", size: 30, "data-testid": "search-run" });
    const find = async (event) => {
      event.preventDefault();
      const runId = search.value.trim();
      if (!runId) return;
      try {
        await api("GET", `/runs/${encodeURIComponent(runId)}`);
        location.hash = `#/runs/${encodeURIComponent(runId)}`;
      } catch (e) { problem(e); }
    };
    const newer = h("button", { text: "‹ Newer", disabled: true, onclick: () => { index -= 1; refresh(); } });
    const older = h("button", { text: "Older ›", disabled: true, onclick: () => { cursors[index + 1] = next; index += 1; refresh(); } });
    const body = h("tbody", { "data-testid": "runs" });
    const shown = notice ? h("p", { class: "notice", role: "status", "data-testid": "notice", text: notice }) : null;
    notice = null;
    main.replaceChildren(
      h("h1", { text: "Runs" }), shown,
      h("form", { class: "toolbar", "data-testid": "search-form", onsubmit: find },
        h("label", {}, "find a run", search), h("button", { type: "submit", text: "Open" })),
      h("div", { class: "toolbar" },
        h("label", {}, "status", statusSelect), h("label", {}, "workflow", workflowSelect),
        h("label", {}, "attribute", attribute), h("label", {}, `created from (${ZONE})`, from), h("label", {}, "to", to),
        newer, older),
      h("table", {}, h("thead", {}, h("tr", {}, ["run", "workflow", "status", `created (${ZONE})`, "duration"].map((t) => h("th", { text: t })))), body),
      startForm(workflowSelect, filters.workflow));

    async function refresh() {
      const q = new URLSearchParams({ limit: PAGE_SIZE });
      if (filters.status) q.set("status", filters.status);
      if (filters.workflow) q.set("workflow", filters.workflow);
      if (filters.attribute) q.set("attribute", filters.attribute);
      if (filters.from) q.set("created_after", instant(filters.from));
      if (filters.to) q.set("created_before", instant(filters.to));
      if (cursors[index]) q.set("cursor", cursors[index]);
      const listed = await api("GET", `/runs?${q}`);
      next = listed.cursor || null;
      newer.disabled = index === 0;
      older.disabled = !next;
      body.replaceChildren(...listed.runs.map(runRow));
      if (!listed.runs.length) body.append(h("tr", {}, h("td", { colspan: 5, class: "muted", text: "no runs" })));
    }
    const poll = poller(refresh, 2000);
    return poll;
  }

  function runRow(run) {
    const start = ms(run.started_at || run.created_at);
    const end = run.completed_at ? ms(run.completed_at) : NaN;
    return h("tr", { "data-testid": "run-row", "data-run-id": run.run_id, "data-status": run.status },
      h("td", {}, h("a", { class: "mono", href: `#/runs/${encodeURIComponent(run.run_id)}`, text: run.run_id })),
      h("td", {}, run.workflow, run.parent_run_id ? h("span", { class: "muted child-of", "data-testid": "child-of", title: run.parent_run_id,
        text: ` child of …${run.parent_run_id.slice(-6)}` }) : null),
      h("td", {}, badge(run.status)),
      h("td", { text: when(run.created_at) }),
      // a running run's age on this browser's clock, marked as still going
      h("td", { class: "num", text: Number.isNaN(end) ? (TERMINAL.has(run.status) ? "" : `${duration(Math.max(Date.now() - start, 0) / 1000)}…`) : duration((end - start) / 1000) }));
  }

  function startForm(workflowSelect, selected) {
    const choose = h("select", { "data-testid": "start-workflow" });
    const signature = h("code", { class: "muted" });
    const args = h("textarea", { rows: 2, "data-testid": "start-args", text: "[]" });
    const kwargs = h("textarea", { rows: 2, "data-testid": "start-kwargs", text: "{}" });
    const shown = new Map();
    const showSignature = () => { signature.textContent = shown.get(choose.value) || ""; };
    choose.addEventListener("change", showSignature);
    api("GET", "/workflows").then(({ workflows }) => {
      // a top-level workflow first: one other workflows call as a child is marked, and chosen last
      const calledBy = (w) => w.called_by || [];
      const topLevel = workflows.find((w) => calledBy(w).length === 0) || workflows[0];
      for (const w of workflows) {
        shown.set(w.name, `${w.name}${w.signature}`);
        const label = calledBy(w).length ? `${w.name} (child of ${calledBy(w).join(", ")})` : w.name;
        choose.append(h("option", { value: w.name, text: label, selected: w === topLevel }));
        workflowSelect.append(h("option", { value: w.name, text: w.name, selected: w.name === selected }));
      }
      showSignature();
    }).catch(problem);
    const start = async (event) => {
      event.preventDefault();
      try {
        const body = { workflow: choose.value, args: parseJson(args.value, "args"), kwargs: parseJson(kwargs.value, "kwargs") };
        const started = await api("POST", "/runs", body);
        location.hash = `#/runs/${encodeURIComponent(started.run_id)}`;
      } catch (e) { problem(e); }
    };
    return h("form", { class: "card", "data-testid": "start-form", onsubmit: start },
      h("h2", { text: "Start a run" }),
      h("div", { class: "toolbar" }, h("label", {}, "workflow", choose), h("label", {}, "args (JSON list)", args),
        h("label", {}, "kwargs (JSON object)", kwargs), h("button", { class: "primary", type: "submit", text: "Start" })),
      signature);
  }

  // --- one run --------------------------------------------------------------------------------

  function runPage(runId) {
    const path = `/runs/${encodeURIComponent(runId)}`;
    const meta = h("dl", { class: "meta", "data-testid": "run-meta" });
    const actions = h("div", { class: "toolbar" });
    const hooks = h("div", { class: "hooks", "data-testid": "hooks" });
    const gantt = h("div", { class: "gantt", "data-testid": "gantt" });
    const outcome = h("div", { "data-testid": "outcome" });
    const events = h("tbody", { "data-testid": "events" });
    main.replaceChildren(
      h("p", {}, h("a", { href: "#/", text: "‹ runs" })),
      h("h1", { class: "mono", text: runId }),
      h("div", { class: "card" }, meta, actions, hooks),
      h("h2", { text: "Timeline" }), h("div", { class: "card" }, gantt, legend()),
      outcome,
      h("h2", { text: "Events" }),
      h("table", {}, h("thead", {}, h("tr", {}, ["#", "at", "event", "step / hook", "payload"].map((t) => h("th", { text: t })))), events));
    let state = { run: null, timeline: null, fetchedAt: 0, after: 0, actionsFor: null };
    let animation = null;

    async function refresh() {
      const [run, timeline] = await Promise.all([api("GET", path), api("GET", `${path}/timeline`)]);
      for (;;) {
        const page = await api("GET", `${path}/events?after=${state.after}&payloads=true`);
        for (const row of page.events) events.append(eventRow(runId, run, row));
        if (page.events.length) state.after = page.events[page.events.length - 1].position;
        if (page.next_after === null || page.next_after === undefined) break;
      }
      state = { ...state, run, timeline, fetchedAt: performance.now() };
      renderMeta(run, timeline);
      renderActions(run, timeline);
      renderGantt();
      renderOutcome(run, timeline);
      // The two reads race the run's end: stop only once the timeline too was read after it.
      if (TERMINAL.has(run.status) && TERMINAL.has(timeline.status)) {
        clearInterval(animation); animation = null; return false;
      }
      if (!animation) animation = setInterval(renderGantt, 250);
      return true;
    }

    function serverNow() {
      return ms(state.timeline.as_of) + (performance.now() - state.fetchedAt);
    }

    function renderMeta(run, timeline) {
      const s = timeline.summary;
      const rows = [["workflow", run.workflow],
        ["input", h("div", { "data-testid": "run-input" }, dataView({ args: (run.input || {}).args || [], kwargs: (run.input || {}).kwargs || {} }, false))],
        ["status", badge(run.status)], ["created", when(run.created_at)],
        ["started", when(run.started_at)], ["ended", when(run.completed_at)],
        ["summary", h("span", { "data-testid": "summary", text: summaryLine(s) })], ...linkRows(run.links)];
      if (Object.keys(run.attributes || {}).length) {
        rows.push(["attributes", h("span", { "data-testid": "run-attributes", text: Object.entries(run.attributes).map(([k, v]) => `${k}=${v}`).join(", ") })]);
      }
      if (run.blocked) rows.push(["blocked", h("span", { "data-testid": "blocked", text: blockedText(run.blocked) })]);
      // a pending run under its workflow's flow control: the slot or token it waits for (README "Flow control")
      if (run.waiting) rows.push(["waiting", h("span", { "data-testid": "run-waiting", text: run.waiting })]);
      if (run.priority !== null && run.priority !== undefined) rows.push(["priority", h("span", { "data-testid": "run-priority", text: String(run.priority) })]);
      if (run.forked_from) {
        rows.push(["forked from", h("a", { class: "mono", "data-testid": "forked-from",
          href: `#/runs/${encodeURIComponent(run.forked_from)}`, text: run.forked_from })]);
      }
      // who cancelled, resumed or forked it (README "Audit"): an IAM ARN, or "local"
      for (const a of run.audit || []) rows.push([AUDIT_LABELS[a.action] || a.action, auditText(a)]);
      if (run.expires_at) rows.push(["expires", h("span", { "data-testid": "expires", text: when(run.expires_at) })]);
      meta.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", {}, v)]));
    }

    function auditText(a) {
      const detail = a.detail ? ` (${a.action === "resume" ? "hook " : ""}${a.detail})` : "";
      return h("span", { "data-testid": `audit-${a.action}` }, h("span", { class: "mono", text: a.actor }), ` at ${when(a.at)}${detail}`);
    }

    // a held run: where its replay diverged on a deploy's code (README "Deploying changes")
    function blockedText(b) {
      const where = `held since ${when(b.since)}: on deployment ${b.deployment_id} at position ${b.position}`;
      if (b.expected !== null && b.expected !== undefined) return `${where}, the log has '${b.expected}' but the code calls '${b.actual}'`;
      return `${where}: ${(b.message || "").split("\n")[0]}`;
    }

    // parent, children and continue-as-new neighbours, each a link to its run's page
    function linkRows(links) {
      if (!links) return [];
      const to = (id, testid) => h("a", { class: "mono", href: `#/runs/${encodeURIComponent(id)}`, "data-testid": testid, text: id });
      const rows = [];
      if (links.parent_run_id) rows.push(["parent", to(links.parent_run_id, "parent-link")]);
      if (links.root_run_id && links.root_run_id !== runId && links.root_run_id !== links.parent_run_id) rows.push(["root", to(links.root_run_id, "root-link")]);
      if (links.children && links.children.length) rows.push(["children", h("span", {}, links.children.flatMap((id, i) => [i ? " " : null, to(id, "child-link")]))]);
      if (links.continued_from) rows.push(["continues", to(links.continued_from, "continued-from-link")]);
      if (links.continued_as) rows.push(["continued as", to(links.continued_as, "continued-as-link")]);
      return rows;
    }

    function renderActions(run, timeline) {
      const live = !TERMINAL.has(run.status);
      const open = live ? timeline.spans.filter((s) => s.kind === "hook" && s.status !== "disposed") : [];
      const key = `${live}|${open.map((s) => s.id).join(",")}`;
      if (state.actionsFor === key) return; // keep what the user is typing
      state.actionsFor = key;
      const reason = h("input", { placeholder: "reason (optional)", "data-testid": "cancel-reason" });
      const cancel = async () => {
        try { await api("POST", `${path}/cancel`, { reason: reason.value || undefined }); }
        catch (e) { problem(e); }
      };
      actions.replaceChildren(...(live ? [reason, h("button", { class: "danger", "data-testid": "cancel", text: "Cancel run", onclick: cancel })]
        : [...forkForm(run, timeline), deleteControl()]));
      hooks.replaceChildren(...open.map((span) => resumeForm(span.name)));
    }

    // An ended run is forked (POST /runs/{id}/fork): a new run on the current code that reuses the
    // steps before the chosen one. The choices: where the run failed or stopped (the API's default),
    // or any step call, as name#n (its n-th call).
    function forkForm(run, timeline) {
      const seen = new Map();
      const calls = timeline.spans.filter((s) => s.kind === "step").map((s) => {
        const n = (seen.get(s.name) || 0) + 1;
        seen.set(s.name, n);
        return h("option", { value: `${s.name}#${n}`, text: `${shortName(s.name)}${n > 1 ? ` #${n}` : ""}` });
      });
      const defaults = run.status === "completed" ? []
        : [h("option", { value: "", text: run.status === "failed" ? "where it failed" : "where it stopped" })];
      const from = h("select", { "data-testid": "fork-from", title: "the step to run again from" }, defaults, calls);
      const fork = async () => {
        try {
          const answer = await api("POST", `${path}/fork`, { from_step: from.value || undefined });
          location.hash = `#/runs/${encodeURIComponent(answer.run_id)}`;
        } catch (e) { problem(e); }
      };
      if (!defaults.length && !calls.length) return [];
      return [h("label", {}, "fork from ", from),
        h("button", { class: "primary", "data-testid": "fork", text: "Fork run", title: "start a new run on the current code, reusing the steps before this point", onclick: fork })];
    }

    // An ended run is erased (POST /runs/{id}/delete, README "Retention and erasure") on a second,
    // explicit click: "Delete run…" shows "Confirm delete" (focused) and "Keep"; Escape or Keep backs
    // out. The API's answer (what it erased) is shown on the list, where the run no longer is.
    function deleteControl() {
      const ask = h("button", { class: "danger", "data-testid": "delete", text: "Delete run…", "aria-expanded": "false" });
      const yes = h("button", { class: "danger", "data-testid": "delete-confirm", text: "Confirm delete" });
      const no = h("button", { "data-testid": "delete-keep", text: "Keep" });
      const group = h("span", { class: "confirm", role: "group", "aria-label": "confirm deletion", "data-testid": "delete-ask", hidden: true },
        h("span", { text: "Erase this run and all its data? This cannot be undone." }), yes, no);
      const show = (asking) => {
        group.hidden = !asking;
        ask.hidden = asking;
        ask.setAttribute("aria-expanded", String(asking));
        (asking ? yes : ask).focus();
      };
      ask.addEventListener("click", () => show(true));
      no.addEventListener("click", () => show(false));
      group.addEventListener("keydown", (e) => { if (e.key === "Escape") show(false); });
      yes.addEventListener("click", async () => {
        yes.disabled = no.disabled = true;
        try {
          const erased = await api("POST", `${path}/delete`, {});
          notice = `Deleted run ${erased.run_id}: ${erased.records} records, ` +
            `${erased.blobs_deleted} stored objects deleted, ${erased.blobs_kept} kept (other runs refer to them).`;
          location.hash = "#/";
        } catch (e) {
          problem(e); // the API's refusal, as it said it
          yes.disabled = no.disabled = false;
          show(false);
        }
      });
      return h("span", { class: "delete" }, ask, group);
    }

    function resumeForm(token) {
      const payload = h("textarea", { rows: 2, "data-testid": "resume-payload", text: "{}" });
      const done = h("span", { class: "muted", "data-testid": "resume-result" });
      const resume = async (event) => {
        event.preventDefault();
        try {
          const answer = await api("POST", `/hooks/${encodeURIComponent(token)}/resume`, { payload: parseJson(payload.value, "payload") });
          done.textContent = `delivered (${answer.resume_id})`;
        } catch (e) { problem(e); }
      };
      return h("form", { "data-testid": "resume-form", "data-token": token, onsubmit: resume },
        h("label", {}, `hook ${token}: payload (JSON)`, payload),
        h("button", { class: "primary", type: "submit", text: "Resume" }), done);
    }

    function renderGantt() {
      const { run, timeline } = state;
      if (!timeline) return;
      const origin = ms(run.created_at);
      const now = TERMINAL.has(run.status) ? ms(run.completed_at) : serverNow();
      const total = Math.max(now - origin, 1);
      const pos = (iso, fallback) => {
        const t = iso ? ms(iso) : fallback;
        return Math.min(100, Math.max(0, ((t - origin) / total) * 100));
      };
      const place = (el, startIso, endIso) => {
        const left = pos(startIso, now);
        el.style.left = `${left}%`;
        el.style.width = `${Math.max(pos(endIso, now) - left, 0)}%`;
        return el;
      };
      const took = (startIso, endIso) => duration(((endIso ? ms(endIso) : now) - ms(startIso)) / 1000);
      const rows = [ganttRow("run", "run", "run", run.status,
        place(h("div", { class: `bar run${run.completed_at ? "" : " open"}` }), run.started_at || run.created_at, run.completed_at),
        took(run.started_at || run.created_at, run.completed_at))];
      for (const span of timeline.spans.slice(0, MAX_GANTT_ROWS)) {
        const track = [place(h("div", { class: `bar ${span.kind}${span.ended_at ? "" : " open"}` }), span.created_at, span.ended_at)];
        for (const a of span.attempts) {
          const label = `attempt ${a.attempt}: ${a.outcome} ${took(a.started_at, a.ended_at)}` +
            (a.error ? ` — ${shortName(a.error.type)}: ${a.error.message}` : "");
          track.push(place(h("div", { class: `attempt ${a.outcome}`, title: label, "data-testid": "attempt", "data-outcome": a.outcome }), a.started_at, a.ended_at));
        }
        for (const at of span.received_at) {
          track.push(h("div", { class: "tick", style: { left: `${pos(at, now)}%` }, title: `payload at ${when(at)}` }));
        }
        const name = span.kind === "step" ? shortName(span.name) : span.name;
        const href = span.kind === "child" ? `#/runs/${encodeURIComponent(span.name)}` : null;
        rows.push(ganttRow(span.kind, name, span.name, span.status, track, took(span.created_at, span.ended_at), span.attempts.length, href));
        // a pending step under flow control: the slot or rate token it waits for (README "Flow control")
        if (span.waiting) rows.push(h("p", { class: "muted", "data-testid": "flow-wait", text: `${name}: ${span.waiting}` }));
      }
      const hidden = timeline.spans.length - MAX_GANTT_ROWS;
      if (hidden > 0) rows.push(h("p", { class: "muted", text: `… and ${hidden} more (the event log below has them all)` }));
      gantt.replaceChildren(h("div", { class: "axis" }, h("span"), h("span", {}, h("span", { text: "0" }), h("span", { text: duration(total / 1000) })), h("span")), ...rows);
    }

    function renderOutcome(run, timeline) {
      const parts = [];
      if (run.status === "completed") {
        parts.push(h("h2", { text: "Result" }), h("pre", { "data-testid": "result", text: JSON.stringify(run.result, null, 2) }));
      } else if (run.error) {
        parts.push(h("h2", { text: "Error" }), h("div", { class: "card", "data-testid": "run-error" }, errorView(run.error)));
      }
      const failed = timeline.spans.flatMap((s) => s.attempts.filter((a) => a.error).map((a) => [s, a]));
      if (failed.length) {
        parts.push(h("h2", { text: "Failed attempts" }), h("div", { class: "card", "data-testid": "failed-attempts" },
          failed.map(([s, a]) => h("div", { "data-testid": "failed-attempt" },
            h("strong", { text: `${shortName(s.name)} attempt ${a.attempt} (${a.outcome})` }), errorView(a.error)))));
      }
      outcome.replaceChildren(...parts);
    }

    const poll = poller(refresh, 1000);
    return { stop() { poll.stop(); clearInterval(animation); } };
  }

  function ganttRow(kind, name, title, status, track, took, attempts, href) {
    const label = h("div", { class: "gantt-label", title },
      h("span", { class: "kind", text: kind }), href ? h("a", { class: "mono", href, "data-testid": "gantt-child-link", text: name }) : name, attempts > 1 ? h("span", { class: "muted", text: ` ×${attempts}` }) : null);
    return h("div", { class: "gantt-row", "data-testid": "gantt-row", "data-kind": kind, "data-name": name, "data-status": status },
      label, h("div", { class: "gantt-track" }, track), h("div", { class: "gantt-took", "data-testid": "took", text: took }));
  }

  function legend() {
    const item = (color, text) => h("span", {}, h("i", { style: { background: `var(--${color})` } }), text);
    return h("div", { class: "legend" }, item("completed", "completed"), item("running", "running"),
      item("retrying", "failed, retried"), item("failed", "failed"), item("waiting", "sleep / hook / child"), item("cancelled", "abandoned"));
  }

  function summaryLine(s) {
    const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;
    let line = `${plural(s.steps, "step")}, ${plural(s.attempts, "attempt")} (${plural(s.retries, "retry", "retries")}` +
      (s.failed_steps ? `, ${s.failed_steps} failed)` : ")");
    if (s.duration_s !== null && s.duration_s !== undefined) line += `; ${duration(s.duration_s)}`;
    if (s.waits || s.hooks || s.children) {
      const kinds = [s.waits ? plural(s.waits, "sleep") : "", s.hooks ? plural(s.hooks, "hook") : "",
        s.children ? plural(s.children, "child", "children") : ""].filter(Boolean).join(", ");
      line += `, ${duration(s.waiting_s)} of it waiting (${kinds})`;
    }
    return line;
  }

  // An error with its stack and its chain of causes; `collapsed` puts each stack behind a "stack" toggle.
  function errorView(error, collapsed) {
    const stack = error.stack ? h("pre", { "data-testid": "error-stack", text: error.stack }) : null;
    return h("div", {},
      h("div", {}, h("span", { class: "error-type", text: shortName(error.type) }), `: ${error.message}`, error.code ? h("span", { class: "muted", text: ` (${error.code})` }) : null),
      stack && collapsed ? h("details", {}, h("summary", { text: "stack" }), stack) : stack,
      error.cause ? h("div", { class: "cause" }, h("div", { class: "muted", text: "caused by" }), errorView(error.cause, collapsed)) : null);
  }

  function eventRow(runId, run, row) {
    const offset = (ms(row.created_at) - ms(run.created_at)) / 1000;
    const payload = h("td", { "data-testid": "event-payload" });
    if (row.error) payload.append(errorView(row.error, true));
    else if (row.data) payload.append(dataView(row.data));
    else if (row.payload_bytes > 0) {
      const load = async () => {
        try {
          const detail = await api("GET", `/runs/${encodeURIComponent(runId)}/events/${row.position}`);
          payload.replaceChildren(dataView(detail.data, true));
        } catch (e) { problem(e); }
      };
      payload.append(h("button", { "data-testid": "load-payload", text: `load ${bytes(row.payload_bytes)}`, onclick: load }));
    }
    return h("tr", { "data-testid": "event-row", "data-type": row.type, "data-position": row.position },
      h("td", { class: "num", text: row.position }), h("td", { class: "num", text: `+${duration(offset)}` }),
      h("td", { class: "mono", text: row.type }), h("td", { text: shortName(row.step_name) || row.token || "" }), payload);
  }

  function dataView(data, open) {
    return h("div", {}, Object.entries(data).map(([key, value]) => {
      if (key === "error" && value && typeof value === "object") return errorView(value, true);
      const text = JSON.stringify(value, null, 2);
      if (text.length <= LONG_JSON_CHARS && !open) return h("div", {}, h("code", { text: `${key}: ${JSON.stringify(value)}` }));
      return h("details", { open: open && text.length <= 20000 },
        h("summary", { text: `${key} (${bytes(text.length)})` }), h("pre", { "data-testid": "payload-json", text }));
    }));
  }

  const bytes = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);

  // --- routing --------------------------------------------------------------------------------

  function route() {
    if (current) current.stop();
    problem(null);
    const hash = location.hash.replace(/^#/, "") || "/";
    const [where, query] = hash.split("?");
    const match = where.match(/^\/runs\/(.+)$/);
    current = match ? runPage(decodeURIComponent(match[1])) : listPage(new URLSearchParams(query || ""));
  }

  window.addEventListener("hashchange", route);
  route();
})();
