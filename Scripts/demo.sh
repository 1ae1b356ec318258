#!/usr/bin/env bash
# The demo: installs what it needs (once), builds, starts the reference server on a free port on
# 127.0.0.1, sends every file in Samples/ through the full pipeline, prints the receipts, and stops the
# server.
#   Scripts/demo.sh            human-readable receipts
#   Scripts/demo.sh --json     one JSON receipt per line
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/bootstrap.sh

# The flags and environment of Scripts/test.sh's build, so that neither recompiles what the other built.
. Scripts/build-env.sh

echo "==> building attache and attache-server"
Scripts/swift-build-quiet.sh --product attache "${swiftpm_flags[@]}"
Scripts/swift-build-quiet.sh --product attache-server "${swiftpm_flags[@]}"
bin=$(swift build --show-bin-path "${swiftpm_flags[@]}")

work=$(mktemp -d "${TMPDIR:-/tmp}/attache-demo.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "==> starting the reference server"
"$bin/attache-server" --host 127.0.0.1 --port 0 --store "$work/store" >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
# The server's first line on stdout names the address it listens on.
first_line=""
for _ in $(seq 300); do
    first_line=$(head -n 1 "$work/server.out" 2>/dev/null || true)
    [ -n "$first_line" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$first_line" ]; then
    echo "the reference server did not start; its log:" >&2
    cat "$work/server.log" >&2
    exit 1
fi
base_url=${first_line##* }
echo "    $first_line"

mapfile -t samples < <(find Samples -maxdepth 1 -type f ! -name 'README.md' | sort)
echo "==> sending ${#samples[@]} sample files to $base_url/upload"
status=0
"$bin/attache" upload "${samples[@]}" --url "$base_url/upload" --field "chatId=demo" "$@" || status=$?

echo "==> server store"
curl -sS "$base_url/stats"; echo
exit "$status"
