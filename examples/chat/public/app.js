// The chat's page: socket.io-client as any app uses it (its default
// transports: polling, then the upgrade to WebSocket), against the front.
// The name comes from the page's query (?name=Ann), and goes to the
// handler in the handshake's query. window.got keeps what arrived, for
// the tests.
const params = new URLSearchParams(location.search);
const name = params.get('name') || prompt('Your name?') || '';
const log = document.getElementById('log');
const status = document.getElementById('status');
const names = {};
window.got = [];

function line(text, note) {
  const li = document.createElement('li');
  li.textContent = text;
  if (note) li.className = 'note';
  log.appendChild(li);
}

const socket = io({ query: { name } });
socket.on('connect', () => {
  status.textContent = `Connected as ${name}`;
  window.connected = true;
});
socket.on('connect_error', (e) => {
  status.textContent = `Not connected: ${e.message}`;
  window.got.push(['connect_error', e.message]);
});
socket.on('joined', (who) => {
  names[who.id] = who.name;
  window.got.push(['joined', who.name]);
  line(`${who.name} joined`, true);
});
socket.on('left', (who) => {
  window.got.push(['left', who.name]);
  line(`${who.name} left`, true);
});
socket.on('said', (m) => {
  window.got.push(['said', m.name, m.text]);
  line(`${m.name}: ${m.text}`);
});

document.getElementById('say').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = ev.target.elements.text;
  const text = input.value;
  socket.emit('say', text, (answer) => {
    window.got.push(['ack', answer.ok]);
    if (!answer.ok) line(answer.why, true);
  });
  input.value = '';
});
