<?php
header('Content-Type: text/plain');
echo "front controller\n", 'REQUEST_URI=', $_SERVER['REQUEST_URI'], "\n", 'SCRIPT_NAME=', $_SERVER['SCRIPT_NAME'], "\n",
    'PATH_INFO=', var_export($_SERVER['PATH_INFO'] ?? null, true), "\n", 'QUERY_STRING=', $_SERVER['QUERY_STRING'], "\n",
    'GET=', json_encode($_GET), "\n";
