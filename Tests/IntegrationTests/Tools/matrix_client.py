"""A Matrix client for the Matrix upload tests, built on matrix-nio (PyPI, pinned by Scripts/bootstrap.sh):
what a second, independent client does with what Attache sent. Each subcommand prints one JSON object on
stdout and exits 0, or prints {"error": ...} and exits 1.

Usage: matrix_client.py SUBCOMMAND --homeserver URL ...
  register    --shared-secret S --user NAME [--password P] [--admin] [--displayname D]
              a user made through Synapse's shared-secret registration (/_synapse/admin/v1/register,
              HMAC-SHA1): {"user_id", "access_token", "device_id", "admin"}
  logout      --token T               the token revoked (POST /_matrix/client/v3/logout)  {"revoked"}
  reserve     --token T [--count N]   N media ids reserved (POST /_matrix/media/v1/create), left empty
                                                                       {"uris"}
  create-room --token T [--invite USER ...] [--name NAME]              {"room_id"}
  join        --token T --room ROOM                                    {"room_id"}
  send        --token T --room ROOM [--event-type TYPE] --content-file FILE
              the JSON object in FILE as the event's content           {"event_id"}
  receive     --token T --room ROOM --out DIR [--limit N] [--no-join]
              syncs as that user (joining first, so that an invite is enough), takes the latest m.room.message
              and m.sticker events (up to N, default 20) that carry media (`file`, an EncryptedFile, or
              `url`), downloads their media and thumbnails through authenticated media
              (/_matrix/client/v1/media/download/...), checks and decrypts encrypted ones with
              nio.crypto.attachments.decrypt_attachment, and writes the results into DIR:
              {"events": [{"event_id", "type", "msgtype", "body", "info", "file": {...}, "thumbnail": {...}}]}
              where each of file and thumbnail is {"mxc", "encrypted", "path", "size", "stored_size",
              "content_type"}, or {"mxc", "error"}; exits 1 when any download or decryption failed
  media-list  --admin-token T [--user USER]
              the user's media (the token's own user when not given) through the admin API
              (/_synapse/admin/v1/users/USER/media, every page): {"count", "media": [...]}
  upload      --token T --file F [--encrypt] [--content-type TYPE]
              matrix-nio's own AsyncClient.upload: {"content_uri", "size", "seconds", "decryption",
              "file"}, where decryption is nio's dict (key, iv, hashes, v) and file the EncryptedFile to put
              in an event (decryption plus url); both null without --encrypt
  upload-many --token T [--concurrency 8] [--encrypt] --files F ...
              the same for many files, CONCURRENCY in flight over one client:
              {"files", "bytes", "seconds", "files_per_second", "bytes_per_second", "failed"}
"""
import argparse
import asyncio
import hashlib
import hmac
import json
import logging
import mimetypes
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from nio import (
    AsyncClient,
    AsyncClientConfig,
    DownloadError,
    JoinError,
    RoomCreateError,
    RoomSendError,
    SyncError,
    UploadResponse,
    WhoamiError,
)
from nio.crypto.attachments import decrypt_attachment

# nio validates each event against the schema of an unencrypted room's message, where `url` is required, and
# logs a page for every `file` (EncryptedFile) event it sees; the event's source is read here all the same.
logging.getLogger("nio.events.misc").setLevel(logging.CRITICAL)


class Failure(Exception):
    pass


# --- Plain HTTP (Synapse's own APIs, which nio has no calls for) --------------------------------------------

