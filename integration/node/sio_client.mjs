// socket.io-client 4.8 as an application uses it: argv[2] (JSON) names the
// server's URL, path, the namespaces to join and how long to stay; each
// event is a JSON line (connect with the socket's id, connect_error with
// its message, disconnect with its reason), and at the end whether each
// socket is still connected.
import { io } from "socket.io-client";

const o = JSON.parse(process.argv[2]);
const say = (x) => console.log(JSON.stringify(x));
const sockets = o.namespaces.map((nsp) => {
  const s = io(o.url + (nsp === "/" ? "" : nsp), {
    path: o.path,
    transports: o.transports || ["websocket"],
    reconnection: false,
    forceNew: true,
    auth: o.auth || {},
  });
  s.on("connect", () => say({ ev: "connect", nsp, id: s.id }));
  s.on("connect_error", (e) => say({ ev: "connect_error", nsp, message: e.message }));
  s.on("disconnect", (reason) => say({ ev: "disconnect", nsp, reason }));
  return [nsp, s];
});
setTimeout(() => {
  for (const [nsp, s] of sockets) {
    say({ ev: "end", nsp, connected: s.connected, transport: s.io.engine.transport.name });
    s.off("disconnect"); // its own close is not news
    s.close();
  }
  setTimeout(() => process.exit(0), 50);
}, o.stayMs);
