// Follows a running container's output on the rental page: server-sent
// events from GET /rentals/{id}/logs?follow=1 (one per line; the browser
// resumes after the last line it has when the connection drops). Without
// JavaScript the link below the panel shows the last lines as text.
(function () {
  "use strict";
  var pre = document.getElementById("workspace-logs");
  if (!pre || !window.EventSource) {
    return;
  }
  var keep = 2000; // lines kept in the panel
  var es = new EventSource(pre.dataset.follow);
  es.onmessage = function (e) {
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.appendChild(document.createTextNode(e.data + "\n"));
    while (pre.childNodes.length > keep) {
      pre.removeChild(pre.firstChild);
    }
    if (atEnd) {
      pre.scrollTop = pre.scrollHeight;
    }
  };
  es.onerror = function () {
    if (es.readyState === EventSource.CLOSED) {
      pre.appendChild(document.createTextNode("— " + pre.dataset.ended + "\n"));
    }
  };
})();
