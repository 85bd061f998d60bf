import { performance } from 'node:perf_hooks';
import type { Presence } from '../action/hold.js';
import { refusalLine } from '../action/refusal.js';
import { placed } from '../event/credential-set.js';
import type { Exfiltration } from '../event/event.js';
import { CREDENTIAL_EXFILTRATION } from '../guard/exfiltration.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { ProxyContext } from './context.js';

/**
 * Looks at the next chunk of a stream before it is relayed: why the stream must stop now (a
 * sentinel was found, in this chunk or across it and the ones before), or null to go on. Once
 * it answered a reason it answers it for every later chunk.
 */
export type SentinelWatch = (chunk: Uint8Array) => string | null;

/** Whose stream is watched, and where its bytes go. */
export interface Watched {
  readonly session: string;
  readonly client: string;
  /** The finding's event target: the host:port or URL the bytes go to. */
  readonly target: string;
  /** What the agent asked for, in its words (`CONNECT host:port`): the event's `what`. */
  readonly what: string;
  /** Where in the request the bytes are, as the journal names it: `tunnel bytes`, `body`. */
  readonly where: string;
  /** The stream came by SOCKS5: its outcome records say so. */
  readonly via?: 'socks';
}

/** A finding's event waits for nobody: the stream it came from is closed. */
const NOBODY: Presence = { gone: false, onGone: () => () => undefined };

/**
 * A streaming scan of bytes relayed as they are (a blind tunnel's, a body to a host that gets
 * no credential swapped in): every sentinel in them leaves unswapped, so any is out of place.
 * The first one found is judged as a new event of the session for `target` with its
 * `exfiltration` (the guard pauses the session at once; the event is refused, never held), and
 * the stream must close before that chunk goes on. Null when no credential is configured: the
 * caller then watches nothing, at no cost.
 */
export function sentinelWatch(
  ctx: Pick<ProxyContext, 'credentials' | 'pipeline' | 'log'>,
  watched: Watched,
): SentinelWatch | null {
  const scanner = ctx.credentials.scanner;
  if (scanner === null) return null;
  const scan = scanner.start();
  let stop: string | null = null;
  return (chunk) => {
    if (stop !== null) return stop;
    const found = scan.write(chunk)[0];
    if (found === undefined) return null;
    const out = { credential: found.name, where: placed(watched.where, found.spelling) };
    stop = `credential ${out.credential}'s sentinel in ${out.where}: ${CREDENTIAL_EXFILTRATION}`;
    judgeFinding(ctx.pipeline, watched, out).catch((err: unknown) =>
      ctx.log.error({ err }, 'sentinel watch: the finding could not be judged'),
    );
    return stop;
  };
}

/**
 * The finding as an event of its own, then its outcome. Deciding alone, its record and the
 * pause are written before the caller closes the stream (nothing is awaited on the way to the
 * journal for a PAUSE); with a shared store, once the store answers.
 */
async function judgeFinding(pipeline: Pipeline, w: Watched, exfiltration: Exfiltration) {
  const start = performance.now();
  const ruling = await pipeline.judge({
    session: w.session,
    source: 'proxy',
    client: w.client,
    input: { kind: 'network', target: w.target, exfiltration },
    what: w.what,
    connect: false,
    waiting: NOBODY,
  });
  // Never forwarded: a sentinel out of place pauses, and its request is refused (decide.ts).
  if (ruling.kind !== 'refuse' || ruling.rid === null) return;
  const { status } = ruling.refusal;
  const error = refusalLine(ruling.refusal);
  const transfer = { status, bytesUp: 0, bytesDown: 0, error, ...(w.via && { via: w.via }) };
  pipeline.outcome(ruling.rid, w.session, transfer, performance.now() - start);
}

/**
 * The first sentinel in one whole text or buffer (a CONNECT target, a server name, a tool's
 * arguments), as an exfiltration found at `where`; undefined when none is, or no credential
 * is configured. Nothing there is on its way to a credential's own host to be swapped.
 */
export function sentinelIn(
  set: Pick<ProxyContext['credentials'], 'scanner'>,
  text: string | Uint8Array,
  where: string,
): Exfiltration | undefined {
  const found = set.scanner?.scan(text)[0];
  return found && { credential: found.name, where: placed(where, found.spelling) };
}
