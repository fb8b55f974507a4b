// causalplay serve: focus after each test, and recovery from a lost connection (only where htmx runs).
// A test whose answer never arrives (connection reset, 15 s timeout, server down) shows a message in the panel's
// alert region; the panel is then fetched again (GET /panel, after 1, 2, 4, ... up to 10 s, or when the browser
// is back online) until that works, and shows the tests as the server stored them, the lost answer included.
(function () {
  var wait = 1000, timer = null;
  function resync() {
    timer = null;
    if (document.getElementById("panel")) htmx.ajax("GET", (document.body.dataset.root || "") + "/panel", {target: "#panel", swap: "outerHTML"});
  }
  function lost() {
    var box = document.getElementById("htmx-problem");
    if (box) box.textContent = "No answer from the server: your last test may not have arrived. Trying again...";
    if (!timer) { timer = setTimeout(resync, wait); wait = Math.min(2 * wait, 10000); }
  }
  document.addEventListener("htmx:sendError", lost);
  document.addEventListener("htmx:timeout", lost);
  window.addEventListener("online", function () { if (timer) { clearTimeout(timer); resync(); } });
  document.addEventListener("htmx:afterSettle", function (e) {
    if (e.target.id === "htmx-problem" || e.target.id === "live") return;  // an error message, the dashboard
    wait = 1000;  // the panel is as the server has it: no re-sync pending
    if (timer) { clearTimeout(timer); timer = null; }
    var f = document.getElementById("obj-0") || document.getElementById("answer-link");
    if (f) f.focus();
  });
})();
