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

  // Live tally: the server streams the match's last seq; a newer one refreshes the board.
  function follow() {
    var b = board();
    if (!b || !b.dataset.live || source) return;
    source = new EventSource(b.dataset.live);
    source.addEventListener("update", function (e) {
      latest = Math.max(latest, Number(JSON.parse(e.data).seq));
      refreshIfBehind();
    });
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

  document.addEventListener("DOMContentLoaded", follow);

  // The board was refreshed by someone else's change while the picker is open: refresh the
  // picker too, so that a tap on it is made against the match as it is now.
  document.addEventListener("htmx:afterSwap", function (e) {
    if (isPost(e) || !e.detail.target || e.detail.target.id !== "board") return;
    var overlay = document.querySelector("#modal .overlay[data-src]");
    if (overlay && window.htmx) {
      htmx.ajax("GET", overlay.dataset.src, { target: "#modal", swap: "innerHTML" });
    }
  });

  // htmx does not swap 4xx/5xx answers: show their one-sentence message instead.
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var text = xhr.responseText || "";
    if (text.indexOf("flash-msg") === -1) {
      var div = document.createElement("div");
      div.className = "flash-msg";
      div.textContent = "Error " + xhr.status + ": " + (text.slice(0, 200) || xhr.statusText);
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
