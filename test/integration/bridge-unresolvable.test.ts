import { linkSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { AGENT_TOKEN, bridgeGateway } from '../helpers/gateway.js';
import { mcpClient, refused, startSupergateway } from '../helpers/mcp.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * With the real server-filesystem: a path trajgate cannot resolve (a link loop,
 * a name too long) and a write to a file with another hard link (outside) are refused as
 * JSON-RPC errors with one journal record each, and nothing reaches the tool server.
 */
const ws = tempDir();
const outside = tempDir();
symlinkSync('loop', join(ws, 'loop'));
writeFileSync(join(outside, 'target'), 'outside');
linkSync(join(outside, 'target'), join(ws, 'linked'));
const sg = await startSupergateway([ws]);
const g = await bridgeGateway(ws, sg.url);
let client: Client;
afterAll(() => client?.close().catch(() => undefined));
afterEach(() => {
  if (g.gw.sessions.isPaused('agent-1')) g.gw.sessions.resume('agent-1', { reset: true });
});

const last = (): EventRecord =>
  g
    .records()
    .filter((r): r is EventRecord => r.type === 'event')
    .at(-1) as EventRecord;

describe('through trajgate', () => {
  it.each([
    ['read_text_file', { path: 'loop/secret' }],
    ['read_text_file', { path: `${'n'.repeat(300)}/x` }],
    ['write_file', { path: 'loop/x', content: 'x' }],
    ['list_directory', { path: 'loop' }],
  ])('%s %j: unresolvable, refused', async (name, args) => {
    client ??= await mcpClient(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, AGENT_TOKEN);
    const before = g.records().length;
    const err = await refused(client.callTool({ name, arguments: args }));
    expect(err.message).toMatch(/cannot be resolved/);
    expect(last()).toMatchObject({ resolved: null });
    expect(last().verdict).not.toBe('ALLOW');
    expect(last().denied).toMatch(/cannot be resolved/);
    // One event record (its outcome says it was refused), and not an ALLOW.
    const added = g.records().slice(before);
    expect(added.filter((r) => r.type === 'event')).toHaveLength(1);
    expect(added.find((r) => r.type === 'outcome')).toMatchObject({ bytesDown: 0 });
  });

  it('a write to a file hard-linked outside is refused; the outside name is unchanged', async () => {
    client ??= await mcpClient(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, AGENT_TOKEN);
    const err = await refused(
      client.callTool({
        name: 'write_file',
        arguments: { path: 'linked', content: 'overwritten' },
      }),
    );
    expect(err.message).toMatch(/other hard links: its other names may be outside the workspace/);
    expect(readFileSync(join(outside, 'target'), 'utf8')).toBe('outside');
    expect(last()).toMatchObject({ kind: 'write', target: 'linked', verdict: 'REVIEW' });
    expect(last().resolved).toBe(join(ws, 'linked'));
  });
});
