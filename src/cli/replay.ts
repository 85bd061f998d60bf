import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import type { Config } from '../config/load.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { osError } from '../os-error.js';
import type { PathResolver } from '../event/paths.js';
import { memoPathReadings } from '../event/paths.js';
import { describeValue, validateRecordedEvent } from '../event/validate.js';
import type { Decision } from '../guard/guard.js';
import { formatVerdict, Guard } from '../guard/guard.js';
import { compilePolicy } from '../guard/compile.js';
import { MemoryStore } from '../guard/store.js';
import { listRotated } from '../journal/files.js';
import { currentNames } from '../journal/old-names.js';
import { applyRecord } from '../journal/rebuild.js';
import type { JournalRecord, SnapshotRecord } from '../journal/records.js';
import { assemble, checkVersion, isPart, SnapshotParts } from '../journal/snapshot-read.js';
import { restoreGuard, snapshotState } from '../review/snapshot.js';
import { usageOf } from './help.js';
import { configFrom, readLines } from './io.js';
import type { Output } from './output.js';
import { bufferedOutput } from './output.js';
import { replayEvent } from './replay-event.js';
import { hookReplay } from './replay-hook.js';
import { terminalJson } from './table.js';

/**
 * Feeds recorded events through the guard offline, one verdict per line in the seed's form.
 * Lines may be bare events (with `ts`, `session`, `failed`) or journal records: `event`
 * records are judged again, operator records (approve, resume) and how requests ended
 * (outcome, result: failures for trajectory rules) are applied, other types are passed over.
 * With `--hook claude-code` the lines are Claude Code hook inputs (replay-hook.ts). Stops at the
 * first bad line, after printing the verdicts before it.
 */
export async function replay(argv: string[]): Promise<number> {
  const out = bufferedOutput(process.stdout, process.stderr);
  try {
    return await replayTo(argv, out);
  } catch (err) {
    // The error goes on a line of its own, not after a progress report.
    if (out.progress) process.stderr.write('\n');
    throw err;
  } finally {
    // The verdicts before a bad line are printed.
    await out.flush();
  }
}

async function replayTo(argv: string[], out: Output): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      workspace: { type: 'string' },
      json: { type: 'boolean' },
      hook: { type: 'string' },
    },
  });
  const [file, extra] = positionals;
  if (file === undefined || extra !== undefined) {
    throw new TrajgateError('E_USAGE', usageOf('replay'));
  }
  if (values.hook !== undefined && values.hook !== 'claude-code')
    throw new TrajgateError('E_USAGE', `unknown --hook ${values.hook} (known: claude-code)`);
  const config = configFrom(values.config, values.workspace);
  const store = new MemoryStore();
  const guard = new Guard(compilePolicy(config), store);
  const paths = memoPathReadings();
  const now = Date.now();
  const hook = values.hook === undefined ? null : hookReplay(config, guard, paths, now);
  // A rotated journal is read whole: its rotated files oldest first, then the live one.
  const rotated = file === '-' || hook !== null ? [] : listRotated(file).map((r) => r.path);
  const files = [...rotated, file];
  let events = 0;
  let seen = 0;
  // The first file's leading snapshot parts, for its head (snapshot-read.ts).
  const parts = new SnapshotParts({ keep: true });
  for (const each of files) {
    const name = each === '-' ? '(stdin)' : each;
    const input = each === '-' ? process.stdin : await openInput(each);
    for await (const { lines, first } of readLines(input, name, out.progress)) {
      for (let i = 0; i < lines.length; i++) {
        const text = lines[i] as string;
        if (text.trim() === '') continue;
        let decided: [object, Decision] | null;
        try {
          if (hook === null && isPart(text)) {
            // Later files' snapshots repeat what the lines before them built.
            if (seen === 0 && each === files[0]) parts.add(text);
            continue;
          }
          // The oldest file kept may start with a snapshot: the state before it.
          decided =
            hook !== null
              ? hook(text, first + i)
              : judgeLine(
                  text,
                  first + i,
                  config,
                  guard,
                  now,
                  paths,
                  seen++ === 0 ? parts : null,
                  store,
                );
        } catch (err) {
          if (!isTrajgateError(err)) throw err;
          throw new TrajgateError(err.code, `${name}:${first + i}: ${err.message}`);
        }
        if (decided === null) continue;
        events++;
        const [record, decision] = decided;
        out.write(
          values.json
            ? terminalJson({ line: first + i, ...record, ...decision })
            : formatVerdict(decision),
        );
      }
      await out.flush();
    }
  }
  if (events === 0) {
    const name = file === '-' ? '(stdin)' : file;
    throw new TrajgateError('E_INPUT_READ', `${name}: no events to replay (the input is empty)`);
  }
  return 0;
}

