"use strict";
// The report's page: reads the JSON data written into the file and renders it. A turn's body is built only when
// it is opened, and turn rows in batches as they scroll into view, so a report of thousands of long turns opens
// at once. Nothing is fetched: the page's Content-Security-Policy forbids it.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const M = data.M, R = data.R, S = data.S, T = data.T;
  // Repair descriptions, violations and findings are stored once each: a turn lists their numbers.
  for (const t of T) for (const key of ["actions", "violations", "remaining", "findings"]) t[key] = t[key].map((i) => S[i]);
  const byNumber = new Map(T.map((t) => [t.n, t]));
  const BATCH = 150;
  const TAIL = 6; // messages shown at the end of a long history before "show all"

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const fmt = (n) => (n === null || n === undefined ? "?" : Number(n).toLocaleString("en"));

  // --- search: every message's text, lower-cased once, on first use
  const messageText = new Array(M.length);
  function textOf(id) {
    if (messageText[id] === undefined) {
      const m = M[id];
      messageText[id] = m.p.map((p) => [p.t, p.a, p.c, p.f].filter(Boolean).join(" ")).join("\n").toLowerCase();
    }
    return messageText[id];
  }
  function turnText(t) {
    return [t.u, t.model, t.st, t.fmt, t.comment, (t.actions || []).join(" "), t.diag && t.diag.message,
      t.diag && t.diag.rule, t.diag && t.diag.summary].filter(Boolean).join(" ").toLowerCase();
  }
  function matching(query) {
    if (!query) return null;
    const hits = new Set();
    for (let id = 0; id < M.length; id++) if (textOf(id).includes(query)) hits.add(id);
    const turns = new Set();
    for (const t of T) {
      const ids = t.sent.concat(t.ans ? t.ans.msgs : []);
      if (turnText(t).includes(query) || ids.some((id) => hits.has(id))) turns.add(t.n);
    }
    return { turns, hits };
  }

  // --- filters
  const controls = {
    search: document.getElementById("search"), model: document.getElementById("model"),
    status: document.getElementById("status"), repaired: document.getElementById("repaired"),
    failed: document.getElementById("failed"),
  };
  const models = [...new Set(T.map((t) => t.model).filter(Boolean))].sort();
  for (const model of models) controls.model.append(el("option", { value: model, text: model }));
  function statusClass(st) {
    if (st === null || st === undefined) return "none";
    return st >= 500 ? "5xx" : st >= 400 ? "4xx" : "ok";
  }
  function kept(t, found) {
    if (controls.model.value && t.model !== controls.model.value) return false;
    if (controls.status.value && statusClass(t.st) !== controls.status.value) return false;
    if (controls.repaired.checked && !t.rep) return false;
    if (controls.failed.checked && !t.fail) return false;
    return !found || found.turns.has(t.n);
  }

  // --- rendering a turn's parts
  function markLabel(mark) {
    return mark ? el("span", { class: "mark " + mark, text: mark + " " }) : null;
  }
  function highlight(text, query) {
    if (!query || !text) return [text];
    const out = [];
    const lower = text.toLowerCase();
    let at = 0;
    for (let i = lower.indexOf(query); i >= 0 && out.length < 200; i = lower.indexOf(query, i + query.length)) {
      out.push(text.slice(at, i), el("mark", { text: text.slice(i, i + query.length) }));
      at = i + query.length;
    }
    out.push(text.slice(at));
    return out;
  }
  function partNode(p, query) {
    const classes = "part " + p.k + (p.m ? " m-" + p.m : "");
    if (p.k === "opaque") {
      const of = p.c ? " of " + p.c : "";
      const node = el("div", { class: classes }, markLabel(p.m),
        (p.f || "opaque value") + of + ": " + fmt(p.l) + " characters, sha256 " + p.h);
      if (p.v !== undefined) {
        const value = el("div", { class: "value", hidden: true, text: p.v });
        node.append(" ", el("button", { type: "button", text: "show value",
          onclick: () => { value.hidden = !value.hidden; } }), value);
      }
      return node;
    }
    let label = null;
    if (p.k === "reasoning") label = "reasoning (" + (p.f || "") + ")";
    else if (p.k === "tool_call") label = "tool call " + (p.a || "?") + "  id " + (p.c || "-");
    else if (p.k === "tool_result") label = "tool result for " + (p.c || "?") + (p.a ? " (" + p.a + ")" : "");
    else if (p.k === "media") label = p.a || "media";
    else if (p.k === "other") label = p.f || "other";
    return el("div", { class: classes }, markLabel(p.m), label ? el("span", { class: "label", text: label }) : null,
      highlight(p.t || "", query));
  }
  function messageNode(id, turn, query) {
    const m = M[id];
    const culprit = turn && turn.culprit && m.w === turn.culprit;
    const node = el("div", { class: "msg" + (m.m ? " m-" + m.m : "") + (culprit ? " culprit" : ""), "data-where": m.w },
      el("div", { class: "head" }, markLabel(m.m), el("span", { class: "role", text: m.r }),
        el("span", { class: "muted", text: m.w }), m.n ? el("span", { class: "muted", text: m.n }) : null,
        culprit ? el("span", { class: "mark removed", text: "the error points here" }) : null),
      m.p.map((p) => partNode(p, query)));
    return node;
  }
  function isMarked(id) {
    const m = M[id];
    return Boolean(m.m) || m.p.some((p) => p.m);
  }
  function conversationNode(ids, turn, query, found) {
    // A long history: the marked messages, the culprit, search hits and the last few; the rest on request.
    const box = el("div", { class: "messages" });
    const show = (all) => {
      box.replaceChildren();
      let skipped = 0;
      ids.forEach((id, position) => {
        const wanted = all || ids.length <= TAIL * 2 || position >= ids.length - TAIL || isMarked(id) ||
          (turn.culprit && M[id].w === turn.culprit) || (found && found.hits.has(id));
        if (!wanted) { skipped++; return; }
        if (skipped) box.append(gap(skipped));
        skipped = 0;
        box.append(messageNode(id, turn, query));
      });
      if (skipped) box.append(gap(skipped));
    };
    const gap = (count) => el("div", { class: "gap" }, fmt(count) + " unchanged message(s) not shown ",
      el("button", { type: "button", text: "show all " + fmt(ids.length), onclick: () => show(true) }));
    show(false);
    return box;
  }
  function facts(pairs) {
    return el("dl", { class: "facts" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
  }
  function usageText(u) {
    if (!u) return null;
    const parts = [];
    if (u.input !== undefined) parts.push("input " + fmt(u.input));
    if (u.cache_read !== undefined) parts.push("cached " + fmt(u.cache_read));
    if (u.cache_write !== undefined) parts.push("cache write " + fmt(u.cache_write));
    if (u.output !== undefined) parts.push("output " + fmt(u.output));
    if (u.reasoning !== undefined) parts.push("reasoning " + fmt(u.reasoning));
    if (u.total !== undefined) parts.push("total " + fmt(u.total));
    return parts.join(" · ");
  }
  function costText(c) {
    if (!c) return null;
    return c.text + (c.by ? " · " + c.by : "") + (c.why ? ": " + c.why : "");
  }
  function ms(v) { return v === null || v === undefined ? null : fmt(v) + " ms"; }

  function shellQuote(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }
  function headerArgument(text) {
    // A credential is left to the shell: '...Bearer '"$API_KEY" expands it from the environment.
    return text.split("$API_KEY").map(shellQuote).join('"$API_KEY"').replace(/^''|''$/g, "");
  }
  function curlOf(t) {
    const lines = ["curl " + shellQuote(t.u) + " -X " + t.meth];
    for (const [name, value] of t.curl.h) lines.push("  -H " + headerArgument(name + ": " + value));
    const b = t.curl.b;
    if (b) {
      const body = Object.assign({}, b.env);
      if (b.k) body[b.k] = b.i.map((i) => R[i]);
      lines.push("  --data-binary @- <<'JSON'\n" + JSON.stringify(body) + "\nJSON");
    }
    return lines.join(" \\\n").replace(/ \\\n  --data-binary/, " \\\n  --data-binary");
  }

  function turnBody(t, query, found) {
    const body = el("div", { class: "body" });
    if (t.diag) {
      body.append(el("h3", { text: "Error " + t.st + " and its diagnosis" }),
        el("div", { class: "diag" }, facts([["rule", t.diag.rule], ["what it means", t.diag.summary],
          ["provider", t.diag.provider], ["field", t.diag.field], ["where", t.culprit], ["cause", t.diag.cause],
          ["the provider said", t.diag.message], ["what to do", t.diag.advice]]),
        t.findings.length ? el("ul", { class: "plain" }, t.findings.map((f) => el("li", { text: f }))) : null));
    }
    const repairs = [];
    if (t.violations.length) repairs.push(el("p", { text: "As the client sent it, the request breaks:" }),
      el("ul", { class: "plain" }, t.violations.map((v) => el("li", { text: v }))));
    if (t.actions.length) repairs.push(el("p", { text: t.live ? "The proxy did:" : "The proxy would have:" }),
      el("ul", { class: "plain" }, t.actions.map((a) => el("li", { text: a }))));
    if (t.remaining.length) repairs.push(el("p", { text: "Still broken after repair:" }),
      el("ul", { class: "plain" }, t.remaining.map((v) => el("li", { text: v }))));
    if (t.unreadable) repairs.push(el("p", { text: "Not checked: " + t.unreadable }));
    if (t.recov) repairs.push(el("p", { text: "Recovered: " + t.recov }));
    if (repairs.length) body.append(el("h3", { text: "Repairs" }), ...repairs);
    if (t.since) {
      body.append(el("h3", { text: "Since the previous turn of this conversation" }),
        el("p", { text: fmt(t.since.new) + " new message(s); the client dropped " + fmt(t.since.dropped) +
          " value(s) it had been sent or had sent before" }),
        t.since.msgs.length ? el("div", {}, t.since.msgs.map((id) => messageNode(id, null, query))) : null);
    }
    const sentTitle = t.chg ? (t.live ? "What the proxy sent" : "What the proxy would send") +
      " (against what the client sent: " + t.chg.added + " restored, " + t.chg.removed + " removed, " +
      t.chg.merged + " merged)" : "The request (" + fmt(t.sent.length) + " messages)";
    body.append(el("h3", { text: sentTitle }), facts([["tools", (t.tools || []).join(", ")],
      ["settings", Object.keys(t.settings || {}).length ? JSON.stringify(t.settings) : null]]),
      conversationNode(t.sent, t, query, found));
    if (t.ans) {
      body.append(el("h3", { text: "The answer" + (t.ans.streamed ? " (streamed, " + fmt(t.ans.events) + " events)" : "") }),
        facts([["model", t.ans.model], ["finish", t.ans.finish], ["usage", usageText(t.ans.usage)],
          ["cost", costText(t.cost)], ["problem", t.ans.problem]]),
        ...t.ans.msgs.map((id) => messageNode(id, null, query)));
    }
    body.append(el("h3", { text: "Timings" }), facts([["started", t.tm.start], ["first byte", ms(t.tm.ttfb)],
      ["total", ms(t.tm.total)], ["the proxy's own time", ms(t.tm.addon)]]));
    if (t.comment) body.append(el("h3", { text: "Flow comment" }), el("pre", { class: "comment", text: t.comment }));
    const curlBox = el("div", {});
    body.append(el("h3", { text: "Replay" }), el("button", { type: "button", class: "copy-curl", text: "Copy as cURL",
      onclick: () => {
        const text = curlOf(t);
        const area = el("textarea", { class: "curl", readonly: true });
        area.value = text;
        curlBox.replaceChildren(area, el("p", { class: "muted", text: "Credentials are left out: set API_KEY in " +
          "your shell. " + (data.opaque ? "" : "Opaque values are stood in for (report made without --include-opaque).") }));
        area.select();
        if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).catch(() => {});
        else { try { document.execCommand("copy"); } catch (e) { /* the text is selected for the user */ } }
      } }), curlBox);
    return body;
  }

  function turnNode(t, query, found) {
    const badges = [el("span", { class: "num", text: "#" + t.n })];
    badges.push(el("span", { class: "badge " + (t.fail ? "err" : t.st ? "ok" : ""), text: t.st ? String(t.st) : "no answer" }));
    if (t.model) badges.push(el("span", { class: "badge model", text: t.model }));
    if (t.rep) badges.push(el("span", { class: "badge rep", text: t.live ? "repaired" : "would repair" }));
    if (t.recov) badges.push(el("span", { class: "badge rep", text: "recovered", title: t.recov }));
    if (t.diag) badges.push(el("span", { class: "badge err", text: t.diag.rule }));
    if (t.since && t.since.dropped) badges.push(el("span", { class: "badge err", text: "client dropped " + t.since.dropped }));
    badges.push(el("span", { class: "muted", text: fmt(t.sent.length) + " msgs" }));
    const usage = t.ans && t.ans.usage ? usageText(t.ans.usage) : null;
    if (usage) badges.push(el("span", { class: "muted", text: usage }));
    if (t.cost) badges.push(el("span", { class: "muted cost", text: t.cost.text, title: costText(t.cost) }));
    if (t.tm.total !== null && t.tm.total !== undefined) badges.push(el("span", { class: "muted", text: ms(t.tm.total) }));
    badges.push(el("span", { class: "url", text: t.meth + " " + t.u }));
    const node = el("details", { class: "turn", id: "turn-" + t.n, "data-n": t.n }, el("summary", {}, badges));
    node.addEventListener("toggle", () => {
      if (node.open && !node.dataset.built) {
        node.dataset.built = "1";
        node.append(turnBody(t, query, found));
        const culprit = node.querySelector(".msg.culprit");
        if (culprit) culprit.scrollIntoView({ block: "center" });
      }
    });
    return node;
  }

  // --- the list, in batches as it scrolls into view
  const main = document.getElementById("report");
  let observer = null;
  function render() {
    const query = controls.search.value.trim().toLowerCase();
    const found = matching(query);
    const turns = T.filter((t) => kept(t, found));
    document.getElementById("shown").textContent = fmt(turns.length) + " of " + fmt(T.length) + " turns";
    main.replaceChildren();
    if (observer) observer.disconnect();
    if (!turns.length) { main.append(el("p", { class: "more", text: "No turn matches." })); return; }
    let at = 0;
    let section = null, sectionConv = null;
    const convs = new Map(data.convs.map((c) => [c.n, c]));
    const more = el("p", { class: "more", text: "…" });
    function batch() {
      more.remove();
      const end = Math.min(at + BATCH, turns.length);
      for (; at < end; at++) {
        const t = turns[at];
        if (t.c !== sectionConv) {
          const c = convs.get(t.c) || { n: t.c, turns: [], models: [], title: "" };
          sectionConv = t.c;
          section = el("section", { class: "conv", id: "conv-" + c.n },
            el("h2", {}, "Conversation " + c.n + " · " + fmt(c.turns.length) + " turn(s) · " + c.models.join(", ") +
              (c.cost ? " · cost " + c.cost : ""),
              el("span", { class: "title", text: c.title })));
          main.append(section);
        }
        section.append(turnNode(t, query, found));
      }
      if (at < turns.length) { more.textContent = fmt(turns.length - at) + " more…"; main.append(more); }
    }
    batch();
    observer = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) batch(); });
    observer.observe(more);
  }

  const failed = T.filter((t) => t.fail).length;
  const repaired = T.filter((t) => t.rep && t.live).length, wouldRepair = T.filter((t) => t.rep && !t.live).length;
  document.getElementById("summary").textContent = fmt(T.length) + " exchange(s) in " + fmt(data.convs.length) +
    " conversation(s) · " + fmt(repaired) + " repaired" +
    (wouldRepair ? " · " + fmt(wouldRepair) + " the proxy would repair" : "") + " · " + fmt(failed) + " failed" +
    (data.cost ? " · cost " + data.cost + (data.prices ? " · prices: " + data.prices : "") : "") + " · from " + data.source +
    " · made " + data.generated + " by llm-reasoning-proxy " + data.version;
  let pending = null;
  controls.search.addEventListener("input", () => { clearTimeout(pending); pending = setTimeout(render, 200); });
  for (const name of ["model", "status", "repaired", "failed"]) controls[name].addEventListener("change", render);
  render();
  document.body.dataset.ready = String(Math.round(performance.now())); // milliseconds since the page was asked for
  if (location.hash.startsWith("#turn-")) {
    const node = document.getElementById(location.hash.slice(1));
    if (node) node.open = true;
  }
})();
