import { mkdirSync, writeFile } from 'node:fs';
import { join } from 'node:path';

/** Header fields whose values are secrets; redacted in captures unless `capture.redact: false`. */
const SECRET = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

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
}

/** What one exchange's capture file holds (`<rid>.json`), read back by the HAR export. */
export interface CapturedExchange {
  readonly rid: number;
  readonly session: string;
  readonly request: CapturedPart & { readonly method: string; readonly url: string };
  readonly response: (CapturedPart & { readonly status: number }) | null;
}

export interface CapturedPart {
  readonly headers: readonly [string, string][];
  /** The kept bytes, base64. */
  readonly body: string;
  /** The whole body's size, kept or not. */
  readonly size: number;
  readonly truncated: boolean;
}

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

  constructor(options: CaptureOptions, method: string, url: string, rawHeaders: readonly string[]) {
    this.#options = options;
    this.#method = method;
    this.#url = url;
    this.#request = this.#part(rawHeaders);
  }

  request(chunk: Buffer): void {
    this.#keep(this.#request, chunk);
  }

  responseStart(status: number, rawHeaders: readonly string[]): void {
    this.#response = { ...this.#part(rawHeaders), status };
  }

  response(chunk: Buffer): void {
    if (this.#response) this.#keep(this.#response, chunk);
  }

  /** Writes `<dir>/<rid>.json` in the background; a failure is reported, never thrown. */
  save(rid: number, session: string, onError: (err: Error) => void): void {
    const done = (p: Part) => ({
      headers: p.headers,
      body: Buffer.concat(p.chunks).toString('base64'),
      size: p.size,
      truncated: p.size > p.kept,
    });
    const exchange: CapturedExchange = {
      rid,
      session,
      request: { method: this.#method, url: this.#url, ...done(this.#request) },
      response: this.#response ? { status: this.#response.status, ...done(this.#response) } : null,
    };
    try {
      mkdirSync(this.#options.dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      onError(err as Error);
      return;
    }
    writeFile(
      join(this.#options.dir, `${rid}.json`),
      JSON.stringify(exchange),
      { mode: 0o600 },
      (err) => {
        if (err) onError(err);
      },
    );
  }

  #part(raw: readonly string[]): Part {
    const headers: [string, string][] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = String(raw[i]);
      const secret = this.#options.redact && SECRET.has(name.toLowerCase());
      headers.push([name, secret ? '[redacted]' : String(raw[i + 1])]);
    }
    return { headers, chunks: [], kept: 0, size: 0 };
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
