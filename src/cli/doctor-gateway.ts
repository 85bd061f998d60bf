import { dataInWorkspaces } from '../config/own-files.js';
import { needSet } from '../config/operator-config.js';
import { FIXES } from '../os-error.js';
import { connectRedis, redisWhere } from '../state/connect.js';
import { chainFiles, verifyChain } from '../journal/verify.js';
import type { HealthView } from '../wire.js';
import type { Check, DoctorContext } from './doctor-context.js';
import { fdLines } from './fd-limit.js';

/** Clocks further apart than this make TTLs, decision links and the journal's times disagree. */
export const MAX_SKEW_MS = 2_000;

/**
 * How far `remote` (a whole second, as an HTTP Date or Redis TIME gives it) lies outside the
 * local interval [before, after] it was read in; 0 when inside. The remote second covers
 * [remote, remote + 1 s).
 */
export function skewMs(before: number, after: number, remote: number, resolution = 1_000): number {
  if (remote + resolution <= before) return before - (remote + resolution);
  if (remote > after) return remote - after;
  return 0;
}

const skewText = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The gateway can write its journal, and the chain of its files verifies from here. */
export async function journal(ctx: DoctorContext, health: HealthView): Promise<Check> {
  const check = 'journal';
  const j = health.journal;
  if (!j.writable) {
    const error = j.lastFailure?.error ?? 'no error given';
    // The writer's error says what to do for the codes osMessage knows (FIXES).
    const code = /^(E[A-Z]+):/.exec(error)?.[1];
    const known = code !== undefined && Object.hasOwn(FIXES, code);
    return {
      check,
      ok: false,
      detail: `the gateway cannot write ${j.path} since ${j.failingSince}, so requests are refused until it can: ${error}${known ? '' : '; free space or fix its permissions'}`,
    };
  }
  try {
    const { records } = verifyChain(chainFiles(ctx.config.journal.path));
    return { check, ok: true, detail: `${j.path} writable; ${records} records, chain intact` };
  } catch (err) {
    return {
      check,
      ok: false,
      detail: `${(err as Error).message} (trajgate verify --config ${ctx.config.source} says the same)`,
    };
  }
}

/** The store answers the gateway, and (Redis) the doctor: PING, and TIME for the clock check. */
export async function store(
  ctx: DoctorContext,
  health: HealthView,
): Promise<{ check: Check; time: { before: number; after: number; remote: number } | null }> {
  const check = 'store';
  const redis = ctx.config.state.redis;
  if (!health.store.up)
    return {
      check: {
        check,
        ok: false,
        detail: `the gateway's ${health.store.kind} store does not answer (${health.store.error}): requests are refused until it does`,
      },
      time: null,
    };
  if (ctx.config.state.store !== 'redis' || !redis)
    return { check: { check, ok: true, detail: 'memory store, in the gateway' }, time: null };
  needSet(ctx.config, 'state.redis.url');
  const client = connectRedis({ ...redis, timeout: Math.max(redis.timeout, 2_000) }, 'doctor');
  try {
    await client.connect();
    await client.ping();
    const before = Date.now();
    const [s] = await client.time();
    const after = Date.now();
    const remote = Number(s) * 1000;
    return {
      check: { check, ok: true, detail: `redis at ${redisWhere(redis)} answers PING` },
      time: { before, after, remote },
    };
  } catch (err) {
    return {
      check: {
        check,
        ok: false,
        detail: `redis at ${redisWhere(redis)} does not answer the doctor (${(err as Error).message}); the gateway refuses requests while it is down`,
      },
      time: null,
    };
  } finally {
    client.disconnect();
  }
}

/** The gateway's clock (its Date header) and Redis's (TIME) agree with this machine's. */
export async function clock(
  ctx: DoctorContext,
  redis: { before: number; after: number; remote: number } | null,
): Promise<Check> {
  const check = 'clock';
  const before = Date.now();
  const { headers } = await ctx.admin.raw('/healthz');
  const after = Date.now();
  const date = Date.parse(String(headers.date));
  const off: string[] = [];
  const said: string[] = [];
  if (Number.isNaN(date)) off.push('the gateway sent no Date header');
  else {
    const ms = skewMs(before, after, date);
    (ms > MAX_SKEW_MS ? off : said).push(`the gateway ${skewText(ms)} off`);
  }
  if (redis !== null) {
    const ms = skewMs(redis.before, redis.after, redis.remote);
    (ms > MAX_SKEW_MS ? off : said).push(`redis ${skewText(ms)} off`);
  }
  if (off.length > 0)
    return {
      check,
      ok: false,
      detail: `${off.join('; ')} (more than ${skewText(MAX_SKEW_MS)}): approvals' TTLs and decision links expire early or late; sync the clocks (NTP)`,
    };
  return { check, ok: true, detail: `${said.join(', ')} this machine's clock` };
}

/** The gateway process's open-files limit (its /metrics) covers limits.maxConnections. */
export async function fdLimit(ctx: DoctorContext): Promise<Check> {
  const check = 'fd-limit';
  const { text } = await ctx.admin.raw('/metrics');
  const max = /^process_max_fds (\d+)$/m.exec(text)?.[1];
  if (max === undefined)
    return {
      check,
      ok: true,
      detail: 'skipped: the gateway reports no open-files limit (not Linux)',
    };
  const [line, warning] = fdLines(ctx.config, Number(max));
  const said = (line as string).replace(/^trajgate: /, '');
  if (warning === undefined) return { check, ok: true, detail: said };
  return { check, ok: false, detail: warning.replace(/^\s*warning: /, '') };
}

/** trajgate's data (journal's folder, CA files) lies outside every workspace, as now linked. */
export function dataPaths(ctx: DoctorContext): Check {
  const check = 'data-paths';
  const problems = dataInWorkspaces(ctx.config);
  if (problems.length === 0)
    return {
      check,
      ok: true,
      detail: "the journal's folder and the CA files are outside every workspace",
    };
  return { check, ok: false, detail: problems.map((p) => p.text).join('; ') };
}
