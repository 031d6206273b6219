"""The events through Python equal the CLI's output line for line, whatever the chunking."""

import gzip
import json
import random
import subprocess

import pytest

import agentnorm
from conftest import FIXTURES, ROOT


def cli_events(cli, *args):
    out = subprocess.run([str(cli), *args], cwd=ROOT, capture_output=True, check=False)
    assert out.returncode in (0, 1, 3), out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_there_are_fixtures():
    assert len(FIXTURES) >= 20


@pytest.mark.parametrize("fixture", FIXTURES, ids=str)
def test_read_equals_cli(cli, fixture):
    assert list(agentnorm.read(str(fixture), observed_at=False)) == cli_events(cli, "--no-observed-at", str(fixture))


@pytest.mark.parametrize("fixture", FIXTURES, ids=str)
def test_read_equals_golden_file(fixture):
    expected = (ROOT / fixture).with_suffix(".expected").read_text()
    assert list(agentnorm.read(fixture, observed_at=False)) == [json.loads(l) for l in expected.splitlines()]


@pytest.mark.parametrize("flags", [["--raw"], ["--redact"], ["--dialect", "codex"]], ids=" ".join)
def test_options_equal_cli_flags(cli, flags):
    kwargs = {"raw": "--raw" in flags, "redact": "--redact" in flags}
    if "--dialect" in flags:
        kwargs["dialect"] = flags[-1]
    for fixture in FIXTURES[::3]:
        ours = list(agentnorm.read(str(fixture), observed_at=False, **kwargs))
        assert ours == cli_events(cli, "--no-observed-at", *flags, str(fixture)), fixture


def test_observed_at_is_written_by_default():
    evs = list(agentnorm.read(FIXTURES[0]))
    assert evs and all("observed_at" in e for e in evs)


def test_a_folder_equals_cli(cli):
    ours = list(agentnorm.read("fixtures/codex", observed_at=False))
    assert ours == cli_events(cli, "--no-observed-at", "-j1", "fixtures/codex")
    assert len({e["source"] for e in ours}) > 1


def test_gzip_reads_like_the_plain_file(tmp_path):
    fixture = FIXTURES[0]
    gz = tmp_path / "x.jsonl.gz"
    gz.write_bytes(gzip.compress((ROOT / fixture).read_bytes()))
    plain = list(agentnorm.read(fixture, observed_at=False))
    zipped = list(agentnorm.read(gz, observed_at=False, name=str(fixture)))
    assert zipped == plain


def test_binary_file_object_equals_path():
    for fixture in FIXTURES[:5]:
        with open(ROOT / fixture, "rb") as f:
            assert list(agentnorm.read(f, observed_at=False, name=str(fixture))) == list(
                agentnorm.read(fixture, observed_at=False)
            )


def feed_in(data, sizes, **kw):
    n = agentnorm.Normalizer(observed_at=False, **kw)
    out, i = [], 0
    for size in sizes:
        out += n.feed(data[i : i + size])
        i += size
    out += n.feed(data[i:])
    out += n.finish()
    assert n.feed(b'{"type":"x"}\n') == [] and n.finish() == []
    return out


