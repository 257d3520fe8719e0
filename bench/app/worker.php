<?php
// Worker mode: the same functions, routed by script name.
require __DIR__ . '/app.php';
return static function (): void {
    $fn = BENCH_ROUTES[$_SERVER['SCRIPT_NAME']] ?? null;
    if ($fn === null) {
        http_response_code(404);
        return;
    }
    $fn();
};
