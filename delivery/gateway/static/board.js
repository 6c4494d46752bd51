/* Teacher board: one row per trigger, merged from the snapshot and the live
   `trigger`, `outcome` and `nudge` events (which may arrive in any order). */
"use strict";

(() => {
  const MAX_ROWS = 500;
  const rows = new Map(); /* trigger_id -> merged record */
  const tbody = document.getElementById("rows");
  const empty = document.getElementById("empty");
  const filter = document.getElementById("filter");
  const summary = document.getElementById("summary");
  const login = document.getElementById("login");
  const main = document.getElementById("board-main");
  let source = null;
  let retryTimer = null;
  let token = VX.takeSecret("admin_token", "vexnudge.admin_token"); /* #admin_token=… */

  function merge(trigger_id, patch) {
    if (!trigger_id) return;
    const row = rows.get(trigger_id) || { trigger_id, status: "pending", message: null };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null || value === undefined) continue;
      if (key === "status" && !statusWins(row.status, value)) continue;
      row[key] = value;
    }
    rows.set(trigger_id, row);
  }

  /* A final status (acted/suppressed/failed) is never overwritten by pending. */
  function statusWins(current, next) {
    return !(next === "pending" && current && current !== "pending");
  }

  function evidenceText(row) {
    const ev = row.evidence || {};
    const parts = [];
    if (row.detail) parts.push(row.detail);
    if (Array.isArray(ev.recent_distances) && ev.recent_distances.length) {
      parts.push("distances " + ev.recent_distances.map((d) => (d === null ? "–" : d)).join(", "));
    }
    if (ev.edit_distance !== null && ev.edit_distance !== undefined) parts.push("last change " + ev.edit_distance);
    if (ev.zero_streak) parts.push("identical reruns " + ev.zero_streak);
    if (ev.iterative_count) parts.push("steady edits " + ev.iterative_count);
    if (ev.idle_s !== null && ev.idle_s !== undefined) parts.push("idle " + Math.round(ev.idle_s) + " s");
    if (ev.threshold !== null && ev.threshold !== undefined) parts.push("threshold " + ev.threshold);
    return parts.join(" · ");
  }

  function outcomeCell(row) {
    const td = VX.el("td", "outcome status-" + (row.status || "pending"));
    if (row.message && row.message.text) {
      td.appendChild(VX.el("span", "tag sent", "sent"));
      td.appendChild(VX.el("q", "nudge-text", row.message.text));
      const classes = (row.message.feedback_classes || []).join(", ");
      const meta = [classes, row.message.model].filter(Boolean).join(" · ");
      if (meta) td.appendChild(VX.el("small", "meta", meta));
    } else if (row.status === "suppressed") {
      td.appendChild(VX.el("span", "tag suppressed", "suppressed"));
      td.appendChild(VX.el("span", "reason", row.reason || ""));
    } else if (row.status === "failed") {
      td.appendChild(VX.el("span", "tag failed", "failed"));
      td.appendChild(VX.el("span", "reason", row.reason || ""));
    } else if (row.status === "acted") {
      td.appendChild(VX.el("span", "tag sent", "sent"));
    } else {
      td.appendChild(VX.el("span", "tag pending", "pending"));
    }
    return td;
  }

  function draw() {
    const wanted = filter.value.trim().toLowerCase();
    const list = [...rows.values()]
      .filter((r) => !wanted || (r.student_key || "").includes(wanted))
      .sort((a, b) => String(b.fired_at || "").localeCompare(String(a.fired_at || "")));
    tbody.replaceChildren();
    for (const row of list.slice(0, MAX_ROWS)) {
      const tr = VX.el("tr");
      tr.dataset.triggerId = row.trigger_id;
      tr.dataset.type = row.type || "";
      tr.dataset.status = row.message ? "acted" : (row.status || "pending");
      const time = VX.el("td", "time", VX.clock(row.fired_at));
      time.title = row.fired_at || "";
      tr.appendChild(time);
      tr.appendChild(VX.el("td", "student", row.student_key));
      tr.appendChild(VX.el("td", "type", row.type));
      tr.appendChild(VX.el("td", "evidence", evidenceText(row)));
      tr.appendChild(outcomeCell(row));
      tbody.appendChild(tr);
    }
    empty.hidden = list.length > 0;
    const students = new Set(list.map((r) => r.student_key)).size;
    summary.textContent = list.length + " triggers · " + students + " students";
  }

  function on(name, handler) {
    source.addEventListener(name, (event) => {
      try { handler(JSON.parse(event.data)); draw(); } catch (err) { console.error("bad frame", err); }
    });
  }

  function retry(delayMs) {
    clearTimeout(retryTimer);
    retryTimer = setTimeout(connect, delayMs);
  }

  function refused() {
    /* The admin token was refused: ask for it again. */
    sessionStorage.removeItem("vexnudge.admin_token");
    token = null;
    VX.setStatus("closed", "offline (wrong token?)");
    login.hidden = false;
  }

  /* The admin token travels only in the Authorization header: it buys a
     short-lived board token, which the EventSource (that cannot set headers)
     puts in its address.  Every (re)connect buys a fresh one. */
  async function boardToken() {
    const response = await fetch("/admin/board/token", {
      method: "POST", headers: { "Authorization": "Bearer " + token }, cache: "no-store",
    });
    if (response.status === 401) return { refused: true };
    if (!response.ok) return {};
    const body = await response.json().catch(() => ({}));
    return { token: body.token };
  }

  async function connect() {
    if (source) { source.close(); source = null; }
    if (!token) return;
    let minted;
    try { minted = await boardToken(); } catch (_) { minted = {}; }
    if (minted.refused) { refused(); return; }
    if (!minted.token) { VX.setStatus("reconnecting", "reconnecting…"); retry(3000); return; }
    source = new EventSource("/admin/board/stream?" + new URLSearchParams({ board_token: minted.token }));
    on("snapshot", (data) => { for (const row of data.triggers || []) merge(row.trigger_id, row); });
    on("trigger", (row) => merge(row.trigger_id, row));
    on("outcome", (o) => merge(o.trigger_id, { status: o.status, reason: o.reason, type: o.type,
                                               student_key: o.student_key, session_id: o.session_id }));
    on("nudge", (m) => merge(m.trigger_id, { message: m, status: "acted", student_key: m.student_key }));
    source.addEventListener("evicted", () => {
      source.close();
      VX.setStatus("closed", "opened in another window");
    });
    source.onopen = () => VX.setStatus("live", "live");
    source.onerror = () => {
      /* The board token in the address may have expired: reconnect with a new one. */
      if (source) source.close();
      VX.setStatus("reconnecting", "reconnecting…");
      retry(2000);
    };
  }

  function start() {
    login.hidden = true;
    main.hidden = false;
    connect();
  }

  login.addEventListener("submit", (event) => {
    event.preventDefault();
    token = document.getElementById("admin-token").value.trim();
    if (!token) return;
    sessionStorage.setItem("vexnudge.admin_token", token);
    start();
  });
  filter.addEventListener("input", draw);
  if (token) start(); else login.hidden = false;
})();
