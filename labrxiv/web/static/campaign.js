// The campaign page of `labrxiv serve`: polls the campaign's JSON every 2 s and puts
// its runs' status, counts, best score and spend on the page, and reloads the curves.
// Everything comes from the log and goes on the page as text (textContent) only.
"use strict";
(function () {
  const root = document.getElementById("campaign");
  if (!root) return;
  const api = root.dataset.api;
  const EVERY_MS = 2000;
  const score = (v) => (v === null || v === undefined ? "-" : Number(v).toFixed(3));
  const when = (v) => (v ? String(v).replace("T", " ").slice(0, 19) : "-");
  const status = (s, reason) => s + (reason ? " (" + reason + ")" : "");
  const dollars = (t) => {
    if (!t) return "$0.0000";
    if (t.unknown_cost_calls && t.unknown_cost_calls >= t.priced_calls)
      return "unknown (" + t.unknown_cost_calls + " calls)";
    return "$" + t.dollars.toFixed(4) +
      (t.unknown_cost_calls ? " + " + t.unknown_cost_calls + " of unknown cost" : "");
  };

  function cell(tr, field, text) {
    let td = tr.querySelector('[data-field="' + field + '"]');
    if (td && td.textContent !== text) td.textContent = text;
  }

  // A run that starts later is added on the page that shows it (runs in stream order).
  function row(run) {
    const body = document.querySelector("#runs tbody");
    for (const tr of body.querySelectorAll("tr")) if (tr.dataset.run === run.stream) return tr;
    const tr = document.createElement("tr");
    tr.dataset.run = run.stream;
    const link = document.createElement("a");
    link.href = "/runs/" + encodeURIComponent(run.stream);
    link.textContent = run.stream;
    const first = document.createElement("td");
    first.className = "id";
    first.append(link);
    tr.append(first);
    for (const [field, text] of [["lab", run.lab || "-"], ["policy", run.policy || "-"]]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    for (const field of ["status", "event_count", "steps", "attempts", "papers", "best_score",
                         "tokens", "dollars", "last_event_at"]) {
      const td = document.createElement("td");
      td.dataset.field = field;
      tr.append(td);
    }
    body.append(tr);
    return tr;
  }

  function show(doc) {
    const c = doc.campaign;
    document.getElementById("campaign-status").textContent = status(c.status, c.finish_reason);
    document.getElementById("campaign-best").textContent = score(c.best);
    for (const run of doc.runs) {
      const tr = row(run);
      const spent = doc.spend[run.stream];
      cell(tr, "status", status(run.status, run.finish_reason));
      cell(tr, "event_count", String(run.event_count));
      cell(tr, "steps", String(run.steps));
      cell(tr, "attempts", String(run.attempts));
      cell(tr, "papers", String(run.papers));
      cell(tr, "best_score", score(run.best_score));
      cell(tr, "tokens", String(spent ? spent.tokens : 0));
      cell(tr, "dollars", dollars(spent));
      cell(tr, "last_event_at", when(run.last_event_at));
    }
    const stamp = Date.now();
    for (const img of document.querySelectorAll("img.curve")) {
      img.src = root.dataset.curves + img.dataset.axis + ".svg?" + root.dataset.page +
        "&at=" + stamp;
    }
    return c.status === "running";
  }

  async function poll() {
    let again = true;
    const live = document.getElementById("live");
    try {
      const answer = await fetch(api, { headers: { Accept: "application/json" } });
      if (answer.ok) {
        again = show(await answer.json());
        live.textContent = again ? "updating every 2 s" : "finished";
      } else {
        live.textContent = "the server answered " + answer.status + "; trying again";
      }
    } catch (error) {
      live.textContent = "the server does not answer; trying again";
    }
    if (again) setTimeout(poll, EVERY_MS);
  }

  setTimeout(poll, EVERY_MS);
})();
