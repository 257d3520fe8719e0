// socket.io 4.8 as the reference the front's Socket.IO is compared with:
// a server with no event handler, its namespaces, ping and payload
// settings from argv[2] (JSON), both transports (polling, and WebSocket
// to upgrade to or start with). Prints "listening PORT", then runs until stdin closes.
import { createServer } from "node:http";
import { Server } from "socket.io";

const opts = JSON.parse(process.argv[2]);
const http = createServer();
const io = new Server(http, {
  path: opts.path,
  pingInterval: opts.pingInterval,
  pingTimeout: opts.pingTimeout,
  maxHttpBufferSize: opts.maxPayload,
  connectionStateRecovery: opts.recovery ? { maxDisconnectionDuration: opts.recovery, skipMiddlewares: true } : undefined,
  serveClient: false,
});
// With opts.handlers, what integration/fixtures/docroot/sio_handler.php
// does for the suite, as socket.io's middleware and listeners.
for (const nsp of opts.namespaces) {
  const space = io.of(nsp);
  if (!opts.handlers) continue;
  space.use((socket, next) => {
    const token = socket.handshake.auth.token;
    if (token !== "secret") {
      const err = new Error("not authorized");
      err.data = { token: token ?? null };
      return next(err);
    }
    socket.join("lobby");
    const cookie = /(?:^|; )user=([^;]*)/.exec(socket.handshake.headers.cookie || "");
    socket.emit("welcome", "hello", cookie ? cookie[1] : null, socket.handshake.query.room ?? null,
      socket.handshake.address.replace(/^::ffff:/, ""));
    next();
  });
  space.on("connection", (socket) => {
    const acked = (fn) => (...args) => {
      const ack = typeof args[args.length - 1] === "function" ? args.pop() : null;
      fn(ack || (() => {}), ...args);
    };
    socket.on("say", acked((ack, ...args) => {
      socket.to("lobby").emit("said", ...args);
      ack("ok", args.length);
    }));
    socket.on("echo", acked((ack, ...args) => ack(...args)));
    socket.on("one", acked((ack) => ack(42)));
    socket.on("nothing", acked((ack) => ack()));
    socket.on("fail", () => {});
    socket.on("disconnect", (reason) => space.to("lobby").emit("left", reason));
  });
}
// POST /sio_op.php: what the suite's PHP does with vc_socketio_*()
// (integration/fixtures/docroot/sio_op.php), done with socket.io's server API.
http.on("request", (req, res) => {
  if (req.url !== "/sio_op.php") return;
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const o = JSON.parse(body);
    let b = io.of(o.nsp || "/");
    if (o.to !== undefined && !(Array.isArray(o.to) && o.to.length === 0)) b = b.in(o.to);
    if (o.except !== undefined) b = b.except(o.except);
    if (o.op === "emit") b.emit(o.event, ...(o.args || []));
    else if (o.op === "join") b.socketsJoin(o.rooms);
    else if (o.op === "leave") b.socketsLeave(o.rooms);
    else if (o.op === "disconnect") b.disconnectSockets(!!o.close);
    res.end("ok");
  });
});
http.listen(0, "127.0.0.1", () => console.log(`listening ${http.address().port}`));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
