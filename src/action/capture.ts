import { mkdirSync, rename, writeFile } from 'node:fs';
import { join } from 'node:path';
import type { Refusal } from './refusal.js';
import { httpRefusal } from './respond.js';
import { storeBody } from './capture-body.js';
import type { CapturedExchange, CapturedPart } from '../wire.js';
import { isSecretHeader, REDACTED, redactUserinfo } from '../event/secrets.js';

export interface CaptureOptions {
  /** Folder of the capture files (beside the journal). */
  readonly dir: string;
  readonly maxBytes: number;
  readonly redact: boolean;
}

interface Part {
  headers: [string, string][];
  chunks: Buffer[];
  kept: number;
  size: number;
  /** The sender stopped before the end (an unforwarded body read only in part). */
  short: boolean;
}

/** What one exchange's capture file holds (`<rid>.json`), read back by the admin API and HAR. */
export type { CapturedExchange, CapturedPart };

/**
 * Records one request and its response for later review: headers (secrets redacted) and up
 * to `maxBytes` of each body, written beside the journal, never inside its lines.
 */
export class Capture {
  readonly #options: CaptureOptions;
  readonly #method: string;
  readonly #url: string;
  readonly #request: Part;
  #response: (Part & { status: number }) | null = null;
  #forwarded = true;

  constructor(options: CaptureOptions, method: string, url: URL, rawHeaders: readonly string[]) {
    this.#options = options;
    this.#method = method;
    this.#url = options.redact ? redactUserinfo(url.href) : url.href;
    this.#request = this.#part(rawHeaders);
  }

  request(chunk: Buffer): void {
    this.#keep(this.#request, chunk);
  }

  /** The request body was read only in part (refused: the rest is never read). */
  requestCut(): void {
    this.#request.short = true;
  }

  responseStart(status: number, rawHeaders: readonly string[]): void {
    this.#response = { ...this.#part(rawHeaders), status };
  }

  response(chunk: Buffer): void {
    if (this.#response) this.#keep(this.#response, chunk);
  }

  /** The request was not forwarded: the response is trajgate's refusal, as sent. */
  refused(decided: Refusal): void {
    const refusal = httpRefusal(decided);
    this.#forwarded = false;
    const raw = Object.entries(refusal.headers).flat();
    this.responseStart(refusal.status, [...raw, 'content-type', 'text/plain; charset=utf-8']);
    this.response(Buffer.from(refusal.body));
  }

  /**
   * Writes `<dir>/<rid>.json` in the background (whole or not at all: written aside, then
   * renamed); a failure is reported, never thrown.
   */
  save(rid: number, session: string, onError: (err: Error) => void): void {
    this.#exchange(rid, session).then((exchange) => {
      const dir = this.#options.dir;
      const file = join(dir, `${rid}.json`);
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
      } catch (err) {
        return onError(err as Error);
      }
      writeFile(`${file}.part`, JSON.stringify(exchange), { mode: 0o600 }, (err) => {
        if (err) return onError(err);
        rename(`${file}.part`, file, (e) => e && onError(e));
      });
    }, onError);
  }

  async #exchange(rid: number, session: string): Promise<CapturedExchange> {
    const r = this.#response;
    return {
      rid,
      session,
      forwarded: this.#forwarded,
      request: { method: this.#method, url: this.#url, ...(await this.#done(this.#request)) },
      response: r ? { status: r.status, ...(await this.#done(r)) } : null,
    };
  }

  async #done(p: Part): Promise<Omit<CapturedPart, 'headers'> & Pick<Part, 'headers'>> {
    const partial = p.short || p.size > p.kept;
    const stored = await storeBody(
      Buffer.concat(p.chunks),
      partial,
      p.headers,
      this.#options.maxBytes,
    );
    return {
      headers: p.headers,
      body: stored.body,
      encoding: stored.encoding,
      ...(stored.decoded ? { decoded: stored.decoded } : {}),
      size: p.size,
      truncated: partial || stored.cut,
    };
  }

  #part(raw: readonly string[]): Part {
    const headers: [string, string][] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = String(raw[i]);
      // Secret header values are redacted unless `capture.redact: false`.
      const secret = this.#options.redact && isSecretHeader(name);
      headers.push([name, secret ? REDACTED : String(raw[i + 1])]);
    }
    return { headers, chunks: [], kept: 0, size: 0, short: false };
  }

  #keep(part: Part, chunk: Buffer): void {
    part.size += chunk.length;
    const room = this.#options.maxBytes - part.kept;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    part.chunks.push(Buffer.from(kept));
    part.kept += kept.length;
  }
}
