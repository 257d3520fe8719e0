// The panel's pages: one document, a section a page, filled from the
// JSON API. Everything from the server is put in the page as text
// (textContent), never as HTML: a site name, a log line or an event
// that holds markup shows as the characters it is.
"use strict";

const state = { me: null, live: null, samples: [] };
const $ = (id) => document.getElementById(id);
const SECTIONS = ["signin", "change", "dashboard", "sites", "pools", "cache", "certs", "realtime", "cluster", "logs",
                  "terminal", "audit", "users", "account"];

async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    if (state.me) headers["X-CSRF-Token"] = state.me.csrf;
  }
  const r = await fetch(path, { method, headers, credentials: "same-origin",
                                body: method === "GET" ? undefined : JSON.stringify(body || {}) });
  let data = {};
  try { data = await r.json(); } catch (e) { data = { error: "no answer from the panel" }; }
  return { status: r.status, ok: r.ok, data };
}

function notice(text) { $("notice").textContent = text; }

// Step-up (docs/panel.md): what raises privilege sends the password and
// a code again with its own request. Resolves to {password, code}, or null
// if cancelled.
function stepUp(what) {
  if (state.stepUpCancel) state.stepUpCancel(); // one at a time: the one asked last
  return new Promise((resolve) => {
    const form = $("stepup-form");
    $("stepup-what").textContent = what;
    $("stepup-password").value = "";
    $("stepup-code").value = "";
    form.hidden = false;
    $("stepup-password").focus();
    const done = (value) => {
      state.stepUpCancel = null;
      form.hidden = true;
      form.removeEventListener("submit", submit);
      $("stepup-cancel").removeEventListener("click", cancel);
      resolve(value);
    };
    const submit = (ev) => {
      ev.preventDefault();
      done({ password: $("stepup-password").value, code: $("stepup-code").value });
    };
    const cancel = () => done(null);
    state.stepUpCancel = cancel;
    form.addEventListener("submit", submit);
    $("stepup-cancel").addEventListener("click", cancel);
  });
}

function cell(tr, text) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  tr.appendChild(td);
  return td;
}

function fillTable(id, rows, columns) {
  const body = $(id).querySelector("tbody");
  body.replaceChildren();
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const c of columns) {
      if (typeof c === "function") c(tr, row); else cell(tr, row[c]);
    }
    body.appendChild(tr);
  }
}

