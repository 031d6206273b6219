'use strict'
// Shared paths: the repository root (fixtures are read relative to it, as the CLI's golden tests
// do, so `source` is the same string) and the built CLI to compare against.
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.resolve(__dirname, '..', '..', '..')
const FIXTURES = fs
  .readdirSync(path.join(ROOT, 'fixtures'), { withFileTypes: true })
  // The dialect folders (fixtures/README.md, the provenance notes, sits beside them).
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort()
  .flatMap((d) =>
    fs
      .readdirSync(path.join(ROOT, 'fixtures', d))
      .filter((f) => f.endsWith('.jsonl'))
      .sort()
      .map((f) => `fixtures/${d}/${f}`),
  )

function cliPath() {
  if (process.env.AGENTNORM_BIN) return process.env.AGENTNORM_BIN
  for (const p of ['release', 'debug']) {
    const bin = path.join(ROOT, 'target', p, 'agentnorm')
    if (fs.existsSync(bin)) return bin
  }
  return null
}

/** The CLI's NDJSON output as objects; `t.skip`s when there is no binary. */
function cliEvents(t, args) {
  const bin = cliPath()
  if (!bin) {
    if (process.env.AGENTNORM_REQUIRE_CLI) throw new Error('AGENTNORM_REQUIRE_CLI is set but no agentnorm binary was found')
    t.skip('no agentnorm binary (cargo build --release, or set AGENTNORM_BIN)')
    return null
  }
  const out = spawnSync(bin, args, { cwd: ROOT, maxBuffer: 1 << 30 })
  if (![0, 1, 3].includes(out.status)) throw new Error(`agentnorm ${args.join(' ')}: ${out.stderr}`)
  return out.stdout
    .toString()
    .split('\n')
    .filter((l) => l)
    .map((l) => JSON.parse(l))
}

function cliStderr(args) {
  const bin = cliPath()
  if (!bin) return null
  return spawnSync(bin, args, { cwd: ROOT }).stderr.toString().trim().replace(/^agentnorm: /, '')
}

async function collect(iter) {
  const out = []
  for await (const e of iter) out.push(e)
  return out
}

module.exports = { ROOT, FIXTURES, cliEvents, cliPath, cliStderr, collect }
