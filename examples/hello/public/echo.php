<?php
// Echoes what PHP saw of the request, for tests and for debugging a setup.
header('Content-Type: application/json');
echo json_encode([
    'method' => $_SERVER['REQUEST_METHOD'],
    'uri' => $_SERVER['REQUEST_URI'],
    'script_name' => $_SERVER['SCRIPT_NAME'],
    'path_info' => $_SERVER['PATH_INFO'] ?? null,
    'php_self' => $_SERVER['PHP_SELF'],
    'query' => $_GET,
    'post' => $_POST,
    'cookies' => $_COOKIE,
    'input_length' => strlen(file_get_contents('php://input')),
    'https' => $_SERVER['HTTPS'] ?? '',
    'protocol' => $_SERVER['SERVER_PROTOCOL'],
], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES), "\n";
