import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * The container files, read as Docker reads them (no engine runs here): the HEALTHCHECK asks
 * the image config's admin port, compose waits for it and outlasts the drain, and the build
 * context leaves out what trajgate keeps secret.
 */
const root = join(import.meta.dirname, '../..');
const read = (name: string) => readFileSync(join(root, name), 'utf8');

const imageConfig = parse(read('config/trajgate.docker.yaml'));
const adminPort = Number(String(imageConfig.listen.admin).split(':').at(-1));
const drainSeconds = Number(/^(\d+)s$/.exec(imageConfig.limits?.drainTimeout ?? '10s')?.[1]);

describe('Dockerfile', () => {
  it("checks liveness on the image config's admin port, with Node", () => {
    const healthcheck = /^HEALTHCHECK .*\\\n\s*CMD (.*)$/m.exec(read('Dockerfile'));
    expect(healthcheck).not.toBeNull();
    const cmd = JSON.parse(healthcheck?.[1] ?? '[]') as string[];
    expect(cmd[0]).toBe('node');
    expect(cmd.join(' ')).toContain(`http://127.0.0.1:${adminPort}/healthz`);
  });
});

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml'));
  it('starts the agent once trajgate is healthy', () => {
    expect(compose.services.agent.depends_on).toEqual({
      trajgate: { condition: 'service_healthy' },
    });
  });
  it('gives trajgate longer than its drain to stop', () => {
    const grace = /^(\d+)s$/.exec(compose.services.trajgate.stop_grace_period);
    expect(Number(grace?.[1])).toBeGreaterThan(drainSeconds);
  });
});

describe('.dockerignore', () => {
  it('keeps data, secrets and the workspace out of the build context', () => {
    const lines = read('.dockerignore').split('\n');
    for (const entry of ['data', 'workspace', 'certs', '**/*.pem', '**/*.key', '**/admin-token'])
      expect(lines).toContain(entry);
    // The build needs these: ignoring one would fail `docker build`.
    for (const entry of ['src', 'config', 'package.json', 'package-lock.json', 'tsconfig.json'])
      expect(lines).not.toContain(entry);
  });
});
