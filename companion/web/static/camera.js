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

  // No picture to show: the sentence saying so instead of a broken image (and its alt text
  // under the zones' names); a picture shown before stays, the sentence over its foot.
  function noPicture(img, missing) {
    if (!img.complete || !img.naturalWidth) img.hidden = true;
    if (missing) missing.hidden = false;
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
        noPicture(img, missing);
        next(RETRY_MS);
      };
      probe.src = frameUrl + (frameUrl.indexOf("?") === -1 ? "?" : "&") + "t=" + Date.now();
    }
    load();
    return function () { stopped = true; clearTimeout(timer); };
  }

  // The names over the picture (the picture carries only the outlines): each card's name in
  // the page's language and each zone's, from /live/cards, placed near its card where it
  // covers no other name and as little of the cards as it can; a name moved off its card is
  // joined to it by a line. A name with no free place within reach is left out rather than
  // laid over another.
  var LABELS_EVERY_MS = 500;
  var STEPS_DOWN = 12, STEPS_ACROSS = 4;  // how far a name may move: in its heights, half-widths

  function overlapArea(a, b) {
    var w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
    var h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
    return w > 0 && h > 0 ? w * h : 0;
  }

  function placeLabels(data, img, layer, leaders) {
    var W = img.clientWidth, H = img.clientHeight;
    layer.textContent = "";
    while (leaders.firstChild) leaders.removeChild(leaders.firstChild);
    leaders.setAttribute("viewBox", "0 0 " + W + " " + H);
    if (!W || !H) return;
    var cards = (data.cards || []).map(function (c) {
      var xs = c.quad.map(function (p) { return p[0] * W; });
      var ys = c.quad.map(function (p) { return p[1] * H; });
      return { c: c, box: [Math.min.apply(null, xs), Math.min.apply(null, ys),
                           Math.max.apply(null, xs), Math.max.apply(null, ys)] };
    });
    var items = [];
    (data.zones || []).forEach(function (z) {
      var xs = z.polygon.map(function (p) { return p[0] * W; });
      var ys = z.polygon.map(function (p) { return p[1] * H; });
      // A zone's name sits inside its top-left corner.
      items.push({ text: z.label, cls: "tag zone", zone: z.name,
                   ax: Math.min.apply(null, xs) + 4, ay: Math.min.apply(null, ys) + 4, corner: true });
    });
    cards.forEach(function (k) {
      items.push({ text: k.c.name, cls: "tag card" + (k.c.back ? " back" : k.c.sure ? "" : " doubt"),
                   ax: (k.box[0] + k.box[2]) / 2, ay: (k.box[1] + k.box[3]) / 2 });
    });
    items.forEach(function (it) {
      it.el = document.createElement("span");
      it.el.className = it.cls;
      it.el.textContent = it.text;
      if (it.zone) it.el.dataset.zone = it.zone;
      layer.appendChild(it.el);
    });
    var placed = [];
    items.forEach(function (it) {
      var w = it.el.offsetWidth, h = it.el.offsetHeight;
      var best = null, bestCost = Infinity;
      for (var dy = -STEPS_DOWN; dy <= STEPS_DOWN; dy++) {
        for (var dx = -STEPS_ACROSS; dx <= STEPS_ACROSS; dx++) {
          var x = it.corner ? it.ax + dx * w * 0.55 : it.ax - w / 2 + dx * w * 0.55;
          var y = it.corner ? it.ay + dy * h * 1.1 : it.ay - h / 2 + dy * h * 1.1;
          x = Math.max(0, Math.min(W - w, x));
          y = Math.max(0, Math.min(H - h, y));
          var r = [x, y, x + w, y + h];
          var free = true;
          for (var i = 0; i < placed.length; i++) {
            if (overlapArea(r, placed[i]) > 0) { free = false; break; }
          }
          if (!free) continue;
          var cost = 0.15 * w * h * (Math.abs(dx) + Math.abs(dy));
          cards.forEach(function (k) {
            var area = Math.max(1, (k.box[2] - k.box[0]) * (k.box[3] - k.box[1]));
            cost += w * h * overlapArea(r, k.box) / area;
          });
          if (cost < bestCost) { bestCost = cost; best = r; }
        }
      }
      if (!best) { it.el.remove(); return; }
      placed.push(best);
      it.el.style.left = best[0] + "px";
      it.el.style.top = best[1] + "px";
      var inside = it.ax >= best[0] && it.ax <= best[2] && it.ay >= best[1] && it.ay <= best[3];
      if (!inside && !it.corner) {
        var line = document.createElementNS("http://www.w3.org/2000/svg", "line");
        line.setAttribute("x1", it.ax); line.setAttribute("y1", it.ay);
        line.setAttribute("x2", Math.max(best[0], Math.min(best[2], it.ax)));
        line.setAttribute("y2", Math.max(best[1], Math.min(best[3], it.ay)));
        leaders.appendChild(line);
      }
    });
    layer.dataset.frame = String(data.frame);
  }

  function nameCards(view, img) {
    var layer = document.getElementById("frame-labels");
    var leaders = document.getElementById("frame-leaders");
    var url = view.dataset.cards;
    if (!layer || !leaders || !url) return;
    var last = null, asking = false, shown = "";
    function show() {
      if (!last || !img.complete) return;
      var key = JSON.stringify(last) + img.clientWidth + "x" + img.clientHeight;
      if (key === shown) return;  // the same names at the same size: already in place
      shown = key;
      placeLabels(last, img, layer, leaders);
    }
    function ask() {
      if (asking || document.hidden) return;
      asking = true;
      fetch(url, { cache: "no-store", credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) { asking = false; if (data) { last = data; show(); } })
        .catch(function () { asking = false; });
    }
    ask();
    setInterval(ask, LABELS_EVERY_MS);
    img.addEventListener("load", show);
    window.addEventListener("resize", show);
  }

  function liveView(view) {
    var img = document.getElementById("live-frame");
    var missing = document.getElementById("frame-missing");
    if (!img) return;
    img.addEventListener("error", function () { noPicture(img, missing); });
    img.addEventListener("load", function () { img.hidden = false; });
    if (img.complete && !img.naturalWidth && img.getAttribute("src")) noPicture(img, missing);
    nameCards(view, img);
    var stop = refreshFrames(img, view.dataset.frame, missing);
    document.querySelectorAll('input[name="live-mode"]').forEach(function (radio) {
      radio.addEventListener("change", function () {
        if (!radio.checked) return;
        stop();
        if (radio.value === "stream") {
          stop = function () { img.removeAttribute("src"); };
          img.onerror = function () { noPicture(img, missing); };
          img.src = view.dataset.stream + "?t=" + Date.now();
        } else {
          img.onerror = null;
          stop = refreshFrames(img, view.dataset.frame, missing);
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var holder = document.querySelector("#live-view[data-status], #calibrate[data-status], #phone-camera[data-status], #camera-link[data-status]");
    if (holder) pollStatus(holder.dataset.status);
    var view = document.getElementById("live-view");
    if (view) liveView(view);
  });
})();
