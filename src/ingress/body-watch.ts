import type { AgentRequest } from '../http/agent-message.js';
import type { Transform } from 'node:stream';
import type { BodyWatch } from '../action/response-relay.js';
import { decoder, parseCodings } from '../action/content-codings.js';
import type { Coding } from '../action/content-codings.js';
import type { ProxyContext } from './context.js';
import type { Watched } from './sentinel-watch.js';
import { sentinelWatch } from './sentinel-watch.js';

/**
 * The watch over a request body streamed to a host no credential is swapped into: every
 * sentinel in it is out of place. A body in a content coding (RFC 9110 § 8.4) is watched as the
 * upstream will read it, decoded as it streams; one in a coding trajgate cannot decode stops the
 * request, as it could not be looked into. Null when no credential is configured.
 */
export function bodyWatch(
  ctx: Pick<ProxyContext, 'credentials' | 'pipeline' | 'log'>,
  req: AgentRequest,
  watched: Omit<Watched, 'where'>,
): BodyWatch | null {
  const watch = sentinelWatch(ctx, { ...watched, where: 'body' });
  if (watch === null) return null;
  const parsed = parseCodings(req.headers['content-encoding']);
  if ('unsupported' in parsed)
    return () =>
      `the request body's Content-Encoding ${JSON.stringify(parsed.unsupported)} cannot be decoded to look for credential sentinels`;
  if (parsed.codings.length === 0) return watch;
  return decodedWatch(parsed.codings, watch);
}

/** Each chunk goes through the decoders (last coding applied first) before the watch sees it. */
function decodedWatch(
  codings: readonly Coding[],
  watch: (chunk: Uint8Array) => string | null,
): BodyWatch {
  let chain: Transform[] | null = null;
  let stop: string | null = null;
  return async (chunk) => {
    if (stop !== null) return stop;
    chain ??= [...codings].reverse().map((c) => decoder(c, chunk));
    try {
      let bytes: Buffer[] = [chunk];
      for (const step of chain) bytes = await through(step, bytes);
      for (const b of bytes) if ((stop = watch(b)) !== null) return stop;
    } catch (err) {
      stop = `the request body is not valid ${codings.join(', ')} (${(err as { code?: string }).code ?? 'corrupt'}): it cannot be looked into for credential sentinels`;
    }
    return stop;
  };
}

/** What one decoder gives for `input`, flushed so nothing it could give waits for later bytes. */
function through(step: Transform, input: readonly Buffer[]): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const onData = (b: Buffer) => out.push(b);
    const onError = (err: Error) => {
      step.off('data', onData);
      reject(err);
    };
    step.on('data', onData);
    step.once('error', onError);
    for (const b of input) step.write(b);
    (step as Transform & { flush(cb: () => void): void }).flush(() => {
      step.off('data', onData);
      step.off('error', onError);
      resolve(out);
    });
  });
}
