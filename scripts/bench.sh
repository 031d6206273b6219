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
# Prints one table: median wall time, MB/s, and agentnorm's throughput as a ratio of each tool's,
# then agentnorm's peak RSS. Needs bash, python3 and cargo; jq and node are optional anchors.
set -euo pipefail

die() {
    printf 'bench.sh: %s\n' "$*" >&2
    exit 1
}

case "${1:-}" in
-h | --help)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
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
printf 'building the release binary...\n' >&2
cargo build --release --bin agentnorm --manifest-path "$repo/Cargo.toml" >&2
bin="${CARGO_TARGET_DIR:-$repo/target}/release/agentnorm"
[ -x "$bin" ] || die "release binary not found at $bin"

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

# (name, bash script, is_agentnorm)
tools = [("cat > /dev/null", 'cat "$1" > /dev/null', False),
         ("wc -l line count", 'wc -l "$1" > /dev/null', False)]
notes = []
if shutil.which("jq"):
    tools.append(("jq -c '{t:.type}'", "jq -c '{t:.type}' \"$1\" > /dev/null", False))
else:
    notes.append("jq: skipped (not on PATH)")
if shutil.which("node"):
    tools.append(("node JSON.parse+stringify", 'node -e "$NODE_JS" "$1" > /dev/null', False))
else:
    notes.append("node: skipped (not on PATH)")
tools.append(("agentnorm FILE", '"$2" --no-observed-at "$1" > /dev/null', True))
tools.append(("cat | agentnorm | cat", 'cat "$1" | "$2" --no-observed-at | cat > /dev/null', True))

def run(script):
    t0 = time.perf_counter()
    r = subprocess.run(["bash", "-c", "set -o pipefail; " + script, "bench", file, binary],
                       stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace"))
        sys.exit(f"bench.sh: `{script}` exited with status {r.returncode}")
    return dt

print(f"machine:   {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}", flush=True)
print(f"workload:  {file}, {size} bytes = {size / MB:.1f} MB", flush=True)
print(f"versions:  {version([binary, '--version'])}; {version(['jq', '--version']) if shutil.which('jq') else 'no jq'}; "
      f"node {version(['node', '--version']) if shutil.which('node') else 'absent'}", flush=True)
print(f"method:    median of {reps} wall-clock runs each, rounds interleaved, after one warm-up read of the file", flush=True)
print(flush=True)

run('cat "$1" > /dev/null')  # warm the page cache
times = {name: [] for name, _, _ in tools}
for rnd in range(reps):
    for name, script, _ in tools:
        dt = run(script)
        times[name].append(dt)
        print(f"  round {rnd + 1}/{reps}  {name:<27} {dt:8.3f} s  {size / MB / dt:9.1f} MB/s",
              file=sys.stderr, flush=True)
print(file=sys.stderr, flush=True)

med = {name: statistics.median(ts) for name, ts in times.items()}
rate = {name: size / MB / m for name, m in med.items()}
norm, pipe = rate["agentnorm FILE"], rate["cat | agentnorm | cat"]

hdr = f"{'tool':<27} {'median s':>9} {'min s':>8} {'max s':>8} {'MB/s':>9} {'agentnorm/tool':>15} {'pipe/tool':>10}"
print(hdr)
print("-" * len(hdr))
for name, _, _ in tools:
    ts = times[name]
    print(f"{name:<27} {med[name]:9.3f} {min(ts):8.3f} {max(ts):8.3f} {rate[name]:9.1f} "
          f"{norm / rate[name]:14.3f}x {pipe / rate[name]:9.3f}x")
print("(MB = 10^6 bytes; agentnorm/tool = agentnorm FILE's MB/s divided by the tool's; pipe/tool likewise for the pipe)")
for n in notes:
    print("note: " + n)

# Peak RSS of `agentnorm --no-observed-at FILE > /dev/null`, in a separate untimed run.
argv = [binary, "--no-observed-at", file]
rss_kib, how = None, None
gnu_time = "/usr/bin/time"
if os.access(gnu_time, os.X_OK):
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        r = subprocess.run([gnu_time, "-f", "%M", "-o", out.name] + argv,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            rss_kib, how = int(out.read().strip().splitlines()[-1]), "/usr/bin/time -f %M"
        except (ValueError, IndexError):
            rss_kib = None
if rss_kib is None:
    # Fallback: poll the high-water mark VmHWM in /proc/PID/status until the process exits.
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    peak = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    rss_kib, how = peak, "VmHWM polled from /proc/PID/status (a lower bound)"
print(f"agentnorm peak RSS: {rss_kib / 1024:.1f} MiB ({rss_kib} KiB, via {how})")
PY
)

python3 -c "$harness" "$file" "$bin" "$reps"
