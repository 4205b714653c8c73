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
  // A paste comes as one string: it is sent in pieces of at most 16 KiB
  // (the agent takes messages of up to 1 MiB).
  var piece = 16384;
  term.onData(function (d) {
    if (ws.readyState !== WebSocket.OPEN) {
      return;
    }
    var bytes = enc.encode(d);
    for (var i = 0; i < bytes.length; i += piece) {
      ws.send(bytes.subarray(i, i + piece));
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
