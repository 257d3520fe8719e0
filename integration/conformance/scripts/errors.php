<?php
ini_set('display_errors', $_GET['display'] ?? '1');
ini_set('html_errors', '0');
ini_set('log_errors', '0');
header('Content-Type: text/plain');
switch ($_GET['case'] ?? '') {
    case 'warning':
        echo "before\n";
        echo $undefined;
        echo "after\n";
        break;
    case 'exception':
        echo "before\n";
        throw new RuntimeException('boom');
    case 'fatal':
        echo "before\n";
        undefined_function();
        break;
    case 'memory':
        ini_set('memory_limit', '16M');
        $a = [];
        for ($i = 0; $i < 10000000; $i++) {
            $a[] = str_repeat('x', 100);
        }
        break;
    case 'time':
        set_time_limit(1);
        $t = microtime(true);
        while (true) {
            $t = sin($t);
        }
}
