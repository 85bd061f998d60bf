import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { refusedByBoth } from '../helpers/cli.js';
import { spawnGateway, writeConfig } from '../helpers/child-gateway.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * What `trajgate start` says before it serves, the workspace it refuses to start without, and
 * trajgate's data it refuses to keep inside a workspace.
 */
let stop: (() => Promise<unknown>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('trajgate start', () => {
  it('says when the allowlist is empty and lists the intercepted hosts', async () => {
    const ca = makeLocalCa();
    const g = await spawnGateway({
      tls: { intercept: ['registry.npmjs.org', '*.pypi.org:443'], ca: ca.dir },
    });
    stop = () => (g.cli.child.kill('SIGTERM'), g.cli.exited);
    const out = g.cli.output().stderr;
    expect(out).toContain(
      'trajgate: allows nothing yet: add network.allow (until then each request is reviewed)\n',
    );
    expect(out).toContain(
      `trajgate: TLS interception for registry.npmjs.org, *.pypi.org:443 (CA ${ca.dir}; agents must trust it: trajgate ca show)\n`,
    );
    expect(out).toMatch(/trajgate: bridge on http:\/\/127\.0\.0\.1:[1-9]\d*\/: runner hooks only/);
  });

  it('an allowlist silences the hint', async () => {
    const g = await spawnGateway({ network: { allow: ['example.org'] } });
    stop = () => (g.cli.child.kill('SIGTERM'), g.cli.exited);
    expect(g.cli.output().stderr).not.toContain('allows nothing yet');
  });

  it('a workspace that does not exist is a startup error naming the key, the path and the line', () => {
    const dir = tempDir();
    const config = writeConfig(dir, {
      version: 1,
      workspace: './missing',
      journal: join(tempDir(), 'journal.jsonl'),
      agents: [{ id: 'a1', token: 'a'.repeat(20), workspace: join(dir, 'gone') }],
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    });
    refusedByBoth(config, [
      `trajgate: ${config}: no such workspace`,
      `  ${config}:2:1: workspace: ${dir}/missing does not exist (create it, or change workspace)`,
      `  ${config}:7:5: agents[0].workspace: ${dir}/gone does not exist (create it, or change agents[0].workspace)`,
    ]);
  });

  it("trajgate's data inside a workspace is a startup error naming both paths and keys", () => {
    const dir = tempDir();
    const ws = join(dir, 'ws');
    mkdirSync(join(ws, 'agent'), { recursive: true });
    const config = writeConfig(dir, {
      version: 1,
      workspace: './ws',
      journal: './ws/.trajgate/journal.jsonl',
      agents: [{ id: 'a1', token: 'a'.repeat(20), workspace: './ws/agent' }],
      tls: { ca: './ws/agent/certs' },
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    });
    const then = ', where the agent could read or rewrite it: move one of them';
    refusedByBoth(config, [
      `trajgate: ${config}: trajgate's data and a workspace overlap`,
      `  ${config}:3:1: journal.path: the journal's folder ${ws}/.trajgate is inside the workspace ${ws} (workspace)${then}`,
      `  ${config}:9:3: tls.ca: the CA certificate ${ws}/agent/certs/ca.pem is inside the workspace ${ws} (workspace)${then}`,
      `  ${config}:9:3: tls.ca: the CA certificate ${ws}/agent/certs/ca.pem is inside the workspace ${ws}/agent (agents[0].workspace)${then}`,
      `  ${config}:9:3: tls.ca: the CA key ${ws}/agent/certs/ca-key.pem is inside the workspace ${ws} (workspace)${then}`,
      `  ${config}:9:3: tls.ca: the CA key ${ws}/agent/certs/ca-key.pem is inside the workspace ${ws}/agent (agents[0].workspace)${then}`,
    ]);
    // Refused before the journal was opened.
    expect(existsSync(join(ws, '.trajgate'))).toBe(false);
  });
});
