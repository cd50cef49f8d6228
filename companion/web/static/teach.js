// The "Teach a deck" page: several photos picked at once go each to its month (by the number
// its file name starts with, else in name order; one named "back..." to the back's place); the
// count of good photos and the
// "Teach the deck" button follow the months' answers.
(function () {
  "use strict";

  function slots() { return document.querySelectorAll(".month-slot"); }

  function update() {
    var panel = document.getElementById("teach-panel");
    if (!panel) return;
    var good = document.querySelectorAll(".month-slot[data-state=good]:not(.back-slot)").length;
    var backBad = document.querySelectorAll(".back-slot[data-state=bad]").length > 0;
    var count = document.getElementById("teach-count");
    if (count) count.textContent = (panel.dataset.ofTwelve || "{n} of 12").replace("{n}", good);
    var button = document.getElementById("teach-button");
    if (button) button.disabled = good < 12 || backBad;
    // with the page's script, the cards are looked for once four points are tapped
    document.querySelectorAll(".outline-fix").forEach(function (fix) {
      centresForm(fix).querySelector("button[type=submit]").disabled = tapsOf(fix).length !== 4;
    });
  }

  function monthOf(name) {
    var found = /^(\d{1,2})(?!\d)/.exec(name || "");
    var month = found ? Number(found[1]) : 0;
    return month >= 1 && month <= 12 ? month : 0;
  }

  function send(month, file) {
    var slot = document.getElementById("month-" + month);
    var input = slot && slot.querySelector("input.month-input");
    if (!input) return;
    var box = new DataTransfer();
    box.items.add(file);
    input.files = box.files;
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  document.addEventListener("change", function (e) {
    if (!e.target || e.target.id !== "teach-many") return;
    var files = Array.prototype.slice.call(e.target.files || []);
    files.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
    var backs = files.filter(function (f) { return /^back/i.test(f.name); });
    files = files.filter(function (f) { return !/^back/i.test(f.name); });
    var numbered = files.every(function (f) { return monthOf(f.name); });
    files.slice(0, 12).forEach(function (file, i) {
      send(numbered ? monthOf(file.name) : i + 1, file);
    });
    if (backs.length) send("back", backs[0]);
    e.target.value = "";
  });

  // Outlining a month's cards by hand: drag a corner (pointer events: mouse, touch and pen);
  // the card's outline, its number and the form's corners follow.
  function clamp(v) { return Math.min(1, Math.max(0, v)); }

  function corners(stage) {
    var cards = [];
    stage.querySelectorAll(".outline-handle").forEach(function (h) {
      var c = Number(h.dataset.card);
      cards[c] = cards[c] || [];
      cards[c][Number(h.dataset.index)] = [parseFloat(h.style.left) / 100, parseFloat(h.style.top) / 100];
    });
    return cards;
  }

  function redraw(stage) {
    var cards = corners(stage);
    cards.forEach(function (pts, c) {
      var poly = stage.querySelector('polygon[data-card="' + c + '"]');
      if (poly) poly.setAttribute("points", pts.map(function (p) { return p[0] + "," + p[1]; }).join(" "));
      var label = stage.querySelector('.outline-label[data-card="' + c + '"]');
      if (label) {
        var x = 0, y = 0;
        pts.forEach(function (p) { x += p[0] / 4; y += p[1] / 4; });
        label.style.left = (x * 100).toFixed(2) + "%";
        label.style.top = (y * 100).toFixed(2) + "%";
      }
    });
    var form = stage.parentNode.querySelector(".outline-quads");
    if (form) {
      form.value = cards.map(function (pts) {
        return pts.map(function (p) { return p[0].toFixed(4) + "," + p[1].toFixed(4); }).join(" ");
      }).join("; ");
    }
  }

  var dragging = null;
  document.addEventListener("pointerdown", function (e) {
    var h = e.target.closest && e.target.closest(".outline-handle");
    if (!h) return;
    e.preventDefault();
    dragging = { handle: h, stage: h.closest(".outline-stage"), id: e.pointerId };
    h.classList.add("dragging");
    try { h.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events */ }
  });
  document.addEventListener("pointermove", function (e) {
    if (!dragging || e.pointerId !== dragging.id) return;
    e.preventDefault();
    var r = dragging.stage.getBoundingClientRect();
    dragging.handle.style.left = (clamp((e.clientX - r.left) / r.width) * 100).toFixed(2) + "%";
    dragging.handle.style.top = (clamp((e.clientY - r.top) / r.height) * 100).toFixed(2) + "%";
    redraw(dragging.stage);
  });
  function drop(e) {
    if (!dragging || e.pointerId !== dragging.id) return;
    dragging.handle.classList.remove("dragging");
    dragging = null;
  }
  document.addEventListener("pointerup", drop);
  document.addEventListener("pointercancel", drop);

  // Arrow keys nudge a focused corner (Shift: four times as far).
  var STEPS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
  document.addEventListener("keydown", function (e) {
    var h = e.target.closest && e.target.closest(".outline-handle");
    var step = STEPS[e.key];
    if (!h || !step) return;
    e.preventDefault();
    var size = e.shiftKey ? 0.02 : 0.005;
    h.style.left = (clamp(parseFloat(h.style.left) / 100 + step[0] * size) * 100).toFixed(2) + "%";
    h.style.top = (clamp(parseFloat(h.style.top) / 100 + step[1] * size) * 100).toFixed(2) + "%";
    redraw(h.closest(".outline-stage"));
  });

  // ... or tapping the middle of each card (up to four points, numbered as tapped; a fifth
  // tap starts again); the server then finds the card around each point.
  function centresForm(fix) { return fix.querySelector(".centres-form"); }

  function showTaps(fix, points) {
    var stage = fix.querySelector(".outline-stage");
    stage.querySelectorAll(".tap-mark").forEach(function (m) { m.remove(); });
    points.forEach(function (p, i) {
      var mark = document.createElement("span");
      mark.className = "tap-mark";
      mark.textContent = String(i + 1);
      mark.style.left = (p[0] * 100).toFixed(2) + "%";
      mark.style.top = (p[1] * 100).toFixed(2) + "%";
      stage.appendChild(mark);
    });
    var form = centresForm(fix);
    form.querySelector(".outline-centres").value = points.map(function (p) {
      return p[0].toFixed(4) + "," + p[1].toFixed(4);
    }).join("; ");
    form.querySelector("button[type=submit]").disabled = points.length !== 4;
  }

  function tapsOf(fix) {
    var text = centresForm(fix).querySelector(".outline-centres").value;
    return text.split(";").map(function (p) { return p.trim(); }).filter(Boolean).map(function (p) {
      return p.split(",").map(Number);
    }).filter(function (p) { return p.length === 2 && !isNaN(p[0]) && !isNaN(p[1]); });
  }

  document.addEventListener("click", function (e) {
    var mode = e.target.closest && e.target.closest(".outline-mode");
    if (mode) {
      var fix = mode.closest(".outline-fix");
      fix.dataset.mode = mode.dataset.mode;
      fix.querySelectorAll(".outline-mode").forEach(function (b) {
        b.setAttribute("aria-pressed", String(b === mode));
      });
      return;
    }
    var clear = e.target.closest && e.target.closest("[data-clear-taps]");
    if (clear) showTaps(clear.closest(".outline-fix"), []);
  });

  document.addEventListener("pointerdown", function (e) {
    var stage = e.target.closest && e.target.closest(".outline-stage");
    var fix = stage && stage.closest(".outline-fix");
    if (!fix || fix.dataset.mode !== "centres") return;
    e.preventDefault();
    var r = stage.getBoundingClientRect();
    var points = tapsOf(fix);
    if (points.length >= 4) points = [];
    points.push([clamp((e.clientX - r.left) / r.width), clamp((e.clientY - r.top) / r.height)]);
    showTaps(fix, points);
  });

  document.addEventListener("input", function (e) {
    if (!e.target.classList || !e.target.classList.contains("outline-centres")) return;
    var fix = e.target.closest(".outline-fix");
    var form = centresForm(fix);
    form.querySelector("button[type=submit]").disabled = tapsOf(fix).length !== 4;
  });

  document.addEventListener("htmx:afterSwap", update);
  document.addEventListener("htmx:afterSettle", update);
  document.addEventListener("DOMContentLoaded", update);
})();
