// redline view: keeps a run page up to date while its scan runs. Every two seconds it asks
// /api/runs/RUN for the run's status and stored attempts; when either changed it fetches this
// page again and swaps in the new #live part (parsed as a separate document, never as markup
// of this one). It stops once the run is no longer running.
(function () {
  "use strict";
  var PERIOD_MS = 2000;

  function live() {
    return document.getElementById("live");
  }

  function refresh() {
    return fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (text) {
        if (text === null) {
          return;
        }
        var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("live");
        var current = live();
        if (fresh && current) {
          current.replaceWith(document.importNode(fresh, true));
        }
      });
  }

  function poll() {
    var current = live();
    if (!current || current.getAttribute("data-status") !== "running") {
      return;
    }
    fetch(current.getAttribute("data-api"), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (state) {
        if (state === null) {
          return null;
        }
        var shown = live();
        var changed =
          String(state.finished) !== shown.getAttribute("data-finished") ||
          state.status !== shown.getAttribute("data-status");
        return changed ? refresh() : null;
      })
      .catch(function () {
        return null; // the server is gone or busy: try again at the next tick
      })
      .then(function () {
        var next = live();
        if (next && next.getAttribute("data-status") === "running") {
          window.setTimeout(poll, PERIOD_MS);
        }
      });
  }

  function start() {
    var current = live();
    if (current && current.getAttribute("data-status") === "running") {
      window.setTimeout(poll, PERIOD_MS);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
