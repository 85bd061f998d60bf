import { parseArgs } from 'node:util';
import { loadOperatorConfig } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import type { HealthView } from '../wire.js';
import type { Check, DoctorContext } from './doctor-context.js';
import { doctorSession, whoProbes } from './doctor-context.js';
import { clock, dataPaths, fdLimit, journal, store } from './doctor-gateway.js';
import { adminHidden, unlistedRefused } from './doctor-proxy.js';
import { tlsClients } from './doctor-tls.js';
import { usageOf } from './help.js';
import { adminClient } from './operator.js';
import { terminalJson, terminalText } from './table.js';

const JOURNAL_DOWN =
  'skipped: the gateway refuses every request until it can write its journal (see journal)';

/**
 * `trajgate doctor`: a live self-test of what the running gateway enforces, and of the machine
 * it runs on. One line per check, exit 1 when any fails; --json an array of {check, ok, detail}.
 * A check that cannot run (the gateway unreachable) fails with why.
 */
export async function doctor(argv: string[], write: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string' }, json: { type: 'boolean' }, agent: { type: 'string' } },
  });
  if (positionals.length > 0) throw new TrajgateError('E_USAGE', usageOf('doctor'));
  const config = loadOperatorConfig(values.config);
  const admin = adminClient(undefined, values.config, config);
  const who = whoProbes(config, values.agent);
  const ctx: DoctorContext = { config, admin, who, session: doctorSession(admin, who.session) };
  const health = (await admin.call('GET', '/api/health')) as HealthView;
  const checks: Check[] = [];
  const guarded = async (name: string, run: () => Promise<Check | Check[]>) => {
    try {
      checks.push(...[await run()].flat());
    } catch (err) {
      checks.push({ check: name, ok: false, detail: (err as Error).message });
    }
  };
  // While its journal cannot be written the gateway refuses every request (503): a probe
  // through the proxy would prove nothing about the policy.
  const probe = (name: string, run: () => Promise<Check | Check[]>) =>
    guarded(name, async () =>
      health.journal.writable ? run() : { check: name, ok: true, detail: JOURNAL_DOWN },
    );
  await probe('unlisted-refused', () => unlistedRefused(ctx));
  await probe('admin-hidden', () => adminHidden(ctx));
  await probe('tls', () => tlsClients(ctx));
  await guarded('journal', () => journal(ctx, health));
  let time: Awaited<ReturnType<typeof store>>['time'] = null;
  await guarded('store', async () => {
    const s = await store(ctx, health);
    time = s.time;
    return s.check;
  });
  await guarded('clock', () => clock(ctx, time));
  await guarded('fd-limit', () => fdLimit(ctx));
  await guarded('data-paths', async () => dataPaths(ctx));
  if (values.json) write(terminalJson(checks));
  else
    for (const c of checks)
      write(terminalText(`${c.ok ? 'ok  ' : 'FAIL'} ${c.check}: ${c.detail}`));
  return checks.every((c) => c.ok) ? 0 : 1;
}
