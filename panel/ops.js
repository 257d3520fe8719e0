// The panel's operations pages: certificates, realtime, cluster and
// deploys, logs and events, and the terminal. They use panel.js's
// helpers (api, fillTable, cell, button, notice) and, like it, put what
// the server says in the page as text only.
"use strict";

const when = (unixSeconds) => Number(unixSeconds) > 0 ? new Date(Number(unixSeconds) * 1000).toLocaleString() : "-";

Object.assign(loaders, {
  async certs() {
    const r = await api("GET", "/api/certs");
    if (!r.ok) { notice(r.data.error); return; }
    $("certs-state").textContent = !r.data.running ? "vc-acme does not answer (" + r.data.why + ")."
      : r.data.certs.length ? r.data.message : "No site has tls = \"acme\": there is no certificate to keep.";
    fillTable("certs-table", r.data.certs, ["site", "hosts", "issuer", (tr, c) => cell(tr, when(c.not_after)),
      (tr, c) => cell(tr, when(c.renew_at)), "last_error", (tr, c) => {
        const td = cell(tr, "");
        td.className = "admin-only";
        const has = Number(c.not_after) > 0;
        td.append(button(has ? "Renew now" : "Issue", (has ? "Renew the certificate of " : "Issue a certificate for ") + c.site,
          () => certAction("/api/certs/renew", { site: c.site, mode: has ? "force" : "issue" })));
        if (has) td.append(" ", button("Revoke", "Revoke the certificate of " + c.site, () => {
          if (confirm("Revoke the certificate of " + c.site + "? A new one is ordered at once.")) {
            certAction("/api/certs/revoke", { site: c.site, reason: 4 }); // superseded
          }
        }));
      }]);
  },

  async realtime() {
    const r = await api("GET", "/api/realtime");
    if (!r.ok) { notice(r.data.error); return; }
    fillTable("apps-table", r.data.apps, ["site", "id", "key", "kept", (tr, a) => {
      const td = cell(tr, "");
      td.className = "admin-only";
      const code = document.createElement("code");
      code.className = "secret";
      td.append(code, button("Show", "Show the secret of app " + a.id, async () => {
        const s = await stepUp("Show the secret of app " + a.id);
        if (!s) return;
        const x = await api("POST", "/api/realtime/secret", { site: a.site, id: a.id, ...s });
        if (!x.ok) { notice(x.data.error); return; }
        code.textContent = x.data.secret + " ";
      }), " ", button("Rotate", "Rotate the secret of app " + a.id, () => {
        state.rotating = a;
        $("rotate-h").textContent = "Rotate the secret of app " + a.id + " (site " + a.site + ")";
        $("rotate-confirm").value = "";
        $("rotate-form").hidden = false;
        $("rotate-confirm").focus();
      }));
    }]);
    fillTable("hooks-table", r.data.webhooks, ["site", "webhook"]);
    fillTable("rooms-table", r.data.rooms, ["room", "subscribers", "members", (tr, room) => {
      const td = cell(tr, "");
      if (room.members > 0) td.append(button("Members", "Members of " + room.room, () => showMembers(room.room)));
    }]);
    fillTable("sio-table", r.data.socketio, ["site", "namespace",
      (tr, row) => cell(tr, row.room === "" ? "(every socket of the namespace)" : row.room), "sockets"]);
  },

  async cluster() {
    const [nodes, rel] = await Promise.all([api("GET", "/api/cluster/nodes"), api("GET", "/api/cluster/releases")]);
    $("nodes-state").textContent = nodes.ok && nodes.data.running ? nodes.data.message
      : "This node is not in a cluster (vc-mesh does not run).";
    fillTable("nodes-table", nodes.ok ? nodes.data.nodes : [],
      [(tr, n) => cell(tr, n.node + (n.self === "1" ? " (this one)" : "")), "state", "silent_ms", "version", "load",
        "addresses", "sites"]);
    const list = $("releases-list");
    list.replaceChildren();
    $("releases-state").textContent = rel.ok && rel.data.running
      ? (rel.data.sites.length ? "" : "No site has a release yet (vc deploy).")
      : "No site is deployed with vc deploy here (vc-fed does not run).";
    for (const site of rel.ok ? rel.data.sites : []) {
      const h = document.createElement("h3");
      h.textContent = "Site " + site.site + ": " + site.message;
      const t = document.createElement("table");
      t.id = "releases-" + site.site;
      const head = t.createTHead().insertRow();
      for (const name of ["Release", "State", "Bad", "Made", "Message", "Nodes", "Log", "Actions"]) {
        const th = document.createElement("th");
        th.scope = "col"; th.textContent = name;
        if (name === "Actions") th.className = "admin-only";
        head.appendChild(th);
      }
      t.createTBody();
      list.append(h, t);
      fillTable(t.id, site.releases, ["id", "state", "bad", (tr, x) => cell(tr, when(x.created)), "message",
        (tr, x) => cell(tr, x.nodes || ""),
        (tr, x) => cell(tr, "").append(button("Log", "The log of release " + x.id + " of site " + site.site,
          () => showReleaseLog(site.site, x.id))),
        (tr, x) => {
          const td = cell(tr, "");
          td.className = "admin-only";
          if (x.state !== "current" && x.bad !== "yes") {
            td.append(button("Roll back to this", "Roll site " + site.site + " back to release " + x.id, async () => {
              if (!confirm("Switch site " + site.site + " to release " + x.id + " on every node?")) return;
              const y = await api("POST", "/api/cluster/rollback", { site: site.site, release: x.id });
              notice(y.ok ? y.data.message : y.data.error);
              loaders.cluster();
            }));
          }
        }]);
    }
  },

  async logs() {},

  async terminal() {
    $("terminal-state").textContent = state.term ? "Open." : "";
  },
});

