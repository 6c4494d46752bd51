/* Student page: live messages over SSE, questions over POST.
   The stream's ids are message ids, so EventSource resumes by itself with
   Last-Event-ID after a drop; the page dedupes by message_id anyway, and
   keeps its own cursor from the frames' ids only (a frame without an id,
   sent while the history is still owed, does not move it).
   A question keeps its Idempotency-Key until the gateway accepted it, so a
   retry never stores it twice.
   Students see the conversation only: a proactive message gets a neutral
   "Check-in" badge, never an internal label. */
"use strict";

(() => {
  const MAX_CHARS = 2000;
  const HISTORY_S = 12 * 3600;
  const token = VX.takeSecret("token", "vexnudge.token");
  const claims = token ? VX.tokenClaims(token) : null;
  const list = document.getElementById("messages");
  const empty = document.getElementById("empty");
  const notice = document.getElementById("notice");
  const form = document.getElementById("ask");
  const box = document.getElementById("question");
  const count = document.getElementById("count");
  const askError = document.getElementById("ask-error");
  const sendButton = document.getElementById("send");
  const shown = new Map(); /* message_id -> <li> */
  let lastId = null;
  let source = null;
  let retryTimer = null;
  let pendingQuestion = null; /* {text, key} until the gateway accepts it */

  function showNotice(text) {
    notice.textContent = text;
    notice.hidden = !text;
  }

  if (!claims) {
    VX.setStatus("closed", "no access");
    showNotice("This page needs the link your teacher gave you.");
    form.hidden = true;
    return;
  }
  if (claims.exp * 1000 < Date.now()) {
    VX.setStatus("closed", "link expired");
    showNotice("Your link has expired. Ask your teacher for a new one.");
    form.hidden = true;
    return;
  }
  const base = "/v1/students/" + encodeURIComponent(claims.s);

  function render(msg) {
    const li = VX.el("li", "msg " + (msg.role === "student" ? "from-student" : "from-coach"));
    li.dataset.messageId = String(msg.message_id);
    li.dataset.origin = msg.origin;
    if (msg.badge) {
      li.classList.add("proactive");
      li.appendChild(VX.el("span", "badge", msg.badge));
    }
    li.appendChild(VX.el("p", "text", msg.text));
    const meta = VX.el("time", "meta", VX.clock(msg.created_at));
    meta.dateTime = msg.created_at;
    li.appendChild(meta);
    return li;
  }

  function insert(msg) {
    const id = Number(msg.message_id);
    if (shown.has(id)) return;
    const li = render(msg);
    shown.set(id, li);
    let after = null; /* keep id order even if a message arrives late */
    for (const node of list.children) {
      const other = Number(node.dataset.messageId);
      if (!Number.isNaN(other) && other > id) { after = node; break; }
    }
    list.insertBefore(li, after);
    const pending = list.querySelector('li.pending[data-pending-id="' + id + '"]');
    if (pending) pending.remove();
    empty.hidden = true;
    li.scrollIntoView({ block: "end", behavior: "smooth" });
  }

  /* Our own resume cursor follows the frames' ids (EventSource keeps the last one). */
  function advance(event) {
    const cursor = Number(event.lastEventId);
    if (event.lastEventId && !Number.isNaN(cursor) && (lastId === null || cursor > lastId)) lastId = cursor;
  }

  function onMessage(event) {
    try { insert(JSON.parse(event.data)); } catch (err) { console.error("bad frame", err); }
    advance(event);
  }

  function newKey() {
    return crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + "-" + Math.random().toString(36).slice(2);
  }

  function connect() {
    if (source) source.close();
    const params = new URLSearchParams({ token });
    if (lastId !== null) params.set("last_event_id", String(lastId));
    else params.set("since", String(Math.floor(Date.now() / 1000) - HISTORY_S));
    source = new EventSource(base + "/stream?" + params.toString());
    source.addEventListener("assistant_message", onMessage);
    source.addEventListener("student_message", onMessage);
    source.addEventListener("ready", (event) => {
      VX.setStatus("live", "live");
      let data = {};
      try { data = JSON.parse(event.data); } catch (_) { /* keep the defaults */ }
      showNotice(data.history === "pending" ? "Earlier messages will appear as soon as they can be loaded." : "");
    });
    source.addEventListener("history", (event) => { showNotice(""); advance(event); });
    source.addEventListener("evicted", () => {
      /* This conversation was opened in more windows than allowed: this one
         stops (reconnecting would only close another window's stream). */
      source.close();
      clearTimeout(retryTimer);
      VX.setStatus("closed", "paused");
      showNotice("This conversation is open in another window. Reload this page to use it here.");
    });
    source.onopen = () => VX.setStatus("live", "live");
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        /* The server refused the stream (e.g. an expired link) or is down: try
           again later from our own cursor. */
        VX.setStatus("closed", "offline");
        if (claims.exp * 1000 < Date.now()) {
          showNotice("Your link has expired. Ask your teacher for a new one.");
          return;
        }
        clearTimeout(retryTimer);
        retryTimer = setTimeout(connect, 10000);
      } else {
        VX.setStatus("reconnecting", "reconnecting…");
      }
    };
  }

  function updateCount() {
    count.textContent = box.value.length + " / " + MAX_CHARS;
    count.classList.toggle("over", box.value.length > MAX_CHARS);
  }

  async function ask(event) {
    event.preventDefault();
    const text = box.value.trim();
    askError.textContent = "";
    if (!text) { askError.textContent = "Type a question first."; return; }
    if (text.length > MAX_CHARS) { askError.textContent = "That is too long."; return; }
    sendButton.disabled = true;
    /* The same question keeps its key until it is accepted (a retry after a
       failure or a lost answer is stored once); another text is a new question. */
    if (!pendingQuestion || pendingQuestion.text !== text) pendingQuestion = { text, key: newKey() };
    try {
      const response = await fetch(base + "/messages", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token,
                   "Idempotency-Key": pendingQuestion.key },
        body: JSON.stringify({ text }),
      });
      const body = await response.json().catch(() => ({}));
      if (response.status !== 202) {
        const wait = Number(response.headers.get("Retry-After"));
        askError.textContent = (body.detail || "Could not send your question.") +
          (response.status === 503 && wait ? " Try again in " + wait + " s." : "");
        return;
      }
      pendingQuestion = null;
      box.value = "";
      updateCount();
      if (!shown.has(Number(body.message_id))) {
        const li = VX.el("li", "msg from-student pending");
        li.dataset.pendingId = String(body.message_id);
        li.appendChild(VX.el("p", "text", text));
        li.appendChild(VX.el("span", "meta", "sending…"));
        list.appendChild(li);
        empty.hidden = true;
      }
    } catch (err) {
      askError.textContent = "Could not reach the server; try again.";
    } finally {
      sendButton.disabled = false;
    }
  }

  box.addEventListener("input", updateCount);
  form.addEventListener("submit", ask);
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });
  updateCount();
  connect();
})();
