import { setTimeout as sleep } from 'node:timers/promises';
import type { HostPort } from '../config/formats.js';
import type { OperatorConfig } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import { reached } from './env.js';
import type { adminClient } from './operator.js';

/** One line of the doctor's report. */
export interface Check {
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** The source address of the doctor's probes without `agents`: a session of its own. */
export const DOCTOR_ADDRESS = '127.84.71.68';
/** The agent the doctor acts as when `agents` are configured and --agent names none. */
export const DOCTOR_AGENT = 'doctor';

/** Who the doctor's probes are: the proxy as reached, their credentials, their session. */
export interface Who {
  readonly proxy: HostPort;
  readonly agent: { readonly id: string; readonly token: string } | null;
  readonly auth: string | null;
  readonly localAddress: string | null;
  readonly session: string;
}

export interface DoctorContext {
  readonly config: OperatorConfig;
  readonly admin: ReturnType<typeof adminClient>;
  readonly who: Who;
  /** The doctor's session: its held probes refused, its counts reset after each probe. */
  readonly session: {
    during<T>(run: () => Promise<T>): Promise<T>;
    reset(): Promise<void>;
  };
}

/**
 * Whom the probes go as: `--agent`, else the agent `doctor`; without agents, from
 * DOCTOR_ADDRESS when the proxy is on IPv4 loopback. Their counts are reset after each probe,
 * so the doctor never acts as an agent unless told to.
 */
export function whoProbes(config: OperatorConfig, asked: string | undefined): Who {
  const proxy = reached(
    config,
    'proxy',
    /^[0:.]+$/.test(config.listen.proxy.host) ? '127.0.0.1' : undefined,
  );
  const agents = config.agents;
  if (agents === null) {
    if (asked !== undefined)
      throw new TrajgateError('E_USAGE', `--agent ${asked}: ${config.source} configures no agents`);
    const bind = /^127\./.test(proxy.host) ? DOCTOR_ADDRESS : null;
    return { proxy, agent: null, auth: null, localAddress: bind, session: bind ?? proxy.host };
  }
  const id = asked ?? DOCTOR_AGENT;
  const i = agents.findIndex((a) => a.id === id);
  if (i === -1)
    throw new TrajgateError(
      'E_USAGE',
      `no agent ${JSON.stringify(id)} in ${config.source}: add one for the doctor (agents: - { id: doctor, token: …, workspace: … }) or name one with --agent ID (its session's counts are reset after each probe)`,
    );
  if (config.unset.has(`agents[${i}].token`))
    throw new TrajgateError(
      'E_CONFIG_INVALID',
      `${config.source}: the doctor needs agents[${i}].token (${id}): ${config.unset.get(`agents[${i}].token`)?.written} is not set here`,
    );
  const token = (agents[i] as { token: string }).token;
  const auth = `Basic ${Buffer.from(`${id}:${token}`).toString('base64')}`;
  return { proxy, agent: { id, token }, auth, localAddress: null, session: id };
}

/** The doctor's session over the admin API. */
export function doctorSession(admin: ReturnType<typeof adminClient>, id: string) {
  const path = `/api/sessions/${encodeURIComponent(id)}`;
  const reset = async () => {
    await admin.call('POST', `${path}/resume`, { reset: true });
  };
  return {
    reset,
    /** Runs `run`; a probe held by a pause it caused is refused (deny), not waited for. */
    async during<T>(run: () => Promise<T>): Promise<T> {
      let done = false;
      const watch = (async () => {
        while (!done) {
          await sleep(100);
          const s = (await admin.call('GET', path).catch(() => null)) as { held?: number } | null;
          if (!done && s !== null && (s.held ?? 0) > 0)
            await admin.call('POST', `${path}/deny`, {});
        }
      })();
      try {
        return await run();
      } finally {
        done = true;
        await watch;
      }
    },
  };
}
