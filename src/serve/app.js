// The overview's live counts: every element with a data-count attribute shows the value of
// that key in /api/counts, fetched every 2 s. And the jobs list's "select all" box, which
// checks or clears every row's box. Nothing else runs on the dashboard's pages.
"use strict";
(function () {
  const all = document.getElementById("select-all");
  if (all === null) return;
  all.addEventListener("change", function () {
    for (const box of document.querySelectorAll("#jobs input.select")) box.checked = all.checked;
  });
})();
(function () {
  const counted = document.querySelectorAll("[data-count]");
  if (counted.length === 0) return;
  async function refresh() {
    try {
      const response = await fetch("/api/counts", { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) return;
      const counts = await response.json();
      for (const element of counted) {
        const value = counts[element.dataset.count];
        if (value !== undefined) element.textContent = String(value);
      }
      document.body.dataset.refreshed = String(Date.now());
    } catch (_) {
      // The next round tries again.
    }
  }
  setInterval(refresh, 2000);
})();
