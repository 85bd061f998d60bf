import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readToolList } from '../../src/ingress/tool-list-answer.js';

const sse = 'text/event-stream';
const answer = (body: string | Buffer, type: string, extra: Record<string, string> = {}) => ({
  status: 200,
  headers: { 'content-type': type, ...extra },
  body: Buffer.from(body),
});
const list = (id: unknown, tools: unknown[], more = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { tools, ...more } });

/** readToolList: which answers are a list to cut, which pass, which are refused and why. */
describe('a tools/list answer', () => {
  it('in an event stream: the response among others is rewritten, the rest kept', () => {
    const text =
      ': hello\r\n\r\nid: 4\r\nevent: message\r\ndata: {"jsonrpc":"2.0","method":"ping","id":"s1"}\r\n\r\n' +
      `id: 5\ndata: ${list(3, [{ name: 'a' }, { name: 'b' }])}\n\nretry: 10`;
    const read = readToolList(answer(text, sse), 3, 1 << 20);
    if (read.kind !== 'list') throw new Error(read.kind);
    expect(read.tools.map((t) => t.name)).toEqual(['a', 'b']);
    expect(read.more).toBe(false);
    const out = read.render([{ name: 'b' }]).body.toString();
    expect(out).toBe(
      ': hello\n\nid: 4\nevent: message\ndata: {"jsonrpc":"2.0","method":"ping","id":"s1"}\n\n' +
        `id: 5\ndata: ${list(3, [{ name: 'b' }])}\n\nretry: 10`,
    );
  });

  it('data split over lines is one message; a nextCursor says more follow', () => {
    const json = list('x', [{ name: 'a' }], { nextCursor: 'c2' });
    const text = `data: ${json.slice(0, 10)}\ndata:${json.slice(10)}\n\n`;
    const read = readToolList(answer(text, sse), 'x', 1 << 20);
    expect(read).toMatchObject({ kind: 'list', more: true });
  });

  it('compressed JSON is decoded and written identity-coded', () => {
    const body = gzipSync(list(1, [{ name: 'a', description: 'd' }]));
    const read = readToolList(
      answer(body, 'application/json', { 'content-encoding': 'gzip' }),
      1,
      4096,
    );
    if (read.kind !== 'list') throw new Error(read.kind);
    expect(JSON.parse(read.render([]).body.toString())).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [] },
    });
  });

  it('an error status or a JSON-RPC error passes as sent', () => {
    const error = '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}';
    const status = { ...answer(list(1, []), 'application/json'), status: 404 };
    expect(readToolList(status, 1, 4096).kind).toBe('pass');
    expect(readToolList(answer(error, 'application/json'), 1, 4096).kind).toBe('pass');
  });

  it.each([
    ['another id', answer(list(2, []), 'application/json'), 'answers the id 2'],
    [
      'two responses',
      answer(`data: ${list(1, [])}\n\ndata: ${list(1, [])}\n\n`, sse),
      'more than one response',
    ],
    ['an unfinished event', answer(`data: ${list(1, [])}`, sse), 'no JSON-RPC response'],
    ['a batch', answer(`[${list(1, [])}]`, 'application/json'), 'not a JSON-RPC 2.0 response'],
    ['tools not an array', answer(list(1, {} as never), 'application/json'), 'no "tools" array'],
    ['a nameless tool', answer(list(1, [{ name: 1 }]), 'application/json'), 'tools[0]'],
    ['a numeric cursor', answer(list(1, [], { nextCursor: 2 }), 'application/json'), 'nextCursor'],
    ['invalid UTF-8', answer(Buffer.from([0x7b, 0xff]), 'application/json'), 'not valid UTF-8'],
    [
      'compress',
      answer('x', 'application/json', { 'content-encoding': 'compress' }),
      'content coding compress',
    ],
    [
      'a bomb',
      answer(gzipSync('x'.repeat(10_000)), sse, { 'content-encoding': 'gzip' }),
      'more than 4096 bytes',
    ],
  ])('%s is refused', (_, a, reason) => {
    const read = readToolList(a, 1, 4096);
    expect(read).toEqual({ kind: 'bad', reason: expect.stringContaining(reason) });
  });
});
