<?php
// More shapes of the same features, one `case` each. Closures only: worker
// mode runs this file many times in one worker.
switch ($_GET['case'] ?? '') {
    // headers
    case 'location-301':
        header('Location: /moved', true, 301);
        break;
    case 'location-absolute':
        header('Location: https://example.test/path?q=1');
        break;
    case 'location-after-code':
        http_response_code(303);
        header('Location: /see-other');
        break;
    case 'refresh':
        header('Refresh: 5; url=/later');
        break;
    case 'raw-set-cookie':
        header('Set-Cookie: a=1; Path=/', false);
        header('Set-Cookie: b=2; Path=/x', false);
        break;
    case 'content-length':
        header('Content-Length: 5');
        echo "12345";
        exit;
    case 'empty-value':
        header('X-Empty:');
        break;
    case 'code-previous':
        $a = http_response_code(404);
        $b = http_response_code();
        echo var_export($a, true), ' ', var_export($b, true), "\n";
        break;
    case 'header-after-output':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        echo "out\n";
        flush();
        header('X-Late: yes');
        echo headers_sent() ? "sent\n" : "not sent\n";
        break;
    case 'vary':
        header('Vary: Accept');
        header('Vary: Cookie', false);
        break;
    case 'server-and-date':
        // Frameworks set both (Symfony's Response sets Date): one of each
        // must reach the client, the application's, as nginx does.
        header('Server: MyApp/1.0');
        header('Date: ' . gmdate('D, d M Y H:i:s') . ' GMT');
        echo "own server\n";
        break;
    case 'status-204':
        http_response_code(204);
        echo "ignored body";
        break;
    case 'status-304':
        http_response_code(304);
        break;
    case 'status-500':
        http_response_code(500);
        echo "server side\n";
        break;
    case 'content-type-none':
        header('Content-Type:');
        echo "no type\n";
        break;
    case 'charset':
        ini_set('default_charset', 'ISO-8859-1');
        echo "latin\n";
        break;
    // cookies
    case 'cookie-session':
        setcookie('s', 'v', ['path' => '/', 'samesite' => 'None', 'secure' => true]);
        break;
    case 'cookie-delete':
        setcookie('gone', '', ['expires' => 1, 'path' => '/a']);
        break;
    case 'cookie-raw-special':
        setrawcookie('r', 'a=b');
        break;
    // output
    case 'ob-callback':
        ob_start(static fn ($s) => strtoupper($s));
        echo "shout\n";
        break;
    case 'ob-levels':
        echo ob_get_level(), "\n";
        ob_start();
        echo ob_get_level(), "\n";
        ob_end_flush();
        break;
    case 'many-small':
        for ($i = 0; $i < 20000; $i++) {
            echo $i % 10;
        }
        break;
    case 'printf':
        printf("%05d|%-6s|%.3f|%x\n", 42, 'ab', M_PI, 255);
        break;
    case 'implicit-flush':
        ob_implicit_flush(true);
        echo "a\n";
        echo "b\n";
        break;
    case 'ob-discard-on-exit':
        ob_start();
        echo "kept on exit\n";
        exit;
    // flow
    case 'exit-in-finally':
        try {
            echo "try\n";
        } finally {
            echo "finally\n";
            exit;
        }
    case 'exit-in-destructor':
        $o = new class { function __destruct() { echo "bye\n"; exit; } };
        unset($o);
        echo "not reached\n";
        break;
    case 'exception-in-shutdown':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        register_shutdown_function(static function () { throw new LogicException('late'); });
        echo "main\n";
        break;
    case 'exit-string-code':
        http_response_code(201);
        exit("created\n");
    case 'die-int':
        echo "x\n";
        die(7);
    // errors
    case 'notice':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        $a = [];
        echo @$a['missing'], $a['missing2'] ?? 'dflt', "\n";
        echo "ok\n";
        break;
    case 'deprecated':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        error_reporting(E_ALL);
        echo strlen(null), "\n";
        break;
    case 'user-error':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        trigger_error('custom warning', E_USER_WARNING);
        echo "after\n";
        break;
    case 'user-fatal':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        echo "before\n";
        trigger_error('custom fatal', E_USER_ERROR);
        echo "not reached\n";
        break;
    case 'error-handler':
        set_error_handler(static function ($no, $str) { echo "handled: $str\n"; return true; });
        echo $nope;
        echo "after\n";
        break;
    case 'exception-handler':
        set_exception_handler(static function ($e) { echo "caught: ", $e->getMessage(), "\n"; });
        throw new Exception('to the handler');
    case 'error-reporting-off':
        error_reporting(0);
        echo $missing, "quiet\n";
        break;
    case 'parse-error-include':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        $f = sys_get_temp_dir() . '/vc-conf-parse.php';
        file_put_contents($f, "<?php echo 'x' +;");
        try {
            include $f;
        } catch (ParseError $e) {
            echo "parse error: ", $e->getMessage(), "\n";
        }
        break;
    case 'division-by-zero':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        echo intdiv(1, 0);
        break;
    // state between requests (a keep-alive sequence; worker mode too)
    case 'global-set':
        $GLOBALS['conf_leak'] = 'set by an earlier request';
        echo "set\n";
        break;
    case 'global-get':
        echo var_export($GLOBALS['conf_leak'] ?? null, true), "\n";
        break;
    case 'ini-set':
        ini_set('precision', '3');
        echo 1 / 3, "\n";
        break;
    case 'ini-get':
        echo 1 / 3, ' ', ini_get('precision'), "\n";
        break;
    case 'header-set':
        header('X-Leak: yes');
        http_response_code(418);
        echo "teapot\n";
        break;
    case 'header-get':
        echo json_encode(headers_list()), ' ', http_response_code(), "\n";
        break;
    case 'tz-set':
        date_default_timezone_set('Asia/Tokyo');
        echo date_default_timezone_get(), "\n";
        break;
    case 'tz-get':
        echo date_default_timezone_get(), "\n";
        break;
    case 'handlers-get':
        $e = set_exception_handler(null);
        $r = set_error_handler(null);
        echo 'exception handler: ', $e === null ? 'none' : 'set', ', error handler: ', $r === null ? 'none' : 'set', "\n";
        break;
    // input
    case 'input-twice':
        echo file_get_contents('php://input'), '|', file_get_contents('php://input'), "\n";
        break;
    case 'input-stream':
        $h = fopen('php://input', 'rb');
        $n = 0;
        while (!feof($h)) {
            $n += strlen(fread($h, 1000));
        }
        echo $n, ' ', md5(file_get_contents('php://input')), "\n";
        break;
    case 'files-errors':
        header('Content-Type: application/json');
        echo json_encode(array_map(fn ($f) => ['error' => $f['error'], 'size' => $f['size'], 'name' => $f['name']],
                                   $_FILES)), "\n";
        break;
}
echo "end\n";
