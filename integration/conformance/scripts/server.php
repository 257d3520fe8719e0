<?php
// The $_SERVER keys an app relies on (not ports, times or the software).
header('Content-Type: text/plain');
$keys = ['REQUEST_METHOD', 'REQUEST_URI', 'QUERY_STRING', 'SCRIPT_NAME', 'SCRIPT_FILENAME', 'PATH_INFO',
         'PHP_SELF', 'DOCUMENT_ROOT', 'DOCUMENT_URI', 'SERVER_PROTOCOL', 'REQUEST_SCHEME', 'HTTPS',
         'GATEWAY_INTERFACE', 'REMOTE_ADDR', 'SERVER_ADDR', 'SERVER_NAME', 'REDIRECT_STATUS', 'CONTENT_TYPE',
         'CONTENT_LENGTH', 'HTTP_HOST', 'HTTP_USER_AGENT', 'HTTP_X_CUSTOM', 'HTTP_COOKIE', 'PATH_TRANSLATED',
         'ORIG_PATH_INFO', 'REMOTE_USER', 'AUTH_TYPE', 'PHP_AUTH_USER', 'PHP_AUTH_PW'];
foreach ($keys as $k) {
    echo $k, '=', array_key_exists($k, $_SERVER) ? var_export($_SERVER[$k], true) : '(unset)', "\n";
}
echo 'getenv(REQUEST_METHOD)=', var_export(getenv('REQUEST_METHOD'), true), "\n";
echo 'sapi=', PHP_SAPI, "\n";
