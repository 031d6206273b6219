// agentnorm for Node: hand-written API declarations; the event types are generated from the
/// <reference types="node" />
// schema into events.d.ts (scripts/gen-types.js).
import type { DialectName, Event } from './events'

export * from './events'

export interface NormalizerOptions {
  /** Force a dialect instead of detecting it per frame (`--dialect`). */
  dialect?: DialectName
  /** Mask secrets (`--redact`). */
  redact?: boolean
  /** Add the source line as `raw` to every event (`--raw`). */
  raw?: boolean
  /** The `source` written on every event (`read` of a path writes the path). */
  source?: string
  /** Write `observed_at` on every event (default true, as the CLI). */
  observedAt?: boolean
  /** Lines longer than this become `unknown` `line_too_long` (`--max-line-bytes`). */
  maxLineBytes?: number
}

/** An incremental normalizer: feed bytes in any chunks, get the events they completed. */
export declare class Normalizer {
  constructor(options?: NormalizerOptions)
  feed(chunk: Buffer | Uint8Array | string): Event[]
  /** The events of a last line without a newline, and `run_ended`; later calls return []. */
  finish(): Event[]
}

/** A path, a list of paths (files or folders, also .gz / .zst), or a stream of bytes. */
export type Source = string | URL | Array<string | URL> | AsyncIterable<Buffer | Uint8Array | string>

/** The events one at a time; files are read and parsed off the event loop. */
export declare function read(source: Source, options?: NormalizerOptions): AsyncIterableIterator<Event>
/** The same events in batches (faster: one await per batch). */
export declare function readBatches(source: Source, options?: NormalizerOptions): AsyncGenerator<Event[], void, undefined>

export interface UsageOptions {
  by?: 'session' | 'project' | 'model' | 'day' | 'week' | 'month' | 'block'
  /** RFC 3339 or YYYY-MM-DD. */
  since?: string
  /** RFC 3339 or YYYY-MM-DD (a day counts to its end). */
  until?: string
  dialect?: DialectName
}

/** One row of `agentnorm usage --json`; the totals row has `totals: true`. */
export interface UsageRow {
  totals?: boolean
  session_id?: string
  model?: string
  day?: string
  dialect?: DialectName
  input?: number
  cache_read?: number
  cache_write?: number
  output?: number
  reasoning?: number
  total?: number
  requests?: number
  cost_usd?: number
  cost_source?: 'reported' | 'estimated'
  source?: string
}

/** The usage report over files and folders (none: the CLI's default folders), totals row last. */
export declare function usage(paths?: string | URL | Array<string | URL>, options?: UsageOptions): Promise<UsageRow[]>
/** The first dialect detected in a file (`null`: unknown); for a folder, each log file's. */
export declare function detect(path: string | URL): DialectName | null | Record<string, DialectName | null>
/** The JSON Schema of the events (`agentnorm schema`). */
export declare function schema(): Record<string, unknown>
