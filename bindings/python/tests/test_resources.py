"""Memory, file handles and the GIL: a 50 MB line is held once or twice, not many times; an
exception in the consumer's loop leaves no open file or growing memory; parsing lets other
Python threads run."""

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import pytest

import agentnorm
from conftest import FIXTURES, ROOT

MB = 1 << 20


def run_measured(body, tmp_path):
    """Runs `body` in a fresh interpreter; returns its peak RSS growth in MB over the part after
    setup (the script prints it)."""
    script = tmp_path / "measure.py"
    script.write_text(
        textwrap.dedent(
            """
            import resource, sys, json
            import agentnorm
            def peak():
                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            """
        )
        + textwrap.dedent(body)
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def big_line_file(tmp_path, mb=50):
    text = ("0123456789abcdef" * (mb * MB // 16))[: mb * MB]
    line = json.dumps(
        {
            "type": "assistant",
            "message": {"id": "m1", "model": "claude-x", "content": [{"type": "text", "text": text}]},
            "session_id": "s1",
            "parent_tool_use_id": None,
        }
    )
    p = tmp_path / "big.jsonl"
    p.write_text('{"type":"system","subtype":"init","session_id":"s1","model":"claude-x","tools":[]}\n' + line + "\n")
    return p


def test_a_50_mb_line_is_held_a_bounded_number_of_times(tmp_path):
    p = big_line_file(tmp_path)
    r = run_measured(
        f"""
        base = peak()
        longest = 0
        for ev in agentnorm.read({str(p)!r}, observed_at=False):
            longest = max(longest, len(ev.get("text", "")))
            del ev
        print(json.dumps({{"growth": peak() - base, "longest": longest}}))
        """,
        tmp_path,
    )
    assert r["longest"] == 50 * MB
    # The line (50 MB) in the normalizer, its event as JSON text and as a Python str: a few
    # copies, never one per chunk or per event.
    assert r["growth"] < 6 * 50, r


def test_a_50_mb_line_over_the_limit_costs_almost_nothing(tmp_path):
    p = big_line_file(tmp_path)
    r = run_measured(
        f"""
        base = peak()
        types = [ev["type"] for ev in agentnorm.read({str(p)!r}, observed_at=False, max_line_bytes=1 << 20)]
        reasons = [ev.get("reason") for ev in agentnorm.read({str(p)!r}, observed_at=False, max_line_bytes=1 << 20)
                   if ev["type"] == "unknown"]
        print(json.dumps({{"growth": peak() - base, "reasons": reasons}}))
        """,
        tmp_path,
    )
    assert r["reasons"] == ["line_too_long"]
    assert r["growth"] < 40, r


def test_feeding_a_50_mb_line_in_chunks(tmp_path):
    p = big_line_file(tmp_path)
    r = run_measured(
        f"""
        n = agentnorm.Normalizer(observed_at=False)
        base = peak()
        got = 0
        with open({str(p)!r}, "rb") as f:
            while chunk := f.read(1 << 20):
                got += sum(len(e.get("text", "")) for e in n.feed(chunk))
        got += sum(len(e.get("text", "")) for e in n.finish())
        print(json.dumps({{"growth": peak() - base, "got": got}}))
        """,
        tmp_path,
    )
    assert r["got"] == 50 * MB
    assert r["growth"] < 6 * 50, r


def open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to count open files")
def test_an_exception_mid_iteration_leaks_no_file_and_no_memory():
    class Stop(Exception):
        pass

    def consume():
        try:
            for i, _ in enumerate(agentnorm.read("fixtures", observed_at=False)):
                if i == 5:
                    raise Stop
        except Stop:
            pass

    consume()
    gc.collect()
    fds = open_fds()
    with open("/proc/self/statm") as f:
        before = int(f.read().split()[1])
    for _ in range(300):
        consume()
    gc.collect()
    with open("/proc/self/statm") as f:
        after = int(f.read().split()[1])
    assert open_fds() == fds
    grown_mb = (after - before) * os.sysconf("SC_PAGE_SIZE") / MB
    assert grown_mb < 16, grown_mb


def test_an_abandoned_iterator_releases_its_file_object():
    class Source:
        def __init__(self, data):
            self.data = data

        def read(self, n):
            chunk, self.data = self.data[:n], self.data[n:]
            return chunk

    src = Source((ROOT / FIXTURES[0]).read_bytes() * 50)
    gone = weakref.ref(src)
    it = agentnorm.read(src, observed_at=False)
    next(it)
    del src
    assert gone() is not None  # the iterator still holds it
    del it
    gc.collect()
    assert gone() is None


def test_close_and_with_end_the_iteration():
    it = agentnorm.read("fixtures", observed_at=False)
    next(it)
    it.close()
    assert list(it) == []
    with agentnorm.read("fixtures", observed_at=False) as it2:
        next(it2)
    assert list(it2) == []


def test_parsing_releases_the_gil():
    """Another thread keeps counting while one large feed is parsed."""
    line = b'{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"' + b"x" * 200 + b'"}]},"session_id":"s"}\n'
    data = line * 150_000  # ~35 MB: long enough to parse for a measurable while
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    n = agentnorm.Normalizer(observed_at=False)
    t = threading.Thread(target=count)
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        t.start()
        time.sleep(0.01)
        start = time.perf_counter()
        # Parse only: the events are never taken, so the GIL-holding conversion stays short.
        n.feed(data[: len(data) // 2])
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    during = [x for x in ticks if start < x < end]
    assert end - start > 0.02, "the feed was too quick to tell"
    # Holding the GIL for the whole feed would leave the counter with no tick inside it.
    assert len(during) > 100, (len(during), end - start)
