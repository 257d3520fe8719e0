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
    case 'destruct':
        $o = new class { function __destruct() { echo "destructed\n"; } };
        echo "main\n";
        break;
}
