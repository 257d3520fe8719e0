<?php
header('Content-Type: text/plain');
// A closure, not a named function: worker mode runs this file many times in
// one worker, where a second declaration would be fatal.
$stop_here = static function () { echo "in function\n"; exit; };
switch ($_GET['case'] ?? '') {
    case 'exit':
        echo "start\n";
        $stop_here();
        echo "not reached\n";
        break;
    case 'die':
        die("died with message\n");
    case 'shutdown':
        register_shutdown_function(function () { echo "shutdown ran\n"; });
        echo "main\n";
        break;
    case 'shutdown-exit':
        register_shutdown_function(function () { echo "shutdown\n"; exit; echo "no"; });
        echo "main\n";
        break;
    case 'exit-code':
        http_response_code(202);
        exit(3);
    case 'shutdown-twice':
        register_shutdown_function(function () { echo "first\n"; });
        register_shutdown_function(function (string $a, int $b) { echo "second $a $b\n"; }, 'x', 2);
        echo "main\n";
        break;
    case 'shutdown-nested':
        register_shutdown_function(function () {
            echo "outer\n";
            register_shutdown_function(function () { echo "inner\n"; });
        });
        echo "main\n";
        break;
    case 'shutdown-header':
        register_shutdown_function(function () { header('X-Shutdown: ran'); http_response_code(203); echo "late\n"; });
        echo "main\n";
        break;
    case 'shutdown-after-exit':
        register_shutdown_function(function () { echo "shutdown after exit\n"; });
        echo "main\n";
        exit;
    case 'shutdown-after-fatal':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        register_shutdown_function(function () {
            $e = error_get_last();
            echo "shutdown saw: ", $e ? $e['message'] : 'nothing', "\n";
        });
        echo "main\n";
        no_such_function_here();
        break;
    case 'shutdown-after-exception':
        ini_set('display_errors', '1');
        ini_set('html_errors', '0');
        register_shutdown_function(function () { echo "shutdown after exception\n"; });
        echo "main\n";
        throw new RuntimeException('uncaught here');
    case 'destruct':
        $o = new class { function __destruct() { echo "destructed\n"; } };
        echo "main\n";
        break;
}
