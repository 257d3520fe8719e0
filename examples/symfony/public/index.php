<?php
// Classic mode (and php-fpm): a fresh kernel for every request.
use App\Kernel;
use Symfony\Component\HttpFoundation\Request;

require dirname(__DIR__) . '/bootstrap.php';

$kernel = new Kernel('prod', false);
$request = Request::createFromGlobals();
$response = $kernel->handle($request);
$response->send();
$kernel->terminate($request, $response);
