// The reference's reading of Socket.IO packets (socket.io-parser, as
// socket.io 4.8 decodes what a client sends): each line of stdin a JSON
// string; a JSON line out for each, as tests/test_sio_wire --decode
// writes them (integration/test_58_sio_wire.py compares the two).
import { createInterface } from "node:readline";
import { Decoder } from "socket.io-parser";

for await (const line of createInterface({ input: process.stdin })) {
  const text = JSON.parse(line);
  try {
    const p = new Decoder().decodeString(text);
    const out = { ok: true, type: p.type, nsp: p.nsp };
    if (p.id !== undefined) out.id = Number.isNaN(p.id) ? null : p.id;
    if (p.attachments) out.attachments = p.attachments;
    if (p.data !== undefined) out.data = p.data;
    console.log(JSON.stringify(out));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, why: e.message }));
  }
}
