(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("livemed-data").textContent);
  window.livemedData = data;
  var input = document.getElementById("case-filter");
  var cases = Array.prototype.slice.call(document.querySelectorAll("#case-list > details.case"));
  var haystack = cases.map(function (el) { return el.textContent.toLowerCase(); });
  if (input) {  // the contamination-only report has no case browser
    input.addEventListener("input", function () {
      var needle = input.value.trim().toLowerCase();
      cases.forEach(function (el, i) {
        el.style.display = !needle || haystack[i].indexOf(needle) !== -1 ? "" : "none";
      });
    });
  }
  document.body.setAttribute("data-report-ready", String((data.leaderboard || []).length));
})();
