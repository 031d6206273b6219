#!/usr/bin/env bash
# Throughput of agentnorm on the reference workload, side by side with its anchors
# (see ../shared/bench/README.md), all measured in the same run on the same file.
#
# Usage: scripts/bench.sh [FILE] [MB]
#   FILE  the workload (default /tmp/agentnorm-workload.ndjson); generated when missing
#   MB    its size when generated, in MB = 10^6 bytes (default 500); ignored if FILE exists
# Environment:
#   QUICK=1                 median of 3 runs instead of 5
#   GEN_WORKLOAD=PATH       the generator (default ../shared/bench/gen_workload.py beside the repo)
#   CARGO_TARGET_DIR        honoured when locating the release binary
#
# Prints one table: per tool the median wall and CPU time, MB/s, peak RSS, and the throughput of
# agentnorm (one thread, all cores, in a pipe) as a ratio of the tool's; then the issue-5 targets
# with the figure reached. Tools: cat, a memchr line split and a bare simd-json tape parse of every
# line (examples/simd_tape.rs), jq and node when on PATH, agentnorm -j1 and default -j on the
# file, and `cat FILE | agentnorm | cat` beside `cat FILE | cat`; then agentnorm -j1 at each scanner
# level the CPU has, forced with AGENTNORM_SIMD=portable|sse2|avx2|avx512 (rows `-j1 simd=LEVEL`),
# with the portable level's time as a ratio of AVX2's. Needs bash, python3 and cargo.
set -euo pipefail

die() {
    printf 'bench.sh: %s\n' "$*" >&2
    exit 1
}

case "${1:-}" in
-h | --help)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
[ "$#" -le 2 ] || die "too many arguments (usage: scripts/bench.sh [FILE] [MB])"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
file="${1:-/tmp/agentnorm-workload.ndjson}"
mb="${2:-500}"
reps=5
if [ "${QUICK:-0}" = 1 ]; then
    reps=3
fi
gen="${GEN_WORKLOAD:-$repo/../shared/bench/gen_workload.py}"

command -v python3 >/dev/null 2>&1 || die "python3 is required (it times the runs and generates the workload)"
command -v cargo >/dev/null 2>&1 || die "cargo is required to build the release binary"
case "$mb" in
'' | *[!0-9.]*) die "MB must be a number, got '$mb'" ;;
esac

# 1. The release binary.
printf 'building the release binary and the simd-json anchor...\n' >&2
cargo build --release --bin agentnorm --example simd_tape --manifest-path "$repo/Cargo.toml" >&2
bin="${CARGO_TARGET_DIR:-$repo/target}/release/agentnorm"
tape="${CARGO_TARGET_DIR:-$repo/target}/release/examples/simd_tape"
[ -x "$bin" ] || die "release binary not found at $bin"
[ -x "$tape" ] || die "simd_tape example not found at $tape"
export SIMD_TAPE="$tape"

# 2. The workload, generated once and reused.
if [ ! -s "$file" ]; then
    [ -f "$gen" ] || die "workload $file is missing and the generator was not found at $gen
  (set GEN_WORKLOAD=/path/to/gen_workload.py, or pass an existing workload as FILE)"
    partial="$file.partial.$$"
    trap 'rm -f "$partial"' EXIT
    printf 'generating %s MB of workload into %s...\n' "$mb" "$file" >&2
    python3 "$gen" "$partial" "$mb" || die "the workload generator failed ($gen)"
    mv "$partial" "$file"
    trap - EXIT
else
    printf 'using the existing workload %s (MB argument ignored)\n' "$file" >&2
fi

# 3. The anchors and agentnorm, timed by python (perf_counter around subprocess.run).
# Each command is a `bash -c` script with "$1" = FILE and "$2" = the agentnorm binary.
# node: JSON.parse + JSON.stringify per line, output written to stdout in ~1 MiB batches.
NODE_JS=$(
    cat <<'JS'
const fs = require("fs");
const fd = fs.openSync(process.argv[1], "r");
const buf = Buffer.allocUnsafe(1 << 20);
let carry = null, out = [], outLen = 0, n;
function flush() { if (out.length) { fs.writeSync(1, out.join("")); out = []; outLen = 0; } }
function line(b) {
  if (b.length === 0) return;
  const s = JSON.stringify(JSON.parse(b.toString("utf8")));
  out.push(s, "\n");
  outLen += s.length + 1;
  if (outLen > (1 << 20)) flush();
}
while ((n = fs.readSync(fd, buf, 0, buf.length, null)) > 0) {
  const chunk = buf.subarray(0, n);
  let start = 0, i;
  while ((i = chunk.indexOf(10, start)) !== -1) {
    if (carry) { line(Buffer.concat([carry, chunk.subarray(start, i)])); carry = null; }
    else line(chunk.subarray(start, i));
    start = i + 1;
  }
  if (start < n) {
    const rest = Buffer.from(chunk.subarray(start));
    carry = carry ? Buffer.concat([carry, rest]) : rest;
  }
}
if (carry) line(carry);
flush();
JS
)
export NODE_JS

