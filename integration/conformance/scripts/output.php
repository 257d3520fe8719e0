<?php
switch ($_GET['case'] ?? '') {
    case 'ob':
        ob_start();
        echo "inner";
        $x = ob_get_clean();
        echo strtoupper($x), "\n";
        break;
    case 'nested':
        ob_start();
        echo "a";
        ob_start();
        echo "b";
        ob_end_flush();
        echo "c";
        echo ob_get_level(), ':', ob_get_clean(), "\n";
        break;
    case 'flush':
        echo "one\n";
        flush();
        echo "two\n";
        break;
    case 'gz':
        ob_start('ob_gzhandler');
        echo str_repeat("compress me ", 200);
        break;
    case 'big':
        $chunk = str_repeat('0123456789', 1024);
        for ($i = 0; $i < 1024; $i++) {
            echo $chunk;
        }
        break;
    case 'binary':
        header('Content-Type: application/octet-stream');
        echo implode('', array_map('chr', range(0, 255)));
        break;
    case 'empty':
        break;
}
