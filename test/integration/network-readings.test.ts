import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { runCliPiped } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { AGENT_TOKEN, bridgeGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent, startIngestGateway } from '../helpers/ingest.js';
import { exchange } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * A network target another client fetches (the runner behind an ingest event or a hook, a tool
 * server behind a bridge route) is refused where WHATWG URL and RFC 3986 read it apart: 400
 * E_EVENT_INVALID with a one-line reason, one refusal record, no event judged. Nothing here
 * is fetched: the targets only name hosts.
 */
const ws = tempDir();
let g: TestGateway;
let bridge: string;
beforeAll(async () => {
  ({ g, bridge } = await startIngestGateway(ws, ['runner', 'hook', 'fine']));
});
afterAll(() => g.stop());

const isEvent = (r: JournalRecord): r is EventRecord => r.type === 'event';
/** What one call added to the journal, once its answer is back. */
async function added(act: () => Promise<unknown>): Promise<JournalRecord[]> {
  const before = g.records().length;
  await act();
  return g.records().slice(before);
}
const oneRefusal = (session: string, source = 'ingest') => [
  expect.objectContaining({ type: 'refusal', source, session, status: 400 }),
];

const spellings: [string, RegExp][] = [
  ['http://good.example\\@evil.example/', /"\\" in its host part/],
  ['http://user@good.example/', /user name/],
  ['http://good.example#@evil.example/', /"@" after the "\?" or "#"/],
  ['http://exa\tmple.com/', /tab, newline/],
  ['http://ex%61mple.com/', /percent-encodes its host/],
  ['http://127.1/', /"127\.1" that is the IPv4 address 127\.0\.0\.1/],
  ['http://2130706433/', /IPv4 address 127\.0\.0\.1/],
  ['example.com/api', /has no "scheme:\/\/"/],
];

describe('POST /events: network targets two parsers read apart', () => {
  it.each(spellings)('%j → 400 E_EVENT_INVALID, one refusal record', async (target, why) => {
    let res: Awaited<ReturnType<typeof postAsAgent>> | undefined;
    const records = await added(async () => {
      res = await postAsAgent(`${bridge}/events`, 'runner', { kind: 'network', target });
    });
    expect(res?.status).toBe(400);
    expect(res?.json.error.code).toBe('E_EVENT_INVALID');
    expect(res?.json.error.message).toMatch(why);
    expect(res?.json.error.message).not.toMatch(/\n/);
    expect(records).toEqual(oneRefusal('runner'));
  });

  it('a URL both read alike is judged as before', async () => {
    const res = await postAsAgent(`${bridge}/events`, 'fine', {
      kind: 'network',
      target: 'https://docs.example.com/v1/search?q=a@b.example',
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ verdict: 'REVIEW', boundary: 'network' });
    expect(g.records().filter(isEvent).at(-1)).toMatchObject({ session: 'fine', kind: 'network' });
  });
});

describe('trajgate check: the hook refuses them through the gateway', () => {
  const check = (args: string[], input?: string) =>
    runCliPiped(['check', ...args, '--bridge', bridge], {
      env: { TRAJGATE_AGENT_TOKEN: agentToken('hook'), TRAJGATE_BRIDGE: '' },
      ...(input === undefined ? {} : { input }),
    });
  const webFetch = (url: string) =>
    JSON.stringify({
      hook_event_name: 'PreToolUse',
      tool_name: 'WebFetch',
      tool_input: { url, prompt: 'summarise' },
      tool_use_id: 'toolu_01',
      cwd: ws,
    });

  it.each(spellings)('WebFetch %j → exit 2, one line, journaled', async (url, why) => {
    let r: Awaited<ReturnType<typeof check>> | undefined;
    const records = await added(async () => {
      r = await check(['--hook', 'claude-code'], webFetch(url));
    });
    expect(r?.status).toBe(2);
    expect(r?.stderr).toMatch(/^trajgate: the gateway answered 400: network target /);
    expect(r?.stderr).toMatch(why);
    expect(r?.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(records).toEqual(oneRefusal('hook'));
  });

  it('--kind network --target http://0x7f.1/ → exit 2 naming the reading', async () => {
    let r: Awaited<ReturnType<typeof check>> | undefined;
    const records = await added(async () => {
      r = await check(['--kind', 'network', '--target', 'http://0x7f.1/']);
    });
    expect(r?.status).toBe(2);
    expect(r?.stderr).toMatch(/"0x7f\.1" that is the IPv4 address 127\.0\.0\.1 to WHATWG URL/);
    expect(records).toEqual(oneRefusal('hook'));
  });
});

describe('a bridge route whose target is a URL the tool server fetches', () => {
  it('is refused before the tool server sees the call', async () => {
    const tools = await startUpstream();
    const b = await bridgeGateway(tempDir(), tools.url, {
      protocol: 'http',
      routes: [{ method: 'POST', path: '/fetch', kind: 'network', target: '$.url' }],
    });
    const body = JSON.stringify({ url: 'http://docs.example.com\\@127.0.0.1/' });
    const head = [
      'POST /fetch HTTP/1.1',
      'Host: tools',
      `Authorization: Bearer ${AGENT_TOKEN}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ];
    const before = b.records().length;
    const res = await exchange(b.gw.bridge.port, `${head.join('\r\n')}\r\n\r\n${body}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/^trajgate: [^\n]*"\\" in its host part[^\n]*\n$/);
    expect(b.records().slice(before)).toEqual(oneRefusal('agent-1', 'bridge'));
    expect(tools.seen).toEqual([]);
  });
});
