// socket.io 4.8 as the reference the front's Socket.IO is compared with:
// a server with no event handler, its namespaces, ping and payload
// settings from argv[2] (JSON), WebSocket transport only (as the front's
// for now). Prints "listening PORT", then runs until stdin closes.
import { createServer } from "node:http";
import { Server } from "socket.io";

const opts = JSON.parse(process.argv[2]);
const http = createServer();
const io = new Server(http, {
  path: opts.path,
  transports: ["websocket"],
  pingInterval: opts.pingInterval,
  pingTimeout: opts.pingTimeout,
  maxHttpBufferSize: opts.maxPayload,
  serveClient: false,
});
for (const nsp of opts.namespaces) io.of(nsp);
http.listen(0, "127.0.0.1", () => console.log(`listening ${http.address().port}`));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
