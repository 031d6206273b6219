"""`--format otlp` read by the official OpenTelemetry protobuf package, and `--otlp-endpoint`
against a local receiver (127.0.0.1 only, bounded in time)."""

import base64
import http.server
import json
import socket
import threading
import time

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from conftest import FIXTURES, events, run


def hex_ids_to_base64(obj):
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping reads bytes as base64."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                out[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                out[k] = hex_ids_to_base64(v)
        return out
    if isinstance(obj, list):
        return [hex_ids_to_base64(v) for v in obj]
    return obj


def parse(line):
    req = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(hex_ids_to_base64(json.loads(line))), req)
    return req


def attrs(span):
    return {a.key: json_format.MessageToDict(a.value) for a in span.attributes}


def spans_of(path, *extra):
    out = run("--format", "otlp", "--no-observed-at", *extra, path).stdout
    reqs = [parse(l) for l in out.splitlines() if l.strip()]
    spans = []
    for r in reqs:
        for rs in r.resource_spans:
            res = {a.key: a.value.string_value for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append((res, s))
    return out, spans


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_parses_with_parents_names_and_attributes(binary, path):
    out, spans = spans_of(path)
    evs = events(path)
    usage = [e for e in evs if e["type"] == "usage"]
    tools = [e for e in evs if e["type"] == "tool_started"]
    sessions = {e["session_id"] for e in evs if e.get("session_id")}
    if not spans:
        assert not sessions, "sessions but no spans"
        return
    ids = {(s.trace_id, s.span_id) for _, s in spans}
    assert len(ids) == len(spans), "span ids are unique"
    for res, s in spans:
        assert len(s.trace_id) == 16 and len(s.span_id) == 8
        assert s.end_time_unix_nano >= s.start_time_unix_nano
        a = attrs(s)
        if s.name.startswith("session "):
            assert not s.parent_span_id
        else:
            assert (s.trace_id, s.parent_span_id) in ids, f"{s.name}: parent not in its trace"
        if s.name.startswith("invoke_agent "):
            assert a["gen_ai.operation.name"]["stringValue"] == "invoke_agent"
            assert "gen_ai.conversation.id" in a
        elif s.name.startswith("chat"):
            assert a["gen_ai.operation.name"]["stringValue"] == "chat"
            if "gen_ai.usage.input_tokens" in a:
                total = int(a["gen_ai.usage.input_tokens"]["intValue"])
                parts = sum(int(a[k]["intValue"]) for k in ("gen_ai.usage.cache_read.input_tokens",
                                                             "gen_ai.usage.cache_creation.input_tokens") if k in a)
                assert total >= parts
        elif s.name.startswith("execute_tool "):
            assert a["gen_ai.tool.name"]["stringValue"] == s.name[len("execute_tool "):]
            assert "gen_ai.tool.call.id" in a
        else:
            assert s.name.startswith("session "), s.name
        assert res["service.name"]
        if any(e.get("dialect") for e in evs):
            assert "agentnorm.dialect" in res
    # One chat span per usage event, one tool span per tool call.
    assert sum(s.name.startswith("chat") for _, s in spans) == len(usage)
    assert sum(s.name.startswith("execute_tool ") for _, s in spans) == len(tools)
    # The input tokens are the §4 input plus the cache.
    chat_in = sum(int(attrs(s).get("gen_ai.usage.input_tokens", {}).get("intValue", 0))
                  for _, s in spans if s.name.startswith("chat"))
    ev_in = sum(sum(e["usage"].get(k, 0) for k in ("input", "cache_read", "cache_write")) for e in usage)
    assert chat_in == ev_in
    # A failed tool call has error.type.
    failed = {e["tool_id"] for e in evs if e["type"] == "tool_completed" and not e["ok"]}
    for _, s in spans:
        a = attrs(s)
        if s.name.startswith("execute_tool ") and a["gen_ai.tool.call.id"]["stringValue"] in failed:
            assert "error.type" in a and s.status.code == 2
    # The same log twice gives the same ids.
    assert run("--format", "otlp", "--no-observed-at", path).stdout == out


def test_subagents_nest_under_their_tool_call(binary):
    path = next(p for p in FIXTURES if p.name == "sidechain_task.jsonl")
    _, spans = spans_of(path)
    by_id = {s.span_id: s for _, s in spans}
    sub = [s for _, s in spans if s.name == "invoke_agent general-purpose"]
    assert len(sub) == 1
    assert by_id[sub[0].parent_span_id].name == "execute_tool Task"
    reads = [s for _, s in spans if s.name == "execute_tool Read"]
    assert reads and by_id[reads[0].parent_span_id].span_id == sub[0].span_id


def test_content_is_opt_in_and_redacted(binary):
    import re
    path = next(p for p in FIXTURES if p.name == "fake_secrets.jsonl")
    secrets = set(re.findall(r"(sk-ant-[\w-]{10,}|ghp_[A-Za-z0-9]{10,}|AKIA[A-Z0-9]{12,}|sk-proj-[\w-]{10,})",
                             path.read_text()))
    assert secrets
    plain, spans = spans_of(path)
    assert not {x for x in secrets if x in plain}
    assert not any(k in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                         "gen_ai.tool.call.result") for _, s in spans for k in attrs(s))
    with_content, spans = spans_of(path, "--otlp-content")
    assert any("gen_ai.tool.call.arguments" in attrs(s) for _, s in spans)
    leaked = {x for x in secrets if x in with_content}
    assert leaked, "the fixture's secrets reach the content attributes"
    redacted, _ = spans_of(path, "--otlp-content", "--redact")
    assert "[REDACTED:" in redacted
    assert not {x for x in secrets if x in redacted}, "--redact masks them in the spans"


class Receiver(http.server.BaseHTTPRequestHandler):
    bodies = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.bodies.append((self.path, self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *a):
        pass


def span_ids_in(lines):
    out = set()
    for l in lines:
        for rs in json.loads(l)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out |= {s["spanId"] for s in ss["spans"]}
    return out


def test_endpoint_gets_the_same_spans_while_ndjson_goes_on(binary):
    Receiver.bodies = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        paths = [p for p in FIXTURES if p.parent.name in ("claude", "codex-rollout")][:6]
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        p = run("--no-observed-at", "--otlp-endpoint", url, *paths, timeout=30)
        assert p.stdout == run("--no-observed-at", *paths).stdout, "the NDJSON is unchanged"
        expected = span_ids_in(run("--format", "otlp", "--no-observed-at", *paths).stdout.splitlines())
        got = span_ids_in([b.decode() for _, _, b in Receiver.bodies])
        assert got == expected and expected
        assert all(path == "/v1/traces" and ctype == "application/json" for path, ctype, _ in Receiver.bodies)
    finally:
        srv.shutdown()


def test_a_down_endpoint_never_breaks_or_holds_the_output(binary):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    paths = [p for p in FIXTURES if p.parent.name == "claude"]
    t0 = time.monotonic()
    p = run("--no-observed-at", "--otlp-endpoint", f"http://127.0.0.1:{port}", *paths, timeout=30)
    took = time.monotonic() - t0
    assert p.stdout == run("--no-observed-at", *paths).stdout
    assert "spans not sent" in p.stderr
    assert took < 15, took