def http_json(method, url, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read().decode("utf-8", "replace")
        raise Failure(f"{method} {url.split('?')[0]}: {error.code} {text}")


def register(args):
    base = args.homeserver.rstrip("/") + "/_synapse/admin/v1/register"
    nonce = http_json("GET", base)["nonce"]
    password = args.password or hashlib.sha256(os.urandom(16)).hexdigest()
    mac = hmac.new(args.shared_secret.encode(), digestmod=hashlib.sha1)
    for part in (nonce, args.user, password):
        mac.update(part.encode())
        mac.update(b"\x00")
    mac.update(b"admin" if args.admin else b"notadmin")
    body = {"nonce": nonce, "username": args.user, "password": password, "admin": bool(args.admin),
            "mac": mac.hexdigest()}
    if args.displayname:
        body["displayname"] = args.displayname
    answer = http_json("POST", base, body)
    return {"user_id": answer["user_id"], "access_token": answer["access_token"],
            "device_id": answer.get("device_id"), "admin": bool(args.admin)}


def logout(args):
    """Revokes the access token (POST /_matrix/client/v3/logout): the homeserver forgets it."""
    http_json("POST", args.homeserver.rstrip("/") + "/_matrix/client/v3/logout", body={}, token=args.token)
    return {"revoked": True}


def reserve(args):
    """Reserves media ids and puts nothing to them, as a run killed between a reservation and its journal entry
    leaves them."""
    base = args.homeserver.rstrip("/") + "/_matrix/media/v1/create"
    return {"uris": [http_json("POST", base, token=args.token)["content_uri"] for _ in range(args.count)]}


def media_list(args):
    base = args.homeserver.rstrip("/")
    user = args.user
    if not user:
        user = http_json("GET", base + "/_matrix/client/v3/account/whoami", token=args.admin_token)["user_id"]
    media, start, total = [], 0, None
    while True:
        query = urllib.parse.urlencode({"from": start, "limit": 100})
        page = http_json("GET", f"{base}/_synapse/admin/v1/users/{urllib.parse.quote(user)}/media?{query}",
                         token=args.admin_token)
        media.extend(page.get("media", []))
        total = page.get("total", len(media))
        if "next_token" not in page:
            break
        start = page["next_token"]
    return {"user_id": user, "count": len(media), "total": total, "media": media}


# --- matrix-nio -------------------------------------------------------------------------------------------

async def client_for(args):
    client = AsyncClient(args.homeserver.rstrip("/"),
                         config=AsyncClientConfig(encryption_enabled=False, store_sync_tokens=False))
    client.access_token = args.token
    who = await client.whoami()
    if isinstance(who, WhoamiError):
        await client.close()
        raise Failure(f"whoami: {who.status_code} {who.message}")
    client.user_id = who.user_id
    client.device_id = who.device_id
    return client


async def create_room(client, args):
    answer = await client.room_create(name=args.name, invite=args.invite or ())
    if isinstance(answer, RoomCreateError):
        raise Failure(f"createRoom: {answer.status_code} {answer.message}")
    return {"room_id": answer.room_id}


async def join(client, args):
    answer = await client.join(args.room)
    if isinstance(answer, JoinError):
        raise Failure(f"join {args.room}: {answer.status_code} {answer.message}")
    return {"room_id": answer.room_id}


async def send(client, args):
    with open(args.content_file, "rb") as source:
        content = json.load(source)
    answer = await client.room_send(args.room, args.event_type, content)
    if isinstance(answer, RoomSendError):
        raise Failure(f"send: {answer.status_code} {answer.message}")
    return {"event_id": answer.event_id}


def safe_name(text, fallback):
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text or "").strip("._")
    return name[:80] or fallback


async def fetch_media(client, mxc, encrypted, out_path):
    """Downloads mxc through authenticated media; `encrypted` is the EncryptedFile, or None for plain
    media. Writes the plaintext to out_path."""
    result = {"mxc": mxc, "encrypted": encrypted is not None}
    answer = await client.download(mxc=mxc)
    if isinstance(answer, DownloadError):
        result["error"] = f"download: {answer.status_code} {answer.message}"
        return result
    stored = answer.body
    result["stored_size"] = len(stored)
    result["content_type"] = answer.content_type
    if encrypted is not None:
        try:
            plain = decrypt_attachment(stored, encrypted["key"]["k"], encrypted["hashes"]["sha256"],
                                       encrypted["iv"])
        except Exception as error:  # EncryptionError, or a malformed EncryptedFile
            result["error"] = f"decrypt: {type(error).__name__}: {error}"
            return result
    else:
        plain = stored
    with open(out_path, "wb") as out:
        out.write(plain)
    result["path"] = out_path
    result["size"] = len(plain)
    result["sha256"] = hashlib.sha256(plain).hexdigest()
    return result


async def receive(client, args):
    if not args.no_join:
        await client.join(args.room)  # accepts an invite; a member already is one
    # Synapse answers a sync that repeats one of the last two minutes (same user, device, filter, no
    # `since`) from a cache, without the events sent since: an event type that matches nothing makes each
    # filter new.
    timeline = {"limit": max(args.limit * 5, 50), "not_types": [f"org.attache.nonce.{os.urandom(8).hex()}"]}
    room_filter = {"room": {"rooms": [args.room], "timeline": timeline},
                   "presence": {"types": []}, "account_data": {"types": []}}
    answer = await client.sync(timeout=0, sync_filter=room_filter, full_state=True)
    if isinstance(answer, SyncError):
        raise Failure(f"sync: {answer.status_code} {answer.message}")
    room = answer.rooms.join.get(args.room)
    if room is None:
        raise Failure(f"{client.user_id} is not in {args.room}")
    events = []
    for event in room.timeline.events:
        source = event.source
        if source.get("type") not in ("m.room.message", "m.sticker"):
            continue
        content = source.get("content", {})
        if not isinstance(content.get("file"), dict) and not isinstance(content.get("url"), str):
            continue
        events.append(source)
    events = events[-args.limit:]
    os.makedirs(args.out, exist_ok=True)
    report, failed = [], False
    for index, source in enumerate(events):
        content = source["content"]
        info = content.get("info") if isinstance(content.get("info"), dict) else {}
        name = safe_name(content.get("filename") or content.get("body"), "file")
        entry = {"event_id": source.get("event_id"), "type": source.get("type"),
                 "msgtype": content.get("msgtype"), "body": content.get("body"), "info": info}
        encrypted = content.get("file") if isinstance(content.get("file"), dict) else None
        mxc = encrypted["url"] if encrypted else content["url"]
        entry["file"] = await fetch_media(client, mxc, encrypted, os.path.join(args.out, f"{index:03d}-{name}"))
        thumb_encrypted = info.get("thumbnail_file") if isinstance(info.get("thumbnail_file"), dict) else None
        thumb_mxc = thumb_encrypted["url"] if thumb_encrypted else info.get("thumbnail_url")
        if isinstance(thumb_mxc, str):
            entry["thumbnail"] = await fetch_media(
                client, thumb_mxc, thumb_encrypted, os.path.join(args.out, f"{index:03d}-thumbnail-{name}"))
        failed = failed or "error" in entry["file"] or "error" in entry.get("thumbnail", {})
        report.append(entry)
    return {"user_id": client.user_id, "events": report}, failed


