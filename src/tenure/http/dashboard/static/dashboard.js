// tenure's dashboard: live updates and the selection of tasks. No framework, no
// build step; loaded from this server only (the Content-Security-Policy allows
// nothing else).
"use strict";

function selectAll() {
  const all = document.getElementById("select-all");
  if (!all) return;
  all.addEventListener("change", () => {
    for (const box of document.querySelectorAll('input[name="id"]')) box.checked = all.checked;
  });
  const form = document.getElementById("selection");
  form.addEventListener("submit", (event) => {
    const chosen = form.querySelectorAll('input[name="id"]:checked').length;
    const action = event.submitter ? event.submitter.value : "";
    if (!chosen) { event.preventDefault(); alert("Tick the tasks to " + action + " first."); return; }
    if (action === "cancel" && !confirm("Cancel " + chosen + " task(s)?")) event.preventDefault();
  });
}

// Replace the live part of the page by the same part of the page as it is now.
async function refresh() {
  const answer = await fetch(location.href, { headers: { "X-Tenure-Live": "1" }, cache: "no-store" });
  if (!answer.ok || answer.redirected) return;
  const fresh = new DOMParser().parseFromString(await answer.text(), "text/html").getElementById("live");
  const live = document.getElementById("live");
  if (fresh && live) live.replaceWith(fresh);
}

function follow() {
  const mode = document.body.dataset.live;
  if (!mode || !window.EventSource) return;
  const task = document.body.dataset.task;
  const source = new EventSource(document.body.dataset.root + "/live" + (task ? "?task=" + encodeURIComponent(task) : ""));
  const dot = document.getElementById("live-state");
  let busy = false, again = false, opened = false;
  const changed = async () => {
    if (mode === "notice") { document.getElementById("fresh").hidden = false; return; }
    if (busy) { again = true; return; }
    busy = true;
    try { do { again = false; await refresh(); } while (again); } finally { busy = false; }
  };
  source.onopen = () => {
    if (dot) dot.classList.add("on");
    // Back after the stream was closed (the server restarted, the store was
    // out of reach): what changed meanwhile was not told, so read it now.
    if (opened && mode === "refresh") changed();
    opened = true;
  };
  source.onerror = () => dot && dot.classList.remove("on");
  source.addEventListener("change", changed);
}

document.addEventListener("DOMContentLoaded", () => { selectAll(); follow(); });
