// The camera on the tablet: its state (polled from /live/status) wherever it is shown, and
// the live view's picture (refreshed snapshots, or the MJPEG stream when chosen).
// No inline scripts (the Content-Security-Policy forbids them): everything is wired here.
(function () {
  "use strict";

  var STATUS_EVERY_MS = 1000;
  var FRAME_EVERY_MS = 250;
  var RETRY_MS = 1000;

  // The page's words (base.html's data-words, in the page's language); English without them.
  var WORDS = {};
  try { WORDS = JSON.parse(document.body.dataset.words || "{}"); } catch (e) { WORDS = {}; }
  function stateName(state) { return (WORDS.camera && WORDS.camera[state]) || state; }

  function showStatus(s) {
    document.querySelectorAll("[data-field]").forEach(function (el) {
      var key = el.dataset.field;
      if (!(key in s)) return;
      el.textContent = key === "fps" ? Number(s.fps).toFixed(1)
        : key === "camera" ? stateName(s.camera) : String(s[key]);
    });
    document.querySelectorAll("#camera-state, #camera-link").forEach(function (el) {
      el.className = el.className.replace(/\bcam-\w+\b/g, "").trim() + " cam-" + s.camera;
      if (el.id === "camera-link") el.title = s.message;
    });
    // What the camera suggests (a redeal, the next round): the players confirm it on the board.
    document.querySelectorAll("[data-proposal]").forEach(function (el) {
      var text = s.proposal && s.proposal.text;
      el.textContent = text ? (WORDS.camera_says || "Camera: {text}").replace("{text}", text) : "";
      el.hidden = !text;
    });
    var view = document.getElementById("live-view");
    if (view) view.dataset.camera = s.camera;
  }

  function pollStatus(url) {
    var timer = null;
    function tick() {
      if (document.hidden) { timer = setTimeout(tick, STATUS_EVERY_MS); return; }
      fetch(url, { cache: "no-store", credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (s) { if (s) showStatus(s); })
        .catch(function () {
          showStatus({ camera: "lost",
            message: WORDS.unreachable || "The server cannot be reached; is it still running?" });
        })
        .then(function () { timer = setTimeout(tick, STATUS_EVERY_MS); });
    }
    tick();
    return function () { clearTimeout(timer); };
  }

  // Snapshots: load the next picture off-screen and swap it in once it has arrived, so the
  // view never flickers and never asks faster than the tablet can show.
  function refreshFrames(img, frameUrl, missing) {
    var stopped = false;
    var timer = null;
    function next(delay) {
      if (!stopped) timer = setTimeout(load, delay);
    }
    function load() {
      if (document.hidden) return next(RETRY_MS);  // a sleeping tablet asks for nothing
      var probe = new Image();
      probe.onload = function () {
        if (stopped) return;
        img.src = probe.src;
        img.hidden = false;
        if (missing) missing.hidden = true;
        next(FRAME_EVERY_MS);
      };
      probe.onerror = function () {
        if (stopped) return;
        if (missing) missing.hidden = false;
        next(RETRY_MS);
      };
      probe.src = frameUrl + (frameUrl.indexOf("?") === -1 ? "?" : "&") + "t=" + Date.now();
    }
    load();
    return function () { stopped = true; clearTimeout(timer); };
  }

  function liveView(view) {
    var img = document.getElementById("live-frame");
    var missing = document.getElementById("frame-missing");
    if (!img) return;
    var stop = refreshFrames(img, view.dataset.frame, missing);
    document.querySelectorAll('input[name="live-mode"]').forEach(function (radio) {
      radio.addEventListener("change", function () {
        if (!radio.checked) return;
        stop();
        if (radio.value === "stream") {
          stop = function () { img.removeAttribute("src"); };
          img.onerror = function () { if (missing) missing.hidden = false; };
          img.src = view.dataset.stream + "?t=" + Date.now();
        } else {
          img.onerror = null;
          stop = refreshFrames(img, view.dataset.frame, missing);
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var holder = document.querySelector("#live-view[data-status], #calibrate[data-status], #camera-link[data-status]");
    if (holder) pollStatus(holder.dataset.status);
    var view = document.getElementById("live-view");
    if (view) liveView(view);
  });
})();
