<?php
namespace App\Controller;

use Symfony\Bundle\FrameworkBundle\Controller\AbstractController;
use Symfony\Component\HttpFoundation\JsonResponse;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;

/** Pages without state: a home page, a greeting, a 200-row table, JSON. */
final class PageController extends AbstractController
{

    public function home(): Response
    {
        return $this->render('page/home.html.twig');
    }

    public function hello(string $name, Request $request): Response
    {
        $response = $this->render('page/hello.html.twig', [
            'name' => $name,
            'lang' => $request->getPreferredLanguage(['en', 'fr', 'de']),
        ]);
        $response->setPublic();
        $response->setMaxAge(60);
        return $response;
    }

    public function table(): Response
    {
        $rows = [];
        for ($i = 1; $i <= 200; $i++) {
            $rows[] = ['id' => $i, 'name' => "item $i", 'price' => $i * 1.25, 'stock' => ($i * 7) % 23];
        }
        return $this->render('page/table.html.twig', ['rows' => $rows]);
    }

    public function status(Request $request): JsonResponse
    {
        return new JsonResponse([
            'method' => $request->getMethod(),
            'path' => $request->getPathInfo(),
            'query' => $request->query->all(),
            'secure' => $request->isSecure(),
            'sapi' => \PHP_SAPI,
        ]);
    }
}
