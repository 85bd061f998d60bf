import { describe, expect, it } from 'vitest';
import { toolMap } from '../../src/event/tool-map.js';
import { INVALID_PARAMS, INVALID_REQUEST } from '../../src/ingress/mcp.js';
import { msg, readerWith } from '../helpers/json-rpc.js';

/** What the MCP bridge forwards: its own serialisation, tool paths resolved, roots cut. */
const tools = toolMap({});
const read = readerWith(tools);
const call = (name: string, args: unknown, id: unknown = 1) =>
  msg('tools/call', { name, arguments: args }, id);

describe('readMcpMessage: the body forwarded is trajgate’s serialisation of what it judged', () => {
  const body = (m: ReturnType<typeof read>) =>
    JSON.parse(m.kind === 'invalid' ? '{}' : m.body.toString());
  it('tool paths are rewritten to the absolute paths judged; the rest is kept', () => {
    const m = read(call('move_file', { source: 'a', destination: '/w/x/../b', extra: [1] }, 'k'));
    expect(body(m)).toEqual(
      call('move_file', { source: '/w/a', destination: '/w/b', extra: [1] }, 'k'),
    );
    expect(m.kind === 'resolved' && m.events.map((e) => e.target)).toEqual(['a', 'a', '/w/x/../b']);
  });
  it('other messages go as JSON.stringify writes them', () => {
    const m = read(JSON.parse('{ "jsonrpc" : "2.0", "id" : 1, "method" : "tools/\\u006cist" }'));
    expect(m.kind === 'pass' && m.body.toString()).toBe(
      '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    );
  });
  it.each([
    ['~/x', /starts with ~/],
    ['file:///etc/x', /file: URI/],
  ])('a path %j is refused for the model: -32602 in a 200', (path, says) => {
    const m = read(call('write_file', { path, content: '' }, 4));
    expect(m).toMatchObject({ kind: 'invalid', code: INVALID_PARAMS, id: 4, status: 200 });
    expect(m.kind === 'invalid' && m.message).toMatch(says);
    expect(m.kind === 'invalid' && m.message).toMatch(/^trajgate: tools\/call write_file: path/);
  });
  it('a message both request and response is refused', () => {
    const both = { ...msg('tools/list'), result: { roots: [{ uri: 'file:///' }] } };
    expect(read(both)).toMatchObject({ kind: 'invalid', code: INVALID_REQUEST, status: 400 });
  });
  it('a roots/list answer is cut to the workspace; roots not an array is refused', () => {
    const answer = {
      jsonrpc: '2.0',
      id: 3,
      result: { roots: [{ uri: 'file:///' }, { uri: 'file:///w/a' }] },
    };
    const m = read(answer);
    expect(m).toMatchObject({ kind: 'pass', roots: { removed: ['file:///'] } });
    expect(body(m).result.roots).toEqual([{ uri: 'file:///w/a' }]);
    const bad = { jsonrpc: '2.0', id: 3, result: { roots: 'file:///' } };
    expect(read(bad)).toMatchObject({ kind: 'invalid', code: INVALID_PARAMS });
  });
});
