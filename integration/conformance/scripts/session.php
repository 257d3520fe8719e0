<?php
header('Content-Type: text/plain');
session_set_cookie_params(['path' => '/', 'httponly' => true, 'samesite' => 'Lax']);
session_start();
switch ($_GET['case'] ?? 'start') {
    case 'start':
        $_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
        echo "n=", $_SESSION['n'], "\n";
        break;
    case 'destroy':
        session_destroy();
        echo "destroyed\n";
        break;
}
echo 'status=', session_status(), ' name=', session_name(), "\n";
