<?php
namespace App\Controller;

use App\Form\EntryType;
use Symfony\Bundle\FrameworkBundle\Controller\AbstractController;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;

/**
 * A form: shown, validated, and on success kept in the visitor's session
 * (so the page shows only what this visitor signed) and redirected to.
 */
final class GuestbookController extends AbstractController
{
    public function index(Request $request): Response
    {
        $session = $request->getSession();
        $form = $this->createForm(EntryType::class);
        $form->handleRequest($request);
        if ($form->isSubmitted() && $form->isValid()) {
            $entries = $session->get('entries', []);
            $entries[] = $form->getData();
            $session->set('entries', $entries);
            $this->addFlash('notice', 'Thank you, ' . $form->get('name')->getData() . '.');
            return $this->redirectToRoute('guestbook');
        }
        return $this->renderForm('guestbook/index.html.twig', [
            'form' => $form,
            'entries' => $session->get('entries', []),
        ]);
    }
}
