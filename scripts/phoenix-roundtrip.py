#!/usr/bin/env python3
"""Loads sessions into a real OTLP receiver and reads the spans back (not part of the test run).

Starts Arize Phoenix (`phoenix serve`, from PyPI) on 127.0.0.1 with a throw-away working folder,
sends it `agentnorm --format otlp` of the given logs, then lists the project's spans over
Phoenix's REST API and compares them with what was sent: span ids, names, parents, token counts.
Phoenix's /v1/traces takes protobuf only (it answers 415 to OTLP/JSON, which is checked and
said), so the requests are encoded with the official opentelemetry-proto package on the way.

Usage: phoenix-roundtrip.py AGENTNORM_BIN LOG...   (scripts/phoenix-roundtrip.sh makes the venv)"""

import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def to_proto(line):
    def ids(o):
        if isinstance(o, dict):
            return {k: (base64.b64encode(bytes.fromhex(v)).decode()
                        if k in ("traceId", "spanId", "parentSpanId") else ids(v)) for k, v in o.items()}
        if isinstance(o, list):
            return [ids(v) for v in o]
        return o
    req = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(ids(json.loads(line))), req)
    return req


def post(url, body, ctype):
    r = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    binary, logs = sys.argv[1], sys.argv[2:]
    port, grpc = free_port(), free_port()
    work = tempfile.mkdtemp(prefix="phoenix-")
    env = dict(os.environ, PHOENIX_WORKING_DIR=work, PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(grpc), PHOENIX_TELEMETRY_ENABLED="false")
    exe = os.path.join(os.path.dirname(sys.executable), "phoenix")
    srv = subprocess.Popen([exe, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=open(f"{work}/log", "w"))
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.monotonic()
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except Exception:
                if time.monotonic() - t0 > 300 or srv.poll() is not None:
                    sys.exit(f"phoenix did not start: see {work}/log")
                time.sleep(1)
        startup = time.monotonic() - t0
        out = subprocess.run([binary, "--format", "otlp", *logs], capture_output=True, text=True, check=True).stdout
        lines = [l for l in out.splitlines() if l.strip()]
        json_status = post(f"{base}/v1/traces", lines[0].encode(), "application/json")
        sent = {}
        statuses = []
        for l in lines:
            req = to_proto(l)
            statuses.append(post(f"{base}/v1/traces", req.SerializeToString(), "application/x-protobuf"))
            for rs in json.loads(l)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for s in ss["spans"]:
                        sent[s["spanId"]] = s
        # Spans are written asynchronously: poll until all are there (bounded).
        got = {}
        t1 = time.monotonic()
        while time.monotonic() - t1 < 60:
            got, cursor = {}, None
            while True:
                q = f"{base}/v1/projects/default/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
                page = json.load(urllib.request.urlopen(q, timeout=30))
                for s in page["data"]:
                    got[s["context"]["span_id"]] = s
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            if len(got) >= len(sent):
                break
            time.sleep(1)
        same_parents = sum(1 for i, s in sent.items() if i in got
                           and (got[i].get("parent_id") or None) == (s.get("parentSpanId") or None))
        same_names = sum(1 for i, s in sent.items() if i in got and got[i]["name"] == s["name"])

        def tok(s, key):
            for a in s.get("attributes", []):
                if a["key"] == key:
                    return int(a["value"]["intValue"])
            return 0
        sent_in = sum(tok(s, "gen_ai.usage.input_tokens") for s in sent.values())
        got_in = sum(int((g.get("attributes") or {}).get("gen_ai.usage.input_tokens", 0) or 0) for g in got.values())
        print(json.dumps({
            "phoenix_startup_s": round(startup, 1), "requests": len(lines),
            "json_post_status": json_status, "protobuf_post_statuses": sorted(set(statuses)),
            "spans_sent": len(sent), "spans_read_back": len(got), "same_name": same_names,
            "same_parent": same_parents, "input_tokens_sent": sent_in, "input_tokens_read_back": got_in,
        }))
        ok = len(got) == len(sent) and same_parents == len(sent) and same_names == len(sent)
        sys.exit(0 if ok else 1)
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()


if __name__ == "__main__":
    main()
