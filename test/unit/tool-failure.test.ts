import type { IncomingMessage } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { JsonRpcScan } from '../../src/ingress/json-rpc-scan.js';
import { mcpAnswerWatch } from '../../src/ingress/mcp-answer.js';

/**
 * The bridge reads a tool call's answer as it streams to the client: a JSON-RPC `error` or a
 * `result.isError: true`, in JSON or in a Server-Sent Events stream, is a failed call.
 */
const scan = (text: string | Buffer, cut = 0): { response: boolean; failed: boolean } => {
  const s = new JsonRpcScan();
  const bytes = Buffer.from(text);
  if (cut === 0) s.feed(bytes);
  else for (let i = 0; i < bytes.length; i += cut) s.feed(bytes.subarray(i, i + cut));
  return { response: s.response, failed: s.failed };
};

const rpc = (body: object) => JSON.stringify({ jsonrpc: '2.0', id: 1, ...body });
const ok = rpc({ result: { content: [{ type: 'text', text: 'done' }] } });
const isError = rpc({
  result: { content: [{ type: 'text', text: 'no such file' }], isError: true },
});
const error = rpc({ error: { code: -32603, message: 'boom' } });

describe('JsonRpcScan: one JSON-RPC message read as its bytes pass', () => {
  const cases: [string, string, { response: boolean; failed: boolean }][] = [
    ['a result', ok, { response: true, failed: false }],
    ['isError: true', isError, { response: true, failed: true }],
    ['isError: false', rpc({ result: { isError: false } }), { response: true, failed: false }],
    ['an error object', error, { response: true, failed: true }],
    [
      'error: null beside a result',
      rpc({ error: null, result: {} }),
      { response: true, failed: false },
    ],
    [
      'a notification',
      '{"jsonrpc":"2.0","method":"notifications/message","params":{"error":{}}}',
      { response: false, failed: false },
    ],
    [
      'isError deeper than the result',
      rpc({ result: { content: [{ isError: true }], meta: { isError: true } } }),
      { response: true, failed: false },
    ],
    [
      'isError in params, not result',
      rpc({ params: { isError: true }, result: {} }),
      { response: true, failed: false },
    ],
    [
      '"error" as a string value',
      rpc({ result: { text: 'error', isError: 'true' } }),
      { response: true, failed: false },
    ],
    [
      'keys spelled with escapes',
      '{"jsonrpc":"2.0","id":1,"\\u0072esult":{"is\\u0045rror" : true}}',
      { response: true, failed: true },
    ],
    [
      'the last of a repeated key',
      '{"id":1,"result":{"isError":true,"isError":false}}',
      { response: true, failed: false },
    ],
    [
      'quotes and backslashes in strings',
      rpc({ result: { content: [{ text: '\\"},"isError":true,{"' }] } }),
      { response: true, failed: false },
    ],
    [
      'whitespace everywhere',
      '{ "id" : 1 ,\n "result" :\t{ "content" : [ ] ,\r\n "isError" : true } }',
      { response: true, failed: true },
    ],
    ['an array (a batch) is not read', `[${isError}]`, { response: false, failed: false }],
    ['not JSON', 'Internal Server Error', { response: false, failed: false }],
  ];
  it.each(cases)('%s', (_, text, expected) => {
    expect(scan(text)).toEqual(expected);
    // The same verdict however the bytes are cut.
    for (const cut of [1, 2, 3, 7]) expect(scan(text, cut), `cut ${cut}`).toEqual(expected);
  });

  it('an answer of any size: isError after megabytes of output, UTF-8 included', () => {
    const big = 'ü"\\{['.repeat(400_000); // escaped by stringify: quotes, backslashes, brackets
    const text = rpc({ result: { content: [{ type: 'text', text: big }], isError: true } });
    expect(text.length).toBeGreaterThan(2_000_000);
    expect(scan(text, 64 * 1024)).toEqual({ response: true, failed: true });
  });
});

/** An upstream answer as http-proxy hands it over (status and headers only are read). */
const answer = (status: number, headers: Record<string, string>) =>
  ({ statusCode: status, headers }) as unknown as IncomingMessage;

