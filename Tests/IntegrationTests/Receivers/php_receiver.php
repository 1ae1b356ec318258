<?php
// A multipart receiver built on PHP's own form parsing ($_FILES, $_POST), for the upload tests.
// Run as the router script of PHP's built-in server: php -S 127.0.0.1:PORT php_receiver.php
// Answers every POST with what PHP saw, in the same JSON shape as werkzeug_receiver.py: `filename`
// is $_FILES[...]['name'], what applications use; names are hex of their bytes.
$files = [];
foreach ($_FILES as $field => $file) {
    if (is_array($file['name'])) {
        // A field name with brackets: PHP made an array; report it flat, it is never expected.
        $files[] = ['field' => bin2hex($field), 'filename' => null, 'size' => -1, 'sha256' => ''];
        continue;
    }
    $ok = $file['error'] === UPLOAD_ERR_OK;
    $files[] = [
        'field' => bin2hex($field),
        'filename' => bin2hex($file['name']),
        'size' => $ok ? filesize($file['tmp_name']) : -1,
        'sha256' => $ok ? hash_file('sha256', $file['tmp_name']) : 'upload error ' . $file['error'],
    ];
}
$fields = array_map('bin2hex', array_map('strval', array_keys($_POST)));
$report = ['receiver' => 'php ' . PHP_VERSION, 'files' => $files, 'fields' => $fields];
header('Content-Type: application/json');
echo json_encode(['errorCode' => 0, 'message' => 'ok', 'data' => $report]);
