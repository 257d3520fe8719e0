// A realtime client for the integration tests, run by Node (an ES module,
// as laravel-echo 2 is one): pusher-js
// itself, or Laravel Echo on top of it, as an application's page would
// use them. Options come as JSON in argv[2]; every event received is
// printed as one JSON line, and "ready" once every channel is subscribed.
// It stops when its standard input closes.
import Pusher from 'pusher-js';
import Echo from 'laravel-echo';
const opts = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const common = {
  wsHost: opts.host,
  wsPort: opts.port,
  wssPort: opts.port,
  forceTLS: false,
  enabledTransports: ['ws'],
  disableStats: true,
  cluster: 'mt1',
  authEndpoint: opts.authEndpoint,
  activityTimeout: 30000,
};

let pending = opts.channels.length;
const subscribed = (name) => {
  out({ subscribed: name });
  if (--pending === 0) out({ ready: true });
};

if (opts.echo) {
  const echo = new Echo({ broadcaster: 'pusher', key: opts.key, Pusher, ...common });
  for (const c of opts.channels) {
    // Echo's names: "orders" is public, private("orders") is private-orders,
    // join("room") is presence-room; its events are listened to by name.
    let ch;
    if (c.startsWith('private-')) ch = echo.private(c.slice(8));
    else if (c.startsWith('presence-')) {
      ch = echo.join(c.slice(9));
      ch.here((users) => out({ here: c, users: users.map((u) => u.name) }))
        .joining((u) => out({ joining: c, user: u.name }))
        .leaving((u) => out({ leaving: c, user: u.name }));
    } else ch = echo.channel(c);
    ch.subscribed(() => subscribed(c));
    ch.error((e) => out({ error: c, status: e && e.status }));
    for (const ev of opts.events) ch.listen('.' + ev, (data) => out({ channel: c, event: ev, data }));
  }
} else {
  const pusher = new Pusher(opts.key, common);
  pusher.connection.bind('error', (e) => out({ connection_error: (e && e.error && e.error.data) || null }));
  for (const c of opts.channels) {
    const ch = pusher.subscribe(c);
    ch.bind('pusher:subscription_succeeded', () => subscribed(c));
    ch.bind('pusher:subscription_error', (e) => out({ error: c, status: e && e.status }));
    ch.bind_global((event, data) => {
      if (!event.startsWith('pusher:')) out({ channel: c, event, data });
    });
  }
  process.stdin.on('data', (line) => {
    // {"whisper": channel, "event": name, "data": ...}: a client event.
    for (const l of line.toString().split('\n').filter(Boolean)) {
      const w = JSON.parse(l);
      pusher.channel(w.whisper).trigger(w.event, w.data);
    }
  });
}
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