async function watch(
  status: number,
  headers: Record<string, string>,
  body: string | Buffer,
  cut = 0,
): Promise<boolean> {
  const w = mcpAnswerWatch(answer(status, headers));
  const bytes = Buffer.from(body);
  if (cut === 0) w.chunk(bytes);
  else for (let i = 0; i < bytes.length; i += cut) w.chunk(bytes.subarray(i, i + cut));
  return w.end();
}

const JSON_TYPE = { 'content-type': 'application/json' };
const SSE = { 'content-type': 'text/event-stream' };
const event = (data: string, eol = '\n') => `event: message${eol}data: ${data}${eol}${eol}`;
const notification =
  '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}';

describe('mcpAnswerWatch: the answer to a tools/call', () => {
  it('JSON: an error or isError fails; a result does not; charset and +json types are JSON', async () => {
    expect(await watch(200, JSON_TYPE, error)).toBe(true);
    expect(await watch(200, JSON_TYPE, isError)).toBe(true);
    expect(await watch(200, JSON_TYPE, ok)).toBe(false);
    expect(await watch(200, { 'content-type': 'application/json; charset=utf-8' }, error)).toBe(
      true,
    );
    expect(await watch(200, { 'content-type': 'application/vnd.x+json' }, error)).toBe(true);
    expect(await watch(200, { 'content-type': 'text/plain' }, error)).toBe(false);
  });

  it('an upstream status ≥ 400 fails whatever the body', async () => {
    expect(await watch(500, { 'content-type': 'text/plain' }, 'oops')).toBe(true);
    expect(
      await watch(404, JSON_TYPE, rpc({ error: { code: -32001, message: 'Session not found' } })),
    ).toBe(true);
    expect(await watch(202, {}, '')).toBe(false);
  });

  it('SSE: the response after notifications; a notification alone is not a failure', async () => {
    const failing = event(notification) + event(notification) + event(isError);
    for (const cut of [0, 1, 5]) {
      expect(await watch(200, SSE, failing, cut), `cut ${cut}`).toBe(true);
      expect(await watch(200, SSE, event(notification) + event(ok), cut)).toBe(false);
      expect(await watch(200, SSE, event(error, '\r\n'), cut)).toBe(true);
      expect(await watch(200, SSE, event(error, '\r'), cut)).toBe(true);
    }
  });

  it('SSE: data lines of one event join; comments, ids and retry pass; no space after data:', async () => {
    const lines =
      ': keep-alive\n\nid: 7\nretry: 1000\ndata:{"jsonrpc":"2.0","id":1,\ndata: "error":\ndata: {"code":1}}\n\n';
    expect(await watch(200, { 'content-type': 'text/event-stream; charset=utf-8' }, lines, 1)).toBe(
      true,
    );
    expect(await watch(200, SSE, `\ufeff${event(error)}`)).toBe(true);
    // A field named otherwise is not data, nor is an event without its closing blank line.
    expect(await watch(200, SSE, `database: ${error}\n\n`)).toBe(false);
    expect(await watch(200, SSE, `data: ${error}\n`)).toBe(false);
    // A server request carrying an `error` in its params is not a response.
    expect(
      await watch(200, SSE, event(rpc({ method: 'x', params: { error: 1 } })) + event(ok)),
    ).toBe(false);
  });

  it('a compressed answer is read decoded; an unknown coding only by its status', async () => {
    const coded = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };
    for (const [name, code] of Object.entries(coded)) {
      const headers = { ...JSON_TYPE, 'content-encoding': name };
      expect(await watch(200, headers, code(Buffer.from(isError)), 3), name).toBe(true);
      expect(await watch(200, headers, code(Buffer.from(ok))), name).toBe(false);
      const sse = { ...SSE, 'content-encoding': name };
      expect(await watch(200, sse, code(Buffer.from(event(notification) + event(error))))).toBe(
        true,
      );
    }
    expect(await watch(200, { ...JSON_TYPE, 'content-encoding': 'gzip' }, 'not gzip')).toBe(false);
    expect(await watch(200, { ...JSON_TYPE, 'content-encoding': 'zstd' }, error)).toBe(false);
    expect(await watch(502, { ...JSON_TYPE, 'content-encoding': 'zstd' }, error)).toBe(true);
  });
});
