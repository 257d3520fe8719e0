<?php
// Worker mode for the conformance suite, FrankenPHP's loop style: each
// request runs the script the front resolved.
$handler = static function (): void {
    $script = $_SERVER['SCRIPT_FILENAME'];
    chdir(dirname($script));
    include $script;
};
while (\frankenphp_handle_request($handler)) {
}
