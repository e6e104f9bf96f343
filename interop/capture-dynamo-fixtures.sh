#!/usr/bin/env bash
# Captures the wire fixtures in interop/fixtures/dynamo-1.6.1/ (README there): real Dynamo 1.6.1 request-plane
# bytes between interop/dynamo_client.py and interop/dynamo_worker.py on loopback (interop/capture_wire.py, which
# needs root or CAP_NET_RAW for its packet socket), hand-made frames' answers, and discovery entries (file and etcd).
# A developer's tool, not part of the tests: the tests read the committed fixtures.
#
#   interop/capture-dynamo-fixtures.sh [OUT_DIR]     # default interop/fixtures/dynamo-1.6.1
#
# Sets up what it needs with .ci/nixl-setup.sh, .ci/dynamo-setup.sh and .ci/etcd-setup.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$(realpath -m "${1:-interop/fixtures/dynamo-1.6.1}")"
eval "$(.ci/nixl-setup.sh 2>/dev/null)"
eval "$(.ci/dynamo-setup.sh 2>/dev/null)"
eval "$(.ci/etcd-setup.sh 2>/dev/null)"
if [[ -z "${DYNAMO_RUNTIME_PATH:-}" ]]; then echo "capture: no Dynamo runtime" >&2; exit 1; fi
export PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_RUNTIME_PATH"
py="$DYNAMO_RUNTIME_PYTHON"
work="$(mktemp -d /tmp/dynamo-capture.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$out/request-plane" "$out/discovery"

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_worker NAME ARGS... : starts a worker (environment: worker_env) with file discovery in $work/NAME.kv;
# sets worker_pid, worker_port
worker_env=()
start_worker() {
  local name="$1"; shift
  mkdir -p "$work/$name.kv"
  : > "$work/$name.worker.out"   # before the worker starts: the wait below reads it
  env "${worker_env[@]}" "$py" interop/dynamo_worker.py --file-kv "$work/$name.kv" "$@" \
      > "$work/$name.worker.out" 2> "$work/$name.worker.err" &
  worker_pid=$!
  pids+=("$worker_pid")
  for _ in $(seq 300); do
    if grep -q -E '^(READY|FAILED)' "$work/$name.worker.out"; then break; fi
    sleep 0.1
  done
  if ! grep -q '^READY' "$work/$name.worker.out"; then
    echo "capture: worker $name did not start:" >&2; cat "$work/$name.worker.out" "$work/$name.worker.err" >&2; exit 1
  fi
  worker_port="$("$py" - "$work/$name.kv" <<'PY'
import glob, json, sys
entry = json.load(open(glob.glob(sys.argv[1] + "/v1/instances/*")[0]))
print(entry["transport"]["tcp"].split("/")[0].rsplit(":", 1)[1])
PY
)"
}