harness=$(
    cat <<'PY'
import os, platform, shutil, statistics, subprocess, sys, tempfile, time

file, binary, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = os.path.getsize(file)
MB = 1e6

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"

def version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return "?"

def load():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"

# (name, bash script); "$1" = FILE, "$2" = agentnorm, $SIMD_TAPE = the simd-json anchor.
ONE, ALL, PIPE, CATCAT = "agentnorm -j1 FILE", "agentnorm FILE (all cores)", "cat | agentnorm | cat", "cat FILE | cat"
tools = [("cat FILE > /dev/null", 'cat "$1" > /dev/null'),
         (CATCAT, 'cat "$1" | cat > /dev/null'),
         ("memchr line split", '"$SIMD_TAPE" --lines "$1" > /dev/null'),
         ("simd-json tape, every line", '"$SIMD_TAPE" "$1" > /dev/null')]
notes = ["memchr line split and simd-json tape: examples/simd_tape.rs (1 MiB reads, memchr, "
         "simd_json::fill_tape_padded into a reused tape; nothing written)"]
if shutil.which("jq"):
    tools.append(("jq -c '{t:.type}'", "jq -c '{t:.type}' \"$1\" > /dev/null"))
else:
    notes.append("jq: skipped (not on PATH; apt-get install -y jq)")
if shutil.which("node"):
    tools.append(("node JSON.parse+stringify", 'node -e "$NODE_JS" "$1" > /dev/null'))
else:
    notes.append("node: skipped (not on PATH)")
tools.append((ONE, '"$2" -j1 --no-observed-at "$1" > /dev/null'))
tools.append((ALL, '"$2" --no-observed-at "$1" > /dev/null'))
tools.append((PIPE, 'cat "$1" | "$2" --no-observed-at | cat > /dev/null'))
# Each scanner level this CPU has, forced (src/simd.rs); a level it lacks would run a narrower one.
LEVELS = {}
for level in ["portable", "sse2", "avx2", "avx512"]:
    probe = subprocess.run([binary, "--version"], capture_output=True, text=True,
                           env=dict(os.environ, AGENTNORM_SIMD=level))
    if "lacks" in probe.stderr:
        notes.append(f"simd={level}: skipped ({probe.stderr.strip()})")
        continue
    LEVELS[level] = f"agentnorm -j1 simd={level}"
    tools.append((LEVELS[level], f'AGENTNORM_SIMD={level} "$2" -j1 --no-observed-at "$1" > /dev/null'))

have_time = os.access("/usr/bin/time", os.X_OK)

def run(script):
    """Wall seconds, peak RSS in KiB (the largest process of the command, via GNU time) and CPU
    seconds (user + system of the command and its children, via GNU time)."""
    argv = ["bash", "-c", "set -o pipefail; " + script, "bench", file, binary]
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        if have_time:
            argv = ["/usr/bin/time", "-f", "%M %U %S", "-o", out.name] + argv
        t0 = time.perf_counter()
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            sys.stderr.write(r.stderr.decode(errors="replace"))
            sys.exit(f"bench.sh: `{script}` exited with status {r.returncode}")
        try:
            m, u, s = out.read().strip().splitlines()[-1].split()
            rss, cpu = int(m), float(u) + float(s)
        except (ValueError, IndexError):
            rss, cpu = None, None
    return dt, rss, cpu

print(f"machine:   {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}", flush=True)
print(f"workload:  {file}, {size} bytes = {size / MB:.1f} MB", flush=True)
print(f"versions:  {version([binary, '--version'])}; {version(['jq', '--version']) if shutil.which('jq') else 'no jq'}; "
      f"node {version(['node', '--version']) if shutil.which('node') else 'absent'}", flush=True)
print(f"method:    median of {reps} wall-clock runs each, rounds interleaved, after one warm-up read of the file", flush=True)
print(f"load avg:  {load()} (1, 5, 15 min) at the start", flush=True)
print(flush=True)

run('cat "$1" > /dev/null')  # warm the page cache
times = {name: [] for name, _ in tools}
cpus = {name: [] for name, _ in tools}
rss = {name: None for name, _ in tools}
for rnd in range(reps):
    for name, script in tools:
        dt, kib, cpu = run(script)
        times[name].append(dt)
        if cpu is not None:
            cpus[name].append(cpu)
        if kib is not None:
            rss[name] = max(rss[name] or 0, kib)
        print(f"  round {rnd + 1}/{reps}  {name:<28} {dt:8.3f} s  {size / MB / dt:9.1f} MB/s",
              file=sys.stderr, flush=True)
print(file=sys.stderr, flush=True)

med = {name: statistics.median(ts) for name, ts in times.items()}
cpu_med = {name: statistics.median(cs) if cs else None for name, cs in cpus.items()}
rate = {name: size / MB / m for name, m in med.items()}
one, allc, pipe = rate[ONE], rate[ALL], rate[PIPE]

hdr = (f"{'tool':<28} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s':>6} {'MB/s':>8} {'RSS MiB':>8} "
       f"{'-j1/tool':>9} {'-j/tool':>8} {'pipe/tool':>9}")
print(hdr)
print("-" * len(hdr))
for name, _ in tools:
    ts = times[name]
    r = f"{rss[name] / 1024:8.1f}" if rss[name] is not None else f"{'?':>8}"
    c = f"{cpu_med[name]:6.2f}" if cpu_med[name] is not None else f"{'?':>6}"
    print(f"{name:<28} {med[name]:9.3f} {min(ts):7.3f} {max(ts):7.3f} {c} {rate[name]:8.1f} {r} "
          f"{one / rate[name]:8.3f}x {allc / rate[name]:7.3f}x {pipe / rate[name]:8.3f}x")
print("(MB = 10^6 bytes; X/tool = X's MB/s divided by the tool's, all from this run; CPU s = median user + "
      "system seconds of the command and its children; RSS = peak of the largest process of the command, "
      "/usr/bin/time -f %M, max over the runs)")
for n in notes:
    print("note: " + n)

def target(what, got, want, unit=""):
    ok = "met" if got >= want else "NOT met"
    print(f"  {what:<52} {got:8.3f}{unit}  (target >= {want}{unit}: {ok})")

print()
print("issue-5 targets (ratios from this run):")
target("agentnorm -j1 MB/s / 1000 (>= 1 GB/s)", one / 1000, 1.0)
target("agentnorm -j1 / simd-json tape parse", one / rate["simd-json tape, every line"], 1.0, "x")
target("agentnorm -j1 / cat FILE", one / rate["cat FILE > /dev/null"], 0.15, "x")
if "jq -c '{t:.type}'" in rate:
    target("agentnorm -j1 / jq", one / rate["jq -c '{t:.type}'"], 12, "x")
if "node JSON.parse+stringify" in rate:
    target("agentnorm -j1 / node", one / rate["node JSON.parse+stringify"], 20, "x")
target("agentnorm all cores MB/s / 1000 (>= 1.6 GB/s)", allc / 1000, 1.6)
target("cat | agentnorm | cat / cat FILE | cat", pipe / rate[CATCAT], 0.5, "x")
if "portable" in LEVELS and "avx2" in LEVELS:
    print()
    print("issue-17 target (ratio from this run):")
    ratio = med[LEVELS["portable"]] / med[LEVELS["avx2"]]
    ok = "met" if ratio <= 1.5 else "NOT met"
    print(f"  {'-j1 wall time, simd=portable / simd=avx2':<52} {ratio:8.3f}x  (target <= 1.5x: {ok})")
    if cpu_med[LEVELS["portable"]] and cpu_med[LEVELS["avx2"]]:
        ratio = cpu_med[LEVELS["portable"]] / cpu_med[LEVELS["avx2"]]
        ok = "met" if ratio <= 1.5 else "NOT met"
        print(f"  {'-j1 CPU time, simd=portable / simd=avx2':<52} {ratio:8.3f}x  (target <= 1.5x: {ok}; "
              "steadier than wall time on a shared machine)")
print(f"load avg:  {load()} at the end")
PY
)

python3 -c "$harness" "$file" "$bin" "$reps"
