<?php
// A router for PHP's built-in server (`php -S 127.0.0.1:0 params_router.php`): answers every request
// with what PHP's own nested-parameter parser made of the query string and of a form body, so tests
// compare it with the parameters Attache encoded. PHP, not Attache, does the parsing here.
header('Content-Type: application/json');
echo json_encode([
    'method' => $_SERVER['REQUEST_METHOD'],
    'contentType' => $_SERVER['CONTENT_TYPE'] ?? null,
    'get' => (object) $_GET,
    'post' => (object) $_POST,
], JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES);
