import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { startChild } from '../helpers/child-gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * README § A worked example, run as written: its config, its shells' commands through `sh`
 * with `trajgate` on the PATH, and each command's output compared with the one the README
 * shows (timestamps, ports and the folder aside; `…` in the README stands for text it trims).
 * The README's two `node -e` servers listen on fixed ports; here they are servers of this
 * process on port 0 that answer the same way, and the config names their ports.
 */
const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
const SECTION = /\n## A worked example\n([\s\S]*?)\n## /.exec(README)?.[1] ?? '';

/** A command the README shows (`$ …`) and the lines it printed. */
interface Step {
  command: string;
  output: string[];
}

/** The ```console blocks of the section, as steps in order (indented blocks included). */
function steps(section: string): Step[] {
  const out: Step[] = [];
  for (const block of section.matchAll(/^( *)```console\n([\s\S]*?)^\1```$/gm)) {
    const indent = block[1]!.length;
    for (const line of block[2]!.split('\n').map((l) => l.slice(indent))) {
      if (line.startsWith('$ ')) out.push({ command: line.slice(2), output: [] });
      else if (line !== '') out.at(-1)?.output.push(line);
    }
  }
  return out;
}

const STEPS = steps(SECTION);
const step = (prefix: string, also: (command: string) => boolean = () => true): Step => {
  const found = STEPS.find((s) => s.command.startsWith(prefix) && also(s.command));
  if (!found) throw new Error(`README § A worked example shows no "$ ${prefix}…"`);
  return found;
};
const CONFIG = /```yaml\n([\s\S]*?)```/.exec(SECTION)?.[1] ?? '';

/** The stand-in for the README's upstream: `METHOD URL: ok`. */
const upstream = createServer((q, s) => s.end(`${q.method} ${q.url}: ok\n`));
await new Promise<void>((r) => upstream.listen(0, '127.0.0.2', r));
afterAll(() => new Promise<void>((r) => upstream.close(() => r())));
const UP = (upstream.address() as AddressInfo).port;
const hook = await startWebhook();

const dir = tempDir();
mkdirSync(join(dir, 'ws'));
mkdirSync(join(dir, 'bin'));
symlinkSync(CLI, join(dir, 'bin', 'trajgate'));
const config = CONFIG.replace('127.0.0.2:9000', `127.0.0.2:${UP}`).replace(
  'http://127.0.0.1:9001/',
  hook.url,
);
// The gateway listens on port 0; the commands read the ports it took from trajgate.yaml.
writeFileSync(
  join(dir, 'start.yaml'),
  `${config}listen: { proxy: 127.0.0.1:0, bridge: 127.0.0.1:0, admin: 127.0.0.1:0 }\n`,
);
const TOKEN = 'agent-1-token-0123456789abcdef';
const gateway = await startChild(join(dir, 'start.yaml'), 20_000, { AGENT_1_TOKEN: TOKEN });
const BRIDGE = Number(/bridge on http:\/\/127\.0\.0\.1:(\d+)/.exec(gateway.banner)?.[1]);
writeFileSync(
  join(dir, 'trajgate.yaml'),
  `${config}listen: { proxy: 127.0.0.1:${gateway.proxyPort}, bridge: 127.0.0.1:${BRIDGE}, admin: 127.0.0.1:${gateway.adminPort} }\n`,
);

/** A shell in the example's folder: `trajgate` on its PATH, the agent's token, nothing else. */
function sh(script: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      'sh',
      ['-c', script],
      {
        cwd: dir,
        env: { PATH: `${join(dir, 'bin')}:${process.env.PATH}`, AGENT_1_TOKEN: TOKEN },
        timeout: 60_000,
      },
      (_err, stdout, stderr) => resolve(stdout + stderr),
    );
  });
}

