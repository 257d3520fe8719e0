<?php
// Loads Symfony 5.4 from Debian's php-symfony-* packages (found on PHP's
// include_path, /usr/share/php) and this app's classes from src/ (PSR-4,
// namespace App\). No Composer: the packages bring their own autoloaders.
require_once 'Symfony/Bundle/FrameworkBundle/autoload.php';
require_once 'Symfony/Bundle/TwigBundle/autoload.php';
require_once 'Symfony/Bridge/Twig/autoload.php';
require_once 'Symfony/Component/Form/autoload.php';
require_once 'Symfony/Component/Validator/autoload.php';
require_once 'Symfony/Component/Security/Csrf/autoload.php';

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'App\\')) {
        $file = __DIR__ . '/src/' . strtr(substr($class, 4), '\\', '/') . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
