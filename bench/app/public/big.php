<?php
// ?mb=N megabytes (at most 256): the answer bench/soak's slow readers never read.
header('Content-Type: application/octet-stream');
$chunk = str_repeat('0123456789abcdef', 65536); // 1 MiB
for ($i = 0, $n = min(256, (int)($_GET['mb'] ?? 1)); $i < $n; $i++) {
    echo $chunk;
}
