import { describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { startChild, tempConfig } from '../helpers/child-gateway.js';
import { viaReplica } from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * The embedded default needs no Redis anywhere: a config without `state` starts,
 * decides and journals with no Redis server running and none named in the environment.
 */
const upstream = await startUpstream();
const ADMIN = 'admin-token-0123456789abcdef';

describe('state: the embedded default', () => {
  it('a config without `state` starts and decides with no Redis anywhere', async () => {
    for (const k of Object.keys(process.env)) if (/redis/i.test(k)) delete process.env[k];
    const { config } = tempConfig({
      admin: { token: ADMIN },
      agents: [{ id: 'solo', token: 'solo-token-0123456789abcdef' }],
      network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    });
    const g = await startChild(config);
    expect(g.banner).not.toMatch(/redis/i);
    const res = await viaReplica(g.proxyPort, `${upstream.url}/alone`, 'solo').answer;
    expect(res.status).toBe(200);
    const health = await adminClient(g.adminPort, ADMIN).get('/api/health');
    expect(health.json.status).toBe('ok');
    await g.kill('SIGTERM');
  });
});
