// One conversation through a server's Socket.IO handlers (the suite's
// integration/fixtures/docroot/sio_handler.php, or the reference's
// listeners in sio_reference.mjs), with socket.io-client 4.8, the same on
// both: a refused connect, acks of each form, an event relayed to the
// room but not its sender, events kept in order, a failed handler that
// acks nothing, and a leaver's disconnect told to the room. argv[2]
// (JSON): url, path. Prints what each client saw, as JSON.
import { io } from "socket.io-client";

const o = JSON.parse(process.argv[2]);
const seen = {};
const log = (who, x) => (seen[who] = seen[who] || []).push(x);

function client(who, token, user) {
  const s = io(o.url, {
    path: o.path, transports: o.transports || ["websocket"], reconnection: false, forceNew: true,
    auth: token ? { token } : {}, query: { room: `room-of-${who}` },
    extraHeaders: { cookie: `user=${user}; other=1` },
  });
  s.onAny((ev, ...args) => log(who, [ev, ...args]));
  s.on("connect_error", (e) => log(who, ["(connect_error)", e.message, e.data ?? null]));
  s.on("disconnect", (reason) => log(who, ["(disconnect)", reason]));
  return s;
}

async function until(test, what) {
  const end = Date.now() + 15000;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(seen)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
// Every argument of an ack (emitWithAck keeps only the first).
const ack = (s, ...args) => new Promise((resolve) => s.emit(...args, (...got) => resolve(got)));
const got = (who, ev, n = 1) => (seen[who] || []).filter((x) => x[0] === ev).length >= n;

try {
  const a = client("a", "secret", "ann");
  const b = client("b", "secret", "bob");
  const e = client("e", "secret", "eve");
  const c = client("c", "wrong", "cat");
  await until(() => got("a", "welcome") && got("b", "welcome") && got("e", "welcome"), "the welcomes");
  await until(() => got("c", "(connect_error)"), "c's refusal");
  log("a", ["(ack)", await ack(a, "say", "hi", 2)]);
  await until(() => got("b", "said") && got("e", "said"), "the room to hear a");
  log("a", ["(ack)", await ack(a, "echo", 1, { a: [2, null] }, "x")]);
  log("a", ["(ack)", await ack(a, "one")]);
  log("a", ["(ack)", await ack(a, "nothing")]);
  a.emit("fail", (...args) => log("a", ["(ack of fail)", ...args]));
  log("a", ["(ack)", await ack(a, "echo", "after fail")]);
  for (let n = 0; n < 20; n++) b.emit("say", n);
  await until(() => got("a", "said", 20) && got("e", "said", 21), "b's twenty");
  e.disconnect();
  await until(() => got("a", "left") && got("b", "left"), "e's leaving");
  b.off("disconnect");
  b.io.engine.close(); // its connection goes, with no DISCONNECT sent
  await until(() => got("a", "left", 2), "b's connection closing");
  for (const s of [a]) {
    s.off("disconnect");
    s.close();
  }
} catch (err) {
  console.log(JSON.stringify({ error: String(err), seen }));
  process.exit(1);
}
console.log(JSON.stringify(seen));
setTimeout(() => process.exit(0), 50);
