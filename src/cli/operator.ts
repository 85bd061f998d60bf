import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { formatHostPort } from '../config/formats.js';
import type { OperatorConfig } from '../config/operator-config.js';
import { loadOperatorConfig, needSet } from '../config/operator-config.js';
import { errnoCode, TrajgateError } from '../errors.js';
import { adminTokenFile } from '../review/admin-token.js';
import type { SessionView } from '../review/api.js';
import type { ApprovalView, DenyView } from '../review/api-rules.js';
import type { EventAnswer, EventsPage, ResumeAnswer } from '../wire.js';
import { allSessions } from './all-sessions.js';
import { approveOnce } from './approve-once.js';
import { credentials } from './credentials.js';
import { tools } from './tools.js';
import { topUp } from './topup.js';
import { usageOf } from './help.js';
import { eventsTable, pausedAgainLine, sessionsTable, withHints } from './operator-tables.js';
import { terminalJson, terminalLines, terminalText } from './table.js';

/**
 * The operator commands: thin clients of the admin API, tables for people, --json for scripts.
 * Session ids and targets come from agents: every line is made safe for a terminal.
 */
export async function operator(
  command: string,
  argv: string[],
  write: (line: string) => void,
): Promise<number> {
  // Tables are made safe cell by cell; these lines as a whole.
  const print = (line: string) => write(terminalText(line));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      admin: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean' },
      limit: { type: 'string' },
      before: { type: 'string' },
      ttl: { type: 'string' },
      kind: { type: 'string' },
      reset: { type: 'boolean' },
      'keep-marks': { type: 'boolean' },
      global: { type: 'boolean' },
      from: { type: 'string' },
      session: { type: 'string' },
      once: { type: 'boolean' },
      digest: { type: 'string' },
    },
  });
  const count = wanted(command, values, positionals.length);
  if (count === 'some' ? positionals.length === 0 : positionals.length !== count) {
    throw new TrajgateError('E_USAGE', usageOf(command));
  }
  const client = adminClient(values.admin, values.config);
  const [session = '', pattern] = positionals;
  const path = `/api/sessions/${encodeURIComponent(session)}`;
  const ttl = values.ttl ? { ttl: values.ttl } : {};
  let result: unknown;
  switch (command) {
    case 'sessions':
      result = { sessions: await allSessions(client.call) };
      if (!values.json) write(sessionsTable((result as { sessions: SessionView[] }).sessions));
      break;
    case 'events': {
      const query = new URLSearchParams();
      if (values.limit) query.set('limit', values.limit);
      if (values.before) query.set('before', values.before);
      result = withHints((await client.call('GET', `${path}/events?${query}`)) as EventsPage);
      if (!values.json) write(eventsTable((result as EventsPage).events));
      break;
    }
    case 'approve': {
      if (values.once) {
        // Several lines, each target already made safe.
        const quiet = values.json ? () => undefined : (text: string) => write(terminalLines(text));
        result = await approveOnce(client.call, session, positionals.slice(1), quiet);
        break;
      }
      let target = values.global ? null : session;
      let body: Record<string, unknown> = {
        pattern: values.global ? session : pattern,
        ...ttl,
        ...(values.kind ? { kind: values.kind } : {}),
      };
      if (values.from !== undefined) {
        // The server fits the pattern to the event: one implementation for CLI, page and links.
        const { event, suggestion } = (await client.call(
          'GET',
          `/api/events/${encodeURIComponent(values.from)}`,
        )) as EventAnswer;
        target = event.session;
        body = { ...suggestion, ...ttl };
      }
      result = await client.call(
        'POST',
        target === null ? '/api/approvals' : `/api/sessions/${encodeURIComponent(target)}/approve`,
        body,
      );
      const { approval } = result as { approval: ApprovalView };
      if (!values.json) {
        const until = approval.expiresAt === null ? '' : ` until ${approval.expiresAt}`;
        const whom = target === null ? 'every session' : target;
        print(
          `approved ${approval.pattern} for ${whom}${until} (id ${approval.id}; undo: trajgate revoke ${approval.id})`,
        );
      }
      break;
    }
    case 'revoke': {
      const kind = /^c?d\d+$/.test(session) ? 'denies' : 'approvals';
      result = await client.call('DELETE', `/api/${kind}/${encodeURIComponent(session)}`);
      const { revoked, closed } = result as { revoked: DenyView; closed?: number };
      if (!values.json) {
        const tunnels = closed ? `; ${closed} tunnel(s) it admitted closed` : '';
        print(
          `revoked ${revoked.id} (${revoked.pattern} for ${revoked.session ?? 'every session'})${tunnels}`,
        );
      }
      break;
    }
    case 'deny-pattern': {
      const target = values.session;
      result = await client.call(
        'POST',
        target === undefined ? '/api/denies' : `/api/sessions/${encodeURIComponent(target)}/denies`,
        { pattern: session },
      );
      const { deny, closed } = result as { deny: DenyView; closed: number };
      if (!values.json) {
        const tunnels = closed ? `; ${closed} open tunnel(s) to it closed` : '';
        print(
          `added deny pattern ${deny.pattern} for ${deny.session ?? 'every session'} (id ${deny.id}; undo: trajgate revoke ${deny.id})${tunnels}`,
        );
      }
      break;
    }
    case 'credentials':
      result = await credentials(client.call, positionals, values.json ? null : write);
      break;
    case 'topup':
      result = await topUp(client.call, positionals, values.json ? null : write);
      break;
    case 'tools':
      result = await tools(client.call, positionals, values.digest, values.json ? null : write);
      break;
    case 'reload': {
      result = await client.call('POST', '/api/reload', {});
      const r = result as { sha256: string; restartNeeded: string[]; closed: number };
      if (!values.json) {
        const restart = r.restartNeeded.length
          ? `; needs a restart to apply: ${r.restartNeeded.join(', ')}`
          : '';
        print(
          `reloaded the config (sha256 ${r.sha256.slice(0, 12)}…; ${r.closed} tunnel(s) it no longer allows closed)${restart}`,
        );
      }
      break;
    }
    case 'resume':
      result = await client.call('POST', `${path}/resume`, {
        reset: values.reset === true,
        ...(values['keep-marks'] === true ? { keepMarks: true } : {}),
      });
      if (!values.json) {
        const { released, pausedAgain } = result as ResumeAnswer;
        print(
          `resumed ${session}${values.reset ? ' with its counts reset' : ''}${values['keep-marks'] ? ', its trajectory marks kept' : ''}; ${released} held request(s) judged again`,
        );
        if (pausedAgain) print(pausedAgainLine(session as string, pausedAgain));
      }
      break;
    case 'deny':
      result = await client.call('POST', `${path}/deny`, {});
      if (!values.json)
        print(
          `denied ${session}; ${(result as { released: number }).released} held request(s) refused; still paused`,
        );
      break;
  }
  if (values.json) write(terminalJson(result));
  return 0;
}

