/* Helpers shared by the student page and the teacher board (no build step). */
"use strict";

const VX = (() => {
  /* Read a secret from the address once — the fragment (#name=…, never sent
     to the server) or the query string — keep it in this tab's session
     storage and remove it from the address bar (so it is not bookmarked,
     shared by copy-paste or sent as a referrer). */
  function takeSecret(param, storageKey) {
    const url = new URL(window.location.href);
    const fragment = new URLSearchParams(url.hash.replace(/^#/, ""));
    const fromUrl = fragment.get(param) || url.searchParams.get(param);
    if (fromUrl) {
      sessionStorage.setItem(storageKey, fromUrl);
      url.searchParams.delete(param);
      fragment.delete(param);
      const hash = fragment.toString();
      history.replaceState(null, "", url.pathname + url.search + (hash ? "#" + hash : ""));
      return fromUrl;
    }
    return sessionStorage.getItem(storageKey);
  }

  /* The claims of a student token (signed, not secret): {s: student key, exp}. */
  function tokenClaims(token) {
    try {
      const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const json = atob(part + "=".repeat((4 - (part.length % 4)) % 4));
      const claims = JSON.parse(json);
      return typeof claims.s === "string" ? claims : null;
    } catch (_) {
      return null;
    }
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clock(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return "";
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function setStatus(state, text) {
    const node = document.getElementById("status");
    if (!node) return;
    node.dataset.state = state;
    node.textContent = text;
  }

  return { takeSecret, tokenClaims, el, clock, setStatus };
})();
