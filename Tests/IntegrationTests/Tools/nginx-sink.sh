#!/usr/bin/env bash
# Runs nginx as an upload sink on 127.0.0.1, in the foreground, as whoever runs it, with every path
# under PREFIX. Used by the integration tests (a server that is not ours, for HTTP/2 and connection
# counts) and by Scripts/bench/nginx-*.sh (a receiver faster than the clients it measures).
#
#   nginx-sink.sh [--body-in-memory SIZE] PREFIX HTTP_PORT HTTPS_PORT
#
# Writes PREFIX/nginx.conf, a throwaway self-signed certificate for IP 127.0.0.1 (PREFIX/cert.pem,
# which clients trust with --ca-file) and its key, then replaces itself with nginx (same pid: stop it
# with SIGTERM, or SIGKILL, by that pid). nginx runs without a master process, so there is no worker to
# leave behind and no switch to another user. It prints its startup notices on stderr; the last one,
# "getrlimit(RLIMIT_NOFILE)", comes after the listening sockets are bound. A port already taken makes it
# exit 1 with "Address already in use".
#
# Endpoints, on http://127.0.0.1:HTTP_PORT and https://127.0.0.1:HTTPS_PORT (HTTP/2 offered by ALPN):
#   POST /upload    reads the WHOLE request body, then answers 200 application/json
#                   {"errorCode":0,"data":{"fileId":"n1"}} (the default answer profile's success)
#   POST /discard   the same answer at once: nginx's `return` answers before the body has arrived and
#                   discards the rest (kept to show the difference; do not measure with it)
#   POST /answer200 reads the whole body like /upload, then answers 200 application/json with a body of
#                   exactly 200 bytes (small-request benchmarks: Scripts/bench/requests.sh)
#   GET /files/NAME the static file PREFIX/files/NAME, with nginx's Range, If-Range, ETag and
#                   Last-Modified (Scripts/bench/downloads.sh)
#
# How /upload waits for the body: `return` runs in the rewrite phase and never reads the body. The mirror
# module with `mirror_request_body on` reads the whole body in the precontent phase, before any content
# handler runs (a mirror subrequest must be able to replay it); the mirror target is an internal
# location that answers 204 and costs nothing. The content phase then finds a static file for a POST,
# which the static module refuses with 405, and `error_page 405 = @answer` turns that into the JSON
# answer. Evidence: the access log's $request_length is the whole body, and a client that stops halfway
# gets no answer until it sends the rest (docs/BENCHMARKS.md).
#
# Bodies up to client_body_buffer_size stay in memory, larger ones go to a temporary file under PREFIX.
# --body-in-memory SIZE raises that buffer so a body up to SIZE (nginx size syntax: 1100m) is read into
# memory, and keeps freed memory in the process (malloc never returns it to the kernel): from the second
# request on, nginx reads a gigabyte into memory it has already touched, cheaper per byte than the
# client that sends it. Without it, a 1 GiB body costs nginx a temporary file and more CPU than curl.
#
# access_log PREFIX/access.log, one line per request:
#   $connection $connection_requests $server_protocol $request_method $uri $status $request_length $request_time
# so a test counts distinct connections (field 1) and protocols (field 3).
set -euo pipefail

body_buffer=1m
in_memory=0
if [[ "${1:-}" == --body-in-memory ]]; then
    body_buffer=${2:?--body-in-memory needs a size, e.g. 1100m}
    in_memory=1
    shift 2
