#!/usr/bin/env node
'use strict'
// Events per second through the Node API against JSON.parse per line (plus the same object
// rewrite a wrapper does), on one file, same run, medians of N.
//
//   node bindings/node/bench.js FILE [RUNS]
//
// Prints one tab-separated row per way: name, wall and CPU seconds (medians), MB/s (wall), events
// made, events/s (wall), events per CPU second (all threads; steadier on a shared machine).
const fs = require('node:fs')
const agentnorm = require('.')

async function jsonParsePerLine(path) {
  let n = 0
  let rest = ''
  const rewrite = (line) => {
    let d
    try {
      d = JSON.parse(line)
    } catch {
      n++
      return
    }
    if (d === null || typeof d !== 'object') return void n++
    const content = d.message && Array.isArray(d.message.content) ? d.message.content : null
    if (content) {
      for (const b of content) {
        if (b && typeof b === 'object') {
          const ev = { type: b.type, session_id: d.session_id, text: b.text, tool_id: b.id || b.tool_use_id, input: b.input, usage: d.message.usage }
          if (ev) n++
        }
      }
    } else {
      const ev = { type: d.type, session_id: d.session_id || d.thread_id, item: d.item, text: d.item && d.item.text, usage: d.usage }
      if (ev) n++
    }
  }
  for await (const chunk of fs.createReadStream(path, { highWaterMark: 1 << 20, encoding: 'utf8' })) {
    const lines = (rest + chunk).split('\n')
    rest = lines.pop()
    for (const line of lines) if (line.trim()) rewrite(line)
  }
  if (rest.trim()) rewrite(rest)
  return n
}

async function read(path) {
  let n = 0
  for await (const _ of agentnorm.read(path, { observedAt: false })) n++
  return n
}

async function readBatches(path) {
  let n = 0
  for await (const batch of agentnorm.readBatches(path, { observedAt: false })) n += batch.length
  return n
}

async function main() {
  const [path, runsArg] = process.argv.slice(2)
  const runs = Number(runsArg || 3)
  const size = fs.statSync(path).size
  for (const [name, fn] of [
    ['node: JSON.parse per line + object rewrite', jsonParsePerLine],
    ['node: for await (ev of agentnorm.read(path))', read],
    ['node: for await (batch of agentnorm.readBatches(path))', readBatches],
  ]) {
    const times = []
    const cpus = []
    let events = 0
    for (let i = 0; i < runs; i++) {
      const t0 = process.hrtime.bigint()
      const c0 = process.cpuUsage()
      events = await fn(path)
      times.push(Number(process.hrtime.bigint() - t0) / 1e9)
      const c = process.cpuUsage(c0)
      // All threads of the process: the event loop and libuv's pool that reads the files.
      cpus.push((c.user + c.system) / 1e6)
    }
    const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    const t = median(times)
    const c = median(cpus)
    console.log(
      `${name}\t${t.toFixed(3)}\t${c.toFixed(3)}\t${(size / t / 1e6).toFixed(1)}\t${events}\t${(events / t).toFixed(0)}\t${(events / c).toFixed(0)}`,
    )
  }
}

main()
