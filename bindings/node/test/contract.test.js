'use strict'
// The events through Node equal the CLI's output line for line, whatever the chunking.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const zlib = require('node:zlib')
const os = require('node:os')
const { spawnSync } = require('node:child_process')
const { Readable } = require('node:stream')

const agentnorm = require('..')
const { ROOT, FIXTURES, cliEvents, cliPath, cliStderr, collect } = require('./helpers')

process.chdir(ROOT)

test('there are fixtures', () => assert.ok(FIXTURES.length >= 20))

for (const fixture of FIXTURES) {
  test(`read equals the CLI: ${fixture}`, async (t) => {
    const theirs = cliEvents(t, ['--no-observed-at', fixture])
    if (!theirs) return
    assert.deepStrictEqual(await collect(agentnorm.read(fixture, { observedAt: false })), theirs)
  })

  test(`read equals the golden file: ${fixture}`, async () => {
    const expected = fs.readFileSync(fixture.replace(/\.jsonl$/, '.expected'), 'utf8')
    const want = expected.split('\n').filter((l) => l).map((l) => JSON.parse(l))
    assert.deepStrictEqual(await collect(agentnorm.read(fixture, { observedAt: false })), want)
  })

  test(`chunk boundaries do not matter: ${fixture}`, async () => {
    const data = fs.readFileSync(fixture)
    const whole = await collect(agentnorm.read(fixture, { observedAt: false }))
    for (const size of [1, 7, 113, 4096]) {
      const n = new agentnorm.Normalizer({ observedAt: false, source: fixture })
      const out = []
      for (let i = 0; i < data.length; i += size) out.push(...n.feed(data.subarray(i, i + size)))
      out.push(...n.finish())
      assert.deepStrictEqual(out, whole, `chunks of ${size}`)
      assert.deepStrictEqual(n.feed(Buffer.from('{"type":"x"}\n')), [])
      assert.deepStrictEqual(n.finish(), [])
    }
  })
}

for (const flags of [['--raw'], ['--redact'], ['--dialect', 'codex']]) {
  test(`options equal the CLI's ${flags.join(' ')}`, async (t) => {
    const opts = { observedAt: false, raw: flags.includes('--raw'), redact: flags.includes('--redact') }
    if (flags[0] === '--dialect') opts.dialect = flags[1]
    for (const fixture of FIXTURES.filter((_, i) => i % 3 === 0)) {
      const theirs = cliEvents(t, ['--no-observed-at', ...flags, fixture])
      if (!theirs) return
      assert.deepStrictEqual(await collect(agentnorm.read(fixture, opts)), theirs, fixture)
    }
  })
}

test('a folder equals the CLI', async (t) => {
  const theirs = cliEvents(t, ['--no-observed-at', '-j1', 'fixtures/codex'])
  if (!theirs) return
  const ours = await collect(agentnorm.read('fixtures/codex', { observedAt: false }))
  assert.deepStrictEqual(ours, theirs)
  assert.ok(new Set(ours.map((e) => e.source)).size > 1)
})

test('observed_at is written by default', async () => {
  const evs = await collect(agentnorm.read(FIXTURES[0]))
  assert.ok(evs.length > 0 && evs.every((e) => typeof e.observed_at === 'string'))
})

test('a stream reads like its file; gzip like the plain file', async () => {
  const fixture = FIXTURES[1]
  const plain = await collect(agentnorm.read(fixture, { observedAt: false }))
  const streamed = await collect(
    agentnorm.read(fs.createReadStream(fixture, { highWaterMark: 97 }), { observedAt: false, source: fixture }),
  )
  assert.deepStrictEqual(streamed, plain)
  const strings = await collect(agentnorm.read(Readable.from([fs.readFileSync(fixture, 'utf8')]), { observedAt: false, source: fixture }))
  assert.deepStrictEqual(strings, plain)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentnorm-'))
  const gz = path.join(dir, 'x.jsonl.gz')
  fs.writeFileSync(gz, zlib.gzipSync(fs.readFileSync(fixture)))
  const zipped = await collect(agentnorm.read(gz, { observedAt: false, source: fixture }))
  assert.deepStrictEqual(zipped, plain)
  fs.rmSync(dir, { recursive: true })
})

