<?php
// Worker mode: the kernel boots once (in vc-php's zygote, shared copy-on-
// write by every worker); each request runs the returned handler. Symfony
// resets its services between requests (Kernel::handle() calls the
// services_resetter once a request has been handled).
use App\Kernel;
use Symfony\Component\HttpFoundation\Request;

require __DIR__ . '/bootstrap.php';

$kernel = new Kernel('prod', false);
$kernel->boot();

return static function () use ($kernel): void {
    $request = Request::createFromGlobals();
    $response = $kernel->handle($request);
    $response->send();
    $kernel->terminate($request, $response);
};
