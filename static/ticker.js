// Suanli — running rentals between two polls of the server.
//
// Every figure is rendered by the server; this only moves them along once
// a second and copies access commands. The Content-Security-Policy allows
// no inline script, so the figures come in data attributes:
//
//   data-tick="cost"   data-cost-fen  data-rate-fen-hour  data-at
//   data-tick="clock"  data-secs                          data-at
//
// data-at is the server's time (Unix ms) at which the figure was true. The
// browser's clock may be off, so the offset between the two clocks is
// taken when an element is first seen (the response is a fraction of a
// second old then) and the figure advances by the server time elapsed
// since data-at. An htmx swap brings new elements, which start afresh.
//
// Copy buttons (data-copy="ID of the element whose text to copy") are
// hidden until this script shows them: without JavaScript the command is
// plain, selectable text.
(function () {
  "use strict";

  var offsets = new WeakMap();

  function thousands(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  // yuan formats fen as "¥1,234.56", as the server does.
  function yuan(fen) {
    fen = Math.floor(fen);
    var cents = String(fen % 100);
    return "¥" + thousands(Math.floor(fen / 100)) + "." + (cents.length < 2 ? "0" + cents : cents);
  }

  // clock formats seconds as h:mm:ss, as the server does.
  function clock(secs) {
    secs = Math.floor(secs);
    var m = Math.floor(secs / 60) % 60, s = secs % 60;
    return Math.floor(secs / 3600) + ":" + (m < 10 ? "0" : "") + m + ":" + (s < 10 ? "0" : "") + s;
  }

  function tick() {
    var now = Date.now();
    var els = document.querySelectorAll("[data-tick]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i], d = el.dataset, at = Number(d.at);
      if (!isFinite(at)) continue;
      var offset = offsets.get(el);
      if (offset === undefined) {
        offset = now - at;
        offsets.set(el, offset);
        el.setAttribute("data-ticking", ""); // for tests and styles
      }
      var elapsed = Math.max(0, now - offset - at); // server ms since data-at
      if (d.tick === "cost") {
        var cost = Number(d.costFen), rate = Number(d.rateFenHour);
        if (isFinite(cost) && isFinite(rate) && rate > 0) {
          el.textContent = yuan(cost + rate * elapsed / 3600000);
        }
      } else if (d.tick === "clock") {
        var secs = Number(d.secs);
        if (isFinite(secs)) el.textContent = clock(secs + elapsed / 1000);
      }
    }
  }

  function showCopyButtons() {
    var bs = document.querySelectorAll("button[data-copy][hidden]");
    for (var i = 0; i < bs.length; i++) bs[i].hidden = false;
  }

  function selectText(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  function copied(btn) {
    var label = btn.textContent;
    if (btn.dataset.copied) btn.textContent = btn.dataset.copied;
    setTimeout(function () { btn.textContent = label; }, 2000);
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest ? ev.target.closest("button[data-copy]") : null;
    if (!btn) return;
    var src = document.getElementById(btn.dataset.copy);
    if (!src) return;
    var text = src.textContent.trim();
    var fallback = function () {
      // Older browsers, or a page not served over HTTPS: select the text
      // and ask for a copy; the selection stays for Ctrl+C if that fails.
      selectText(src);
      try {
        if (document.execCommand("copy")) copied(btn);
      } catch (e) { /* the text stays selected */ }
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { copied(btn); }, fallback);
    } else {
      fallback();
    }
  });

  function start() {
    showCopyButtons();
    tick();
    setInterval(tick, 1000);
  }

  // htmx swaps in new fragments: show their copy buttons and tick at once.
  document.addEventListener("htmx:load", function () {
    showCopyButtons();
    tick();
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
