import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, bridgeGateway } from '../helpers/gateway.js';
import { mcpClient, rawMcpSession, startSupergateway } from '../helpers/mcp.js';
import { layout, tempDir } from '../helpers/tmp.js';

/**
 * The real server-filesystem behind supergateway, allowed on the workspace AND `outside`, so
 * only trajgate stands between an agent and `outside`. Its body parser honours charsets (a
 * UTF-7 body reads differently there than as UTF-8), and it acts on the tree as it is when the
 * call runs, not as trajgate saw it: a call racing another of the same agent must wait.
 */
const root = tempDir();
const ws = join(root, 'ws');
const outside = join(root, 'outside');
layout(root, ['ws', 'outside']);
const sg = await startSupergateway([ws, outside]);
const TOKEN = AGENT_TOKEN;
const g = await bridgeGateway(ws, sg.url);
const bridgeUrl = `http://127.0.0.1:${g.gw.bridge.port}/mcp`;
const clients: Client[] = [];
afterAll(() => Promise.all(clients.map((c) => c.close().catch(() => undefined))));

/** UTF-7 of `s`: as UTF-8 its `+…-` runs are plain text; a UTF-7 reader sees `s`. */
const utf7 = (s: string) =>
  s.replace(/[".]+/g, (run) => {
    const b64 = Buffer.from(run, 'utf16le').swap16().toString('base64').replace(/=+$/, '');
    return `+${b64}-`;
  });
const write = (path: string) =>
  `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"${path}","content":"x"}}}`;
// As UTF-8: a tools/list whose params hold one string. As UTF-7 the string closes early and a
// second `method` and `params` follow: JSON.parse keeps the last, a tools/call.
const smuggled = (path: string) =>
  `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"x":"${utf7(
    `"},"method":"tools/call","params":{"name":"write_file","arguments":{"path":"${path}","content":"x"},"y":"`,
  )}"}}`;

describe('a charset=utf-7 body', () => {
  const headers = { 'content-type': 'application/json; charset=utf-7' };

  it('control: without trajgate the server decodes it, `..` and a second method included', async () => {
    const direct = await rawMcpSession(sg.url);
    const dots = await direct.send(write(`${ws}/${utf7('..')}/outside/dots.txt`), headers);
    expect(dots.messages[0]?.result?.content?.[0]?.text).toMatch(/Successfully wrote/);
    expect(readFileSync(join(outside, 'dots.txt'), 'utf8')).toBe('x');
    await direct.send(smuggled(join(outside, 'smuggled.txt')), headers);
    expect(existsSync(join(outside, 'smuggled.txt'))).toBe(true);
  });

  it('through trajgate: 415, one journal record, nothing written', async () => {
    const s = await rawMcpSession(bridgeUrl, { authorization: `Bearer ${TOKEN}` });
    const bodies = [
      write(`${ws}/${utf7('..')}/outside/dots2.txt`),
      smuggled(join(outside, 'smuggled2.txt')),
    ];
    for (const body of bodies) {
      const records = g.records().length;
      const res = await s.send(body, headers);
      expect(res.status).toBe(415);
      expect(res.messages[0]?.error?.message).toMatch(
        /^trajgate: unsupported body: charset "utf-7"/,
      );
      expect(g.records().slice(records)).toEqual([
        expect.objectContaining({ type: 'refusal', session: 'agent-1', status: 415 }),
      ]);
    }
    expect(existsSync(join(outside, 'dots2.txt'))).toBe(false);
    expect(existsSync(join(outside, 'smuggled2.txt'))).toBe(false);
    // The same session still works in UTF-8.
    const ok = await s.send(write(join(ws, 'fine.txt')));
    expect(ok.messages[0]?.result?.content?.[0]?.text).toMatch(/Successfully wrote/);
  });
});

describe('one changing call at a time per session', () => {
  // A folder holding a link to outside is moved into place while a write through the new
  // name is in flight. Judged before the move, the write's path is a plain new path inside;
  // run after it, the server follows the link outside. Serialised, the write is either judged
  // after the move (outside: refused) or runs before it (its folder does not exist yet).
  it('a move_file racing a write_file of the same agent never writes outside (30 races)', async () => {
    const client = await mcpClient(bridgeUrl, TOKEN);
    clients.push(client);
    for (let i = 0; i < 30; i++) {
      mkdirSync(join(ws, `trap${i}`));
      mkdirSync(join(outside, `t${i}`));
      symlinkSync(join(outside, `t${i}`), join(ws, `trap${i}`, 'sub'));
      const settled = await Promise.allSettled([
        client.callTool({
          name: 'move_file',
          arguments: { source: `trap${i}`, destination: `d${i}` },
        }),
        client.callTool({
          name: 'write_file',
          arguments: { path: `d${i}/sub/pwn.txt`, content: 'pwned' },
        }),
      ]);
      expect(existsSync(join(outside, `t${i}`, 'pwn.txt')), `race ${i}`).toBe(false);
      expect(settled[0].status, `race ${i}: the move`).toBe('fulfilled');
      if (g.gw.sessions.isPaused('agent-1')) g.gw.sessions.resume('agent-1');
    }
  });
});