/** What differs between runs: the folder, the config's name here, ports, times. */
function normal(text: string): string[] {
  const ports: [number, number][] = [
    [gateway.proxyPort, 8080],
    [BRIDGE, 8081],
    [gateway.adminPort, 8082],
    [UP, 9000],
  ];
  let t = text.replaceAll(join(dir, 'start.yaml'), 'trajgate.yaml').replaceAll(dir, '/tmp/demo');
  for (const [from, to] of ports) t = t.replace(new RegExp(`:${from}\\b`, 'g'), `:${to}`);
  return (
    t
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'TIME')
      .replace(/\b(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC\b/g, 'HH:MM:SS UTC')
      // The host's open-files limit, and so the connections it leaves room for.
      .replace(
        /open files limit \S+ \(ulimit -n\); allows \d+/,
        'open files limit N (ulimit -n); allows N',
      )
      .split('\n')
      .map((l) => l.replace(/ +/g, ' ').trimEnd())
      .filter((l) => l !== '')
  );
}

/** The lines the README shows, `…` matching any text. */
function expectShown(actual: string, shown: string[]): void {
  const got = normal(actual);
  const want = normal(shown.join('\n'));
  expect(got).toHaveLength(want.length);
  want.forEach((line, i) => {
    const pattern = line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    expect(got[i]).toMatch(new RegExp(`^${pattern}$`));
  });
}

describe('README § A worked example', () => {
  it('shows a config, the gateway, the agent and the operator', () => {
    expect(CONFIG).toContain("token: '${AGENT_1_TOKEN}'");
    expect(STEPS.map((s) => s.command.split(' ').slice(0, 2).join(' '))).toEqual(
      expect.arrayContaining(['trajgate start', 'curl -s', 'trajgate sessions', 'trajgate verify']),
    );
  });

  it('start prints what the README shows', async () => {
    const start = step('trajgate start');
    expect(start.command).toBe('trajgate start --config trajgate.yaml');
    // The lines after the review page's come a moment later.
    await waitFor(() => gateway.stderr().includes('prints the rest'), 10_000, 'the banner');
    expectShown(gateway.stderr(), start.output);
  });

  it('the agent gets an ALLOW, a REVIEW, then is held; the operator sees it and decides by a link', async () => {
    const env = step('eval "$(trajgate env').command;
    const [get, post] = STEPS.filter((s) => s.command.startsWith('curl -s'));
    const held = STEPS.filter((s) => s.command.startsWith('curl -s -X POST --data'))[1];
    const upPort = (command: string) => command.replace('127.0.0.2:9000', `127.0.0.2:${UP}`);

    expectShown(await sh(`${env}\n${upPort(get!.command)}`), get!.output);
    expectShown(await sh(`${env}\n${upPort(post!.command)}`), post!.output);
    const waiting = sh(`${env}\n${upPort(held!.command)}`);

    // The README's receiver writes the notification to webhook.json.
    await waitFor(() => hook.deliveries.some((d) => d.body.kind === 'pause'), 20_000, 'pause');
    const pause = hook.deliveries.find((d) => d.body.kind === 'pause');
    writeFileSync(join(dir, 'webhook.json'), JSON.stringify(pause!.body));

    for (const s of [
      step('trajgate sessions'),
      step('trajgate events', (c) => !c.includes('--limit')),
    ]) {
      expectShown(await sh(s.command), s.output);
    }
    const text = step('node -p "require(\'./webhook.json\').text"');
    expectShown(await sh(text.command), text.output);

    const link = step('curl -s -X POST "$(node -p');
    expectShown(await sh(link.command), link.output);
    expect(await waiting).toBe('POST /upload: ok\n');
    expect(README).toContain("The agent's held `curl` then prints `POST /upload: ok`");

    const last = step('trajgate events', (c) => c.includes('--limit 1'));
    expectShown(await sh(last.command), last.output);
    const verify = step('trajgate verify');
    expectShown(await sh(verify.command), verify.output);
  });

  it('Ctrl-C drains and stops as the README says', async () => {
    const { code } = await gateway.kill('SIGINT');
    expect(code).toBe(0);
    const said = /`(trajgate: stopped in \d+ ms; everything drained; journal synced)`/.exec(
      SECTION,
    )?.[1];
    expect(said).toBeDefined();
    expect(gateway.stderr()).toMatch(
      /trajgate: stopped in \d+ ms; everything drained; journal synced/,
    );
  });
});