test('bad input never throws', () => {
  for (const junk of ['\xff\xfe not utf-8\n', '{not json\n', '[1,2,3]\n', '{"type":1}\n', '{'.repeat(5000) + '\n']) {
    const n = new agentnorm.Normalizer({ observedAt: false })
    const evs = [...n.feed(Buffer.from(junk, 'latin1')), ...n.finish()]
    assert.equal(evs.at(-1).type, 'run_ended')
    assert.ok(evs.some((e) => e.type === 'unknown'), junk.slice(0, 20))
  }
})

test('usage equals the CLI', async (t) => {
  // Every grouping but block (its active block is measured against the clock at each call).
  for (const by of ['session', 'project', 'model', 'day', 'week', 'month']) {
    const theirs = cliEvents(t, ['usage', '--json', '-j1', '--by', by, 'fixtures/claude', 'fixtures/codex'])
    if (!theirs) return
    const ours = await agentnorm.usage(['fixtures/claude', 'fixtures/codex'], { by })
    assert.deepStrictEqual(ours, theirs, by)
    assert.equal(ours.at(-1).totals, true)
  }
})

test('detect and schema equal the CLI', (t) => {
  const bin = cliPath()
  if (!bin) return t.skip('no agentnorm binary (cargo build --release, or set AGENTNORM_BIN)')
  assert.deepStrictEqual(agentnorm.schema(), JSON.parse(spawnSync(bin, ['schema']).stdout))
  const out = spawnSync(bin, ['detect', 'fixtures'], { cwd: ROOT })
  const theirs = {}
  for (const line of out.stdout.toString().split('\n').filter((l) => l)) {
    const [d, p] = line.split('\t')
    theirs[p] = d === 'unknown' ? null : d
  }
  assert.deepStrictEqual(agentnorm.detect('fixtures'), theirs)
  const one = Object.keys(theirs)[0]
  assert.equal(agentnorm.detect(one), theirs[one])
})

test('a missing file rejects with the CLI message', async () => {
  const want = cliStderr(['no/such/file.jsonl']) ?? 'no/such/file.jsonl: No such file or directory (os error 2)'
  await assert.rejects(collect(agentnorm.read('no/such/file.jsonl')), { message: want })
  await assert.rejects(agentnorm.usage(['missing.jsonl']), { message: /missing\.jsonl: No such file/ })
  assert.throws(() => agentnorm.detect('missing.jsonl'), { message: /missing\.jsonl: No such file/ })
})

test('invalid options throw', async () => {
  assert.throws(() => new agentnorm.Normalizer({ dialect: 'nope' }), { message: /invalid dialect "nope"/ })
  await assert.rejects(agentnorm.usage(['fixtures/claude'], { by: 'fortnight' }), {
    message: /possible values: session, project, model, day, week, month, block/,
  })
  await assert.rejects(agentnorm.usage(['fixtures/claude'], { since: '2026-05-02', until: '2026-05-01' }), {
    message: /since is later than until/,
  })
  await assert.rejects(agentnorm.usage(['fixtures/claude'], { since: 'yesterday' }), {
    message: 'since "yesterday": not RFC 3339 or YYYY-MM-DD',
  })
})

test('tool input nested 1000 levels comes through', () => {
  const line = JSON.stringify({
    type: 'assistant',
    message: { id: 'm', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { x: 0 } }] },
    session_id: 's',
  }).replace('{"x":0}', '['.repeat(1000) + ']'.repeat(1000))
  const n = new agentnorm.Normalizer({ observedAt: false })
  const evs = [...n.feed(line + '\n'), ...n.finish()]
  let got = evs.find((e) => e.type === 'tool_started').input
  let depth = 0
  while (Array.isArray(got) && got.length) [got, depth] = [got[0], depth + 1]
  assert.equal(depth, 999)
  assert.deepStrictEqual(got, [])
})
