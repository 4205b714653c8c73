// The terminal page: xterm.js (vendored, static/xterm-6.0.0.min.js) over
// a WebSocket to a shell with a TTY in the rental's container. Binary
// messages carry keystrokes and output; a text message {"cols","rows"}
// tells the TTY its new size.
(function () {
  "use strict";
  var el = document.getElementById("terminal");
  var status = document.getElementById("terminal-status");
  if (!el || !window.Terminal || !window.FitAddon) {
    if (status) {
      status.textContent = status.dataset.noscript;
    }
    return;
  }
  var term = new window.Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000 });
  var fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(el);
  fit.fit();
  var scheme = location.protocol === "https:" ? "wss:" : "ws:";
  var ws = new WebSocket(scheme + "//" + location.host + el.dataset.ws + "?cols=" + term.cols + "&rows=" + term.rows);
  ws.binaryType = "arraybuffer";
  var enc = new TextEncoder();
  ws.onopen = function () {
    status.hidden = true;
    el.dataset.state = "open";
    // The size may have changed since the URL was made (fonts loaded):
    // the TTY gets the one the screen has now.
    fit.fit();
    ws.send(JSON.stringify({ cols: term.cols, rows: term.rows }));
    term.focus();
  };
  ws.onmessage = function (e) {
    term.write(new Uint8Array(e.data));
  };
  ws.onclose = function () {
    status.hidden = false;
    status.textContent = status.dataset.closed;
    el.dataset.state = "closed";
  };
  term.onData(function (d) {
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(enc.encode(d));
    }
  });
  term.onResize(function (s) {
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ cols: s.cols, rows: s.rows }));
    }
  });
  window.addEventListener("resize", function () {
    fit.fit();
  });
})();