fi
if (($# != 3)); then
    printf 'usage: nginx-sink.sh [--body-in-memory SIZE] PREFIX HTTP_PORT HTTPS_PORT\n' >&2
    exit 64
fi
prefix=${1%/}
http_port=$2
https_port=$3
[[ "$http_port" =~ ^[0-9]+$ && "$https_port" =~ ^[0-9]+$ ]] || { echo "nginx-sink: ports must be numbers" >&2; exit 64; }
command -v nginx >/dev/null || { echo "nginx-sink: nginx not found (run Scripts/bootstrap.sh)" >&2; exit 69; }
command -v openssl >/dev/null || { echo "nginx-sink: openssl not found (run Scripts/bootstrap.sh)" >&2; exit 69; }

mkdir -p "$prefix/www" "$prefix/tmp" "$prefix/files"
prefix=$(cd "$prefix" && pwd)

if [[ ! -s "$prefix/cert.pem" || ! -s "$prefix/key.pem" ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$prefix/key.pem" -out "$prefix/cert.pem" 2>/dev/null \
        || { echo "nginx-sink: openssl could not make a certificate" >&2; exit 1; }
fi

answer='{"errorCode":0,"data":{"fileId":"n1"}}'
# 200 bytes exactly: the JSON below is padded with a run of x.
answer200='{"errorCode":0,"data":{"fileId":"n1","note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}'
# Only the file's existence matters: a POST to it is refused with 405, which error_page turns into the answer.
printf '%s\n' "$answer" >"$prefix/www/upload"
printf '%s\n' "$answer200" >"$prefix/www/answer200"

# `listen ... ssl http2` rather than `http2 on;`: the directive only exists from nginx 1.25.1, the listen
# parameter works from 1.9.5 on (1.25 warns that it is deprecated and still honours it).
cat >"$prefix/nginx.conf" <<EOF
# Written by nginx-sink.sh; see there.
master_process off;
daemon off;
pid $prefix/nginx.pid;
error_log stderr notice;
events { worker_connections 4096; }
http {
    error_log $prefix/error.log error;
    log_format sink '\$connection \$connection_requests \$server_protocol \$request_method \$uri \$status \$request_length \$request_time';
    access_log $prefix/access.log sink;
    client_body_temp_path $prefix/tmp/body;
    proxy_temp_path $prefix/tmp/proxy;
    fastcgi_temp_path $prefix/tmp/fastcgi;
    uwsgi_temp_path $prefix/tmp/uwsgi;
    scgi_temp_path $prefix/tmp/scgi;
    client_max_body_size 0;
    client_body_buffer_size $body_buffer;
    keepalive_requests 100000;
    keepalive_timeout 75s;
    http2_max_concurrent_streams 128;
    server {
        listen 127.0.0.1:$http_port;
        listen 127.0.0.1:$https_port ssl http2;
        ssl_certificate $prefix/cert.pem;
        ssl_certificate_key $prefix/key.pem;
        root $prefix/www;

        location = /upload {
            mirror /read-whole-body;
            mirror_request_body on;
            error_page 405 = @answer;
        }
        location = /read-whole-body {
            internal;
            return 204;
        }
        location @answer {
            default_type application/json;
            return 200 '$answer';
        }
        location = /answer200 {
            mirror /read-whole-body;
            mirror_request_body on;
            error_page 405 = @answer200;
        }
        location @answer200 {
            default_type application/json;
            return 200 '$answer200';
        }
        location /files/ {
            root $prefix;
            sendfile on;
        }
        location = /discard {
            default_type application/json;
            return 200 '$answer';
        }
    }
}
EOF

# -e (nginx 1.19.5+) keeps nginx from opening its compiled-in error log before it reads the config,
# which a user other than root cannot write.
args=(-p "$prefix/" -c "$prefix/nginx.conf")
nginx_help=$(nginx -h 2>&1 || true)
if [[ "$nginx_help" == *"-e filename"* ]]; then args+=(-e stderr); fi

if ((in_memory)); then
    # No mmap for large blocks and no trimming: a freed gigabyte stays mapped for the next request.
    export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736
fi
# A process started by the test runner inherits a signal mask that blocks SIGTERM, and nginx in single
# process mode does not clear it; /usr/bin/python3 (which the tests need anyway) clears the mask, then
# becomes nginx, so SIGTERM stops it once it has finished the event in hand (its log lines written).
exec /usr/bin/python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execvp(sys.argv[1], sys.argv[1:])' nginx "${args[@]}"
