// The analysis page (labrxiv/html_report.py). Everything shown comes from the JSON in
// #analysis-data, and all of it is text written by a lab: it reaches the page through
// text nodes (`el` below) only, never as markup. Links point at ids this script makes.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("analysis-data").textContent);
  const doc = data.analysis;
  const app = document.getElementById("app");

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const num = (v, d = 1) => (v === null || v === undefined ? "-" : Number(v).toFixed(d));
  const share = (v) => (v === null || v === undefined ? "-" : Math.round(v * 100) + "%");
  const secs = (v) => {
    if (v === null || v === undefined) return "-";
    if (v >= 3600) return (v / 3600).toFixed(2) + " h";
    if (v >= 60) return (v / 60).toFixed(1) + " min";
    return v.toFixed(2) + " s";
  };
  const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");
  const money = (dollars, unknown) =>
    "$" + dollars.toFixed(4) + (unknown ? " + " + unknown + " of unknown cost" : "");

  function pairs(rows) {
    return el("table", { class: "pairs" },
      rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  }

  function table(header, rows, numeric) {
    return el("table", {},
      el("thead", {}, el("tr", {}, header.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell, i) =>
        el("td", { class: numeric && numeric.includes(i) ? "num" : null }, cell))))));
  }

  function plots(index) {
    const block = document.querySelector('#plots .plots[data-index="' + index + '"]');
    return block ? block : null;
  }

  function behaviourTable(b) {
    const t = b.time, m = b.money, u = b.useful, k = b.tokens;
    const useful = u.best === null
      ? "no scored attempt with a normalized score"
      : "best " + num(u.best, 3) + " from attempt " + u.best_attempt + " at step " + u.best_step +
        ", " + secs(u.best_at_s) + " in; " + share(u.after_share) + " of the run came after it";
    return pairs([
      ["run", b.run + " (" + b.policy + ", " + b.task + ", " + (b.finished || "running") + ")"],
      ["events / steps / papers", b.events + " / " + b.steps + " / " + b.papers],
      ["duration", secs(b.duration_s)],
      ["actions (tool calls)", b.density.actions + ", " + num(b.density.per_hour) + " per hour"],
      ["between actions", "median " + secs(b.gaps.median_s) + ", p90 " + secs(b.gaps.p90_s) +
        ", max " + secs(b.gaps.max_s)],
      ["tokens", k.total + " (" + k.reasoning + " reasoning); " + k.model_calls +
        " model calls, " + k.failed + " failed, " + k.unknown_outcome + " of unknown outcome"],
      ["time", "tools " + secs(t.tools_s) + ", model " + secs(t.model_s) + ", idle " +
        secs(t.idle_s)],
      ["money", money(m.dollars, m.unknown_cost)],
      ["useful window", useful],
    ]);
  }

  function mixTable(b) {
    const mix = b.tool_mix, thirds = ["start", "ramp", "steady"];
    const phases = Object.keys(mix.by_phase);
    const rows = Object.entries(mix.by_tool).map(([tool, calls]) => [tool,
      ...thirds.map((n) => (mix.by_third[n] || {})[tool] || 0),
      ...phases.map((p) => mix.by_phase[p][tool] || 0), calls]);
    const numeric = rows.length ? rows[0].map((_, i) => i).slice(1) : [];
    return [el("h3", {}, "Tool mix (calls)"),
      table(["tool", ...thirds, ...phases, "all"], rows, numeric),
      mix.phases_note ? el("p", { class: "note" }, mix.phases_note) : null];
  }

  // Which step holds each event, per run: a finding's evidence links there.
  function stepOfEvent(steps) {
    const where = new Map();
    for (const step of steps || []) for (const id of step.events) where.set(id, step.number);
    return where;
  }

  function findingsBlock(run, prefix, where, reveal) {
    if (run.findings === null) {
      return [el("h3", {}, "Findings"), el("p", { class: "note" }, doc.findings_note || "none")];
    }
    const verdict = run.findings.verdict;
    const head = el("h3", {}, "Findings: ", el("span", { class: "verdict verdict-" + verdict },
      verdict));
    if (!run.findings.findings.length) {
      return [head, el("p", { class: "note" }, "The detectors found nothing.")];
    }
    const items = run.findings.findings.map((f) => el("li",
      { class: "finding", "data-mode": f.mode, "data-severity": f.severity },
      el("span", { class: "severity" }, f.severity),
      el("strong", {}, f.mode), " ", el("span", { class: "meta" }, "(" + f.detector + ")"),
      el("p", { class: "summary" }, f.summary),
      el("p", { class: "evidence" }, "events: ", f.events.map((id) => {
        const at = where.get(id);
        if (at === undefined) return el("code", { title: "not in a step shown" }, id + " ");
        const link = el("a", { class: "event-link", href: "#" + prefix + "-step-" + at,
          "data-event": id, title: id }, id.slice(0, 8) + " (step " + at + ")");
        link.addEventListener("click", () => reveal(at));
        return link;
      }))));
    return [head, el("ul", { class: "findings" }, items)];
  }

  function inspectorBlock(run, prefix, where, reveal) {
    const mine = (doc.inspections || []).filter((i) => i.run === run.behaviour.run);
    return mine.map((i) => {
      const verdict = i.verdict || "no verdict";
      const evidence = i.evidence.map(([id, why]) => {
        const at = where.get(id);
        const cite = at === undefined ? el("code", {}, id)
          : el("a", { class: "event-link", href: "#" + prefix + "-step-" + at, "data-event": id,
            title: id }, id.slice(0, 8) + " (step " + at + ")");
        if (at !== undefined) cite.addEventListener("click", () => reveal(at));
        return el("li", {}, cite, " ", why);
      });
      return el("div", { class: "inspection" },
        el("h3", {}, "LLM inspector: ", el("span", { class: "verdict verdict-" + verdict },
          verdict)),
        el("p", { class: "meta" }, "detectors: " + i.detectors + " · stream " + i.stream),
        el("p", { class: "summary" }, i.summary), el("ul", {}, evidence));
    });
  }

  function stepRow(step, prefix) {
    const actions = step.actions.map((a) => {
      const failed = a.exit_code !== null && a.exit_code !== 0;
      return el("div", { class: "action" + (failed ? " failed" : "") },
        a.reported ? el("span", { class: "reported", title: "the agent's own tool ran it" }, "(agent) ") : null,
        el("span", { class: "tool" }, a.tool), " ",
        a.args ? el("span", { class: "args" }, a.args) : null,
        failed ? el("span", { class: "exit" }, " exit " + a.exit_code) : null,
        a.result ? el("div", { class: "result" }, "→ " + a.result) : null);
    });
    const spent = step.tokens ? String(step.tokens) : "";
    const dollars = step.dollars ? step.dollars.toFixed(4) : step.unknown_cost ? "?" : "";
    return el("tr", {
      class: "step" + (step.inherited ? " inherited" : ""),
      id: prefix + "-step-" + step.number,
      title: step.inherited ? "inherited from " + step.stream : null,
    },
      el("td", { class: "num" }, step.number), el("td", { class: "num" }, num(step.elapsed_s)),
      el("td", {}, step.phase || ""),
      el("td", {}, actions,
        step.others.length ? el("div", { class: "others" }, step.others.join(" · ")) : null),
      el("td", { class: "num" }, spent), el("td", { class: "num" }, dollars),
      el("td", { class: "num" }, step.best === null ? "" : num(step.best, 3)));
  }

  function checkboxes(legend, names, onChange) {
    const boxes = new Map();
    const set = el("fieldset", {}, el("legend", {}, legend), names.map((name) => {
      const box = el("input", { type: "checkbox", checked: "checked" });
      box.addEventListener("change", onChange);
      boxes.set(name, box);
      return el("label", {}, box, " " + name);
    }));
    return [set, boxes];
  }

  function trajectoryBlock(steps, prefix, run) {
    const NONE = "(none)", NO_TOOL = "(no tool call)";
    const phaseOf = (s) => s.phase || NONE;
    const toolsOf = (s) => s.actions.map((a) => a.tool);
    const phases = [...new Set(steps.map(phaseOf))];
    const tools = [...new Set(steps.flatMap(toolsOf))].sort();
    if (steps.some((s) => !s.actions.length)) tools.push(NO_TOOL);
    const rows = steps.map((s) => stepRow(s, prefix));
    const count = el("p", { class: "note count" });
    const apply = () => {
      let shown = 0;
      steps.forEach((s, i) => {
        const called = toolsOf(s);
        const byTool = called.length ? called.some((t) => toolBoxes.get(t).checked)
          : toolBoxes.get(NO_TOOL).checked;
        rows[i].hidden = !(phaseBoxes.get(phaseOf(s)).checked && byTool);
        if (!rows[i].hidden) shown += 1;
      });
      count.textContent = "showing " + shown + " of " + steps.length + " steps";
    };
    const [phaseSet, phaseBoxes] = checkboxes("phase", phases, apply);
    const [toolSet, toolBoxes] = checkboxes("tool", tools, apply);
    // A finding's link must land on a visible step: show every step again if it is hidden.
    const reveal = (number) => {
      const row = rows[steps.findIndex((s) => s.number === number)];
      if (row && row.hidden) {
        for (const box of [...phaseBoxes.values(), ...toolBoxes.values()]) box.checked = true;
        apply();
      }
    };
    // `?phase=…&tool=…` (each may repeat) opens the page with only those ticked: a view
    // that can be linked to. Unknown names tick nothing; the names are only compared.
    const wanted = new URLSearchParams(location.search);
    for (const [key, boxes] of [["phase", phaseBoxes], ["tool", toolBoxes]]) {
      const names = wanted.getAll(key);
      if (names.length) for (const [name, box] of boxes) box.checked = names.includes(name);
    }
    apply();
    const inherited = steps.filter((s) => s.inherited);
    const forkNote = inherited.length
      ? el("p", { class: "note" }, "Steps 0–" + inherited[inherited.length - 1].number +
        " are inherited from " + inherited[inherited.length - 1].stream + " (greyed).")
      : null;
    const block = [el("h3", {}, "Trajectory (" + steps.length + " steps)"), forkNote,
      el("div", { class: "filters" }, phaseSet, toolSet), count,
      el("table", { class: "trajectory", "data-run": run },
        el("colgroup", {}, el("col", { class: "narrow" }), el("col", { class: "narrow" }),
          el("col", { class: "phase" }), el("col", {}), el("col", { class: "narrow" }),
          el("col", { class: "narrow" }), el("col", { class: "narrow" })),
        el("thead", {}, el("tr", {}, ["step", "t (s)", "phase", "actions", "tokens", "$",
          "best"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows))];
    return [block, reveal];
  }

  function runSection(run, index) {
    const b = run.behaviour, prefix = "r" + index;
    const steps = data.trajectories[b.run];
    const where = stepOfEvent(steps);
    let trajectory = [el("h3", {}, "Trajectory"),
      el("p", { class: "note" }, data.trajectory_note || "not in this page")];
    let reveal = () => {};
    if (steps) [trajectory, reveal] = trajectoryBlock(steps, prefix, b.run);
    return el("section", { class: "run", id: "run-" + index },
      el("h2", {}, b.run),
      el("p", { class: "meta" }, [b.policy, b.task, b.lab, b.finished || "running"]
        .filter(Boolean).join(" · ")),
      behaviourTable(b), mixTable(b), el("h3", {}, "Plots"), plots(String(index)),
      findingsBlock(run, prefix, where, reveal), inspectorBlock(run, prefix, where, reveal),
      trajectory);
  }

  function campaignSection() {
    const c = doc.campaign, across = doc.across;
    const index = new Map(doc.runs.map((r, i) => [r.behaviour.run, i]));
    const verdicts = new Map(doc.runs.filter((r) => r.findings)
      .map((r) => [r.behaviour.run, r.findings.verdict]));
    const runLink = (run) => el("a", { href: "#run-" + index.get(run) }, run);
    const summary = pairs([
      ["runs", Object.entries(c.finished).map(([why, n]) => n + " " + why).join(", ")],
      ["actions", c.actions + " in " + num(c.run_hours, 2) + " run-hours: " + num(c.per_hour) +
        " per hour"],
      ["tokens", c.tokens + " (" + c.reasoning_tokens + " reasoning)"],
      ["time", "tools " + secs(c.tools_s) + ", model " + secs(c.model_s) + ", idle " +
        secs(c.idle_s)],
      ["money", money(c.dollars, c.unknown_cost)],
      ["best score", num(c.best, 3) + " (" + c.scored_runs + " runs scored)"],
    ]);
    const compared = table(
      ["run", "lab", "ended", "best", "scored", "actions", "/h", "time", "tokens", "$",
        "after best", "verdict"],
      across.runs.map((r) => [runLink(r.run), r.lab || "", r.finished || "running",
        num(r.best, 3), r.scored, r.actions, num(r.per_hour), secs(r.duration_s), r.tokens,
        money(r.dollars, r.unknown_cost), share(r.best_after_share),
        verdicts.get(r.run) || ""]),
      [3, 4, 5, 6, 7, 8, 9, 10]);
    const estimate = (e) => (e === null ? "-" : (e.value >= 0 ? "+" : "") + e.value.toFixed(2) +
      (e.low === null ? "" : " [" + e.low.toFixed(2) + ", " + e.high.toFixed(2) + "]") +
      " p=" + e.p_value.toPrecision(2));
    const correlations = table(["figure", "runs", "Pearson r", "Spearman ρ", "note"],
      across.correlations.map((k) => [k.x + " vs " + k.y, k.n, estimate(k.pearson),
        estimate(k.spearman), k.note || ""]));
    const found = doc.runs.flatMap((r) => (r.findings ? r.findings.findings : [])
      .map((f) => [runLink(r.behaviour.run), f.mode, f.severity, f.detector, f.summary]));
    return el("section", { class: "campaign" },
      el("h2", {}, "Campaign " + doc.target), summary,
      el("h3", {}, plural(across.runs.length, "run") + ", best first"), compared,
      el("h3", {}, "Against the best score (" + Math.round(across.confidence * 100) +
        "% bootstrap intervals, " + across.resamples + " resamples, seed " + across.seed + ")"),
      correlations, plots("campaign"),
      el("h3", {}, plural(found.length, "finding")),
      found.length ? table(["run", "mode", "severity", "detector", "summary"], found) : null,
      data.trajectory_note ? el("p", { class: "note" }, data.trajectory_note) : null);
  }

  document.title = "labrxiv analysis: " + doc.target;
  app.append(el("h1", {}, "labrxiv analysis: " + doc.target),
    el("p", { class: "meta" }, doc.kind + " · written by labrxiv analyze · schema " + doc.schema));
  if (doc.kind === "campaign") app.append(campaignSection());
  doc.runs.forEach((run, i) => app.append(runSection(run, i)));
  // The page was drawn after the browser looked for the URL's #fragment: look again.
  if (location.hash) {
    const target = document.getElementById(location.hash.slice(1));
    if (target) target.scrollIntoView();
  }
})();
