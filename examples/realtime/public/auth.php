<?php
// The app's channel authorisation, as Laravel's /broadcasting/auth does
// it: sign socket_id and channel with the app's secret. Everyone may join
// here; a real app checks its session first (and answers 403).
$socket = $_POST['socket_id'] ?? '';
$channel = $_POST['channel_name'] ?? '';
$key = $_SERVER['VC_REALTIME_APP_KEY'];
$secret = $_SERVER['VC_REALTIME_APP_SECRET'];
header('Content-Type: application/json');
if (str_starts_with($channel, 'presence-')) {
    $user = $_COOKIE['user'] ?? 'guest';
    $data = json_encode(['user_id' => $user, 'user_info' => ['name' => $user]]);
    echo json_encode(['auth' => "$key:" . hash_hmac('sha256', "$socket:$channel:$data", $secret),
                      'channel_data' => $data]);
} else {
    echo json_encode(['auth' => "$key:" . hash_hmac('sha256', "$socket:$channel", $secret)]);
}
