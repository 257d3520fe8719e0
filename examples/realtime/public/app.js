// What the page receives, kept in window.got for whoever watches it
// (integration/test_24_browser.py) and shown in the list.
window.got = [];
window.subscribed = [];
const log = (entry) => {
  window.got.push(entry);
  const li = document.createElement('li');
  li.textContent = JSON.stringify(entry);
  document.getElementById('log').appendChild(li);
};

const query = new URLSearchParams(location.search);
fetch('/config.php?' + query.toString(), { credentials: 'same-origin' })
  .then((r) => r.json())
  .then((cfg) => {
    const echo = new Echo.default({
      broadcaster: 'pusher',
      Pusher,
      key: cfg.key,
      cluster: 'mt1',
      wsHost: location.hostname,
      wsPort: location.port || 80,
      wssPort: location.port || 443,
      forceTLS: location.protocol === 'https:',
      enabledTransports: ['ws', 'wss'],
      authEndpoint: '/auth.php',
    });
    const done = (name) => {
      window.subscribed.push(name);
      document.getElementById('state').textContent = 'subscribed: ' + window.subscribed.join(', ');
    };
    echo.channel('news').subscribed(() => done('news')).listen('.headline', (d) => log({ channel: 'news', data: d }));
    echo.private('orders').subscribed(() => done('private-orders'))
      .listen('.shipped', (d) => log({ channel: 'private-orders', data: d }));
    echo.join('lobby')
      .here((users) => { log({ here: users.map((u) => u.name) }); done('presence-lobby'); })
      .joining((u) => log({ joining: u.name }))
      .leaving((u) => log({ leaving: u.name }))
      .listen('.said', (d) => log({ channel: 'presence-lobby', data: d }));

    // Mercure: the mercureAuthorization cookie (set by config.php when the
    // page asks for private updates) goes with the EventSource's request.
    const hub = new URL('/.well-known/mercure', location.href);
    hub.searchParams.append('topic', 'https://example.com/news');
    hub.searchParams.append('topic', 'https://example.com/private/{id}');
    const es = new EventSource(hub, { withCredentials: true });
    es.onopen = () => done('mercure');
    es.onmessage = (e) => log({ mercure: e.data, id: e.lastEventId });
  });
