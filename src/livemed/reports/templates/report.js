(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("livemed-data").textContent);
  window.livemedData = data;
  var input = document.getElementById("case-filter");
  var sorter = document.getElementById("case-sort");
  var list = document.getElementById("case-list");
  var none = document.getElementById("case-none");
  var cases = Array.prototype.slice.call(document.querySelectorAll("#case-list > details.case"));
  var haystack = cases.map(function (el) { return el.textContent.toLowerCase(); });
  var recent = cases.slice();

  function score(el) {  // a case without a score sorts last either way
    var value = el.getAttribute("data-score");
    return value === null ? null : parseFloat(value);
  }

  function filter() {
    var needle = input.value.trim().toLowerCase();
    var shown = 0;
    cases.forEach(function (el, i) {
      var match = !needle || haystack[i].indexOf(needle) !== -1;
      el.style.display = match ? "" : "none";
      shown += match ? 1 : 0;
    });
    none.hidden = shown > 0 || cases.length === 0;
  }

  function sort() {
    var order = recent.slice();
    var sign = sorter.value === "score-desc" ? -1 : 1;
    if (sorter.value !== "recent") {
      order.sort(function (a, b) {
        var x = score(a), y = score(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        return sign * (x - y) || recent.indexOf(a) - recent.indexOf(b);
      });
    }
    order.forEach(function (el) { list.appendChild(el); });
  }

  if (input && list) {  // the contamination-only report has no case browser
    input.addEventListener("input", filter);
    sorter.addEventListener("change", sort);
  }
  document.body.setAttribute("data-report-ready", String((data.leaderboard || []).length));
})();
