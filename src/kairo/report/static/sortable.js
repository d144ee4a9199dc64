// Sortable tables: click a heading of a table.sortable to sort its rows by that column,
// again to reverse. A cell's data-sort (a number) is used when it has one, else its text.
(function () {
  "use strict";
  function key(row, i) {
    var c = row.cells[i];
    if (!c) return { num: null, text: "" };
    var s = c.getAttribute("data-sort");
    var n = s === null ? NaN : parseFloat(s);
    return { num: isNaN(n) ? null : n, text: c.textContent.trim() };
  }
  function compare(a, b) {
    if (a.num !== null && b.num !== null) return a.num - b.num;
    if (a.num !== null) return -1;          // numbers before text (a dash, "nan")
    if (b.num !== null) return 1;
    return a.text.localeCompare(b.text, undefined, { numeric: true });
  }
  function sortBy(table, th, i) {
    var body = table.tBodies[0];
    if (!body) return;
    var up = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (r, n) { return { row: r, key: key(r, i), n: n }; });
    keyed.sort(function (a, b) {
      var d = compare(a.key, b.key);
      return (up ? d : -d) || a.n - b.n;
    });
    keyed.forEach(function (k) { body.appendChild(k.row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
  }
  function init() {
    var tables = document.querySelectorAll("table.sortable");
    Array.prototype.forEach.call(tables, function (table) {
      var head = table.tHead && table.tHead.rows[0];
      if (!head) return;
      Array.prototype.forEach.call(head.cells, function (th, i) {
        th.title = "sort by this column";
        th.addEventListener("click", function () { sortBy(table, th, i); });
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
