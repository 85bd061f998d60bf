import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedSentinel } from '../../src/event/sentinels.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';

const CREDENTIALS = {
  credentials: [
    { name: 'github', value: 'github-real-value-0123456789', hosts: ['api.github.com'] },
    {
      name: 'fixed',
      value: 'fixed-real-value-0123456789',
      hosts: ['a.example'],
      sentinel: 'tgs_fixed_0123456789abcdef',
    },
  ],
};

describe("a running gateway's credentials", () => {
  it('get a sentinel from a key made beside the journal (0600), the same after a restart', async () => {
    const dir = tempDir();
    const first = await startTestGateway(CREDENTIALS, { dir });
    const sentinels = first.gw.credentials.armed.map((c) => c.sentinel);
    await first.stop();
    const file = join(dir, 'credential-key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
    expect(sentinels).toEqual([generatedSentinel(key, 'github'), 'tgs_fixed_0123456789abcdef']);

    const again = await startTestGateway(CREDENTIALS, { dir });
    expect(again.gw.credentials.armed.map((c) => c.sentinel)).toEqual(sentinels);
    expect(again.gw.credentials.armed[0]?.value).toBe('github-real-value-0123456789');
    await again.stop();
  });

  it('make no key while none needs one', async () => {
    const dir = tempDir();
    const t = await startTestGateway({ credentials: [CREDENTIALS.credentials[1]] }, { dir });
    expect(t.gw.credentials.armed.map((c) => c.sentinel)).toEqual(['tgs_fixed_0123456789abcdef']);
    await t.stop();
    expect(existsSync(join(dir, 'credential-key'))).toBe(false);
  });
});
