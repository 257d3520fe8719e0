<?php
// ?channel=news&event=headline&data=... (vc_publish, JSON data decoded if it is JSON)
// ?topic=https://example.com/news&data=...[&private=1] (vc_mercure_publish)
header('Content-Type: text/plain');
$data = $_GET['data'] ?? 'hello';
if (isset($_GET['topic'])) {
    echo vc_mercure_publish($_GET['topic'], $data, !empty($_GET['private'])), "\n";
} else {
    $decoded = json_decode($data, true);
    var_export(vc_publish($_GET['channel'] ?? 'news', $_GET['event'] ?? 'headline',
                          is_array($decoded) ? $decoded : $data));
    echo "\n";
}
