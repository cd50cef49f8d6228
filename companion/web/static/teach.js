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

  document.addEventListener("htmx:afterSwap", update);
  document.addEventListener("htmx:afterSettle", update);
  document.addEventListener("DOMContentLoaded", update);
})();
