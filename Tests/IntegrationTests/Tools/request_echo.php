<?php
// Echoes what PHP made of a request, for the `attache request` tests: PHP's own parsing of nested
// parameter names ($_GET, $_POST: phone[mobile]=1, families[]=a) is the independent parser.
// Run as the router script of PHP's built-in server: php -n -S 127.0.0.1:PORT request_echo.php
//
//   any path      200 application/json {"method","path","query","form","json","headers","body"}
//   ?status=N     the same with status N
//   /gzip         the same, gzip-compressed with Content-Encoding: gzip when the request accepts gzip
//   /bytes?n=N    N bytes of a repeating pattern (0123456789), gzip-compressed when accepted
//   /sleep?s=N    reads the body, then waits N seconds before answering (cancellation tests)
//   /count        answers {"bytes": N, "sha256": H} of the body it read (large uploads)
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if ($path === '/count') {
    $context = hash_init('sha256');
    $in = fopen('php://input', 'rb');
    $count = 0;
    while (!feof($in)) {
        $chunk = fread($in, 65536);
        if ($chunk === false) break;
        $count += strlen($chunk);
        hash_update($context, $chunk);
    }
    header('Content-Type: application/json');
    echo json_encode(['bytes' => $count, 'sha256' => hash_final($context)]);
    return;
}
if ($path === '/sleep') {
    sleep((int)($_GET['s'] ?? 30));
}
$raw = file_get_contents('php://input');
$acceptsGzip = strpos($_SERVER['HTTP_ACCEPT_ENCODING'] ?? '', 'gzip') !== false;
if (isset($_GET['status'])) {
    http_response_code((int)$_GET['status']);
}
if ($path === '/bytes') {
    $n = (int)($_GET['n'] ?? 0);
    $body = substr(str_repeat('0123456789', intdiv($n, 10) + 1), 0, $n);
    header('Content-Type: application/octet-stream');
} else {
    $report = [
        'method' => $_SERVER['REQUEST_METHOD'],
        'path' => $path,
        'query' => $_GET,
        'form' => $_POST,
        'json' => json_decode($raw, true),
        'headers' => getallheaders(),
        'body' => $raw,
    ];
    $body = json_encode($report, JSON_UNESCAPED_SLASHES);
    header('Content-Type: application/json');
}
if (($path === '/gzip' || $path === '/bytes') && $acceptsGzip) {
    header('Content-Encoding: gzip');
    $body = gzencode($body);
}
header('Content-Length: ' . strlen($body));
echo $body;
