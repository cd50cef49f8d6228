// A phone's browser as the camera: its back camera, a picture about 10 times a second posted
// to the server (JPEG), shown with the zones over it; the screen kept awake while it sends.
// No inline scripts (the Content-Security-Policy forbids them): everything is wired here.
(function () {
  "use strict";

  function fill(text, values) {
    return String(text || "").replace(/\{(\w+)\}/g, function (_, key) {
      return key in values ? values[key] : "";
    });
  }

  function drawZones(svg, labels, zones) {
    var ns = "http://www.w3.org/2000/svg";
    zones.forEach(function (zone) {
      var shape = document.createElementNS(ns, "polygon");
      shape.setAttribute("points", zone.polygon.map(function (p) { return p[0] + "," + p[1]; }).join(" "));
      shape.setAttribute("class", zone.kind === "captures" ? "captures" : "field");
      shape.dataset.zone = zone.name;
      svg.appendChild(shape);
      var xs = zone.polygon.map(function (p) { return p[0]; });
      var ys = zone.polygon.map(function (p) { return p[1]; });
      var label = document.createElement("span");
      label.textContent = zone.label;
      label.style.left = (100 * Math.min.apply(null, xs)) + "%";
      label.style.top = (100 * Math.min.apply(null, ys)) + "%";
      labels.appendChild(label);
    });
  }

  // The sentence of an error answer (its alert's <strong>, or a page's <h1>).
  function sentenceOf(html) {
    try {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var el = doc.querySelector("#flash strong, .flash-msg strong, main h1, strong, h1");
      return el ? el.textContent.trim() : "";
    } catch (e) { return ""; }
  }

  function start(root) {
    var send = JSON.parse(root.dataset.send);
    var words = JSON.parse(root.dataset.words || "{}");
    var zones = JSON.parse(root.dataset.zones || "[]");
    var csrf = "";
    try { csrf = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRF-Token"]; } catch (e) { csrf = ""; }
    var startButton = document.getElementById("phone-start");
    var stopButton = document.getElementById("phone-stop");
    var stage = document.getElementById("phone-stage");
    var canvas = document.getElementById("phone-canvas");
    var figures = document.getElementById("phone-figures");
    var problem = document.getElementById("phone-problem");
    var turn = document.getElementById("phone-turn");
    var context = canvas.getContext("2d");
    var video = document.createElement("video");
    video.muted = true;
    video.playsInline = true;
    video.setAttribute("playsinline", "");
    // In the page, though unseen: some phones' browsers do not play a video kept outside it.
    video.className = "phone-video";
    stage.appendChild(video);
    drawZones(document.getElementById("phone-zones"), document.getElementById("phone-zone-labels"), zones);

    var stream = null, timer = null, running = false, inFlight = false;
    var sent = 0, times = [], wakeLock = null, awake = false;

    function say(text) {
      problem.textContent = text || "";
      problem.hidden = !text;
    }

    function showFigures() {
      var rate = 0;
      if (times.length > 1) rate = (times.length - 1) * 1000 / (times[times.length - 1] - times[0]);
      figures.textContent = fill(words.sent, { n: sent, rate: rate.toFixed(1) }) + " · " +
        (awake ? words.awake : words.may_sleep);
      root.dataset.sent = String(sent);
    }

    function keepAwake() {
      if (!("wakeLock" in navigator)) { awake = false; showFigures(); return; }
      navigator.wakeLock.request("screen").then(function (lock) {
        wakeLock = lock;
        awake = true;
        lock.addEventListener("release", function () { awake = false; showFigures(); });
        showFigures();
      }).catch(function () { awake = false; showFigures(); });
    }

    function post(blob) {
      return fetch(send.url, {
        method: "POST",
        body: blob,
        headers: { "Content-Type": "image/jpeg", "X-CSRF-Token": csrf },
        credentials: "same-origin",
        cache: "no-store"
      }).then(function (answer) {
        if (answer.ok) {
          sent += 1;
          times.push(performance.now());
          if (times.length > 30) times.shift();
          say("");
          return;
        }
        return answer.text().then(function (body) {
          say(fill(words.refused, { status: answer.status, message: sentenceOf(body) }));
          // Not joined, or this server's camera is not a phone: sending again will not help.
          if (answer.status === 403 || answer.status === 404 || answer.status === 409) stop();
        });
      }).catch(function () { say(words.unreachable); });
    }

    function grab() {
      var width = video.videoWidth, height = video.videoHeight;
      if (!width || !height) return;
      var scale = Math.min(1, send.width / Math.max(width, height));
      var w = Math.round(width * scale), h = Math.round(height * scale);
      if (canvas.width !== w || canvas.height !== h) {
        canvas.width = w;
        canvas.height = h;
        stage.scrollIntoView({ block: "start" });  // the whole picture in view, once it has its size
      }
      context.drawImage(video, 0, 0, w, h);
      turn.hidden = height <= width;
      inFlight = true;
      canvas.toBlob(function (blob) {
        if (!blob || !running) { inFlight = false; return; }
        post(blob).then(function () { inFlight = false; showFigures(); });
      }, "image/jpeg", send.quality);
    }

    function tick() {
      if (!running) return;
      timer = setTimeout(tick, send.every_ms);
      // One picture in flight at a time: a slow Wi-Fi gets fewer, never a queue of old ones.
      if (!inFlight && video.readyState >= 2) grab();
    }

    function stop() {
      running = false;
      root.classList.remove("sending");
      clearTimeout(timer);
      if (stream) stream.getTracks().forEach(function (track) { track.stop(); });
      stream = null;
      if (wakeLock) wakeLock.release().catch(function () {});
      wakeLock = null;
      awake = false;
      startButton.hidden = false;
      stopButton.hidden = true;
    }

    function begin() {
      say("");
      if (!window.isSecureContext || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
        say(words.insecure);
        return;
      }
      navigator.mediaDevices.getUserMedia({
        audio: false,
        video: {
          facingMode: { ideal: "environment" },
          width: { ideal: send.width },
          height: { ideal: send.height }
        }
      }).then(function (s) {
        stream = s;
        stage.hidden = false;  // the video plays in the page, seen or not
        video.srcObject = s;
        return video.play();
      }).then(function () {
        running = true;
        root.classList.add("sending");
        startButton.hidden = true;
        stopButton.hidden = false;
        keepAwake();
        showFigures();
        tick();
      }).catch(function (err) {
        stop();
        stage.hidden = true;
        say(err && err.name === "NotAllowedError" ? words.denied
          : fill(words.no_camera, { reason: (err && err.name) || "?" }));
      });
    }

    startButton.addEventListener("click", begin);
    stopButton.addEventListener("click", stop);
    // The wake lock is let go when the page is hidden; take it again when it comes back.
    document.addEventListener("visibilitychange", function () {
      if (running && document.visibilityState === "visible") keepAwake();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("phone-camera");
    if (root && document.getElementById("phone-start")) start(root);
  });
})();
