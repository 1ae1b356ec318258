"""A real Matrix homeserver for the Matrix upload tests: Synapse (matrix-synapse, pinned by
Scripts/bootstrap.sh in a venv of its own) on 127.0.0.1, SQLite, no federation, registration only
through the shared secret (`/_synapse/admin/v1/register`). Prints `listening PORT` once
`GET /_matrix/client/versions` answers, then runs until killed: Synapse runs in this very process, so
the pid the test started is the homeserver's.

Usage: synapse_server.py --data DIR [--port PORT] [--server-name NAME] [--shared-secret SECRET]
                         [--max-upload-size BYTES] [--media-rate-per-second N] [--media-burst N]
                         [--max-pending-media-uploads N] [--upload-limit BYTES:PERIOD ...]
                         [--rc-message PER_SECOND:BURST] [--dynamic-thumbnails] [--log-level LEVEL]

  --data DIR             homeserver.yaml, the signing key, homeserver.db (SQLite) and the media store go
                         here. A folder used before keeps its key, database and media (a restart).
  --port PORT            the client port on 127.0.0.1; 0 or none: a free one, chosen here.
  --server-name NAME     the server name, in user ids and mxc:// URIs (default `localhost`:
                         mxc://localhost/MEDIA, fetched from this server as
                         /_matrix/client/v1/media/download/localhost/MEDIA).
  --shared-secret S      registration_shared_secret (default `attache-test-shared-secret`).
  --max-upload-size B    max_upload_size in bytes (Synapse's default: 50M); a larger upload is refused
                         with 413 M_TOO_LARGE.
  --media-rate-per-second N, --media-burst N
                         rc_media_create: the rate of `POST /_matrix/media/v1/create` (MSC2246 async
                         upload) per user, 429 M_LIMIT_EXCEEDED past it (Synapse's default: 10/s, burst
                         50). Synapse limits no other upload endpoint by count: a plain
                         `POST /_matrix/media/v3/upload` is only limited by --upload-limit.
  --max-pending-media-uploads N
                         media ids made by /create and not yet uploaded that a user may hold (Synapse's
                         default: 5); one more /create answers 429 M_LIMIT_EXCEEDED, with retry_after_ms
                         the time until the first of them expires.
  --unused-expiration D  unused_expiration_time: how long a media id made by /create and never uploaded
                         counts against that limit (Synapse's default: 24h), e.g. 45s.
  --upload-limit BYTES:PERIOD
                         media_upload_limits entry (repeatable), e.g. 10485760:1m: a user who would pass
                         BYTES uploaded within PERIOD (Synapse durations: 500ms, 30s, 1m, 1h, 1d) is refused
                         with 403 M_USER_LIMIT_EXCEEDED.
  --rc-message R:B       rc_message (events sent per second, burst). Default 1000:10000: the tests send
                         messages faster than a person does. Registration, login, joins, invites and room
                         creation are loosened the same way.
  --dynamic-thumbnails   make thumbnails when asked rather than at upload time (Synapse's default: at
                         upload, for image types).
  --log-level LEVEL      Synapse's log level on stderr (default WARNING; INFO logs every request).

Started with an interpreter that has no Synapse (`/usr/bin/env python3`), it runs itself again, same pid,
with the venv's: $ATTACHE_SYNAPSE_PYTHON, else $XDG_CACHE_HOME/attache/synapse-venv/bin/python3 (or
~/.cache/attache/...).
"""
import argparse
import importlib.util
import json
import os
import socket
import sys
import threading
import time
import urllib.request

DEFAULT_SECRET = "attache-test-shared-secret"


def synapse_python():
    explicit = os.environ.get("ATTACHE_SYNAPSE_PYTHON")
    if explicit:
        return explicit
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "attache", "synapse-venv", "bin", "python3")


def ensure_synapse():
    """Runs this script again under the Synapse venv's interpreter (same pid) when this one lacks it."""
    if importlib.util.find_spec("synapse") is not None:
        return
    python = synapse_python()
    if os.environ.get("ATTACHE_SYNAPSE_REEXEC") or not os.access(python, os.X_OK):
        print(f"synapse_server.py: no Synapse in {sys.executable} nor at {python}: run Scripts/bootstrap.sh",
              file=sys.stderr, flush=True)
        sys.exit(69)
    os.environ["ATTACHE_SYNAPSE_REEXEC"] = "1"
    os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


def rate(text):
    per_second, _, burst = text.partition(":")
    return {"per_second": float(per_second), "burst_count": int(burst or 1)}