// What a release's hooks printed (build, before and after the switch).
async function showReleaseLog(site, id) {
  const r = await api("GET", "/api/cluster/releases/log?site=" + encodeURIComponent(site) +
    "&release=" + encodeURIComponent(id));
  $("release-log-h").textContent = "Log of release " + id + " of site " + site;
  $("release-log").textContent = r.ok ? (r.data.log || "(nothing: this release ran no hooks)") : r.data.error;
  $("release-log-h").hidden = $("release-log").hidden = false;
}

async function certAction(path, body) {
  const r = await api("POST", path, body);
  notice(r.ok ? r.data.message : r.data.error);
  loaders.certs();
}

async function showMembers(room) {
  const r = await api("GET", "/api/realtime/members?room=" + encodeURIComponent(room));
  if (!r.ok) { notice(r.data.error); return; }
  $("members-h").textContent = "Members of " + room;
  $("members-h").hidden = false;
  $("members-table").hidden = false;
  fillTable("members-table", r.data.members, ["user_id", "info", "connections"]);
}

on("rotate-cancel", "click", () => { $("rotate-form").hidden = true; });
on("rotate-form", "submit", async (ev) => {
  ev.preventDefault();
  const a = state.rotating;
  const r = await api("POST", "/api/realtime/rotate", { site: a.site, id: a.id, confirm: $("rotate-confirm").value });
  notice(r.ok ? "The secret of app " + a.id + " is new: " + r.data.message : r.data.error);
  if (r.ok) $("rotate-form").hidden = true;
  loaders.realtime();
});

// Logs and events: one stream at a time. Paused, lines wait (up to
// LINES_KEPT) and come in at the resume; the list keeps the newest.
const LINES_KEPT = 2000;

function stopFollowing() {
  if (state.follow) state.follow.close();
  state.follow = null;
  state.held = [];
  state.paused = false;
  $("follow-pause").disabled = true;
  $("follow-pause").textContent = "Pause";
}

function addLine(text) {
  const ol = $("follow-lines"), li = document.createElement("li");
  li.textContent = text;
  ol.appendChild(li);
  while (ol.children.length > LINES_KEPT) ol.firstElementChild.remove();
  ol.scrollTop = ol.scrollHeight;
}

function lineOf(data) {
  if (typeof data === "string") return data;
  // An event: time, severity, topic, source, then its fields.
  const fields = Object.entries(data.fields || {}).map(([k, v]) => k + "=" + v).join(" ");
  return new Date(data.time_ms).toLocaleTimeString() + " " + data.severity + " " + data.topic + " (" +
    data.source + ") " + fields;
}

on("follow-form", "submit", (ev) => {
  ev.preventDefault();
  stopFollowing();
  const q = new URLSearchParams({ what: $("follow-what").value, q: $("follow-q").value,
                                  topic: $("follow-topic").value });
  const es = new EventSource("/api/follow?" + q.toString());
  state.follow = es;
  $("follow-pause").disabled = false;
  $("follow-state").textContent = "Following " + $("follow-what").selectedOptions[0].textContent + ".";
  es.onmessage = (m) => {
    const text = lineOf(JSON.parse(m.data));
    if (!state.paused) { addLine(text); return; }
    state.held.push(text);
    if (state.held.length > LINES_KEPT) state.held.shift();
    $("follow-state").textContent = "Paused: " + state.held.length + " lines wait.";
  };
  es.addEventListener("skipped", (m) => addLine("(" + m.data + " lines skipped: the page read too slowly)"));
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) $("follow-state").textContent = "The stream ended.";
  };
});

