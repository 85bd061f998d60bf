import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../src/journal/records.js';
import { AGENT_TOKEN, bridgeGateway } from '../helpers/gateway.js';
import { mcpClient, refused, startSupergateway } from '../helpers/mcp.js';
import { layout, tempDir } from '../helpers/tmp.js';

/**
 * Tool paths the real server-filesystem reads its own way, with the official SDK client: it is
 * allowed on `outside` FIRST and the workspace second, so it resolves a relative path against
 * `outside`; it expands `~`; and it maps a missing NFD name to the NFC entry beside it. Through
 * trajgate each path reaches it as the absolute path judged, or is refused.
 */
const root = tempDir();
const ws = join(root, 'ws');
const outside = join(root, 'outside');
// `café` (NFC) in the workspace is a link to outside.
layout(root, ['ws', 'outside', 'ws/\u00c5', 'ws/A\u030a'], { 'ws/caf\u00e9': '../outside' });
const sg = await startSupergateway([outside, ws]);
const TOKEN = AGENT_TOKEN;
const g = await bridgeGateway(ws, sg.url);
const clients: Client[] = [];
afterAll(() => Promise.all(clients.map((c) => c.close().catch(() => undefined))));
afterEach(() => {
  if (g.gw.sessions.isPaused('agent-1')) g.gw.sessions.resume('agent-1', { reset: true });
});

async function client(url = `http://127.0.0.1:${g.gw.bridge.port}/mcp`): Promise<Client> {
  const c = await mcpClient(url, TOKEN);
  clients.push(c);
  return c;
}
const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]?.text ?? '';
const write = (path: string, content = 'x') => ({
  name: 'write_file',
  arguments: { path, content },
});

describe('control: the server alone', () => {
  it('resolves a relative path against its first root and follows an NFD spelling', async () => {
    const direct = await client(sg.url);
    await direct.callTool(write('control-rel.txt'));
    expect(existsSync(join(outside, 'control-rel.txt'))).toBe(true);
    await direct.callTool(write(join(ws, 'cafe\u0301', 'control-nfd.txt')));
    expect(existsSync(join(outside, 'control-nfd.txt'))).toBe(true);
  });
});

describe('through trajgate', () => {
  it('a relative path lands in the workspace whatever the server’s roots (all path arguments)', async () => {
    const a = await client();
    expect(text(await a.callTool(write('rel.txt', 'one')))).toMatch(/Successfully wrote/);
    expect(readFileSync(join(ws, 'rel.txt'), 'utf8')).toBe('one');
    await a.callTool({
      name: 'move_file',
      arguments: { source: 'rel.txt', destination: './moved.txt' },
    });
    expect(existsSync(join(ws, 'moved.txt'))).toBe(true);
    const both = await a.callTool({
      name: 'read_multiple_files',
      arguments: { paths: ['moved.txt', 'nope.txt'] },
    });
    expect(text(both)).toContain(`${join(ws, 'moved.txt')}:\none`);
    for (const f of ['rel.txt', 'moved.txt']) expect(existsSync(join(outside, f)), f).toBe(false);
    const journaled = g
      .records()
      .filter((r) => r.type === 'event')
      .map((r) => [r.kind, r.target, r.verdict]);
    expect(journaled).toEqual(
      expect.arrayContaining([
        ['write', 'rel.txt', 'ALLOW'],
        ['write', './moved.txt', 'ALLOW'],
        ['read', 'nope.txt', 'ALLOW'],
      ]),
    );
  });

  const unique = `trajgate-${process.pid}-home.txt`;
  it.each([
    { spelling: `~/${unique}`, says: /starts with ~/, lands: join(homedir(), unique) },
    {
      spelling: `file://${outside}/uri.txt`,
      says: /is a file: URI/,
      lands: join(outside, 'uri.txt'),
    },
  ])(
    '$spelling is refused: -32602 for the model, one journal record, nothing written',
    async (c) => {
      const a = await client();
      const records = g.records().length;
      const err = await refused(a.callTool(write(c.spelling)));
      expect(err.code).toBe(-32602);
      expect(err.message).toMatch(c.says);
      expect(err.message).not.toMatch(/\n/);
      expect(existsSync(c.lands)).toBe(false);
      const added = g.records().slice(records);
      expect(added).toEqual([
        expect.objectContaining({ type: 'refusal', session: 'agent-1', status: 400 }),
      ]);
      expect((added[0] as JournalRecord & { reason: string }).reason).toMatch(c.says);
      expect(g.gw.sessions.isPaused('agent-1')).toBe(false);
    },
  );

  it('an NFD spelling of the NFC-named link to outside pauses; nothing written', async () => {
    const a = await client();
    const nfd = join(ws, 'cafe\u0301', 'nfd.txt');
    const err = await refused(a.callTool(write(nfd)));
    expect(err.code).toBe(-32001);
    expect(err.message).toMatch(/paused this session/);
    expect(existsSync(join(outside, 'nfd.txt'))).toBe(false);
    expect(existsSync(join(ws, 'cafe\u0301'))).toBe(false);
    expect(
      g
        .records()
        .filter((r) => r.type === 'event')
        .at(-1),
    ).toMatchObject({
      kind: 'write',
      target: nfd,
      verdict: 'PAUSE',
      boundary: 'workspace',
    });
  });

  it('a spelling equal to two entries in Unicode is refused as ambiguous', async () => {
    const a = await client();
    const records = g.records().length;
    const err = await refused(a.callTool(write(join(ws, '\u212b', 'x.txt'))));
    expect(err.code).toBe(-32602);
    expect(err.message).toMatch(/2 entries .* are the same name in Unicode/);
    expect(g.records().slice(records)).toEqual([
      expect.objectContaining({ type: 'refusal', status: 400 }),
    ]);
    for (const d of ['\u00c5', 'A\u030a']) expect(existsSync(join(ws, d, 'x.txt')), d).toBe(false);
  });

  it('an NFD spelling of a folder inside is written into that folder', async () => {
    mkdirSync(join(ws, 'r\u00e9sum\u00e9'));
    const a = await client();
    await a.callTool(write(join(ws, 're\u0301sume\u0301', 'cv.txt'), 'cv'));
    expect(readFileSync(join(ws, 'r\u00e9sum\u00e9', 'cv.txt'), 'utf8')).toBe('cv');
  });
});