stop_worker() { kill "$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true; }

# scenario NAME "WORKER ARGS" "CLIENT ARGS" [worker environment...]
# (the worker's and client's stdout lines are kept beside the capture: NAME.client.out, NAME.worker.out)
scenario() {
  local name="$1" worker_args="$2" client_args="$3" attempt; shift 3
  worker_env=("$@")
  for attempt in 1 2 3; do
    echo "capture: $name (attempt $attempt)" >&2
    rm -rf "$work/$name.kv" "$out/request-plane/$name".*
    # shellcheck disable=SC2086
    start_worker "$name" --endpoint demo.backend.generate $worker_args
    # shellcheck disable=SC2086
    "$py" interop/capture_wire.py sniff --port "$worker_port" --out "$out/request-plane/$name" -- \
        "$py" interop/dynamo_client.py --file-kv "$work/$name.kv" --endpoint demo.backend.generate $client_args \
        > "$out/request-plane/$name.client.out" 2> "$work/$name.client.err" || true
    sleep 0.3
    stop_worker
    if [[ -f "$out/request-plane/$name.txt" ]] && ! grep -q 'capture_wire: ERROR' "$work/$name.client.err"; then
      grep -v -E '^\s*$' "$work/$name.worker.out" | sed -E 's/^/worker: /' > "$out/request-plane/$name.worker.out"
      worker_env=()
      return 0
    fi
    grep 'capture_wire' "$work/$name.client.err" >&2 || true
  done
  echo "capture: $name failed:" >&2; cat "$work/$name.client.err" >&2; exit 1
}

scenario echo-msgpack   "--mode echo"                        "--requests 2"
scenario echo-json      "--mode echo --codec json"           "--requests 2"
scenario empty-msgpack  "--mode echo"                        "--requests 1 --request {}"
scenario empty-json     "--mode echo --codec json"           "--requests 1 --request {}"
scenario stream-msgpack "--mode stream --count 3"            "--requests 1"
scenario stream-json    "--mode stream --count 3 --codec json" "--requests 1"
scenario error-msgpack  "--mode error --count 1"             "--requests 1"
scenario error-json     "--mode error --count 1 --codec json" "--requests 1"
scenario error-first    "--mode error --count 0"             "--requests 1"
scenario prologue-error "--mode refuse"                      "--requests 1"
scenario cancel-stop    "--mode slow --delay-ms 50 --count 6" "--requests 2 --cancel-after 2 --cancel-how stop-drain"
scenario cancel-kill    "--mode slow --delay-ms 50 --count 6" "--requests 2 --cancel-after 2 --cancel-how drop"
scenario die-midstream  "--mode die --count 2"               "--requests 1"
scenario encode-msgpack "--mode encode --bytes 1048576"      "--requests 1 --read"
scenario encode-json    "--mode encode --bytes 1048576 --codec json" "--requests 1 --read"
scenario kv-1024-blocks "--mode kv --blocks 1024 --block-bytes 4096" "--requests 1 --read"
# Overload: one worker task and a queue of one (DYN_TCP_WORKER_POOL_SIZE, DYN_TCP_WORK_QUEUE_SIZE), four callers.
scenario overload       "--mode slow --delay-ms 100 --count 3" "--requests 4 --concurrency 4" \
    DYN_TCP_WORKER_POOL_SIZE=1 DYN_TCP_WORK_QUEUE_SIZE=1

# Hand-made frames: what a worker answers to input no Dynamo caller sends (interop/capture_wire.py send).
echo "capture: hand-made frames" >&2
start_worker handmade --endpoint demo.backend.generate --mode echo
instance="$(sed -n 's/^READY.*instance=\([0-9a-f]*\).*/\1/p' "$work/handmade.worker.out")"
frame() { # frame OUT CODEC BODY_HEX [PATH] [CONTROL_JSON]: writes one request frame naming $listen as call-home
  "$py" - "$@" <<'PY'
import json, struct, sys, uuid
out, codec, body_hex = sys.argv[1:4]
path = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
listen = int(open(out + ".port").read())
request_id = str(uuid.uuid4())
instance_path = path or open(out + ".path").read()
info = {"address": "127.0.0.1:%d" % listen, "subject": str(uuid.uuid4()), "context": request_id,
        "stream_type": "response"}
control = {"id": request_id, "request_type": "single_in", "response_type": "many_out", "payload_codec": codec,
           "connection_info": {"transport": "tcp_server", "info": json.dumps(info, separators=(",", ":"))}}
header = sys.argv[5].encode() if len(sys.argv) > 5 else json.dumps(control, separators=(",", ":")).encode()
body = bytes.fromhex(body_hex)
payload = struct.pack("!QQQ", len(header), len(body), 0) + header + body
headers = json.dumps({"request-id": request_id, "x-endpoint-path": instance_path}, separators=(",", ":")).encode()
p = instance_path.encode()
frame = struct.pack("!H", len(p)) + p + struct.pack("!H", len(headers)) + headers + struct.pack("!I", len(payload)) + payload
open(out, "wb").write(frame)
PY
}
handmade() { # handmade NAME CODEC BODY_HEX [PATH] [CONTROL_JSON]
  local name="$1"; shift
  local listen; listen="$(free_port)"
  echo "$listen" > "$work/$name.frame.port"
  printf "%s" "$instance/demo/backend/generate" > "$work/$name.frame.path"
  frame "$work/$name.frame" "$@"
  "$py" interop/capture_wire.py send --port "$worker_port" --listen "$listen" --wait 3 \
      --frame-file "$work/$name.frame" --out "$out/request-plane/$name" 2> /dev/null
}
handmade handmade-bad-msgpack-body msgpack c1            # 0xc1: never used in msgpack
handmade handmade-bad-json-body    json    7b226e6f74206a736f6e # '{"not json'
handmade handmade-unknown-path     msgpack 80 "$instance/demo/backend/nosuchendpoint"
handmade handmade-bad-control      msgpack 80 "" '{"id":"x","request_type":"single_in"}'
raw_frame() { # raw_frame NAME PYTHON_BYTES_EXPRESSION: sends those bytes as they are (no call-home listener)
  "$py" -c "import struct, sys; sys.stdout.buffer.write($2)" > "$work/$1.frame"
  "$py" interop/capture_wire.py send --port "$worker_port" --wait 3 --frame-file "$work/$1.frame" \
      --out "$out/request-plane/$1" 2> /dev/null
}
# A frame whose payload length takes it past 32 MiB in all (path "x/demo/b/gen", headers "{}"; nothing follows).
raw_frame handmade-oversize-frame 'struct.pack("!H", 12) + b"x/demo/b/gen" + struct.pack("!H", 2) + b"{}" + struct.pack("!I", 33 << 20)'
# An empty path, headers and payload.
raw_frame handmade-empty-path 'struct.pack("!HHI", 0, 0, 0)'
sleep 0.3
stop_worker
grep -v -E '^\s*$' "$work/handmade.worker.out" | sed -E 's/^/worker: /' > "$out/request-plane/handmade.worker.out"

# Discovery: the file store as a worker leaves it, and etcd's keys, values and leases.
echo "capture: discovery (file)" >&2
start_worker discovery-file --endpoint demo.backend.generate --mode echo --codec json
rm -rf "$out/discovery/file"; mkdir -p "$out/discovery/file"
cp -r "$work/discovery-file.kv/." "$out/discovery/file/"
(cd "$out/discovery/file" && find . -type f | sort > ../file-store-listing.txt)
stop_worker
echo "after the worker's orderly exit (SIGTERM: unregister):" >> "$out/discovery/file-store-listing.txt"
(cd "$work/discovery-file.kv" && find . -type f | sort) >> "$out/discovery/file-store-listing.txt"

echo "capture: discovery (etcd)" >&2
client_port="$(free_port)"; peer_port="$(free_port)"
env -u ETCD_BINARY -u ETCD_CLI_BINARY -u ETCD_SERVER_VERSION -u ETCD_ENDPOINTS "$ETCD_BINARY" \
    --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$client_port" \
    --advertise-client-urls "http://127.0.0.1:$client_port" --listen-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" --initial-cluster "default=http://127.0.0.1:$peer_port" \
    > "$work/etcd.log" 2>&1 &
etcd_pid=$!
pids+=("$etcd_pid")
endpoint="http://127.0.0.1:$client_port"
ctl() { env -u ETCD_BINARY -u ETCD_CLI_BINARY -u ETCD_SERVER_VERSION ETCDCTL_API=3 "$ETCD_CLI_BINARY" --endpoints="$endpoint" "$@"; }
for _ in $(seq 100); do if ctl endpoint health >/dev/null 2>&1; then break; fi; sleep 0.1; done
"$py" interop/dynamo_worker.py --discovery etcd --etcd-endpoints "$endpoint" --endpoint demo.backend.generate \
    --mode echo > "$work/etcd.worker.out" 2>&1 &
worker_pid=$!; pids+=("$worker_pid")
for _ in $(seq 300); do if grep -q -E '^(READY|FAILED)' "$work/etcd.worker.out"; then break; fi; sleep 0.1; done
{
  echo "# etcdctl get --prefix '' (keys and values while one worker serves demo.backend.generate)"
  ctl get --prefix ""
  echo "# etcdctl lease list; lease timetolive --keys"
  ctl lease list
  for lease in $(ctl lease list | tail -n +2); do ctl lease timetolive --keys "$lease"; done
} > "$out/discovery/etcd-keys.txt"
ctl get --prefix "" -w json > "$out/discovery/etcd-get-prefix.json"
# The same through etcd's v3 JSON gateway (what a client without gRPC sees): range over v1/instances/.
"$py" - "$endpoint" > "$out/discovery/etcd-gateway-range.json" <<'PY'
import base64, json, sys, urllib.request
key = b"v1/instances/"
body = {"key": base64.b64encode(key).decode(), "range_end": base64.b64encode(key[:-1] + bytes([key[-1] + 1])).decode()}
request = urllib.request.Request(sys.argv[1] + "/v3/kv/range", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
print(json.dumps({"request": {"POST": "/v3/kv/range", "body": body},
                  "response": json.load(urllib.request.urlopen(request))}, indent=1))
PY
stop_worker
{
  echo "# after the worker's orderly exit (SIGTERM: it deletes its key; its lease lives on until the TTL)"
  ctl get --prefix "" --keys-only
  ctl lease list
} >> "$out/discovery/etcd-keys.txt"
kill "$etcd_pid"; wait "$etcd_pid" 2>/dev/null || true
echo "capture: done -> $out" >&2