@pytest.mark.parametrize("fixture", FIXTURES, ids=str)
def test_chunk_boundaries_do_not_matter(fixture):
    data = (ROOT / fixture).read_bytes()
    whole = feed_in(data, [], source=str(fixture))
    assert whole == list(agentnorm.read(fixture, observed_at=False))
    rng = random.Random(str(fixture))
    assert feed_in(data, [1] * min(len(data), 3000), source=str(fixture)) == whole
    assert feed_in(data, [rng.randint(1, 200) for _ in range(len(data) // 50)], source=str(fixture)) == whole


def test_feed_takes_bytearray_and_memoryview():
    data = (ROOT / FIXTURES[0]).read_bytes()
    a = agentnorm.Normalizer(observed_at=False)
    b = agentnorm.Normalizer(observed_at=False)
    assert a.feed(bytearray(data)) + a.finish() == b.feed(memoryview(data)) + b.finish()


@pytest.mark.parametrize(
    "junk",
    [b"\xff\xfe not utf-8\n", b"{not json\n", b"[1,2,3]\n", b'{"type":1}\n', b"\x00" * 100, b"{" * 5000 + b"\n"],
)
def test_bad_input_never_raises(junk):
    n = agentnorm.Normalizer(observed_at=False)
    evs = n.feed(junk) + n.finish()
    assert evs[-1]["type"] == "run_ended"
    assert any(e["type"] == "unknown" for e in evs)


def test_usage_equals_cli(cli):
    # Every grouping but block (its active block is measured against the clock at each call).
    for by in ("session", "project", "model", "day", "week", "month"):
        ours = agentnorm.usage(["fixtures/claude", "fixtures/codex"], by=by)
        theirs = cli_events(cli, "usage", "--json", "-j1", "--by", by, "fixtures/claude", "fixtures/codex")
        assert ours == theirs, by
        assert ours[-1]["totals"] is True


def test_usage_since_until_equal_cli(cli):
    args = ["fixtures/claude-transcript", "fixtures/codex-rollout"]
    ours = agentnorm.usage(args, by="day", since="2025-01-01", until="2030-12-31")
    assert ours == cli_events(cli, "usage", "--json", "--by", "day", "--since", "2025-01-01", "--until", "2030-12-31", *args)


def test_detect_equals_cli(cli):
    out = subprocess.run([str(cli), "detect", "fixtures"], cwd=ROOT, capture_output=True, text=True, check=True)
    theirs = {path: (None if d == "unknown" else d) for d, path in (l.split("\t") for l in out.stdout.splitlines())}
    assert agentnorm.detect("fixtures") == theirs
    one = next(iter(theirs))
    assert agentnorm.detect(one) == theirs[one]


def test_schema_equals_cli(cli):
    out = subprocess.run([str(cli), "schema"], capture_output=True, check=True)
    assert agentnorm.schema() == json.loads(out.stdout)


def tool_line(input_json):
    line = json.dumps(
        {
            "type": "assistant",
            "message": {"id": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"x": 0}}]},
            "session_id": "s",
        }
    )
    return (line.replace('{"x": 0}', input_json) + "\n").encode()


def tool_input(data):
    n = agentnorm.Normalizer(observed_at=False)
    evs = n.feed(data) + n.finish()
    return [e for e in evs if e["type"] == "tool_started"][0]["input"]


def test_tool_input_nested_1000_levels_does_not_raise():
    # json.loads stops at Python's recursion limit; the contract passes such input through.
    got = tool_input(tool_line("[" * 1000 + "]" * 1000))
    depth = 0
    while isinstance(got, list) and got:
        got, depth = got[0], depth + 1
    assert depth == 999 and got == []


@pytest.mark.parametrize(
    "value",
    [
        '"pair \\ud83d\\ude00 and \\u00e9 \\n\\t\\"\\\\\\/"',
        "18446744073709551615",
        "-9223372036854775808",
        "1.5e300",
        "-0.0",
        '{"a":[true,false,null,{}],"":[]}',
        '"\u00e9t\u00e9 \u2603"',
    ],
)
def test_tool_input_values_equal_json_loads(value):
    assert tool_input(tool_line(value)) == json.loads(value)


def test_a_lone_surrogate_becomes_the_replacement_character():
    # SPEC §1: a lone-surrogate escape is read as U+FFFD, in passed-through tool input too.
    assert tool_input(tool_line('"lone \\ud800 surrogate"')) == "lone \ufffd surrogate"


def test_an_integer_beyond_64_bits_is_written_as_a_float():
    # As the CLI writes it (1.2345678901234568e+29): the SPEC says nothing of such integers.
    assert tool_input(tool_line("123456789012345678901234567890")) == 1.2345678901234568e29
