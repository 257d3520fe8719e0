<?php
header('Content-Type: application/json');
ksort($_FILES);
$files = [];
array_walk_recursive($_FILES, function ($v, $k) use (&$files) { $files[] = $k === 'tmp_name' ? (bool)$v : [$k => $v]; });
echo json_encode(['get' => $_GET, 'post' => $_POST, 'cookie' => $_COOKIE, 'request' => $_REQUEST,
                  'files' => $_FILES ? array_map(fn ($f) => array_diff_key($f, ['tmp_name' => 1, 'full_path' => 0]), $_FILES) : [],
                  'input' => file_get_contents('php://input'), 'method' => $_SERVER['REQUEST_METHOD']],
                 JSON_PRETTY_PRINT), "\n";