/** Judges one line; errors say what is wrong, the caller adds where. */
function judgeLine(
  text: string,
  line: number,
  config: Config,
  guard: Guard,
  now: number,
  paths: PathResolver,
  first: SnapshotParts | null,
  store: MemoryStore<unknown>,
): [{ session: string; kind: string; target: string; command?: string }, Decision] | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new TrajgateError('E_EVENT_INVALID', `not valid JSON (${(err as Error).message})`);
  }
  const { type, session = 'replay', ts, held, seq, rid } = (value ?? {}) as Record<string, unknown>;
  // A held record was never judged: its request is judged again after the resume.
  if (held === true) return null;
  if (type === 'snapshot') {
    const head = value as SnapshotRecord;
    checkVersion(head.version);
    // Later snapshots repeat what the lines before them already built.
    if (first === null) return null;
    let state: unknown;
    try {
      state = assemble(head, first).state;
    } catch (err) {
      throw new TrajgateError('E_JOURNAL_CORRUPT', (err as Error).message);
    }
    restoreGuard(snapshotState(state), guard, store);
    return null;
  }
  if (type !== undefined && type !== 'event') {
    applyRecord(guard, currentNames(value) as JournalRecord);
    return null;
  }
  const { input, approved, approvedBy } = validateRecordedEvent(value, config.kinds);
  if (typeof session !== 'string' || session === '') {
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `"session" must be a non-empty string, got ${describeValue(session)}`,
    );
  }
  const at = { session, ts: timeOf(ts, now), seq: typeof seq === 'number' ? seq : line };
  // A flow judged again mid-flow had sent `sentUp` bytes by then, as the live guard counted.
  const { sentUp } = value as { sentUp?: unknown };
  if (typeof sentUp === 'number' && sentUp > 0 && typeof rid === 'number')
    guard.outcome(session, rid, { failed: false, bytesUp: sentUp, ts: at.ts });
  // A journal's event is named by its seq (and request id), as the live gateway named it; a
  // bare line by its line number.
  const numbered = { ...at, rid: typeof rid === 'number' ? rid : undefined };
  const { event, decision } = replayEvent(
    input,
    { ...numbered, approved, approvedBy },
    guard,
    paths,
  );
  // The command line decides nothing; `--json` shows it as recorded (redacted again: a no-op).
  const command = event.command === undefined ? {} : { command: event.command };
  return [{ session, kind: input.kind, target: input.target, ...command }, decision];
}

function timeOf(ts: unknown, now: number): number {
  if (ts === undefined) return now;
  const ms = typeof ts === 'number' ? ts : typeof ts === 'string' ? Date.parse(ts) : NaN;
  if (!Number.isFinite(ms)) {
    throw new TrajgateError(
      'E_EVENT_INVALID',
      `"ts" must be milliseconds or an ISO 8601 time, got ${describeValue(ts)}`,
    );
  }
  return ms;
}

async function openInput(file: string): Promise<Readable> {
  const stream = createReadStream(file);
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (err) => reject(osError('E_INPUT_READ', err, { op: 'read', path: file })));
  });
  return stream;
}
