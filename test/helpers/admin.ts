import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { curl } from './curl.js';
import type { CurlResult } from './curl.js';

/** An admin API answer: status, lower-cased headers, parsed JSON (or null) and raw text. */
export interface ApiResponse<T = any> {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly json: T;
  readonly text: string;
}

export interface CallOptions {
  /** Bearer token; `null` sends no Authorization header. Defaults to the client's token. */
  readonly token?: string | null;
  /** A JSON value to send, or a raw string sent as is. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/** A small client of the admin API on 127.0.0.1:`port` (loopback only, 5 s timeouts). */
export interface AdminClient {
  readonly port: number;
  readonly token: string;
  call<T = any>(method: string, path: string, options?: CallOptions): Promise<ApiResponse<T>>;
  get<T = any>(path: string, options?: CallOptions): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, options?: CallOptions): Promise<ApiResponse<T>>;
}

export function adminClient(port: number, token: string): AdminClient {
  const call = async <T>(
    method: string,
    path: string,
    options: CallOptions = {},
  ): Promise<ApiResponse<T>> => {
    const auth = options.token === undefined ? token : options.token;
    const body =
      options.body === undefined
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body);
    const res = await request(`http://127.0.0.1:${port}${path}`, {
      method: method as 'GET',
      headers: {
        ...(auth === null ? {} : { authorization: `Bearer ${auth}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...options.headers,
      },
      ...(body === undefined ? {} : { body }),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON (metrics text, or an empty body)
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) headers[k] = String(v);
    return { status: res.statusCode, headers, json: json as T, text };
  };
  return {
    port,
    token,
    call,
    get: (path, options) => call('GET', path, options),
    post: (path, body = {}, options = {}) => call('POST', path, { ...options, body }),
  };
}

/** The token a gateway started without `admin.token` generated into its data folder. */
export function generatedToken(file: string | null): string {
  if (file === null) throw new Error('the gateway has a configured admin token');
  return readFileSync(file, 'utf8').trim();
}

/** Lines in a file (the journal), to assert that a refused call wrote nothing. */
export function lineCount(path: string): number {
  return readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
}

/** `-U id:token` for curl when agents are configured. */
export function agentAuth(id: string, token: string): string[] {
  return ['-U', `${id}:${token}`];
}

/** One request through the proxy with curl (absolute-form HTTP), as an agent sends it. */
export function viaProxy(proxyUrl: string, url: string, auth: string[] = []): Promise<CurlResult> {
  return curl([...auth, '-x', proxyUrl, url]);
}
