// socket.io-client 4.8 sockets driven by a server-side script, the same on
// the suite and on the reference: argv[2] (JSON) names the server's URL,
// its path, the URL that applies an operation (io.of(nsp).in(to).except(..)
// then emit, socketsJoin, socketsLeave or disconnectSockets), the clients
// ({NAME: [namespaces]}) and the steps (operations; "$NAME" in them stands
// for that client's socket id in the step's namespace). After each step a
// "mark" event goes to every namespace, and the next step waits until each
// socket has it or has been disconnected: no fixed sleep, and what a step
// sent arrives before its mark. Prints {ids, events: {"NAME nsp": [...]}}.
import { io } from "socket.io-client";

const o = JSON.parse(process.argv[2]);
const events = {};
const sockets = {};
const ids = {};
const say = (k, x) => (events[k] = events[k] || []).push(x);

async function op(body) {
  const r = await fetch(o.opUrl, { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok || text.trim() !== "ok") throw new Error(`op ${JSON.stringify(body)}: ${r.status} ${text}`);
}

function ids_in(x, nsp) {
  if (typeof x === "string" && x.startsWith("$")) return sockets[`${x.slice(1)} ${nsp}`].id;
  if (Array.isArray(x)) return x.map((y) => ids_in(y, nsp));
  return x;
}

async function until(test, what) {
  const end = Date.now() + 10000;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const nsps = new Set();
for (const [name, list] of Object.entries(o.clients)) {
  for (const nsp of list) {
    nsps.add(nsp);
    const key = `${name} ${nsp}`;
    const s = io(o.url + (nsp === "/" ? "" : nsp), {
      path: o.path, transports: o.transports || ["websocket"], reconnection: false, forceNew: true,
    });
    s.marks = [];
    s.onAny((ev, ...args) => {
      if (ev === "mark") s.marks.push(args[0]);
      say(key, [ev, ...args]);
    });
    s.on("disconnect", (reason) => say(key, ["(disconnect)", reason]));
    s.on("connect_error", (e) => say(key, ["(connect_error)", e.message]));
    sockets[key] = s;
  }
}
try {
  await until(() => Object.values(sockets).every((s) => s.connected), "every socket to connect");
  for (const [key, s] of Object.entries(sockets)) ids[key] = s.id;
  for (let k = 0; k < o.steps.length; k++) {
    const step = o.steps[k];
    const nsp = step.nsp || "/";
    await op({ ...step, to: ids_in(step.to, nsp), except: ids_in(step.except, nsp) });
    for (const n of nsps) await op({ op: "emit", event: "mark", args: [k], nsp: n });
    await until(() => Object.values(sockets).every((s) => !s.connected || s.marks.includes(k)), `step ${k}'s mark`);
  }
} catch (e) {
  console.error(String(e));
  console.log(JSON.stringify({ ids, events, error: String(e) }));
  process.exit(1);
}
console.log(JSON.stringify({ ids, events }));
for (const s of Object.values(sockets)) {
  s.off("disconnect");
  s.close();
}
setTimeout(() => process.exit(0), 50);
