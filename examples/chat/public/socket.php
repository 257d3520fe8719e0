<?php
// The chat's Socket.IO handler (docs/socketio.md): the front runs it for
// each connect, event and disconnect of a socket, as a request made as the
// socket's handshake was, so $_GET is the page's query (its name) and
// $_COOKIE its cookies. The answer to a connect lets it in (2xx) or not;
// the answer to an event is its ack.

$event = json_decode(file_get_contents('php://input'), true);
$name = trim((string)($_GET['name'] ?? ''));

switch ($_SERVER['VC_SOCKETIO'] ?? '') {
    case 'connect':
        if ($name === '' || mb_strlen($name) > 32) {
            http_response_code(403);
            echo json_encode(['message' => 'Pick a name of 1 to 32 characters']);
            exit;
        }
        vc_socketio_join($event['socket'], 'lobby');
        vc_socketio_emit('joined', [['id' => $event['socket'], 'name' => $name]], to: 'lobby');
        break;

    case 'event':
        if ($event['event'] !== 'say') {
            http_response_code(404); // an event the chat does not know: no ack
            exit;
        }
        $text = trim((string)($event['args'][0] ?? ''));
        if ($text === '' || mb_strlen($text) > 500) {
            echo json_encode([['ok' => false, 'why' => 'A message is 1 to 500 characters']]);
            exit;
        }
        vc_socketio_emit('said', [['id' => $event['socket'], 'name' => $name, 'text' => $text]], to: 'lobby');
        echo json_encode([['ok' => true]]); // the ack: ack({ok: true})
        break;

    case 'disconnect':
        vc_socketio_emit('left', [['id' => $event['socket'], 'name' => $name]], to: 'lobby');
        break;

    default:
        http_response_code(404); // only the front calls this script (it answers 404 to anyone else first)
}
