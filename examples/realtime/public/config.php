<?php
// What the page needs: the app's key (public), the user it plays (a
// cookie, for the presence channel), and, with ?private=1, a Mercure JWT
// in the mercureAuthorization cookie that lets its EventSource receive
// private updates on https://example.com/private/{id}.
$b64 = fn (string $s) => rtrim(strtr(base64_encode($s), '+/', '-_'), '=');
$user = preg_replace('/[^A-Za-z0-9]/', '', $_GET['user'] ?? 'guest') ?: 'guest';
setcookie('user', $user, ['path' => '/', 'samesite' => 'Strict']);
if (!empty($_GET['private'])) {
    $head = $b64(json_encode(['alg' => 'HS256', 'typ' => 'JWT']));
    $claims = $b64(json_encode(['mercure' => ['subscribe' => ['https://example.com/private/{id}']],
                                'exp' => time() + 3600]));
    $sig = $b64(hash_hmac('sha256', "$head.$claims", $_SERVER['VC_REALTIME_APP_SECRET'], true));
    setcookie('mercureAuthorization', "$head.$claims.$sig",
              ['path' => '/.well-known/mercure', 'httponly' => true, 'samesite' => 'Strict']);
}
header('Content-Type: application/json');
echo json_encode(['key' => $_SERVER['VC_REALTIME_APP_KEY'] ?? null]);
