<?php
// Opens an encrypted JSON form body, written from docs/FORMAT.md ("The encrypted JSON form POST" and
// the scheme sections) alone, with PHP's openssl extension: an independent check of what Attache
// sends.
//
//   php -n sealed_form_open.php SCHEME KEYFILE [FIELD] < body > plaintext
//
// SCHEME is legacy-cbc, legacy-ecb or stream-gcm. KEYFILE holds the passphrase (legacy; one trailing
// line break dropped) or 32 raw bytes or their base64 text (stream-gcm). Exit status 1 and one line on
// stderr when the body does not open.

function fail(string $message): void {
    fwrite(STDERR, "sealed_form_open: $message\n");
    exit(1);
}

if ($argc < 3) fail('usage: sealed_form_open.php SCHEME KEYFILE [FIELD]');
[$scheme, $keyFile] = [$argv[1], $argv[2]];
$field = $argv[3] ?? null;
$keyText = file_get_contents($keyFile);
if ($keyText === false) fail('cannot read the key file');
$body = stream_get_contents(STDIN);

// 1. White space at both ends.
$body = trim($body, " \t\r\n");
// 2. Form or bare: `&`, or an `=` followed by something other than `=` and white space.
$isForm = strpos($body, '&') !== false;
if (!$isForm && ($eq = strpos($body, '=')) !== false) {
    $isForm = trim(substr($body, $eq), "= \t\r\n") !== '';
}
// 3. The field's value, percent-decoded with `+` kept (rawurldecode does not touch `+`).
if ($isForm) {
    $pairs = explode('&', $body);
    $pairs = array_values(array_filter($pairs, fn($p) => $p !== ''));
    $value = null;
    foreach ($pairs as $pair) {
        $parts = explode('=', $pair, 2);
        $name = urldecode($parts[0]);
        if ($field === null ? count($pairs) === 1 : $name === $field) {
            $value = rawurldecode($parts[1] ?? '');
        }
    }
    if ($value === null) fail('no such field in the form');
    $body = $value;
}
// 4. White space out, strict base64.
$text = preg_replace('/[ \t\r\n]/', '', $body);
$sealed = base64_decode($text, true);
if ($sealed === false) fail('not base64');

// 5. Decrypt.
switch ($scheme) {
case 'legacy-cbc':
case 'legacy-ecb':
    $passphrase = preg_replace('/\r?\n$/', '', $keyText);
    $size = $scheme === 'legacy-cbc' ? 32 : 16;
    $key = str_pad(substr($passphrase, 0, $size), $size, "\0");
    if (strlen($sealed) === 0 || strlen($sealed) % 16 !== 0) fail('not a whole number of blocks');
    $plain = $scheme === 'legacy-cbc'
        ? openssl_decrypt($sealed, 'aes-256-cbc', $key, OPENSSL_RAW_DATA, str_repeat("\0", 16))
        : openssl_decrypt($sealed, 'aes-128-ecb', $key, OPENSSL_RAW_DATA);
    if ($plain === false) fail('bad padding (wrong key or damaged data)');
    break;
case 'stream-gcm':
    $key = strlen($keyText) === 32 ? $keyText : base64_decode(trim($keyText), true);
    if ($key === false || strlen($key) !== 32) fail('the key file does not hold a 32-byte key');
    if (strlen($sealed) < 5 || substr($sealed, 0, 4) !== 'ATSG' || $sealed[4] !== "\x01") fail('header invalid');
    if (strlen($sealed) < 60) fail('truncated header');
    $salt = substr($sealed, 5, 32);
    $prefix = substr($sealed, 37, 7);
    $check = substr($sealed, 44, 16);
    $okm = hash_hkdf('sha256', $key, 48, 'attache stream-gcm v1', $salt);
    if (!hash_equals(substr($okm, 32, 16), $check)) fail('wrong key');
    $segmentKey = substr($okm, 0, 32);
    $rest = substr($sealed, 60);
    $plain = '';
    for ($i = 0; ; $i++) {
        $final = strlen($rest) <= 65552;
        $segment = $final ? $rest : substr($rest, 0, 65552);
        if (strlen($segment) < 16) fail('truncated segment');
        $nonce = $prefix . pack('N', $i) . ($final ? "\x01" : "\x00");
        $clear = openssl_decrypt(
            substr($segment, 0, -16), 'aes-256-gcm', $segmentKey, OPENSSL_RAW_DATA, $nonce, substr($segment, -16));
        if ($clear === false) fail("segment $i does not authenticate");
        if ($final && $i > 0 && $clear === '') fail('empty final segment after data');
        $plain .= $clear;
        if ($final) break;
        $rest = substr($rest, 65552);
    }
    break;
default:
    fail("unknown scheme $scheme");
}
fwrite(STDOUT, $plain);
