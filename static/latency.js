// Suanli — "your latency": the round-trip time from this browser to a
// datacentre's node agents, shown beside the published per-city figures.
//
// The Content-Security-Policy allows no inline script, so the page hands
// everything over in data attributes:
//
//   data-ping-urls         the agents' ping endpoints, separated by spaces
//                          (or a JSON array); the first that answers is used
//   data-ping-label        the text to show, "%s" standing for "7 ms"
//   data-ping-unreachable  the text to show when no endpoint answers
//
// The text goes into the element's [data-ping-out] child (or the element).
// Five requests, one after another, without cache or cookies: the first
// opens the connection (DNS, TCP, TLS) and is discarded, and the median
// of the other four is shown. The element is hidden until this script
// runs, which is after the page has loaded, so nothing waits for it; each
// request gives up after 3 s. The page's CSP connect-src names exactly the
// endpoints' origins. data-ping-state ends as "done" or "unreachable".
(function () {
  "use strict";

  var ROUNDS = 5, TIMEOUT_MS = 3000;

  function urlsOf(el) {
    var raw = (el.getAttribute("data-ping-urls") || "").trim();
    if (raw.charAt(0) === "[") {
      try {
        var list = JSON.parse(raw);
        return Array.isArray(list) ? list.filter(function (u) { return typeof u === "string" && u; }) : [];
      } catch (e) {
        return [];
      }
    }
    return raw ? raw.split(/\s+/) : [];
  }

  // once times one request; it fails on a network error, a timeout or a
  // status outside 2xx.
  function once(url) {
    var ctl = typeof AbortController === "function" ? new AbortController() : null;
    var timer = ctl ? setTimeout(function () { ctl.abort(); }, TIMEOUT_MS) : null;
    var done = function () { if (timer) clearTimeout(timer); };
    var t0 = performance.now();
    return fetch(url, {
      method: "GET", mode: "cors", cache: "no-store", credentials: "omit",
      redirect: "error", referrerPolicy: "no-referrer", signal: ctl ? ctl.signal : undefined
    }).then(function (res) {
      var ms = performance.now() - t0;
      done();
      if (!res.ok) throw new Error("ping: status " + res.status);
      return ms;
    }, function (err) {
      done();
      throw err;
    });
  }

  function median(xs) {
    var s = xs.slice().sort(function (a, b) { return a - b; });
    var m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  // measure is the median round trip to url, the first request left out.
  function measure(url) {
    var times = [];
    var p = Promise.resolve();
    for (var i = 0; i < ROUNDS; i++) {
      p = p.then(function () {
        return once(url).then(function (ms) { times.push(ms); });
      });
    }
    return p.then(function () { return median(times.slice(1)); });
  }

  function firstReachable(urls, i) {
    if (i >= urls.length) return Promise.reject(new Error("ping: no endpoint answered"));
    return measure(urls[i]).catch(function () { return firstReachable(urls, i + 1); });
  }

  // ms writes a duration as the published figures are written: whole
  // milliseconds from 10 ms, one decimal below.
  function ms(x) {
    var s = x >= 10 ? String(Math.round(x)) : x.toFixed(1).replace(/\.0$/, "");
    return s + " ms";
  }

  function run(el) {
    if (el.hasAttribute("data-ping-state")) return;
    el.setAttribute("data-ping-state", "measuring");
    el.hidden = false;
    var out = el.querySelector("[data-ping-out]") || el;
    var label = el.getAttribute("data-ping-label") || "%s";
    firstReachable(urlsOf(el), 0).then(function (rtt) {
      out.textContent = label.replace("%s", ms(rtt));
      el.setAttribute("data-ping-ms", rtt.toFixed(2));
      el.setAttribute("data-ping-state", "done");
    }, function () {
      out.textContent = el.getAttribute("data-ping-unreachable") || "";
      el.setAttribute("data-ping-state", "unreachable");
    });
  }

  function start() {
    if (typeof fetch !== "function" || !window.performance) return; // stays hidden
    var els = document.querySelectorAll("[data-ping-urls]");
    for (var i = 0; i < els.length; i++) run(els[i]);
  }

  if (document.readyState === "complete") {
    start();
  } else {
    window.addEventListener("load", start);
  }
})();