on("follow-pause", "click", () => {
  state.paused = !state.paused;
  $("follow-pause").textContent = state.paused ? "Resume" : "Pause";
  if (state.paused) { $("follow-state").textContent = "Paused."; return; }
  for (const text of state.held) addLine(text);
  state.held = [];
  $("follow-state").textContent = "Following.";
});

on("follow-clear", "click", () => { $("follow-lines").replaceChildren(); });

// The terminal: xterm.js (from npm, copied into vendor/ by the build),
// loaded the first time the page opens a terminal.
function loadVendor() {
  if (state.vendor) return state.vendor;
  const add = (tag, attrs) => new Promise((resolve, reject) => {
    const el = document.createElement(tag);
    Object.assign(el, attrs);
    el.onload = resolve;
    el.onerror = () => reject(new Error("the terminal widget is not installed (" + (attrs.src || attrs.href) + ")"));
    document.head.appendChild(el);
  });
  state.vendor = Promise.all([add("link", { rel: "stylesheet", href: "/vendor/xterm.css" }),
                              add("script", { src: "/vendor/xterm.js" })])
    .then(() => add("script", { src: "/vendor/addon-fit.js" }));
  return state.vendor;
}

function closeTerminal(why) {
  if (state.termSocket) state.termSocket.close();
  if (state.term) state.term.dispose();
  state.term = state.termSocket = null;
  $("terminal-close").disabled = true;
  $("terminal-state").textContent = why;
}

on("terminal-close", "click", () => closeTerminal("Closed."));
on("terminal-form", "submit", async (ev) => {
  ev.preventDefault();
  const s = await stepUp("Open a terminal");
  if (!s) return;
  const r = await api("POST", "/api/terminal/ticket", s);
  if (!r.ok) { $("terminal-state").textContent = r.data.error; return; }
  try { await loadVendor(); } catch (e) { $("terminal-state").textContent = e.message; return; }
  closeTerminal("");
  const term = new Terminal({ cursorBlink: true, fontSize: 14 });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open($("terminal-screen"));
  fit.fit();
  const ws = new WebSocket("wss://" + location.host + "/api/terminal?ticket=" + encodeURIComponent(r.data.ticket));
  ws.binaryType = "arraybuffer";
  state.term = term;
  state.termSocket = ws;
  const size = () => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ cols: term.cols, rows: term.rows })); };
  const encoder = new TextEncoder();
  ws.onopen = () => { size(); $("terminal-close").disabled = false; $("terminal-state").textContent = "Open."; term.focus(); };
  ws.onmessage = (m) => term.write(new Uint8Array(m.data));
  ws.onclose = (e) => { if (state.termSocket === ws) closeTerminal("Closed: " + (e.reason || "the connection ended") + "."); };
  term.onData((d) => { if (ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(d)); });
  term.onResize(size);
  window.addEventListener("resize", () => { if (state.term === term) fit.fit(); });
});

// The cache's warm-up: started here, followed while the page shows it.
async function warmState() {
  clearTimeout(state.warmTimer);
  const r = await api("GET", "/api/cache/warm");
  if (!r.ok || !r.data.sitemap) return;
  const p = r.data.progress || {}, bar = $("warm-progress");
  const done = Number(p.done || 0), total = Number(p.total || 0);
  bar.hidden = false;
  bar.max = total || 1;
  bar.value = done;
  $("warm-state").textContent = (r.data.running ? "Warming " : "Warmed ") + r.data.sitemap + ": " + done + " of " +
    total + " URLs, " + (p.stored || 0) + " stored, " + (p.already || 0) + " already there, " +
    (p.uncacheable || 0) + " not cacheable, " + (p.errors || 0) + " errors" +
    (p.result && p.result !== "ok" ? " (" + p.result + ")" : "") + ".";
  if (r.data.running && location.hash === "#cache") state.warmTimer = setTimeout(warmState, 1000);
}

const cacheLoader = loaders.cache;
loaders.cache = async () => { await cacheLoader(); await warmState(); };

on("warm-form", "submit", async (ev) => {
  ev.preventDefault();
  const r = await api("POST", "/api/cache/warm", { sitemap: $("warm-sitemap").value });
  notice(r.ok ? "The warm-up started." : r.data.error);
  if (r.ok) warmState();
});
