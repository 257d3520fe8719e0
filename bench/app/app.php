<?php
// The benchmark app: each scenario is a function, so classic entry points
// and the worker-mode handler run the very same code.

function bench_hello(): void
{
    header('Content-Type: text/plain');
    echo "Hello, World!\n";
}

function bench_template(): void
{
    $rows = [];
    for ($i = 1; $i <= 200; $i++) {
        $rows[] = ['id' => $i, 'name' => "Item $i", 'price' => $i * 1.25, 'tags' => ['a', 'b', 'c']];
    }
    header('Content-Type: text/html; charset=utf-8');
    echo "<!doctype html><html><head><title>Items</title></head><body><table>\n";
    echo "<tr><th>#</th><th>Name</th><th>Price</th><th>Tags</th></tr>\n";
    foreach ($rows as $r) {
        printf("<tr><td>%d</td><td>%s</td><td>%.2f</td><td>%s</td></tr>\n", $r['id'],
               htmlspecialchars($r['name'], ENT_QUOTES), $r['price'], htmlspecialchars(implode(', ', $r['tags'])));
    }
    echo "</table></body></html>\n";
}

function bench_megabyte(): void
{
    header('Content-Type: application/octet-stream');
    $chunk = str_repeat('0123456789abcdef', 4096); // 64 KiB
    for ($i = 0; $i < 16; $i++) {
        echo $chunk;
    }
}

function bench_post(): void
{
    header('Content-Type: text/plain');
    echo strlen(file_get_contents('php://input')), "\n";
}

function bench_sleep(): void
{
    usleep(50000);
    header('Content-Type: text/plain');
    echo "slept\n";
}

// mixed-worker's slow request: long enough that a request queued behind
// it on the same worker shows in the p99.
function bench_sleep20(): void
{
    usleep(20000);
    header('Content-Type: text/plain');
    echo "slept\n";
}

const BENCH_ROUTES = [
    '/hello.php' => 'bench_hello',
    '/template.php' => 'bench_template',
    '/1mb.php' => 'bench_megabyte',
    '/post.php' => 'bench_post',
    '/sleep.php' => 'bench_sleep',
    '/sleep20.php' => 'bench_sleep20',
];
