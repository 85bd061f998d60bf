import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** What the export gets back, as the SDK's processors read it (0 success, 1 failed). */
export interface ExportResult {
  code: 0 | 1;
  error?: Error;
}

/** A batch in, serialised to OTLP/JSON (the SDK's own serializers); null when empty. */
export type Serialize<T> = (items: T[]) => Uint8Array | undefined;

/** Sockets kept open to the collector: exports go one batch at a time per signal. */
const SOCKETS = 2;

/**
 * One signal's exporter: each batch is serialised and POSTed once to `url`. A refused
 * connection, an error status or no answer within `timeoutMs` fails the batch at once, with no
 * retry: the caller backs off and drops (otlp.ts), so a collector down is found in one attempt
 * instead of after the SDK transport's retries (up to five within its timeout). `destroy()`
 * ends what is in flight, so a stop is never held by a collector that does not answer.
 */
export class OtlpPost<T> {
  readonly #url: URL;
  readonly #headers: Record<string, string>;
  readonly #serialize: Serialize<T>;
  readonly #timeoutMs: number;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #requests = new Set<ClientRequest>();

  constructor(url: string, headers: Record<string, string>, serialize: Serialize<T>, ms: number) {
    this.#url = new URL(url);
    this.#headers = headers;
    this.#serialize = serialize;
    this.#timeoutMs = ms;
    const https = this.#url.protocol === 'https:';
    this.#agent = new (https ? HttpsAgent : HttpAgent)({ keepAlive: true, maxSockets: SOCKETS });
    this.#request = https ? httpsRequest : httpRequest;
  }

  export(items: T[], done: (result: ExportResult) => void): void {
    let body: Uint8Array | undefined;
    try {
      body = this.#serialize(items);
    } catch (err) {
      done({ code: 1, error: err as Error });
      return;
    }
    if (body === undefined) {
      done({ code: 0 });
      return;
    }
    const sent = this.#post(body).then(
      () => done({ code: 0 }),
      (error: Error) => done({ code: 1, error }),
    );
    this.#inFlight.add(sent);
    void sent.finally(() => this.#inFlight.delete(sent));
  }

  /** What is in flight, settled (sent, failed or destroyed). */
  async forceFlush(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.#agent.destroy();
  }

  /** Ends every export in flight (each fails) and closes the kept sockets. */
  destroy(): void {
    for (const req of this.#requests) req.destroy(new Error('telemetry stopped'));
    this.#agent.destroy();
  }

  #post(body: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = this.#request(this.#url, {
        method: 'POST',
        agent: this.#agent,
        timeout: this.#timeoutMs,
        headers: {
          ...this.#headers,
          'content-type': 'application/json',
          'content-length': body.byteLength,
        },
      });
      this.#requests.add(req);
      req.once('close', () => this.#requests.delete(req));
      req.once('timeout', () =>
        req.destroy(new Error(`no answer within ${this.#timeoutMs / 1000} s`)),
      );
      req.once('error', reject);
      req.once('response', (res: IncomingMessage) => {
        // The body (a partial-success note at most) is not needed: read and dropped.
        res.resume();
        res.once('error', reject);
        res.once('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve();
          else reject(new Error(`the collector answered ${status}`));
        });
      });
      req.end(body);
    });
  }
}
