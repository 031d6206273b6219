import { Normalizer, read, usage, type Event, type ToolStartedEvent } from '../index'
const n = new Normalizer({ observedAt: false })
const evs: Event[] = n.feed(Buffer.from('x'))
for (const e of evs) { if (e.type === 'tool_started') { const t: ToolStartedEvent = e; console.log(t.name) } }
async function f() { for await (const e of read('x')) { if (e.type === 'output_delta') console.log(e.text) } ; const r = await usage(); r[0].total }
// The generated types reject what the contract does not allow.
// @ts-expect-error: a tool_started event has a tool_id, a name and a kind
const bad: ToolStartedEvent = { type: 'tool_started' }
// @ts-expect-error: no such event type
const worse: Event = { type: 'tool.started' }
export { f, bad, worse }
