<?php
header('Content-Type: text/plain');
switch ($_GET['case'] ?? '') {
    case 'allheaders':
        $h = getallheaders();
        ksort($h);
        unset($h['Host'], $h['User-Agent']);
        echo json_encode($h), "\n";
        break;
    case 'abort':
        echo ignore_user_abort() ? "1" : "0", connection_status(), connection_aborted() ? 'a' : 'n', "\n";
        break;
    case 'finish':
        echo "answered\n";
        echo function_exists('fastcgi_finish_request') ? "has\n" : "missing\n";
        fastcgi_finish_request();
        echo "hidden\n";
        break;
    case 'method':
        echo $_SERVER['REQUEST_METHOD'], ' ', strlen(file_get_contents('php://input')), "\n";
        break;
    case 'ini':
        foreach (['output_buffering', 'display_errors', 'memory_limit', 'max_execution_time', 'post_max_size',
                  'upload_max_filesize', 'opcache.enable', 'expose_php', 'default_charset', 'short_open_tag'] as $k) {
            echo $k, '=', ini_get($k), "\n";
        }
        break;
    case 'request-time':
        echo is_float($_SERVER['REQUEST_TIME_FLOAT']) && abs($_SERVER['REQUEST_TIME'] - time()) < 3 ? "ok\n" : "bad\n";
        break;
    case 'keepalive':
        header('X-Seq: ' . ($_GET['n'] ?? ''));
        echo "n=", $_GET['n'] ?? '', " seen=", json_encode(array_keys(headers_list())), "\n";
        break;
}
