// Connection state recovery, as socket.io-client 4.8 does it: argv[2]
// (JSON) names the server's URL, path, operation URL and transports. A
// socket joins a room and gets an emit (so it has an offset); its
// connection is cut (the engine closed, no DISCONNECT sent); while it is
// away the room and the namespace get an emit each, and another room's
// one that is not for it; it reconnects by itself. Prints what it saw:
// each event's name and arguments less the offset socket.io appends,
// whether it came back recovered and with the same id, and an emit to
// its room after, which shows its rooms came back too.
import { io } from "socket.io-client";

const o = JSON.parse(process.argv[2]);
const seen = [];
const op = async (body) => {
  const r = await fetch(o.opUrl, { method: "POST", body: JSON.stringify(body) });
  if ((await r.text()).trim() !== "ok") throw new Error(`op ${JSON.stringify(body)} refused`);
};
const until = async (test, what) => {
  const end = Date.now() + 15000;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(seen)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};
const s = io(o.url, {
  path: o.path, transports: o.transports, forceNew: true, reconnectionDelay: 100, reconnectionDelayMax: 200,
});
let connects = 0;
s.on("connect", () => connects++);
s.onAny((ev, ...args) => {
  const last = args[args.length - 1];
  seen.push([ev, ...(typeof last === "string" && /^[0-9A-Za-z_-]+$/.test(last) && args.length > 1 ? args.slice(0, -1) : args)]);
});
const got = (ev) => seen.some((x) => x[0] === ev);
try {
  await until(() => connects === 1, "the first connect");
  const first = s.id;
  await op({ op: "join", to: s.id, rooms: ["r"] });
  await op({ op: "emit", event: "before", args: ["x"], to: "r" });
  await until(() => got("before"), "the first emit");
  s.io.engine.close();
  await until(() => !s.connected, "the cut");
  await op({ op: "emit", event: "while away", args: [1], to: "r" });
  await op({ op: "emit", event: "to everyone", args: [2] });
  await op({ op: "emit", event: "not for it", args: [3], to: "other" });
  await until(() => connects === 2, "the reconnect");
  const back = { recovered: s.recovered, sameId: s.id === first };
  await until(() => got("while away") && got("to everyone"), "what it missed");
  await op({ op: "emit", event: "after", args: [4], to: "r" });
  await until(() => got("after"), "an emit to its room after");
  console.log(JSON.stringify({ ...back, seen }));
} catch (err) {
  console.log(JSON.stringify({ error: String(err), seen }));
  process.exit(1);
}
s.close();
setTimeout(() => process.exit(0), 50);
