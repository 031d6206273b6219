'use strict'
// Memory and handles: a 50 MB line is held a bounded number of times; a consumer that throws
// in the middle of iteration leaves no open file; the declarations are current and type-check.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const agentnorm = require('..')
const { ROOT, collect } = require('./helpers')

const MB = 1 << 20
const PKG = path.resolve(__dirname, '..')

function bigLineFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentnorm-big-'))
  const file = path.join(dir, 'big.jsonl')
  const text = '0123456789abcdef'.repeat((50 * MB) / 16)
  const line = JSON.stringify({
    type: 'assistant',
    message: { id: 'm1', model: 'claude-x', content: [{ type: 'text', text }] },
    session_id: 's1',
    parent_tool_use_id: null,
  })
  fs.writeFileSync(file, `{"type":"system","subtype":"init","session_id":"s1","model":"claude-x","tools":[]}\n${line}\n`)
  return { dir, file }
}

/** Runs `body` in a fresh node; returns what it prints last (JSON), with `growth` in MB of peak RSS. */
function measured(body) {
  const script = `
    const agentnorm = require(${JSON.stringify(PKG)})
    const peak = () => process.resourceUsage().maxRSS / 1024
    ;(async () => { ${body} })().catch((e) => { console.error(e); process.exit(1) })
  `
  const out = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 300000 })
  assert.equal(out.status, 0, out.stderr)
  return JSON.parse(out.stdout.trim().split('\n').pop())
}

test('a 50 MB line is held a bounded number of times', () => {
  const { dir, file } = bigLineFile()
  try {
    const r = measured(`
      const base = peak()
      let longest = 0
      for await (const ev of agentnorm.read(${JSON.stringify(file)}, { observedAt: false })) {
        longest = Math.max(longest, (ev.text || '').length)
      }
      console.log(JSON.stringify({ growth: peak() - base, longest }))
    `)
    assert.equal(r.longest, 50 * MB)
    // The line in the normalizer, its event as JSON text, the JS string and the parsed value:
    // a few copies, never one per chunk or per event.
    assert.ok(r.growth < 6 * 50, JSON.stringify(r))
    const capped = measured(`
      const base = peak()
      const reasons = []
      for await (const ev of agentnorm.read(${JSON.stringify(file)}, { observedAt: false, maxLineBytes: 1 << 20 })) {
        if (ev.type === 'unknown') reasons.push(ev.reason)
      }
      console.log(JSON.stringify({ growth: peak() - base, reasons }))
    `)
    assert.deepStrictEqual(capped.reasons, ['line_too_long'])
    assert.ok(capped.growth < 40, JSON.stringify(capped))
  } finally {
    fs.rmSync(dir, { recursive: true })
  }
})

const openFds = () => fs.readdirSync('/proc/self/fd').length

test('a consumer that throws mid-iteration leaks no file', { skip: !fs.existsSync('/proc/self/fd') && 'needs /proc/self/fd' }, async () => {
  process.chdir(ROOT)
  const consume = async (source) => {
    let i = 0
    await assert.rejects(
      (async () => {
        for await (const _ of agentnorm.read(source, { observedAt: false })) {
          if (++i === 5) throw new Error('consumer failed')
        }
      })(),
      { message: 'consumer failed' },
    )
  }
  await consume('fixtures')
  const before = openFds()
  for (let k = 0; k < 200; k++) await consume('fixtures')
  assert.equal(openFds(), before)
  for (let k = 0; k < 50; k++) {
    const stream = fs.createReadStream('fixtures/claude/compaction.jsonl', { highWaterMark: 64 })
    await consume(stream)
    // The iterator destroyed the stream; its file closes on a later tick.
    if (!stream.closed) await new Promise((resolve) => stream.on('close', resolve))
    assert.ok(stream.destroyed)
  }
  assert.equal(openFds(), before)
})

test('events.d.ts is current', () => {
  const out = spawnSync(process.execPath, [path.join(PKG, 'scripts', 'gen-types.js'), '--check'], { encoding: 'utf8' })
  assert.equal(out.status, 0, out.stderr)
  const dts = fs.readFileSync(path.join(PKG, 'events.d.ts'), 'utf8')
  for (const v of agentnorm.schema().oneOf) assert.ok(dts.includes(`type: "${v.properties.type.const}"`), v.properties.type.const)
})

test('the declarations type-check a consumer and reject a wrong event', (t) => {
  const tsc = path.join(PKG, 'node_modules', 'typescript', 'bin', 'tsc')
  if (!fs.existsSync(tsc)) return t.skip('typescript is not installed (npm install)')
  const out = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--types', 'node', path.join(__dirname, 'types-check.ts')], {
    cwd: PKG,
    encoding: 'utf8',
  })
  assert.equal(out.status, 0, out.stdout + out.stderr)
})
