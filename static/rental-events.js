// Suanli — the rental page's live block, pushed by the server.
//
// The block (#rental-live) names its event stream in data-events-url
// (GET /rentals/{id}/events). While the stream is open the server sends
// the block again whenever the rental changes, and nothing otherwise, so
// an open page costs the server nothing while nothing happens. Events:
//
//   card    the block's new HTML: it replaces the old one
//   usage   the GPU usage section's new HTML (#rental-usage): sent when
//           one of the rental's GPUs was sampled, and only then
//   reload  the status or the timeline changed: the whole page follows
//           (data: the rental's page, where a previewed change goes)
//   end     the rental is settled: nothing more will come
//   poll    this server cannot push: poll instead
//
// The usage section rides on the same stream: where it names what it
// shows (data-usage-seen), the stream is asked for it (?usage=), and
// sends it first only when that is no longer current.
//
// The block also carries htmx's every-3s polling (hx-get, hx-trigger),
// and the usage section its every-15s: the fallback where a browser has
// no EventSource, or its stream keeps failing. While the stream works,
// those polls are cancelled before they leave the browser.
(function () {
  "use strict";

  if (!window.EventSource) return; // htmx polls, as without this script

  var live = false; // the stream delivers: cancel htmx's polls
  var usageLive = false; // it delivers the usage section too
  var source = null;
  var failures = 0;

  function card() {
    return document.getElementById("rental-live");
  }

  function usage() {
    return document.getElementById("rental-usage");
  }

  // fallBack gives the block and the usage section back to htmx's
  // polling.
  function fallBack() {
    live = false;
    usageLive = false;
    if (source) source.close();
    source = null;
  }

  // swap replaces the element whose id the new HTML's root has.
  function swap(id, html) {
    var old = document.getElementById(id);
    if (!old) return;
    var tpl = document.createElement("template");
    tpl.innerHTML = html.trim();
    var el = tpl.content.firstElementChild;
    if (!el || el.id !== id) return;
    old.replaceWith(el);
    if (window.htmx) {
      window.htmx.process(el);
      // ticker.js starts the new figures and copy buttons on htmx:load.
      window.htmx.trigger(el, "htmx:load", { elt: el });
    }
  }

  function open(url) {
    if (!live) return; // fallen back meanwhile
    source = new EventSource(url);
    source.addEventListener("open", function () {
      failures = 0;
    });
    source.addEventListener("card", function (ev) {
      failures = 0;
      swap("rental-live", ev.data);
    });
    source.addEventListener("usage", function (ev) {
      failures = 0;
      swap("rental-usage", ev.data);
    });
    source.addEventListener("reload", function (ev) {
      fallBack();
      var to = ev.data || window.location.pathname;
      if (to !== window.location.pathname) {
        // The page answers a POST (a previewed change): reloading it
        // would post again.
        window.location.assign(to);
      } else {
        window.location.reload();
      }
    });
    source.addEventListener("end", function () {
      // The last card is settled and polls no more; the usage section,
      // if it still polls, asks once more and is settled too.
      usageLive = false;
      if (source) source.close();
      source = null;
    });
    source.addEventListener("poll", fallBack);
    source.addEventListener("error", function () {
      // The browser reconnects by itself unless the answer was not a
      // stream (CLOSED); after three failures in a row, poll instead.
      failures++;
      if (!source || source.readyState === EventSource.CLOSED || failures >= 3) fallBack();
    });
  }

  document.addEventListener("htmx:beforeRequest", function (ev) {
    if (!live) return;
    var el = card();
    if (el && ev.target === el) ev.preventDefault();
    el = usage();
    if (usageLive && el && ev.target === el) ev.preventDefault();
  });

  // The stream opens when the first poll would have been sent, 3 s after
  // the page loaded: the page is current until then, and a reload it
  // might ask for does not cut a page that is still loading (or the
  // flash message just shown) short. htmx's polls wait for it.
  function start() {
    var el = card();
    var url = el && el.getAttribute("data-events-url");
    if (!url) return;
    var u = usage();
    var seen = u && u.getAttribute("data-usage-seen");
    if (seen !== null && seen !== undefined) {
      url += (url.indexOf("?") < 0 ? "?" : "&") + "usage=" + encodeURIComponent(seen);
      usageLive = true;
    }
    live = true;
    setTimeout(function () { open(url); }, 3000);
  }

  if (document.readyState === "complete") {
    start();
  } else {
    window.addEventListener("load", start);
  }
})();
