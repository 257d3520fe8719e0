<?php
// A worker script with 600 user classes, each with three static
// properties, as a large framework has: to measure what restoring statics
// between requests costs (bench/run --restore-cost).
require __DIR__ . '/app.php';
for ($i = 0; $i < 600; $i++) {
    eval("final class Service$i { public static array \$cache = []; public static int \$hits = 0;"
        . " public static ?string \$name = null; public static function touch(): void { self::\$hits++;"
        . " self::\$cache[] = self::\$hits; } }");
    ("Service$i")::$name = "service $i";
}
return static function (): void {
    // A request touches a few services, as a real one would.
    for ($i = 0; $i < 600; $i += 60) {
        ("Service$i")::touch();
    }
    bench_hello();
};
