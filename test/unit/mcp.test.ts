import { describe, expect, it } from 'vitest';
import { toolMap } from '../../src/event/tool-map.js';
import { INVALID_PARAMS, INVALID_REQUEST, jsonRpcError } from '../../src/ingress/mcp.js';
import { msg, NO_ID, readerWith } from '../helpers/json-rpc.js';

/** readMcpMessage: what the MCP bridge does with one POST body and its headers. */
const tools = toolMap({ run: { kind: 'command', target: 'options.cwd' } });
const read = readerWith(tools);
const call = (name: unknown, args?: unknown, id: unknown = 1) =>
  msg('tools/call', { name, ...(args === undefined ? {} : { arguments: args }) }, id);
const b64 = (s: string) => `=?base64?${Buffer.from(s).toString('base64')}?=`;

describe('readMcpMessage: passed untouched', () => {
  it.each([
    ['initialize', msg('initialize', { protocolVersion: '2025-11-25' })],
    ['tools/list', msg('tools/list')],
    ['a notification', msg('notifications/initialized', undefined, NO_ID)],
    [
      'a response (roots/list answer)',
      { jsonrpc: '2.0', id: 3, result: { roots: [{ uri: 'file:///' }] } },
    ],
    ['an error response', { jsonrpc: '2.0', id: 3, error: { code: -1, message: 'x' } }],
    ['ping', msg('ping')],
    ['resources/unsubscribe', msg('resources/unsubscribe', { uri: 'file:///etc/passwd' })],
    ['a cancellation', msg('notifications/cancelled', { requestId: 1 }, NO_ID)],
  ])('%s', (_name, body) => {
    expect(read(body)).toMatchObject({ kind: 'pass' });
  });
});

describe('readMcpMessage: tool calls become events', () => {
  it.each([
    [
      'write_file',
      call('write_file', { path: '/w/a', content: 'x' }),
      [{ kind: 'write', target: '/w/a' }],
    ],
    [
      'move_file: a read of its source, and both paths written',
      call('move_file', { source: '/w/a', destination: '/o/b' }),
      [
        { kind: 'read', target: '/w/a' },
        { kind: 'write', target: '/w/a' },
        { kind: 'write', target: '/o/b' },
      ],
    ],
    [
      'read_multiple_files',
      call('read_multiple_files', { paths: ['/a', '/b'] }),
      [
        { kind: 'read', target: '/a' },
        { kind: 'read', target: '/b' },
      ],
    ],
    [
      'a configured tool',
      call('run', { options: { cwd: '/w' } }),
      [{ kind: 'command', target: '/w' }],
    ],
    [
      'an unmapped tool is a tool event',
      call('format_disk', { disk: 'sda' }),
      [{ kind: 'tool', target: 'format_disk' }],
    ],
    [
      'an unmapped tool without arguments',
      call('format_disk'),
      [{ kind: 'tool', target: 'format_disk' }],
    ],
    ['a mapped tool with no events', call('list_allowed_directories'), []],
    [
      'a notification-style call (no id) is still judged',
      call('write_file', { path: '/x' }, NO_ID),
      [{ kind: 'write', target: '/x' }],
    ],
  ])('%s', (_name, body, events) => {
    const parsed = read(body);
    expect(parsed).toMatchObject({
      kind: 'resolved',
      what: `tools/call ${(body.params as { name: string }).name}`,
    });
    expect(
      parsed.kind === 'resolved' && parsed.events.map(({ kind, target }) => ({ kind, target })),
    ).toEqual(events);
  });

  it('keeps a string id', () => {
    expect(read(call('write_file', { path: '/x' }, 'req-7'))).toMatchObject({ id: 'req-7' });
  });
});