async def upload_one(client, path, encrypt, content_type=None):
    size = os.path.getsize(path)
    kind = content_type or mimetypes.guess_type(path)[0] or "application/octet-stream"
    started = time.monotonic()
    with open(path, "rb") as source:
        answer, decryption = await client.upload(source, content_type=kind, filename=os.path.basename(path),
                                                 encrypt=encrypt, filesize=size)
    seconds = time.monotonic() - started
    if not isinstance(answer, UploadResponse):
        raise Failure(f"upload {path}: {answer.status_code} {answer.message}")
    encrypted_file = dict(decryption, url=answer.content_uri) if decryption else None
    return {"content_uri": answer.content_uri, "size": size, "seconds": round(seconds, 4),
            "decryption": decryption, "file": encrypted_file}


async def upload(client, args):
    return await upload_one(client, args.file, args.encrypt, args.content_type)


async def upload_many(client, args):
    gate = asyncio.Semaphore(args.concurrency)
    errors = []

    async def one(path):
        async with gate:
            try:
                return await upload_one(client, path, args.encrypt)
            except Failure as error:
                errors.append(str(error))
                return None

    started = time.monotonic()
    results = await asyncio.gather(*(one(path) for path in args.files))
    seconds = time.monotonic() - started
    done = [result for result in results if result]
    total = sum(result["size"] for result in done)
    return {"files": len(done), "bytes": total, "seconds": round(seconds, 4),
            "files_per_second": round(len(done) / seconds, 3) if seconds else None,
            "bytes_per_second": round(total / seconds) if seconds else None,
            "concurrency": args.concurrency, "encrypt": bool(args.encrypt),
            "failed": len(errors), "errors": errors[:10]}


NIO_COMMANDS = {"create-room": create_room, "join": join, "send": send, "receive": receive,
                "upload": upload, "upload-many": upload_many}


async def run_nio(args):
    client = await client_for(args)
    try:
        result = await NIO_COMMANDS[args.command](client, args)
    finally:
        await client.close()
    return result if isinstance(result, tuple) else (result, False)


def parse_arguments():
    parser = argparse.ArgumentParser(description="matrix-nio client for the Matrix tests")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name):
        sub = commands.add_parser(name)
        sub.add_argument("--homeserver", required=True)
        return sub

    sub = command("register")
    sub.add_argument("--shared-secret", required=True)
    sub.add_argument("--user", required=True)
    sub.add_argument("--password")
    sub.add_argument("--displayname")
    sub.add_argument("--admin", action="store_true")

    sub = command("create-room")
    sub.add_argument("--token", required=True)
    sub.add_argument("--invite", action="append", default=[])
    sub.add_argument("--name")

    sub = command("join")
    sub.add_argument("--token", required=True)
    sub.add_argument("--room", required=True)

    sub = command("send")
    sub.add_argument("--token", required=True)
    sub.add_argument("--room", required=True)
    sub.add_argument("--event-type", default="m.room.message")
    sub.add_argument("--content-file", required=True)

    sub = command("receive")
    sub.add_argument("--token", required=True)
    sub.add_argument("--room", required=True)
    sub.add_argument("--out", required=True)
    sub.add_argument("--limit", type=int, default=20)
    sub.add_argument("--no-join", action="store_true")

    sub = command("logout")
    sub.add_argument("--token", required=True)

    sub = command("reserve")
    sub.add_argument("--token", required=True)
    sub.add_argument("--count", type=int, default=1)

    sub = command("media-list")
    sub.add_argument("--admin-token", required=True)
    sub.add_argument("--user")

    sub = command("upload")
    sub.add_argument("--token", required=True)
    sub.add_argument("--file", required=True)
    sub.add_argument("--encrypt", action="store_true")
    sub.add_argument("--content-type")

    sub = command("upload-many")
    sub.add_argument("--token", required=True)
    sub.add_argument("--concurrency", type=int, default=8)
    sub.add_argument("--encrypt", action="store_true")
    sub.add_argument("--files", nargs="+", required=True)
    return parser.parse_args()


def main():
    args = parse_arguments()
    failed = False
    try:
        if args.command == "register":
            result = register(args)
        elif args.command == "media-list":
            result = media_list(args)
        elif args.command == "reserve":
            result = reserve(args)
        elif args.command == "logout":
            result = logout(args)
        else:
            result, failed = asyncio.run(run_nio(args))
    except Failure as error:
        print(json.dumps({"error": str(error)}), flush=True)
        return 1
    print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
