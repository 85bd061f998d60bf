import { describe, expect, it } from 'vitest';
import type { OutcomeRecord } from '../../src/journal/records.js';
import { runCliPiped } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { AGENT_TOKEN, gatewayPerTest } from '../helpers/gateway.js';
import { startTcpServer } from '../helpers/raw.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * `trajgate connect HOST PORT` (the built CLI) against a gateway in this process: standard
 * input and output over a CONNECT with the credentials of https_proxy, half-closes passed on,
 * refusals on stderr with the gateway's reason, usage errors exit 2.
 */
/** Answers once its client is done sending (a half-close): what it read, then closes. */
const afterEnd = await startTcpServer((socket) => {
  let got = '';
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => (got += d));
  socket.once('end', () => socket.end(`read ${got.length} bytes: ${got}`));
});
let heard = '';
/** Says hello and ends its side at once, then reads what its client still sends. */
const endsFirst = await startTcpServer((socket) => {
  socket.end('hello\n');
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => (heard += d));
});
const TARGET = `127.0.0.1:${afterEnd.port}`;
const AGENT = 'agent-1';

const { start } = gatewayPerTest({
  agents: [{ id: AGENT, token: AGENT_TOKEN }],
  network: { allow: [TARGET, `127.0.0.1:${endsFirst.port}`], allowPrivate: ['127.0.0.1/32'] },
});

const proxy = (g: TestGateway, user = `${AGENT}:${AGENT_TOKEN}@`) =>
  `http://${user}127.0.0.1:${g.gw.proxy.port}`;

/** The CLI with only https_proxy naming the gateway (neither case of it inherited). */
const connect = (args: string[], env: NodeJS.ProcessEnv, input = '') =>
  runCliPiped(['connect', ...args], {
    input,
    env: { https_proxy: undefined, HTTPS_PROXY: undefined, ...env },
  });

describe('trajgate connect', () => {
  it('relays stdin up and the answer down; the end of stdin reaches the server as a half-close', async () => {
    const g = await start();
    const r = await connect(
      ['127.0.0.1', String(afterEnd.port)],
      { https_proxy: proxy(g) },
      'hello',
    );
    expect(r).toEqual({ status: 0, stdout: 'read 5 bytes: hello', stderr: '' });
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    expect(records.find((x) => x.type === 'event')).toMatchObject({
      session: AGENT,
      target: TARGET,
    });
    expect(records.find((x): x is OutcomeRecord => x.type === 'outcome')).toMatchObject({
      status: 200,
      bytesUp: 5,
      protocol: 'unknown',
    });
  });

  it("the server's end of stream ends stdout; what stdin sends still goes up", async () => {
    const g = await start();
    const r = await connect(
      ['127.0.0.1', String(endsFirst.port)],
      { https_proxy: proxy(g) },
      'abc',
    );
    expect(r).toEqual({ status: 0, stdout: 'hello\n', stderr: '' });
    await waitFor(() => heard === 'abc', 20_000, 'the server read what stdin sent');
  });

  it('reads HTTPS_PROXY when https_proxy is unset', async () => {
    const g = await start();
    const r = await connect(['127.0.0.1', String(afterEnd.port)], { HTTPS_PROXY: proxy(g) }, 'x');
    expect(r.stdout).toBe('read 1 bytes: x');
    expect(r.status).toBe(0);
  });

  it('a refusal exits 1 naming host:port and the gateway reason, never the token', async () => {
    const g = await start();
    const wrong = await connect(['127.0.0.1', String(afterEnd.port)], {
      https_proxy: proxy(g, `${AGENT}:not-the-token-0123456789@`),
    });
    expect(wrong.status).toBe(1);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr).toBe(
      `trajgate connect: ${TARGET} through http://127.0.0.1:${g.gw.proxy.port}: refused (407): trajgate: wrong agent id or token\n`,
    );
    const none = await connect(['127.0.0.1', String(afterEnd.port)], { https_proxy: proxy(g, '') });
    expect(none.stderr).toContain(
      'refused (407): trajgate: proxy credentials required (agent id and token)',
    );
    const port = await connect(['127.0.0.1', '1'], { https_proxy: proxy(g) });
    expect(port.status).toBe(1);
    expect(port.stderr).toMatch(/^trajgate connect: 127\.0\.0\.1:1 through .*: refused \(403\): /);
    expect(port.stderr).not.toContain(AGENT_TOKEN);
  });

  it.each([
    [[], 'expected HOST PORT'],
    [['host'], 'expected HOST PORT'],
    [['host', '0'], 'port "0": expected a number 1-65535'],
    [['host', '65536'], 'port "65536": expected a number 1-65535'],
    [['host', '22x'], 'port "22x": expected a number 1-65535'],
    [['a b', '22'], 'host "a b": expected a host name or an IP address'],
    [['a@b', '22'], 'host "a@b": expected a host name or an IP address'],
    [['a:b', '22'], 'host "a:b": expected a host name or an IP address'],
  ])('usage %j: exit 2, %s', async (args, why) => {
    const r = await connect(args, { https_proxy: 'http://127.0.0.1:9' });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`trajgate connect: ${why}\nusage: trajgate connect HOST PORT\n`);
  });

  it.each([
    ['answers no HTTP', 'SSH-2.0-x\r\n\r\n', "the proxy's answer is not HTTP/1.1"],
    ['closes without an answer', '', 'the proxy closed the connection without an answer'],
    [
      'sends a head over 64 KiB',
      `HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70_000)}`,
      "the proxy's answer is over 65536 bytes",
    ],
  ])('a proxy that %s: exit 1', async (_what, answer, why) => {
    const fake = await startTcpServer((socket) => {
      socket.once('data', () => socket.end(answer));
    });
    const r = await connect(['h.example', '22'], { https_proxy: `http://127.0.0.1:${fake.port}` });
    expect(r).toEqual({
      status: 1,
      stdout: '',
      stderr: `trajgate connect: h.example:22 through http://127.0.0.1:${fake.port}: ${why}\n`,
    });
  });

  it.each([
    [{}, 'no proxy: set https_proxy or HTTPS_PROXY to the gateway'],
    [{ https_proxy: 'not a url' }, 'https_proxy is not a URL'],
    [
      { https_proxy: 'https://127.0.0.1:9' },
      'https_proxy (https://127.0.0.1:9): expected an http:// proxy URL',
    ],
  ])('proxy %j: exit 1, %s', async (env, why) => {
    const r = await connect(['127.0.0.1', '22'], env);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`trajgate connect: ${why}`);
  });
});