describe('readMcpMessage: malformed', () => {
  it.each([
    ['a batch', [call('write_file', { path: '/x' })], INVALID_REQUEST, null, /batches/],
    ['an empty batch', [], INVALID_REQUEST, null, /batches/],
    ['no jsonrpc', { id: 1, method: 'tools/list' }, INVALID_REQUEST, null, /JSON-RPC 2.0/],
    [
      'jsonrpc 1.0',
      { jsonrpc: '1.0', id: 1, method: 'tools/list' },
      INVALID_REQUEST,
      null,
      /JSON-RPC 2.0/,
    ],
    ['a string', '"hello"', INVALID_REQUEST, null, /JSON-RPC 2.0/],
    ['null', 'null', INVALID_REQUEST, null, /JSON-RPC 2.0/],
    ['params missing', msg('tools/call'), INVALID_PARAMS, 1, /needs params/],
    ['params an array', msg('tools/call', ['write_file']), INVALID_PARAMS, 1, /needs params/],
    ['name missing', msg('tools/call', { arguments: {} }), INVALID_PARAMS, 1, /string "name"/],
    ['name empty', call(''), INVALID_PARAMS, 1, /string "name"/],
    ['name a number', call(5), INVALID_PARAMS, 1, /string "name"/],
    [
      'arguments a string',
      call('write_file', '{}'),
      INVALID_PARAMS,
      1,
      /"arguments" must be an object/,
    ],
    [
      'arguments null',
      call('write_file', null),
      INVALID_PARAMS,
      1,
      /"arguments" must be an object/,
    ],
    [
      'arguments an array',
      call('write_file', []),
      INVALID_PARAMS,
      1,
      /"arguments" must be an object/,
    ],
    [
      'target a number',
      call('write_file', { path: 5 }),
      INVALID_PARAMS,
      1,
      /argument "path" must be a non-empty string/,
    ],
    ['target missing', call('write_file', {}), INVALID_PARAMS, 1, /argument "path"/],
    [
      'unmapped tool, arguments a string',
      call('format_disk', 'x'),
      INVALID_PARAMS,
      1,
      /"arguments" must be an object/,
    ],
  ])('%s', (_name, body, code, id, says) => {
    const parsed = read(body);
    expect(parsed).toMatchObject({ kind: 'invalid', code, id });
    expect(parsed.kind === 'invalid' && parsed.message).toMatch(says);
  });

  it('an object id is not echoed back (only string or number ids are)', () => {
    expect(read(call(5, undefined, { x: 1 }))).toMatchObject({ kind: 'invalid', id: null });
  });
});

describe('readMcpMessage: Mcp-Method / Mcp-Name / MCP-Protocol-Version', () => {
  const body = call('write_file', { path: '/w/a' });
  it.each([
    ['matching method and name', { 'mcp-method': 'tools/call', 'mcp-name': 'write_file' }],
    [
      'matching base64 sentinel name',
      { 'mcp-method': 'tools/call', 'mcp-name': b64('write_file') },
    ],
    ['method only', { 'mcp-method': 'tools/call' }],
    [
      '2026-07-28 with Mcp-Method',
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
    ],
    ['2025-11-25 without headers', { 'mcp-protocol-version': '2025-11-25' }],
    ['Mcp-Name alone is ignored without Mcp-Method', { 'mcp-name': 'other' }],
  ])('%s → accepted', (_name, headers) => {
    expect(read(body, headers)).toMatchObject({
      kind: 'resolved',
      what: 'tools/call write_file',
    });
  });

  it.each([
    ['method mismatch', { 'mcp-method': 'tools/list' }, /Mcp-Method header \(tools\/list\)/],
    [
      'name mismatch',
      { 'mcp-method': 'tools/call', 'mcp-name': 'read_file' },
      /Mcp-Name header \(read_file\)/,
    ],
    [
      'sentinel mismatch',
      { 'mcp-method': 'tools/call', 'mcp-name': b64('read_file') },
      /Mcp-Name header \(read_file\)/,
    ],
    [
      '2026-07-28 without Mcp-Method',
      { 'mcp-protocol-version': '2026-07-28' },
      /required from protocol 2026-07-28/,
    ],
    ['a later revision without Mcp-Method', { 'mcp-protocol-version': '2027-01-01' }, /required/],
  ])('%s → 400 invalid request', (_name, headers, says) => {
    const parsed = read(body, headers);
    expect(parsed).toMatchObject({ kind: 'invalid', code: INVALID_REQUEST, id: 1 });
    expect(parsed.kind === 'invalid' && parsed.message).toMatch(says);
  });

  it('a 2026-07-28 notification needs no Mcp-Method (only requests do)', () => {
    const note = msg('notifications/initialized', undefined, NO_ID);
    expect(read(note, { 'mcp-protocol-version': '2026-07-28' })).toMatchObject({ kind: 'pass' });
  });

  it('Mcp-Name is compared with params.uri for resources', () => {
    const res = msg('resources/read', { uri: 'file:///a' });
    const headers = { 'mcp-method': 'resources/read' };
    expect(read(res, { ...headers, 'mcp-name': 'file:///a' })).toMatchObject({
      kind: 'resolved',
    });
    expect(read(res, { ...headers, 'mcp-name': 'file:///b' })).toMatchObject({ kind: 'invalid' });
  });
});

describe('jsonRpcError', () => {
  it('keeps the id and adds data only when given', () => {
    expect(JSON.parse(jsonRpcError(4, -32001, 'no'))).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32001, message: 'no' },
    });
    expect(JSON.parse(jsonRpcError(null, -32700, 'x', { a: 1 })).error.data).toEqual({ a: 1 });
  });
});
