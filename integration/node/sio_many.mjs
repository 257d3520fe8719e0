// n socket.io-client sockets (each its own connection) in one namespace:
// argv[2] (JSON) names the server's URL, path, the operation URL (as
// sio_scenario.mjs's), n and the transports. Once all are connected, two
// emits to every socket, one after the other; prints {connected, exact:
// the sockets that got [1, 2] and nothing else, ms: from the first emit
// until every socket had both}. A second copy of the first emit would
// have come before the second on the same connection.
import { io } from "socket.io-client";

const o = JSON.parse(process.argv[2]);
const sockets = [];
for (let i = 0; i < o.n; i++) {
  const s = io(o.url, { path: o.path, transports: o.transports, reconnection: false, forceNew: true });
  s.seen = [];
  s.on("all", (n) => s.seen.push(n));
  sockets.push(s);
}
const until = async (test, ms) => {
  const end = Date.now() + ms;
  while (!test() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return test();
};
const emit = async (n) => {
  const r = await fetch(o.opUrl, { method: "POST", body: JSON.stringify({ op: "emit", event: "all", args: [n] }) });
  await r.text();
};
const connected = () => sockets.filter((s) => s.connected).length;
await until(() => connected() === o.n, 60000);
const t0 = Date.now();
await emit(1);
await emit(2);
await until(() => sockets.every((s) => s.seen.length >= 2), 30000);
const ms = Date.now() - t0;
const exact = sockets.filter((s) => s.seen.length === 2 && s.seen[0] === 1 && s.seen[1] === 2).length;
console.log(JSON.stringify({ connected: connected(), exact, ms }));
for (const s of sockets) s.close();
setTimeout(() => process.exit(0), 100);
