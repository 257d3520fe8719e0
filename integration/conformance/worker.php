<?php
// Worker mode for the conformance suite: each request runs the script the
// front resolved, inside the booted worker.
return static function (): void {
    $script = $_SERVER['SCRIPT_FILENAME'];
    chdir(dirname($script));
    include $script;
};
