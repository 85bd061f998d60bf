import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { formatHostPort } from '../config/formats.js';
import { defaultConfig, loadConfigFile } from '../config/load.js';
import { errnoCode, TrajgateError } from '../errors.js';
import { adminTokenFile } from '../review/admin-token.js';
import type { SessionView } from '../review/api.js';
import type { EventRecord } from '../journal/records.js';
import { table, terminalJson, terminalText } from './table.js';

export const OPERATOR_USAGE = [
  'trajgate sessions [--json]',
  'trajgate events SESSION [--limit N] [--before SEQ] [--json]',
  'trajgate approve SESSION PATTERN [--ttl 1h] [--kind network] [--json]',
  'trajgate resume SESSION [--reset] [--json]',
  'trajgate deny SESSION [--json]',
  '  (each takes --admin URL and --config FILE; the token comes from TRAJGATE_ADMIN_TOKEN or the data folder)',
];

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
    },
  });
  const want = command === 'sessions' ? 0 : command === 'approve' ? 2 : 1;
  if (positionals.length !== want) {
    throw new TrajgateError(
      'E_USAGE',
      `usage: ${OPERATOR_USAGE.find((u) => u.startsWith(`trajgate ${command}`))}`,
    );
  }
  const client = adminClient(values.admin, values.config);
  const [session = '', pattern] = positionals;
  const path = `/api/sessions/${encodeURIComponent(session)}`;
  let result: unknown;
  switch (command) {
    case 'sessions':
      result = await client.call('GET', '/api/sessions');
      if (!values.json) write(sessionsTable((result as { sessions: SessionView[] }).sessions));
      break;
    case 'events': {
      const query = new URLSearchParams();
      if (values.limit) query.set('limit', values.limit);
      if (values.before) query.set('before', values.before);
      result = await client.call('GET', `${path}/events?${query}`);
      if (!values.json) write(eventsTable((result as { events: EventRecord[] }).events));
      break;
    }
    case 'approve':
      result = await client.call('POST', `${path}/approve`, {
        pattern,
        ...(values.ttl ? { ttl: values.ttl } : {}),
        ...(values.kind ? { kind: values.kind } : {}),
      });
      if (!values.json) print(`approved ${pattern} for ${session}`);
      break;
    case 'resume':
      result = await client.call('POST', `${path}/resume`, { reset: values.reset === true });
      if (!values.json)
        print(
          `resumed ${session}; ${(result as { released: number }).released} held request(s) judged again`,
        );
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

function adminClient(admin: string | undefined, configFile: string | undefined) {
  const config = configFile === undefined ? defaultConfig() : loadConfigFile(configFile);
  const base = admin ?? `http://${formatHostPort(config.listen.admin)}`;
  const file = adminTokenFile(config);
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
  return {
    async call(method: 'GET' | 'POST', path: string, body?: object): Promise<unknown> {
      let res;
      try {
        res = await request(new URL(path, base), {
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
      const text = await res.body.text();
      let value: { error?: { message: string } };
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
        );
      }
      return value;
    },
  };
}

function sessionsTable(sessions: SessionView[]): string {
  if (sessions.length === 0) return 'no sessions yet';
  return table(
    ['SESSION', 'STATE', 'COUNTS', 'PAUSED AT', 'HELD', 'LAST ACTIVITY'],
    sessions.map((s) => [
      s.id,
      s.state === 'paused' ? `PAUSED (${s.pausedBy ?? '?'})` : 'active',
      Object.entries(s.counts)
        .map(([b, n]) => `${b}=${n}`)
        .join(' ') || '-',
      s.pausedAt ?? '-',
      String(s.held),
      s.lastActivity ?? '-',
    ]),
  );
}

function eventsTable(events: EventRecord[]): string {
  if (events.length === 0) return 'no events';
  return table(
    ['SEQ', 'TIME', 'VERDICT', 'KIND', 'TARGET', 'REASON'],
    events.map((e) => [
      String(e.seq),
      e.ts,
      e.verdict === 'ALLOW' ? 'ALLOW' : `${e.verdict}${e.boundary ? `: ${e.boundary}` : ''}`,
      e.kind,
      `${e.method ? `${e.method} ` : ''}${e.target}`,
      e.reason,
    ]),
  );
}
