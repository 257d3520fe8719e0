<?php
require __DIR__ . "/../app.php";
bench_sleep20();
