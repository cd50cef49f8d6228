// The tablet page's own behaviour: live updates, error messages, the picker overlay.
// No inline scripts (the Content-Security-Policy forbids them): everything is wired here.
(function () {
  "use strict";

  var source = null;
  var latest = 0;   // the newest seq the server announced
  var posting = 0;  // change requests in flight: their answer brings the new board anyway

  function board() { return document.getElementById("board"); }

  function refreshIfBehind() {
    var b = board();
    if (b && !posting && window.htmx && Number(b.dataset.seq) < latest) {
      htmx.trigger(document.body, "companion:update");
    }
  }

  // Live tally: the server streams the match's last seq, with the board as it is then
  // (rendered once for every tablet); a newer board replaces ours at once, and a seq alone
  // (a board the server could not send) makes us ask for it.
  function follow() {
    var b = board();
    if (!b || !b.dataset.live || source) return;
    source = new EventSource(b.dataset.live);
    // what tests (and a curious reader of the page) wait for: the stream is connected
    source.addEventListener("open", function () { document.body.dataset.liveStream = "open"; });
    source.addEventListener("error", function () { document.body.dataset.liveStream = "lost"; });
    source.addEventListener("update", function (e) {
      var data = JSON.parse(e.data);
      var seq = Number(data.seq);
      latest = Math.max(latest, seq);
      // While a change of ours is on its way, its answer brings the board (and closes the
      // picker): a pushed one now would reopen what that answer closes.
      if (data.board && !posting) showBoard(data.board, seq);
      refreshIfBehind();
    });
  }

  // A pushed board is the same for every tablet: its forms' CSRF token and request ids are
  // marks, filled in here (the token this page already sends, a fresh id per button).
  var CSRF_MARK = "\u0000csrf\u0000", RID_MARK = "\u0000rid\u0000";
  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || "";
    } catch (e) { return ""; }
  }
  function requestId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("");
  }
  function fillMarks(html) {
    var parts = html.split(CSRF_MARK).join(csrfToken()).split(RID_MARK);
    var out = parts[0];
    for (var i = 1; i < parts.length; i++) out += requestId() + parts[i];
    return out;
  }

  function showBoard(html, seq) {
    var b = board();
    if (!b || Number(b.dataset.seq) >= seq) return;
    var holder = document.createElement("template");
    holder.innerHTML = fillMarks(html);
    var fresh = holder.content.querySelector("#board");
    if (!fresh) return;
    b.replaceWith(fresh);
    if (window.htmx) htmx.process(fresh);
    boardReplaced();
  }

  function isPost(e) {
    var cfg = e.detail && e.detail.requestConfig;
    return cfg && String(cfg.verb).toLowerCase() === "post";
  }
  document.addEventListener("htmx:beforeRequest", function (e) { if (isPost(e)) posting++; });
  document.addEventListener("htmx:afterRequest", function (e) {
    if (!isPost(e)) return;
    posting = Math.max(0, posting - 1);
    setTimeout(refreshIfBehind, 0);  // after the swap: still behind means someone else wrote
  });

  function showError(html) {
    var flash = document.getElementById("flash");
    if (flash) flash.innerHTML = html;
  }


  // The capture picker: a tap chooses a card (a second tap lets it go); "Record" sends the
  // chosen cards as one change. Without this script each tile records its own card.
  function pickForm(el) { return el && el.closest ? el.closest("form.pick-many") : null; }
  function updatePickBar(form) {
    var chosen = form.querySelectorAll("input[name=card][data-chosen]");
    var count = form.querySelector(".pick-count");
    var record = form.querySelector("button.record");
    // The words come from the page (data-* of the bar, in the page's language); {n}: the count.
    var bar = form.querySelector(".pick-bar");
    function say(key, fallback) {
      var text = (bar && bar.getAttribute("data-" + key)) || fallback;
      return text.replace("{n}", chosen.length);
    }
    if (count) {
      count.textContent = chosen.length === 0 ? say("none", "No card chosen")
        : chosen.length === 1 ? say("one", "1 card chosen") : say("many", "{n} cards chosen");
    }
    if (record) {
      record.disabled = chosen.length === 0;
      record.textContent = chosen.length > 1 ? say("record-many", "Record {n} cards")
        : say("record", "Record");
    }
  }
  document.addEventListener("click", function (e) {
    var tileButton = e.target.closest ? e.target.closest("button.tile-btn[name=card]") : null;
    var form = pickForm(tileButton);
    if (!tileButton || !form || tileButton.disabled) return;
    e.preventDefault();
    var code = tileButton.value;
    var existing = form.querySelector('input[name=card][data-chosen][value="' + code + '"]');
    if (existing) {
      existing.remove();
      tileButton.classList.remove("chosen");
      tileButton.setAttribute("aria-pressed", "false");
    } else {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = "card";
      input.value = code;
      input.setAttribute("data-chosen", "");
      form.appendChild(input);
      tileButton.classList.add("chosen");
      tileButton.setAttribute("aria-pressed", "true");
    }
    updatePickBar(form);
  });


  // Two sides: the first player's half is turned towards him (kept for this browser).
  function applyTwoSides(on) {
    document.body.classList.toggle("two-sided", on);
    var toggle = document.querySelector("[data-two-sides]");
    if (toggle) toggle.setAttribute("aria-pressed", on ? "true" : "false");
  }
  document.addEventListener("DOMContentLoaded", function () {
    var saved = false;
    try { saved = window.localStorage.getItem("companion.twoSides") === "1"; } catch (e) {}
    applyTwoSides(saved);
  });
  document.addEventListener("click", function (e) {
    if (!e.target.closest || !e.target.closest("[data-two-sides]")) return;
    var on = !document.body.classList.contains("two-sided");
    applyTwoSides(on);
    try { window.localStorage.setItem("companion.twoSides", on ? "1" : "0"); } catch (err) {}
  });

  document.addEventListener("DOMContentLoaded", follow);

  // "Check this card" (the board's #checks) steps aside when nobody answers it: after its
  // data-aside-after seconds it folds to a one-line badge, so the game goes on around it; a
  // tap opens it again and it stays open. The same checks keep their clock and their state
  // across the board's refreshes (sessionStorage, keyed by the checks shown).
  var asideTimer = null;
  function remember(key, value) {
    try {
      if (value === undefined) return window.sessionStorage.getItem(key);
      window.sessionStorage.setItem(key, value);
    } catch (e) { /* storage refused: the panel just starts its clock again */ }
    return null;
  }
  function checksAside() {
    clearTimeout(asideTimer);
    var panel = document.getElementById("checks");
    if (!panel) return;
    var key = "companion-checks " + panel.dataset.checks;
    var seen = Number(remember(key + " seen")) || 0;
    if (!seen) { seen = Date.now(); remember(key + " seen", String(seen)); }
    var summary = panel.querySelector("summary");
    if (summary) summary.addEventListener("click", function () {
      remember(key + " opened", panel.open ? "" : "1");  // the tap opens it, or folds it
    });
    if (remember(key + " opened")) return;
    var wait = Number(panel.dataset.asideAfter || 20) * 1000 - (Date.now() - seen);
    if (wait <= 0) { panel.open = false; return; }
    asideTimer = setTimeout(function () {
      if (document.getElementById("checks") === panel) panel.open = false;
    }, wait);
  }
  document.addEventListener("DOMContentLoaded", checksAside);
  // A refresh asked for while the board's own request was under way can be lost: look again
  // now and then, so that an announced change is never left unshown for long.
  setInterval(refreshIfBehind, 1500);

  // The board was refreshed by someone else's change while the picker is open: refresh the
  // picker too, so that a tap on it is made against the match as it is now.
  function boardReplaced() {
    checksAside();
    var overlay = document.querySelector("#modal .overlay[data-src]");
    if (overlay && window.htmx) {
      htmx.ajax("GET", overlay.dataset.src, { target: "#modal", swap: "innerHTML" });
    }
  }
  document.addEventListener("htmx:afterSwap", function (e) {
    if (isPost(e) || !e.detail.target || e.detail.target.id !== "board") return;
    boardReplaced();
  });

  // htmx does not swap 4xx/5xx answers: show their one-sentence message instead.
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var text = xhr.responseText || "";
    if (text.indexOf("flash-msg") === -1) {
      var div = document.createElement("div");
      div.className = "flash-msg";
      var words = {};
      try { words = JSON.parse(document.body.dataset.words || "{}"); } catch (err) { words = {}; }
      var label = (words.error || "Error {status}").replace("{status}", xhr.status);
      div.textContent = label + ": " + (text.slice(0, 200) || xhr.statusText);
      text = div.outerHTML;
    }
    showError(text);
  });
  document.addEventListener("htmx:sendError", function () {
    showError('<div class="flash-msg"><strong>The server cannot be reached; is it still running?</strong></div>');
  });

  document.addEventListener("click", function (e) {
    var t = e.target.closest("[data-close-modal]");
    if (t) {
      e.preventDefault();
      document.getElementById("modal").innerHTML = "";
      return;
    }
    if (e.target.closest("[data-dismiss]")) {
      document.getElementById("flash").innerHTML = "";
      return;
    }
    if (e.target.closest("[data-reload]")) {
      e.preventDefault();
      window.location.reload();
      return;
    }
    // A tap on the dark area around the picker closes it.
    if (e.target.classList && e.target.classList.contains("overlay")) {
      document.getElementById("modal").innerHTML = "";
    }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") document.getElementById("modal").innerHTML = "";
  });
})();
