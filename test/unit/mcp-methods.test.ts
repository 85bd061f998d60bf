import { describe, expect, it } from 'vitest';
import { toolMap } from '../../src/event/tool-map.js';
import { INVALID_PARAMS, INVALID_REQUEST } from '../../src/ingress/mcp.js';
import { fileUriPath, isProtocolMethod } from '../../src/ingress/mcp-methods.js';
import { msg, NO_ID, readerWith } from '../helpers/json-rpc.js';

/** Every MCP method but the protocol's own is judged: which events each makes, and the body. */
const read = readerWith(toolMap({}));
const events = (m: ReturnType<typeof read>) =>
  m.kind === 'resolved' ? m.events.map(({ kind, target }) => `${kind} ${target}`) : m;
const forwarded = (m: ReturnType<typeof read>) =>
  m.kind === 'invalid' ? null : (JSON.parse(m.body.toString()) as { params: { uri: string } });

describe('judged methods and their events', () => {
  it.each([
    ['resources/read file:', msg('resources/read', { uri: 'file:///w/a.txt' }), 'read /w/a.txt'],
    ['FILE: in capitals', msg('resources/read', { uri: 'FILE:///etc/passwd' }), 'read /etc/passwd'],
    ['file://localhost/', msg('resources/read', { uri: 'file://localhost/x' }), 'read /x'],
    ['file:/ (no authority)', msg('resources/read', { uri: 'file:/etc/x' }), 'read /etc/x'],
    ['escapes decoded', msg('resources/read', { uri: 'file:///w/a%20b%2e' }), 'read /w/a b.'],
    ['subscribe', msg('resources/subscribe', { uri: 'file:///etc/x' }), 'read /etc/x'],
    [
      'another scheme',
      msg('resources/read', { uri: 'https://h/x' }),
      'tool resources/read https://h/x',
    ],
    [
      'a bare path is no file: URI',
      msg('resources/read', { uri: '/etc/x' }),
      'tool resources/read /etc/x',
    ],
    ['prompts/get', msg('prompts/get', { name: 'review' }), 'tool prompts/get review'],
    [
      'completion for a prompt',
      msg('completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: {} }),
      'tool completion/complete prompt p',
    ],
    [
      'completion for a template',
      msg('completion/complete', { ref: { type: 'ref/resource', uri: 'file:///{p}' } }),
      'tool completion/complete resource file:///{p}',
    ],
    ['an unknown method', msg('vendor/run', { cmd: 'rm' }), 'tool vendor/run'],
    ['an unknown method, params an array', msg('vendor/run', ['rm']), 'tool vendor/run'],
    [
      'an unknown notification',
      msg('notifications/vendor', {}, NO_ID),
      'tool notifications/vendor',
    ],
    ['a method in another case', msg('Tools/List'), 'tool Tools/List'],
    ['a JSON-RPC internal name', msg('rpc.discover'), 'tool rpc.discover'],
    ['__proto__', msg('__proto__'), 'tool __proto__'],
  ])('%s', (_name, body, event) => {
    expect(events(read(body))).toEqual([event]);
  });

  it('a file: URI is forwarded as the URI of the path judged', () => {
    const m = read(msg('resources/read', { uri: 'FILE://localhost/w/./x/../a%20b' }));
    expect(forwarded(m)?.params.uri).toBe('file:///w/a%20b');
  });

  it('another URI is forwarded as sent', () => {
    const m = read(msg('resources/read', { uri: 'memo://x/../y' }));
    expect(forwarded(m)?.params.uri).toBe('memo://x/../y');
  });

  it.each(['initialize', 'ping', 'tools/list', 'prompts/list', 'logging/setLevel'])(
    '%s is protocol',
    (method) => expect(isProtocolMethod(method)).toBe(true),
  );
});

describe('params a judged method cannot be judged by', () => {
  it.each([
    ['resources/read without uri', msg('resources/read', {}), /needs a non-empty string "uri"/],
    ['uri a number', msg('resources/read', { uri: 5 }), /"uri"/],
    ['prompts/get without name', msg('prompts/get', {}), /"name"/],
    ['completion without ref', msg('completion/complete', {}), /ref\/prompt/],
    [
      'completion with an odd ref',
      msg('completion/complete', { ref: { type: 'ref/tool', name: 'x' } }),
      /ref\/prompt/,
    ],
    ['resources/read with params an array', msg('resources/read', ['file:///x']), /not an array/],
  ])('%s → -32602, 400', (_name, body, says) => {
    const m = read(body);
    expect(m).toMatchObject({ kind: 'invalid', code: INVALID_PARAMS, status: 400, id: 1 });
    expect(m.kind === 'invalid' && m.message).toMatch(says);
  });
});

describe('messages no JSON-RPC peer reads one way', () => {
  it.each([
    ['method a number', { jsonrpc: '2.0', id: 1, method: 5 }, /"method" must be/],
    ['method empty', { jsonrpc: '2.0', id: 1, method: '' }, /"method" must be/],
    ['method very long', msg('x'.repeat(300)), /longer than 256/],
    ['params a string', msg('vendor/run', 'x'), /"params" must be an object or an array/],
    ['params null', msg('tools/list', null), /"params"/],
    ['id an object', msg('tools/list', undefined, { a: 1 }), /"id" must be/],
    ['id true', msg('tools/list', undefined, true), /"id" must be/],
    ['neither method nor result', { jsonrpc: '2.0', id: 1 }, /needs a "method"/],
    ['a result without id', { jsonrpc: '2.0', result: {} }, /needs an "id"/],
  ])('%s → -32600', (_name, body, says) => {
    const m = read(body);
    expect(m).toMatchObject({ kind: 'invalid', code: INVALID_REQUEST, status: 400 });
    expect(m.kind === 'invalid' && m.message).toMatch(says);
  });
});

describe('fileUriPath: file: URIs readers agree on, or refused', () => {
  it.each([
    ['file:///a/b', '/a/b'],
    ['file:////a', '//a'],
    ['file:///', '/'],
    ['file:///caf%C3%A9', '/café'],
    ['file:///a/%2e%2e/b', '/a/../b'],
    ['https://x/y', null],
    ['/plain', null],
  ])('%s → %s', (uri, path) => expect(fileUriPath(uri)).toBe(path));

  it.each([
    ['file://host/share', /names the host host/],
    ['file:relative', /absolute path/],
    ['file://', /absolute path/],
    ['file:///a\\..\\b', /character/],
    ['file:///a?x', /character/],
    ['file:///a#x', /character/],
    ['file:///a\tb', /character/],
    ['file:///a b', /character/],
    ['file:///a%2fb', /encoded/],
    ['file:///a%5Cb', /encoded/],
    ['file:///a%00', /encoded/],
    ['file:///a%zz', /not UTF-8/],
    ['file:///a%C3', /not UTF-8/],
  ])('%s → refused', (uri, says) => {
    expect(() => fileUriPath(uri)).toThrow(says);
  });

  it('a refused file: URI is answered for the model (-32602 in a 200)', () => {
    const m = read(msg('resources/read', { uri: 'file://evil/x' }, 9));
    expect(m).toMatchObject({ kind: 'invalid', code: INVALID_PARAMS, status: 200, id: 9 });
    expect(m.kind === 'invalid' && m.message).toMatch(/^trajgate: resources\/read: URI/);
  });
});