def parse_arguments():
    parser = argparse.ArgumentParser(description="Synapse on 127.0.0.1 for the Matrix tests")
    parser.add_argument("--data", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--server-name", default="localhost")
    parser.add_argument("--shared-secret", default=DEFAULT_SECRET)
    parser.add_argument("--max-upload-size", type=int)
    parser.add_argument("--media-rate-per-second", type=float)
    parser.add_argument("--media-burst", type=int)
    parser.add_argument("--max-pending-media-uploads", type=int)
    parser.add_argument("--unused-expiration")
    parser.add_argument("--upload-limit", action="append", default=[])
    parser.add_argument("--rc-message", type=rate, default=rate("1000:10000"))
    parser.add_argument("--dynamic-thumbnails", action="store_true")
    parser.add_argument("--log-level", default="WARNING")
    return parser.parse_args()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_config(args, data, port):
    import yaml

    loose = {"per_second": 1000, "burst_count": 10000}
    config = {
        "server_name": args.server_name,
        "public_baseurl": f"http://127.0.0.1:{port}/",
        "listeners": [{
            "port": port,
            "bind_addresses": ["127.0.0.1"],
            "type": "http",
            "tls": False,
            "x_forwarded": False,
            "resources": [{"names": ["client"], "compress": False}],
        }],
        "database": {"name": "sqlite3", "args": {"database": os.path.join(data, "homeserver.db")}},
        "log_config": os.path.join(data, "log.yaml"),
        "no_redirect_stdio": True,
        "media_store_path": os.path.join(data, "media_store"),
        "signing_key_path": os.path.join(data, "signing.key"),
        "registration_shared_secret": args.shared_secret,
        "enable_registration": False,
        "bcrypt_rounds": 4,
        "report_stats": False,
        "enable_metrics": False,
        "presence": {"enabled": False},
        "url_preview_enabled": False,
        "user_directory": {"enabled": False},
        "federation_domain_whitelist": [],
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "serve_server_wellknown": False,
        "enable_authenticated_media": True,
        "dynamic_thumbnails": bool(args.dynamic_thumbnails),
        # A sync that repeats one of the last two minutes is otherwise answered from a cache, without the
        # events sent since: a test that sends and syncs again would not see them.
        "caches": {"sync_response_cache_duration": 0},
        "rc_message": args.rc_message,
        "rc_registration": loose,
        "rc_login": {"address": loose, "account": loose, "failed_attempts": loose},
        "rc_joins": {"local": loose, "remote": loose},
        "rc_joins_per_room": loose,
        "rc_invites": {"per_room": loose, "per_user": loose, "per_issuer": loose},
        "rc_room_creation": loose,
    }
    if args.max_upload_size is not None:
        config["max_upload_size"] = args.max_upload_size
    if args.media_rate_per_second is not None or args.media_burst is not None:
        media = {}
        if args.media_rate_per_second is not None:
            media["per_second"] = args.media_rate_per_second
        if args.media_burst is not None:
            media["burst_count"] = args.media_burst
        config["rc_media_create"] = media
    if args.max_pending_media_uploads is not None:
        config["max_pending_media_uploads"] = args.max_pending_media_uploads
    if args.unused_expiration is not None:
        config["unused_expiration_time"] = args.unused_expiration
    if args.upload_limit:
        limits = []
        for entry in args.upload_limit:
            size, _, period = entry.partition(":")
            limits.append({"max_size": int(size), "time_period": period or "1d"})
        config["media_upload_limits"] = limits

    log = {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                                "stream": "ext://sys.stderr"}},
        # At INFO, synapse.app._base logs "Synapse now listening on TCP port N": kept out, so that the one
        # line with `listening` is the ready line below.
        "loggers": {"synapse.storage.SQL": {"level": "WARNING"}, "synapse.app._base": {"level": "WARNING"}},
        "root": {"level": args.log_level.upper(), "handlers": ["stderr"]},
        "disable_existing_loggers": False,
    }
    with open(os.path.join(data, "log.yaml"), "w") as out:
        yaml.safe_dump(log, out, sort_keys=False)
    path = os.path.join(data, "homeserver.yaml")
    with open(path, "w") as out:
        yaml.safe_dump(config, out, sort_keys=False)
    return path


def ensure_signing_key(data):
    """What `--generate-keys` does, without a second start of Synapse: one ed25519 key, kept on restarts."""
    path = os.path.join(data, "signing.key")
    if os.path.exists(path):
        return
    from signedjson.key import generate_signing_key, write_signing_keys

    key = generate_signing_key("a_" + os.urandom(3).hex())
    with open(path + ".tmp", "w") as out:
        write_signing_keys(out, [key])
    os.replace(path + ".tmp", path)


def announce_when_ready(port, stdout_fd, started):
    url = f"http://127.0.0.1:{port}/_matrix/client/versions"
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    print(f"synapse_server.py: ready after {elapsed:.2f} s", file=sys.stderr, flush=True)
    os.write(stdout_fd, f"listening {port}\n".encode())


def main():
    started = time.monotonic()
    ensure_synapse()
    args = parse_arguments()
    data = os.path.abspath(args.data)
    os.makedirs(os.path.join(data, "media_store"), exist_ok=True)
    port = args.port or free_port()
    config_path = write_config(args, data, port)
    ensure_signing_key(data)
    with open(os.path.join(data, "server.json"), "w") as out:
        json.dump({"port": port, "homeserver": f"http://127.0.0.1:{port}", "server_name": args.server_name,
                   "shared_secret": args.shared_secret, "pid": os.getpid()}, out)

    # Synapse may point sys.stdout elsewhere: the ready line goes to the descriptor the test reads.
    stdout_fd = os.dup(sys.stdout.fileno())
    threading.Thread(target=announce_when_ready, args=(port, stdout_fd, started), daemon=True).start()

    from synapse.app import homeserver

    sys.argv = ["synapse.app.homeserver", "--config-path", config_path]
    homeserver.main()


if __name__ == "__main__":
    main()
