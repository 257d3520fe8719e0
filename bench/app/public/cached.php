<?php
// The template page (13 KB) with a lifetime: what a response cache in front
// of PHP serves (bench/run's cache-hit scenario).
require __DIR__ . "/../app.php";
header("Cache-Control: public, max-age=3600");
bench_template();