function show(name) {
  for (const s of SECTIONS) $(s).hidden = s !== name;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === "#" + name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function signedIn(me) {
  state.me = me;
  document.body.classList.toggle("viewer", me.role !== "admin");
  document.body.classList.toggle("terminal", !!me.terminal);
  $("who").textContent = me.user + " (" + me.role + ")";
  $("change-user").value = me.user;
  $("signout").hidden = false;
  $("nav").hidden = me.must_change;
}

async function route() {
  if (!state.me) {
    const r = await api("GET", "/api/me");
    if (r.status === 401) { show("signin"); return; }
    signedIn(r.data);
  }
  if (state.me.must_change) { show("change"); return; }
  const page = (location.hash || "#dashboard").slice(1);
  const name = SECTIONS.includes(page) && page !== "signin" && page !== "change" ? page : "dashboard";
  show(name);
  if (name !== "dashboard" && state.live) { state.live.close(); state.live = null; }
  if (name !== "logs") stopFollowing();
  await (loaders[name] || (() => {}))();
}

// A pool's background processes and schedule entries (vc bg, vc
// schedule), with the same actions as `vc bg start|stop|restart`.
function backgroundTable(list, entries) {
  const h = document.createElement("h3");
  h.textContent = "Background processes and schedules";
  list.appendChild(h);
  const t = document.createElement("table");
  t.className = "background";
  const head = t.createTHead().insertRow();
  for (const name of ["Site", "Entry", "State", "PID", "Command", "Starts or runs", "Last", "Actions"]) {
    const th = document.createElement("th");
    th.scope = "col"; th.textContent = name;
    if (name === "Actions") th.className = "admin-only";
    head.appendChild(th);
  }
  t.createTBody();
  t.id = "background-" + list.children.length;
  list.appendChild(t);
  fillTable(t.id, entries, ["site", (tr, e) => cell(tr, e.kind === "schedule" ? e.name : e.name + " #" + e.process),
    "state", "pid", (tr, e) => cell(tr, e.kind === "schedule" ? e.line : e.command),
    (tr, e) => cell(tr, e.kind === "schedule" ? e.runs + " runs, " + e.skipped + " skipped" : e.starts),
    (tr, e) => cell(tr, e.kind === "schedule" ? e.last_status + " (next " + e.next_run + ")" : e.failures + " failures"),
    (tr, e) => {
      const td = cell(tr, "");
      td.className = "admin-only";
      for (const action of ["Start", "Stop", "Restart"]) {
        td.append(button(action, action + " " + e.site + "/" + e.name, async () => {
          const x = await api("POST", "/api/pools/background", { site: e.site, name: e.name, action: action.toLowerCase() });
          notice(x.ok ? x.data.message : x.data.error);
          loaders.pools();
        }), " ");
      }
    }]);
}

const loaders = {
  async dashboard() {
    const r = await api("GET", "/api/daemons");
    if (r.ok) fillTable("daemons-table", r.data.daemons, ["daemon", "pid", "state", "uptime", "restarts"]);
    if (!state.live) startLive();
  },
  async sites() {
    const r = await api("GET", "/api/sites");
    if (!r.ok) return;
    fillTable("sites-table", r.data.sites, ["name", (tr, s) => cell(tr, s.hosts.join(", ")), "root", "pool",
      (tr, s) => cell(tr, s.running ? "serving" : s.enabled ? "enabled, not serving" : "disabled"),
      (tr, s) => {
        const td = cell(tr, "");
        td.className = "admin-only";
        td.append(button("Edit", "Edit the site " + s.name, () => editSite(s.name)), " ",
          button(s.enabled ? "Disable" : "Enable", (s.enabled ? "Disable" : "Enable") + " the site " + s.name,
            async () => {
              const x = await api("POST", "/api/sites/enable", { name: s.name, enabled: !s.enabled });
              notice(x.ok ? x.data.message : x.data.error);
              loaders.sites();
            }));
      }]);
  },
  async pools() {
    // Kept current while shown: workers come, go and change state.
    clearTimeout(state.poolsTimer);
    if (location.hash === "#pools") state.poolsTimer = setTimeout(loaders.pools, 2000);
    const r = await api("GET", "/api/pools");
    if (!r.ok) return;
    const list = $("pools-list"), select = $("scale-pool"), chosen = select.value;
    list.replaceChildren();
    select.replaceChildren();
    for (const p of r.data.pools) {
      const h = document.createElement("h2");
      h.textContent = "Pool " + p.pool + (p.error ? " (not answering: " + p.error + ")"
        : ": " + p.workers + " workers, " + p.busy + " busy, " + p.idle + " idle, mode " + p.mode);
      list.appendChild(h);
      const reload = button("Reload pool " + p.pool, "Reload the pool " + p.pool, async () => {
        const x = await api("POST", "/api/pools/reload", { pool: p.pool });
        notice(x.ok ? x.data.message : x.data.error);
        loaders.pools();
      });
      reload.classList.add("admin-only");
      list.appendChild(reload);
      const opt = document.createElement("option");
      opt.value = p.pool; opt.textContent = p.pool;
      opt.selected = p.pool === chosen;
      select.appendChild(opt);
      if (p.error) continue;
      const t = document.createElement("table");
      t.className = "workers";
      const head = t.createTHead().insertRow();
      for (const name of ["PID", "State", "Front", "Served", "PSS KiB", "USS KiB", "Request", "Actions"]) {
        const th = document.createElement("th");
        th.scope = "col"; th.textContent = name;
        if (name === "Actions") th.className = "admin-only";
        head.appendChild(th);
      }
      t.createTBody();
      t.id = "workers-" + list.children.length;
      list.appendChild(t);
      fillTable(t.id, p.workers_list, ["pid", "state", "front", "served", "pss_kib", "uss_kib", "uri", (tr, w) => {
        const td = cell(tr, "");
        td.className = "admin-only";
        td.appendChild(button("Recycle", "Recycle worker " + w.pid, async () => {
          const x = await api("POST", "/api/pools/recycle", { pool: p.pool, pid: Number(w.pid) });
          notice(x.ok ? x.data.message : x.data.error);
          loaders.pools();
        }));
      }]);
      if (p.background_list && p.background_list.length) backgroundTable(list, p.background_list);
    }
  },
  async cache() {
    const r = await api("GET", "/api/cache");
    const dl = $("cache-stats");
    dl.replaceChildren();
    if (!r.ok) { dl.textContent = r.data.error; return; }
    for (const [k, v] of Object.entries(r.data)) {
      const d = document.createElement("div"), dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = k; dd.textContent = v;
      d.append(dt, dd); dl.appendChild(d);
    }
  },
  async audit() {
    const r = await api("GET", "/api/audit");
    if (r.ok) fillTable("audit-table", r.data.events,
      [(tr, e) => cell(tr, new Date(e.time_ms).toLocaleString()), "user", "action", "target", "from", "result"]);
    // Kept current while shown: an event reaches the journal a moment
    // after the change that made it.
    clearTimeout(state.auditTimer);
    if (location.hash === "#audit") state.auditTimer = setTimeout(loaders.audit, 3000);
  },
  async users() {
    const r = await api("GET", "/api/users");
    if (!r.ok) { notice(r.data.error); return; }
    fillTable("users-table", r.data.users, ["user", "role", (tr, u) => cell(tr, u.totp ? "on" : "off"),
      (tr, u) => {
        const td = cell(tr, "");
        const own = state.me && u.user === state.me.user;
        if (!own) {
          const other = u.role === "admin" ? "viewer" : "admin";
          td.append(button("Make " + other, "Make " + u.user + " an " + other, async () => {
            // Making an admin asks for the password and a code again.
            const s = other === "admin" ? await stepUp("Make " + u.user + " an admin") : {};
            if (!s) return;
            const x = await api("POST", "/api/users/role", { user: u.user, role: other, ...s });
            notice(x.ok ? u.user + " is now " + (other === "admin" ? "an admin" : "a viewer") + "." : x.data.error);
            loaders.users();
          }), " ", button("Remove", "Remove the user " + u.user, async () => {
            if (!confirm("Remove the user " + u.user + "? Their sessions end now.")) return;
            const x = await api("POST", "/api/users/remove", { user: u.user });
            notice(x.ok ? u.user + " is removed." : x.data.error);
            loaders.users();
          }), " ");
        }
        if (!u.totp) return;
        td.appendChild(button("Reset two-factor", "Reset two-factor sign-in of " + u.user, async () => {
          // One's own asks for the password and a code again.
          const s = own ? await stepUp("Reset your own two-factor sign-in") : {};
          if (!s) return;
          const x = await api("POST", "/api/users/totp-reset", { user: u.user, ...s });
          notice(x.ok ? "Two-factor sign-in of " + u.user + " is off." : x.data.error);
          loaders.users();
        }));
      }]);
  },
  async account() {
    const r = await api("GET", "/api/me");
    if (!r.ok) return;
    $("totp-state").textContent = r.data.totp
      ? "Two-factor sign-in is on (" + r.data.recovery_left + " recovery codes left)."
      : "Two-factor sign-in is off.";
    $("totp-begin").hidden = r.data.totp;
  },
};

function startLive() {
  const es = new EventSource("/api/live");
  state.live = es;
  es.addEventListener("history", (ev) => { state.samples = JSON.parse(ev.data); draw(); });
  es.addEventListener("sample", (ev) => {
    state.samples.push(JSON.parse(ev.data));
    if (state.samples.length > 3600) state.samples.shift();
    draw();
  });
}

function draw() {
  const last = state.samples[state.samples.length - 1] || {};
  const round = (v, d) => String(Math.round((v || 0) * 10 ** d) / 10 ** d);
  const fig = { "fig-requests": last.requests, "fig-s2xx": last.s2xx, "fig-s3xx": last.s3xx,
                "fig-s4xx": last.s4xx, "fig-s5xx": last.s5xx, "fig-php": last.php, "fig-static": last.static,
                "fig-busy": last.busy, "fig-idle": last.idle, "fig-queued": last.queued };
  for (const [id, v] of Object.entries(fig)) $(id).textContent = round(v, 0);
  $("fig-p50").textContent = round(last.p50_ms, 2);
  $("fig-p99").textContent = round(last.p99_ms, 2);
  $("fig-pss").textContent = round((last.pss_kib_per_worker || 0) / 1024, 1);
  const looked = (last.cache_hits || 0) + (last.cache_misses || 0);
  $("fig-hits").textContent = looked ? round(100 * last.cache_hits / looked, 1) + " %" : "-";
  const c = $("plot"), g = c.getContext("2d"), shown = state.samples.slice(-300);
  const max = Math.max(10, ...shown.map((s) => s.requests || 0));
  g.clearRect(0, 0, c.width, c.height);
  g.strokeStyle = "#1d4ed8";
  g.lineWidth = 2;
  g.beginPath();
  shown.forEach((s, i) => {
    const x = c.width - (shown.length - 1 - i) * (c.width / 300), y = c.height - ((s.requests || 0) / max) * (c.height - 10);
    if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
  });
  g.stroke();
  g.fillStyle = "#374151";
  g.font = "14px system-ui, sans-serif";
  g.fillText(String(max) + " /s", 4, 16);
  c.dataset.points = String(shown.length);
  c.dataset.last = String(last.requests || 0);
}

function button(text, label, fn) {
  const b = document.createElement("button");
  b.type = "button"; b.className = "small"; b.textContent = text;
  b.setAttribute("aria-label", label);
  b.addEventListener("click", fn);
  return b;
}

const SITE_TEMPLATE = 'site: {\n  hosts = ["example.test"];\n  root = "/var/www/example/public";\n};\n';

async function editSite(name) {
  $("site-error").textContent = "";
  $("site-name").value = name || "";
  $("site-name").readOnly = !!name;
  $("site-text").value = SITE_TEMPLATE;
  if (name) {
    const r = await api("GET", "/api/sites/file?name=" + encodeURIComponent(name));
    if (!r.ok) { notice(r.data.error); return; }
    $("site-text").value = r.data.text;
  }
  $("site-form-h").textContent = name ? "Site " + name : "New site";
  $("site-form").hidden = false;
  $("site-text").focus();
}

function on(id, event, fn) { $(id).addEventListener(event, fn); }

on("site-new", "click", () => editSite(null));
on("site-cancel", "click", () => { $("site-form").hidden = true; });
on("site-form", "submit", async (ev) => {
  ev.preventDefault();
  const r = await api("POST", "/api/sites/save", { name: $("site-name").value, text: $("site-text").value });
  if (!r.ok) { $("site-error").textContent = r.data.error; return; }
  $("site-form").hidden = true;
  notice(r.data.message);
  loaders.sites();
});

on("signin-form", "submit", async (ev) => {
  ev.preventDefault();
  const body = { user: $("signin-user").value, password: $("signin-password").value };
  if ($("signin-code").value) body.code = $("signin-code").value;
  const r = await api("POST", "/api/login", body);
  if (r.data.need_code) {
    $("signin-code-row").hidden = false;
    $("signin-code").focus();
    $("signin-error").textContent = r.data.error;
    return;
  }
  if (!r.ok) { $("signin-error").textContent = r.data.error; return; }
  $("signin-error").textContent = "";
  $("signin-form").reset();
  $("signin-code-row").hidden = true;
  signedIn(r.data);
  route();
});

on("change-form", "submit", async (ev) => {
  ev.preventDefault();
  if ($("change-new").value !== $("change-again").value) {
    $("change-error").textContent = "The two new passwords differ.";
    return;
  }
  const r = await api("POST", "/api/password", { old: $("change-old").value, new: $("change-new").value });
  if (!r.ok) { $("change-error").textContent = r.data.error; return; }
  $("change-form").reset();
  state.me.must_change = false;
  signedIn(state.me);
  notice("Your password is changed.");
  route();
});

on("signout", "click", async () => {
  await api("POST", "/api/logout");
  if (state.live) { state.live.close(); state.live = null; }
  state.me = null;
  $("signout").hidden = true;
  $("nav").hidden = true;
  $("who").textContent = "";
  notice("");
  show("signin");
});

on("reload", "click", async () => {
  const r = await api("POST", "/api/reload");
  notice(r.ok ? r.data.message : r.data.error);
});

on("scale-form", "submit", async (ev) => {
  ev.preventDefault();
  const r = await api("POST", "/api/pools/scale", { pool: $("scale-pool").value, workers: Number($("scale-workers").value) });
  notice(r.ok ? r.data.message : r.data.error);
  loaders.pools();
});

on("purge-form", "submit", async (ev) => {
  ev.preventDefault();
  const r = await api("POST", "/api/cache/purge", { kind: $("purge-kind").value, value: $("purge-value").value });
  notice(r.ok ? r.data.message : r.data.error);
  loaders.cache();
});

on("show-form", "submit", async (ev) => {
  ev.preventDefault();
  const r = await api("GET", "/api/cache/show?url=" + encodeURIComponent($("show-url").value));
  notice(r.ok ? r.data.message : r.data.error);
  fillTable("show-table", r.data.entries || [], ["kind", "status", "bytes", "age_s", "fresh_s", "tags",
    (tr, e) => cell(tr, (e.headers || []).join("\n"))]);
});

on("user-form", "submit", async (ev) => {
  ev.preventDefault();
  const s = await stepUp("Add the user " + $("user-name").value + " as " + $("user-role").value);
  if (!s) return;
  const r = await api("POST", "/api/users/add", { user: $("user-name").value, role: $("user-role").value, ...s });
  $("user-password").textContent = r.ok
    ? "Password for " + r.data.user + " (shown once; it must be changed at the first sign-in): " + r.data.password
    : "";
  notice(r.ok ? "Added " + r.data.user + "." : r.data.error);
  loaders.users();
});

on("totp-begin", "click", async () => {
  const r = await api("POST", "/api/totp/begin");
  if (!r.ok) { notice(r.data.error); return; }
  $("totp-secret").textContent = r.data.secret;
  $("totp-qr").src = "/api/totp/qr.svg?" + Date.now();
  $("totp-enrol").hidden = false;
  $("totp-begin").hidden = true;
});

on("totp-form", "submit", async (ev) => {
  ev.preventDefault();
  const r = await api("POST", "/api/totp/confirm", { code: $("totp-code").value });
  if (!r.ok) { notice(r.data.error); return; }
  $("totp-enrol").hidden = true;
  const ul = $("recovery-list");
  ul.replaceChildren();
  for (const code of r.data.recovery) {
    const li = document.createElement("li");
    li.textContent = code;
    ul.appendChild(li);
  }
  $("totp-recovery").hidden = false;
  notice("Two-factor sign-in is on.");
  loaders.account();
});

// A notice is about the page it was given on: another page starts without it.
window.addEventListener("hashchange", () => { notice(""); route(); });
// Once every script (ops.js too) has added its pages.
document.addEventListener("DOMContentLoaded", route);
