<?php
switch ($_GET['case'] ?? '') {
    case 'replace-false':
        header('X-Multi: one');
        header('X-Multi: two', false);
        break;
    case 'replace':
        header('X-Single: one');
        header('X-Single: two');
        break;
    case 'location':
        header('Location: /elsewhere');
        break;
    case 'location-201':
        http_response_code(201);
        header('Location: /created');
        break;
    case 'status-line':
        header('HTTP/1.1 404 Not Found');
        break;
    case 'custom-reason':
        header('HTTP/1.1 299 Custom Thing');
        break;
    case 'status-header':
        header('Status: 503 Service Unavailable');
        break;
    case 'remove':
        header('X-Gone: yes');
        header('X-Kept: yes');
        header_remove('X-Gone');
        break;
    case 'code':
        http_response_code(418);
        break;
    case 'cookies':
        setcookie('a', 'one');
        setcookie('b', 'two words; =', ['expires' => 2000000000, 'path' => '/p', 'domain' => 'example.test',
                                       'secure' => true, 'httponly' => true, 'samesite' => 'Strict']);
        setrawcookie('raw', 'x%20y');
        setcookie('gone', '', 1);
        break;
    case 'content-type':
        header('Content-Type: application/xml; charset=iso-8859-1');
        break;
    case 'list':
        header('X-A: 1');
        header('X-B: 2');
        echo json_encode(headers_list()), "\n";
        echo headers_sent() ? "sent\n" : "not sent\n";
        break;
}
echo "body\n";
