// lionbus console: live updates by server-sent events. The pages work
// without it; it only keeps them current.
"use strict";

(function () {
  // Fetch the page again and swap the elements with these ids in place.
  const swap = async (ids) => {
    const res = await fetch(location.pathname + location.search, { headers: { Accept: "text/html" } });
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    for (const id of ids) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (fresh && old) old.replaceWith(fresh);
    }
  };

  // A branch page: on each change of the branch, fetch the page again
  // and swap its timeline and facts in place.
  const branch = document.getElementById("branch");
  if (branch) {
    const status = branch.querySelector(".live-status");
    const events = new EventSource(branch.dataset.live);
    let pending = false;
    const refresh = async () => {
      if (pending) return;
      pending = true;
      try {
        await swap(["timeline", "message-count"]);
        status.textContent = "updated " + new Date().toLocaleTimeString();
      } finally {
        pending = false;
      }
    };
    events.addEventListener("open", () => { status.textContent = "live"; });
    events.addEventListener("change", refresh);
    events.addEventListener("failed", (e) => { status.textContent = "live updates stopped: " + JSON.parse(e.data).error; events.close(); });
  }

  // A run page: append each chunk as it arrives; text deltas continue the
  // block before them.
  const run = document.getElementById("run");
  if (run) {
    const status = document.getElementById("run-status");
    const list = document.getElementById("chunks");
    const events = new EventSource(run.dataset.live);
    let last = null;
    events.addEventListener("open", () => { status.textContent = "streaming"; });
    events.addEventListener("chunk", (e) => {
      const c = JSON.parse(e.data);
      if (c.is_delta && last && last.dataset.type === c.type) {
        last.querySelector(".content").textContent += c.content || "";
        return;
      }
      const li = document.createElement("li");
      li.className = "chunk " + c.type;
      li.dataset.type = c.type;
      li.dataset.seq = c.seq;
      const kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = c.type + (c.tool_name ? " " + c.tool_name : "");
      const body = document.createElement("pre");
      body.className = "content";
      if (c.type === "tool_use") body.textContent = JSON.stringify(c.tool_input || {}, null, 2);
      else if (c.type === "tool_result") body.textContent = typeof c.tool_output === "string" ? c.tool_output : JSON.stringify(c.tool_output, null, 2);
      else body.textContent = c.content || "";
      li.append(kind, body);
      list.append(li);
      last = li;
    });
    events.addEventListener("end", (e) => {
      status.textContent = "answered: " + JSON.parse(e.data).type;
      events.close();
    });
    events.addEventListener("failed", (e) => {
      status.textContent = "stopped: " + JSON.parse(e.data).error;
      events.close();
    });
  }
  // A batch page: move the progress bar and the counts on each change of
  // the batch's record; when it has ended, fetch the page again for its
  // failures and items.
  const batch = document.getElementById("batch");
  if (batch && batch.dataset.final !== "true") {
    const status = batch.querySelector(".live-status");
    const events = new EventSource(batch.dataset.live);
    events.addEventListener("open", () => { status.textContent = "live"; });
    events.addEventListener("progress", async (e) => {
      const p = JSON.parse(e.data);
      const bar = document.getElementById("batch-progress");
      bar.max = p.total;
      bar.value = p.finished;
      document.getElementById("batch-percent").textContent = p.percent + " %";
      document.getElementById("batch-state").textContent = p.state;
      for (const [name, n] of Object.entries(p.counts)) {
        const dd = batch.querySelector('[data-count="' + name + '"]');
        if (dd) dd.textContent = n;
      }
      batch.querySelector('[data-count="cost"]').textContent = "$" + (p.cost_usd || 0).toFixed(6);
      status.textContent = "updated " + new Date().toLocaleTimeString();
      if (p.final) {
        events.close();
        batch.dataset.final = "true";
        await swap(["batch-items"]);
        status.textContent = "ended";
      }
    });
    events.addEventListener("failed", (e) => { status.textContent = "live updates stopped: " + JSON.parse(e.data).error; events.close(); });
  }

  // A self-refreshing section (the tools and approvals pages): fetched
  // again every data-refresh seconds (def when unset) and swapped in
  // place, with the time of the last refresh in its live status. A round
  // is skipped while hold() is true; keep(), called before a swap, returns
  // what restores the reader's view after it.
  const refreshing = (id, def, { hold = () => false, keep = () => () => {} } = {}) => {
    const section = document.getElementById(id);
    if (!section) return;
    const every = Number(section.dataset.refresh || def) * 1000;
    const status = () => document.querySelector("#" + id + " .live-status");
    const tick = async () => {
      if (!hold()) {
        const restore = keep();
        try {
          await swap([id]);
          restore();
          if (status()) status().textContent = "updated " + new Date().toLocaleTimeString();
        } catch (err) {
          if (status()) status().textContent = "refresh failed: " + err;
        }
      }
      setTimeout(tick, every);
    };
    setTimeout(tick, every);
  };

  // The tools page, for fresh figures, keeping open what the reader
  // opened.
  refreshing("tools", 5, {
    keep: () => {
      const open = [...document.querySelectorAll("#tools details[open]")].map((d) => d.closest("tr").id + "/" + [...d.closest("tr").querySelectorAll("details")].indexOf(d));
      return () => {
        for (const key of open) {
          const [row, i] = key.split("/");
          const d = document.getElementById(row)?.querySelectorAll("details")[Number(i)];
          if (d) d.open = true;
        }
      };
    },
  });

  // The approvals page, so that new approvals appear and decided ones go;
  // not while a reason is being typed (that would throw it away).
  refreshing("approvals", 3, {
    hold: () => [...document.querySelectorAll("#approvals input")].some((i) => i === document.activeElement || i.value !== ""),
  });
})();
