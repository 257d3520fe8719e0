<?php
// The example app `vc up` serves when there is no ./public and no --root.
header('Content-Type: text/html; charset=utf-8');
$name = htmlspecialchars($_GET['name'] ?? 'world', ENT_QUOTES);
?>
<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Velocity</title><link rel="stylesheet" href="/style.css"></head>
<body>
<h1>Hello, <?= $name ?>!</h1>
<p>Served by Velocity <?= PHP_SAPI ?> with PHP <?= PHP_VERSION ?>.</p>
<ul>
<li>Request: <?= htmlspecialchars($_SERVER['REQUEST_METHOD'] . ' ' . $_SERVER['REQUEST_URI'], ENT_QUOTES) ?></li>
<li>Protocol: <?= htmlspecialchars($_SERVER['SERVER_PROTOCOL'], ENT_QUOTES) ?><?= !empty($_SERVER['HTTPS']) ? ' over TLS' : '' ?></li>
<li>Worker pid: <?= getmypid() ?></li>
</ul>
</body>
</html>