/** The admin API as the config (or --admin) places it, with the operator's token. */
export function adminClient(
  admin: string | undefined,
  configFile: string | undefined,
  config: OperatorConfig = loadOperatorConfig(configFile),
) {
  const base = admin ?? `http://${formatHostPort(config.listen.admin)}`;
  const file = adminTokenFile(config);
  if (process.env.TRAJGATE_ADMIN_TOKEN === undefined)
    needSet(config, 'admin.token', ' (or set TRAJGATE_ADMIN_TOKEN to it)');
  let token = process.env.TRAJGATE_ADMIN_TOKEN ?? config.admin.token;
  if (token === undefined) {
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch {
      throw new TrajgateError(
        'E_USAGE',
        `no admin token: set TRAJGATE_ADMIN_TOKEN, or run where ${file} is readable`,
      );
    }
  }
  /** One request with the token; an unreachable listener says where and what to do. */
  async function send(method: 'GET' | 'POST' | 'DELETE', path: string, body?: object) {
    try {
      return await request(new URL(path, base), {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
    } catch (err) {
      const code = errnoCode(err) ?? (err as Error).message;
      throw new TrajgateError(
        'E_ADMIN_API',
        `cannot reach trajgate's admin API at ${base} (${code}): is \`trajgate start\` running? Use --admin URL to point elsewhere`,
      );
    }
  }
  return {
    base,
    /** A GET answered as it came (status, headers, text): /metrics, the Date header. */
    async raw(path: string) {
      const res = await send('GET', path);
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    },
    async call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<unknown> {
      const res = await send(method, path, body);
      const text = await res.body.text();
      let value: { error?: { message: string; details?: string[] } };
      try {
        value = text === '' ? {} : (JSON.parse(text) as typeof value);
      } catch {
        throw new TrajgateError(
          'E_ADMIN_API',
          `${base} answered ${res.statusCode} with something other than JSON: is it trajgate's admin listener (listen.admin)?`,
        );
      }
      if (res.statusCode === 401) {
        throw new TrajgateError(
          'E_ADMIN_API',
          `the admin API refused the token: set TRAJGATE_ADMIN_TOKEN to the token in ${file} or in admin.token`,
        );
      }
      if (res.statusCode >= 400) {
        throw new TrajgateError(
          'E_ADMIN_API',
          `${method} ${path}: ${res.statusCode} ${value.error?.message ?? text}`,
          value.error?.details ?? [],
        );
      }
      return value;
    },
  };
}

/**
 * Positional arguments each command takes (approve's depend on --global, --from and --once,
 * which takes the session and any number of rids: `some`; credentials' on whether it lists).
 */
function wanted(
  command: string,
  values: { global?: boolean; from?: string; once?: boolean },
  given: number,
): number | 'some' {
  switch (command) {
    case 'credentials':
      return given === 0 ? 0 : 2;
    case 'tools':
      return given <= 2 ? given : 2;
    case 'topup':
      return given === 2 || given === 3 ? given : 3;
    case 'sessions':
    case 'reload':
      return 0;
    case 'approve':
      if (values.once) return values.global || values.from !== undefined ? -1 : 'some';
      if (values.from !== undefined) return values.global ? -1 : 0;
      return values.global ? 1 : 2;
    default:
      return 1;
  }
}
