<?php
namespace App;

use App\Controller\GuestbookController;
use App\Controller\PageController;
use Symfony\Bundle\FrameworkBundle\FrameworkBundle;
use Symfony\Bundle\FrameworkBundle\Kernel\MicroKernelTrait;
use Symfony\Bundle\TwigBundle\TwigBundle;
use Symfony\Component\DependencyInjection\Loader\Configurator\ContainerConfigurator;
use Symfony\Component\HttpKernel\Kernel as BaseKernel;
use Symfony\Component\Routing\Loader\Configurator\RoutingConfigurator;

/**
 * The whole configuration in one class (a micro kernel): FrameworkBundle
 * with sessions, forms, CSRF and validation, and Twig for the pages.
 */
final class Kernel extends BaseKernel
{
    use MicroKernelTrait;

    public function registerBundles(): iterable
    {
        return [new FrameworkBundle(), new TwigBundle()];
    }

    public function getProjectDir(): string
    {
        return \dirname(__DIR__);
    }

    public function getCacheDir(): string
    {
        return $this->getProjectDir() . '/var/cache/' . $this->environment;
    }

    public function getLogDir(): string
    {
        return $this->getProjectDir() . '/var/log';
    }

    protected function configureContainer(ContainerConfigurator $container): void
    {
        $container->extension('framework', [
            'secret' => 'velocity-example-not-secret',
            'http_method_override' => false,
            'session' => [
                'handler_id' => null,  // PHP's own session handler, as php.ini says
                'storage_factory_id' => 'session.storage.factory.native',
                'cookie_samesite' => 'lax',
            ],
            'csrf_protection' => true,
            'form' => true,
            'validation' => ['enabled' => true, 'email_validation_mode' => 'html5'],
            'router' => ['utf8' => true],
        ]);
        $container->extension('twig', [
            'default_path' => '%kernel.project_dir%/templates',
            'strict_variables' => true,
        ]);
        $container->services()
            ->defaults()->autowire()->autoconfigure()
            ->load('App\\Controller\\', __DIR__ . '/Controller/')
            ->load('App\\Form\\', __DIR__ . '/Form/');
    }

    protected function configureRoutes(RoutingConfigurator $routes): void
    {
        $routes->add('home', '/')->controller([PageController::class, 'home'])->methods(['GET', 'HEAD']);
        $routes->add('hello', '/hello/{name}')->controller([PageController::class, 'hello'])
            ->requirements(['name' => '.{1,64}'])->methods(['GET', 'HEAD']);
        $routes->add('table', '/table')->controller([PageController::class, 'table'])->methods(['GET', 'HEAD']);
        $routes->add('api_status', '/api/status')->controller([PageController::class, 'status'])->methods(['GET']);
        $routes->add('guestbook', '/guestbook')->controller([GuestbookController::class, 'index'])
            ->methods(['GET', 'POST']);
    }
}
