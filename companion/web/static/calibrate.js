// The calibration page: drag each zone's corners over the camera's picture (pointer events:
// mouse, touch and pen alike). Dragging writes the corners into the form's zone_<name>
// fields; "Save the zones" posts them. Arrow keys nudge a focused corner; typed numbers
// move the corners too.
(function () {
  "use strict";

  function clamp(v) { return Math.min(1, Math.max(0, v)); }

  function setup(stage) {
    var form = document.getElementById("zones-form");
    var corners = {};  // zone name -> [[x, y], ...]
    stage.querySelectorAll(".handle").forEach(function (h) {
      var z = h.dataset.zone;
      corners[z] = corners[z] || [];
      corners[z][Number(h.dataset.index)] = [
        parseFloat(h.style.left) / 100, parseFloat(h.style.top) / 100
      ];
    });

    function field(zone) {
      return form ? form.querySelector('input[data-zone="' + zone + '"]') : null;
    }

    function draw(zone) {
      var pts = corners[zone];
      var poly = stage.querySelector('polygon[data-zone="' + zone + '"]');
      if (poly) poly.setAttribute("points", pts.map(function (p) { return p[0] + "," + p[1]; }).join(" "));
      stage.querySelectorAll('.handle[data-zone="' + zone + '"]').forEach(function (h) {
        var p = pts[Number(h.dataset.index)];
        h.style.left = (p[0] * 100).toFixed(2) + "%";
        h.style.top = (p[1] * 100).toFixed(2) + "%";
      });
      var label = stage.querySelector('.zone-label[data-zone="' + zone + '"]');
      if (label) {
        var cx = 0, cy = 0;
        pts.forEach(function (p) { cx += p[0]; cy += p[1]; });
        label.style.left = (cx / pts.length * 100).toFixed(2) + "%";
        label.style.top = (cy / pts.length * 100).toFixed(2) + "%";
      }
    }

    function write(zone) {
      var input = field(zone);
      if (input) {
        input.value = corners[zone].map(function (p) {
          return p[0].toFixed(4) + "," + p[1].toFixed(4);
        }).join(" ");
      }
    }

    var dragging = null;
    stage.addEventListener("pointerdown", function (e) {
      var h = e.target.closest(".handle");
      if (!h || h.disabled) return;
      e.preventDefault();
      dragging = { handle: h, zone: h.dataset.zone, index: Number(h.dataset.index), id: e.pointerId };
      h.classList.add("dragging");
      try { h.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events */ }
    });
    stage.addEventListener("pointermove", function (e) {
      if (!dragging || e.pointerId !== dragging.id) return;
      e.preventDefault();
      var r = stage.getBoundingClientRect();
      corners[dragging.zone][dragging.index] = [
        clamp((e.clientX - r.left) / r.width), clamp((e.clientY - r.top) / r.height)
      ];
      draw(dragging.zone);
      write(dragging.zone);
    });
    function end(e) {
      if (!dragging || e.pointerId !== dragging.id) return;
      dragging.handle.classList.remove("dragging");
      dragging = null;
    }
    stage.addEventListener("pointerup", end);
    stage.addEventListener("pointercancel", end);

    // Arrow keys nudge a focused corner (Shift: four times as far), for a fine adjustment.
    var STEPS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    stage.addEventListener("keydown", function (e) {
      var h = e.target.closest(".handle");
      var step = STEPS[e.key];
      if (!h || h.disabled || !step) return;
      e.preventDefault();
      var size = e.shiftKey ? 0.02 : 0.005;
      var p = corners[h.dataset.zone][Number(h.dataset.index)];
      corners[h.dataset.zone][Number(h.dataset.index)] = [
        clamp(p[0] + step[0] * size), clamp(p[1] + step[1] * size)
      ];
      draw(h.dataset.zone);
      write(h.dataset.zone);
    });

    // Typed corners (the "Corners as numbers" fields) move the drawing when they parse.
    if (form) {
      form.addEventListener("input", function (e) {
        var zone = e.target.dataset && e.target.dataset.zone;
        if (!zone) return;
        var pts = e.target.value.trim().split(/[\s;]+/).map(function (pair) {
          var xy = pair.split(",").map(Number);
          return xy.length === 2 && xy.every(function (v) { return isFinite(v) && v >= 0 && v <= 1; }) ? xy : null;
        });
        if (pts.length === corners[zone].length && pts.every(Boolean)) {
          corners[zone] = pts;
          draw(zone);
        }
      });
    }

    // The picture sets the stage's shape; without one, the zones sit on an empty 16:9 frame.
    var img = document.getElementById("calib-frame");
    var missing = document.getElementById("frame-missing");
    if (img) {
      img.addEventListener("error", function () {
        img.hidden = true;
        stage.classList.add("empty");
        if (missing) missing.hidden = false;
      });
      if (img.complete && img.naturalWidth === 0 && img.getAttribute("src")) {
        img.dispatchEvent(new Event("error"));
      }
      // The stage is as wide as the picture may be for the whole page, Save included, to fit
      // the screen's height (camera.css): that needs the picture's own shape.
      var shape = function () {
        if (img.naturalWidth && img.naturalHeight) {
          stage.style.setProperty("--aspect", String(img.naturalWidth / img.naturalHeight));
        }
      };
      img.addEventListener("load", shape);
      if (img.complete) shape();
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var stage = document.getElementById("calib-stage");
    if (stage) setup(stage);
  });
})();
