// Prints the config keys a reload cannot apply (they need a restart), as the gateway's parts
// declare them (src/gateway/config-parts.ts `ConfigParts.restartKeys`): the list
// docs/configuration.md's "Reloading the config" gives, in the form it gives it
// (test/integration/reload-keys-doc.test.ts holds the two together). Every other key takes
// effect on reload. Run after `npm run build`:
//   node scripts/reload-keys.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { defaultConfig } from '../dist/config/load.js';
import { startGateway } from '../dist/gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'trajgate-keys-'));
const workspace = mkdtempSync(join(tmpdir(), 'trajgate-keys-ws-'));
try {
  const config = defaultConfig(workspace, { TRAJGATE_DATA: dir });
  const port0 = { host: '127.0.0.1', port: 0 };
  const gateway = await startGateway(
    { ...config, listen: { proxy: port0, bridge: port0, admin: port0 } },
    { log: pino({ level: 'silent' }) },
  );
  const keys = gateway.parts.restartKeys();
  await gateway.stop();
  console.log(keys.map((k) => `\`${k}\``).join(', '));
} finally {
  rmSync(dir, { recursive: true, force: true });
  rmSync(workspace, { recursive: true, force: true });
}
