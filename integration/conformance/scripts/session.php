<?php
header('Content-Type: text/plain');
session_set_cookie_params(['path' => '/', 'httponly' => true, 'samesite' => 'Lax']);
if (($_GET['case'] ?? '') === 'custom-name') {
    session_name('APPSESS');
}
session_start();
switch ($_GET['case'] ?? 'start') {
    case 'regenerate':
        $old = session_id();
        session_regenerate_id(true);
        echo 'changed=', var_export($old !== session_id(), true), "\n";
        break;
    case 'write-close':
        $_SESSION['a'] = 1;
        session_write_close();
        $_SESSION['b'] = 2;
        echo 'closed=', session_status(), "\n";
        break;
    case 'custom-name':
        echo "custom\n";
        break;
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
