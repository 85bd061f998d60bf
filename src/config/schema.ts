import { z } from 'zod';
import { stateSchema } from './state-schema.js';
import { BUILTIN_KINDS, PATH_KINDS } from '../event/event.js';
import { isTrajgateError } from '../errors.js';
import { parseNetworkPattern } from '../event/network-pattern.js';
import { DEFAULT_LISTEN, parseCidr, parseHostPort } from './formats.js';
import { checkCrossings, sequencesSchema } from './sequences-schema.js';
import { budgetsSchema, checkBudgetNames } from './budgets-schema.js';
import { journalSchema } from './journal-schema.js';
import { protocolName } from '../http/upgrade-protocols.js';
import { duration } from './duration-schema.js';
import { checkScopes, credentialsSchema } from './credentials-schema.js';
import { OWN_BOUNDARIES } from '../event/own-boundaries.js';
import { bridgeToolsSchema, toolLists } from './tool-policy-schema.js';
import { telemetrySchema } from './telemetry-schema.js';

/**
 * The YAML schema; key names are the contract (docs/configuration.md, and
 * config/trajgate.example.yaml). Every object is strict so a misspelt key is an error, not a
 * silently ignored setting.
 */
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

const hostPort = z.string().refine((s) => parseHostPort(s) !== undefined, {
  message: 'expected host:port, e.g. 127.0.0.1:8080 or [::1]:8080',
});

const networkPattern = z.string().superRefine((s, ctx) => {
  try {
    parseNetworkPattern(s);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: isTrajgateError(err) ? err.message : String(err) });
  }
});

/** A protocol-name (RFC 9110 § 7.8), lower-cased: a listed name admits any of its versions. */
const upgradeProtocol = z
  .string()
  .refine((s) => !s.includes('/') && protocolName(s) !== null, {
    message: 'expected a protocol name (an HTTP token, no version), e.g. websocket',
  })
  .transform((s) => s.toLowerCase());

const name = (what: string) =>
  z.string().regex(NAME, `${what} must start with a letter and use only letters, digits, _ and -`);
const count = z.number().int().min(1);
/** A duration a Node timer runs for: past 2^31-1 ms one fires at once. */
const timer = duration.pipe(
  z.number().min(1, 'must be at least 1ms').max(2_147_483_647, 'must be under 24d'),
);

const boundary = z.strictObject({
  kinds: z.array(name('a kind')).min(1).optional(),
  outside: z.literal('workspace').optional(),
  targets: z.array(z.string().min(1)).min(1).optional(),
  unless: z.literal('approved').optional(),
  reviewAt: count.optional(),
  pauseAt: count.optional(),
});

export const DEFAULT_BOUNDARIES: Record<string, z.input<typeof boundary>> = {
  workspace: { kinds: ['write', 'command'], outside: 'workspace', pauseAt: 1 },
  network: { kinds: ['network'], unless: 'approved', reviewAt: 1, pauseAt: 2 },
};

const boundaries = z
  .record(z.string(), boundary)
  .default({})
  .transform((given, ctx) => {
    const merged = { ...DEFAULT_BOUNDARIES };
    for (const [key, b] of Object.entries(given)) merged[key] = { ...merged[key], ...b };
    for (const [key, b] of Object.entries(merged)) checkBoundary(key, b, ctx);
    return merged as Record<
      string,
      z.output<typeof boundary> & { kinds: string[]; pauseAt: number }
    >;
  });

function checkBoundary(key: string, b: z.output<typeof boundary>, ctx: z.RefinementCtx): void {
  const at = (field: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [key, field], message });
  if (!NAME.test(key)) {
    ctx.addIssue({
      code: 'custom',
      path: [key],
      message: 'a boundary name must start with a letter and use only letters, digits, _ and -',
    });
  }
  // Its counts would mix with those of trajgate's own (guard/exfiltration.ts).
  if (OWN_BOUNDARIES.has(key))
    ctx.addIssue({
      code: 'custom',
      path: [key],
      message: "is trajgate's own boundary: name it otherwise",
    });
  if (!b.kinds) at('kinds', 'is required for a new boundary (the event kinds that cross it)');
  if (b.pauseAt === undefined)
    at('pauseAt', 'is required for a new boundary (the count that pauses)');
  if (b.reviewAt !== undefined && b.pauseAt !== undefined && b.reviewAt >= b.pauseAt) {
    at('reviewAt', `must be below pauseAt (${b.pauseAt}), got ${b.reviewAt}`);
  }
  if (b.outside && b.kinds?.some((k) => !PATH_KINDS.has(k))) {
    at('outside', `applies to path kinds only (${[...PATH_KINDS].join(', ')})`);
  }
  if (b.targets && b.kinds?.includes('network')) {
    b.targets.forEach((t, i) => {
      try {
        parseNetworkPattern(t);
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          path: [key, 'targets', i],
          message: (err as Error).message,
        });
      }
    });
  }
}

/**
 * Where a tool call's target is: an argument path; `[]` after a name takes each element.
 * `tree: true`: a read whose answer can carry anything under the target (a grep, a search).
 */
const toolEvent = z
  .strictObject({
    kind: name('a kind'),
    target: z
      .string()
      .regex(
        /^[A-Za-z0-9_-]+(\[\])?(\.[A-Za-z0-9_-]+(\[\])?)*$/,
        'expected an argument path like path, options.cwd or paths[]',
      ),
    tree: z.boolean().optional(),
    // Shown to the people who review, never judged: the argument holding the command line.
    command: z
      .string()
      .regex(
        /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/,
        'expected an argument path like command or options.argv (a string, or an array of strings)',
      )
      .optional(),
  })
  .refine((e) => e.tree !== true || e.kind === 'read', {
    path: ['tree'],
    message: 'tree: true is for kind read only (a read of everything under the target)',
  })
  .refine((e) => e.command === undefined || e.kind === 'command', {
    path: ['command'],
    message: 'command: is for kind command only (the argument holding the command line it runs)',
  })
  .transform(({ tree, ...e }) => (tree === true ? { ...e, tree } : e));

const agent = z.strictObject({
  id: name('an agent id'),
  token: z.string().min(16, 'must be at least 16 characters (use a random secret)'),
  workspace: z.string().min(1).optional(),
  /** Network patterns for this agent alone, on top of network.allow. */
  allow: z.array(networkPattern).default([]),
  /** Roles (top-level `roles`) whose allow lists this agent shares. */
  roles: z.array(name('a role name')).default([]),
  /** The MCP tools it may see and call (event/tool-policy.ts). */
  tools: toolLists,
});

const role = z.strictObject({ allow: z.array(networkPattern).default([]), tools: toolLists });

const fields = z.strictObject({
  version: z.literal(1),
  workspace: z.string().min(1).optional(),
  journal: journalSchema,
  journalFsync: duration.default(100),
  state: stateSchema,
  // What reads and forwards HTTP/1.1 (ingress/lean, action/forward.ts): the lean engine, or
  // node:http and undici (the reference, kept selectable for one release).
  engine: z.enum(['node', 'lean']).default('lean'),
  listen: z
    .strictObject({
      proxy: hostPort.default(DEFAULT_LISTEN.proxy),
      bridge: hostPort.default(DEFAULT_LISTEN.bridge),
      admin: hostPort.default(DEFAULT_LISTEN.admin),
      // The SOCKS5 listener: off unless set.
      socks: hostPort.optional(),
    })
    .prefault({}),
  agents: z
    .array(agent)
    .min(1, 'list at least one agent, or leave agents out to name sessions by client address')
    .superRefine((agents, ctx) => {
      const seen = new Map<string, number>();
      agents.forEach((a, i) => {
        for (const [field, value] of [
          ['id', a.id],
          ['token', a.token],
        ] as const) {
          const key = `${field}\0${value}`;
          if (seen.has(key)) {
            ctx.addIssue({
              code: 'custom',
              path: [i, field],
              message: `duplicates agents[${seen.get(key)}].${field}`,
            });
          } else seen.set(key, i);
        }
      });
    })
    .optional(),
  /** Shared allow lists: an agent listing a role in `roles` gets its patterns. */
  roles: z.record(name('a role name'), role).default({}),
  credentials: credentialsSchema(networkPattern),
  policy: z
    .strictObject({
      countBy: z.enum(['boundary', 'target']).default('boundary'),
      review: z.enum(['block', 'pass']).default('block'),
      pause: z.enum(['hold', 'block']).default('hold'),
      holdTimeout: duration.default(55_000),
      recentEvents: z.number().int().min(1).max(1000).default(20),
      // How long a session with nothing left to remember is kept (gateway/idle-sweep.ts).
      sessionIdle: duration
        .refine((ms) => ms >= 1000, 'expected a duration of at least 1s')
        .default(86_400_000),
      boundaries,
      sequences: sequencesSchema,
      budgets: budgetsSchema,
    })
    .prefault({}),
  network: z
    .strictObject({
      allow: z.array(networkPattern).default([]),
      // Refused whatever allows or approves them (checked first).
      deny: z.array(networkPattern).default([]),
      allowPrivate: z
        .array(
          z
            .string()
            .refine(
              (s) => parseCidr(s) !== undefined,
              'expected a CIDR like 10.0.0.0/8 or fd00::/8',
            ),
        )
        .default([]),
      ports: z.array(z.number().int().min(1).max(65535)).min(1).default([80, 443]),
      // What an HTTP Upgrade may switch to; the relay after a 101 is blind (http/upgrade-protocols).
      upgrades: z.array(upgradeProtocol).default(['websocket']),
    })
    .prefault({}),
  limits: z
    .strictObject({
      headerBytes: z.number().int().min(1024).max(1_048_576).default(16_384),
      headerTimeout: duration.default(10_000),
      upstreamTimeout: duration.default(30_000),
      // A gap, not a total: a long upload that keeps flowing is fine.
      bodyTimeout: timer.default(30_000),
      connectTimeout: duration.default(10_000),
      tunnelIdle: duration.default(300_000),
      tunnelsPerSession: z.number().int().min(1).default(64),
      // Each client connection holds ~2 fds (its own, its upstream's): 4096 stays inside a
      // 10,000-fd limit with room for the journal and the other listeners (docs/deploy.md).
      maxConnections: z.number().int().min(1).max(1_000_000).default(4096),
      // Tunnels are connections too; the rest of maxConnections stays for plain requests.
      maxTunnels: z.number().int().min(1).max(1_000_000).default(2048),
      // How long the proxy listener keeps an idle keep-alive connection open.
      keepAliveIdle: timer.default(5_000),
      drainTimeout: duration.default(10_000),
      // A body a credential may be swapped into is read whole first (a swap changes its length).
      scanBodyBytes: z.number().int().min(1024).max(1_073_741_824).default(8_388_608),
    })
    .prefault({}),
  admin: z
    .strictObject({
      token: z.string().min(16, 'must be at least 16 characters').optional(),
      tokens: z
        .array(
          z.strictObject({
            name: name('a token name'),
            token: z.string().min(16, 'must be at least 16 characters'),
          }),
        )
        .default([]),
    })
    .prefault({}),
  notify: z
    .strictObject({
      webhook: z.url({ protocol: /^https?$/ }).optional(),
      on: z.array(z.enum(['pause', 'review'])).default(['pause']),
      headers: z.record(z.string(), z.string()).default({}),
      timeout: duration.default(5_000),
      attempts: z.number().int().min(1).max(10).default(3),
      backoff: duration.default(500),
      // Bounds on what a slow or hanging receiver can cost: sockets, and payloads waiting.
      connections: z.number().int().min(1).max(64).default(4),
      queue: z.number().int().min(1).max(100_000).default(1_000),
      // Where people open the review page (links in notifications); default: the admin listener.
      pageUrl: z.url({ protocol: /^https?$/ }).optional(),
      // Signs each webhook delivery (X-Trajgate-Signature), so a receiver knows it is ours.
      secret: z.string().min(16, 'must be at least 16 characters (use a random secret)').optional(),
      // How long a decision link lasts at most after its pause began (it ends with the pause).
      linkTtl: duration.default(86_400_000),
      // Signs decision links; default: a secret generated beside the journal (link-key).
      linkKey: z
        .string()
        .min(16, 'must be at least 16 characters (use a random secret)')
        .optional(),
    })
    .prefault({}),
  bridge: z
    .strictObject({
      upstream: z.url({ protocol: /^https?$/ }).optional(),
      protocol: z.enum(['mcp', 'http']).default('mcp'),
      forwardAuthorization: z.boolean().default(false),
      unmapped: z.enum(['allow', 'review', 'pause']).default('review'),
      // The name runners give this MCP server (a key of Claude Code's .mcp.json): a hook's
      // `mcp__NAME__TOOL` is judged as the bridge judges `tools/call TOOL`.
      name: z
        .string()
        .regex(
          /^[A-Za-z0-9_-]{1,64}$/,
          'expected 1 to 64 letters, digits, _ or - (the server name as mcp__NAME__TOOL spells it)',
        )
        .optional(),
      tools: bridgeToolsSchema(z.union([toolEvent, z.array(toolEvent).min(1)])),
      routes: z
        .array(
          z
            .strictObject({
              method: z.string().regex(/^[A-Za-z]{1,16}$/, 'expected an HTTP method'),
              // Plain, so that it means one thing: requests are matched in this form.
              path: z
                .string()
                .regex(
                  /^(?!.*\/\/)\/(?!(?:.*\/)?\.\.?(?:\/|$))[^%\\;?#\s]*$/,
                  'expected a path starting with / without %, \\, ;, ?, #, // or . and .. segments',
                ),
              kind: name('a kind'),
              target: z
                .string()
                .regex(
                  /^(\$(\.[A-Za-z0-9_-]+)+|query:[A-Za-z0-9_.-]+|segment:\d+)$/,
                  'expected $.field, query:name or segment:N',
                ),
              command: z
                .string()
                .regex(
                  /^(\$(\.[A-Za-z0-9_-]+)+|query:[A-Za-z0-9_.-]+)$/,
                  'expected $.field or query:name (where the command line is)',
                )
                .optional(),
            })
            .refine((r) => r.command === undefined || r.kind === 'command', {
              path: ['command'],
              message: 'command: is for kind command only (where the command line it runs is)',
            }),
        )
        .default([]),
      maxBodyBytes: z.number().int().min(1024).max(67_108_864).default(1_048_576),
    })
    // bridge.tools' `allow` and `deny` are the tool policy, read on reload; its mappings are not.
    .transform(({ tools, ...bridge }) => ({ ...bridge, tools: tools.map, toolPolicy: tools.lists }))
    .prefault({}),
  tls: z
    .strictObject({
      intercept: z.array(networkPattern).default([]),
      upstreamCa: z.array(z.string().min(1)).default([]),
      // Not given: certs/ in the journal's folder (config/load.ts).
      ca: z.string().min(1).optional(),
    })
    .prefault({}),
  capture: z
    .strictObject({
      bodies: z.boolean().default(false),
      maxBytes: z.number().int().min(0).default(65_536),
      redact: z.boolean().default(true),
    })
    .prefault({}),
  telemetry: telemetrySchema,
});

/**
 * An agent's role must exist: a typo would silently leave the agent without its allowlist. A
 * rule's `crossing` must name a boundary (`tool` is one unless bridge.unmapped is allow).
 */
export const configSchema = fields.superRefine((raw, ctx) => {
  const bounds = Object.keys(raw.policy.boundaries);
  if (raw.bridge.unmapped !== 'allow' && !bounds.includes('tool')) bounds.push('tool');
  checkCrossings(raw.policy.sequences, bounds, ctx);
  const taken = new Map(bounds.map((b) => [b, 'a boundary']));
  for (const r of raw.policy.sequences) taken.set(r.name, 'a rule of policy.sequences');
  checkBudgetNames(raw.policy.budgets, taken, ctx);
  const names = Object.keys(raw.roles);
  const known = names.length > 0 ? `roles: ${names.join(', ')}` : 'no roles are defined';
  raw.agents?.forEach((a, i) =>
    a.roles.forEach((r, j) => {
      if (Object.hasOwn(raw.roles, r)) return;
      ctx.addIssue({
        code: 'custom',
        path: ['agents', i, 'roles', j],
        message: `no role ${JSON.stringify(r)} (${known})`,
      });
    }),
  );
  checkScopes(raw, ctx);
});

export type RawConfig = z.output<typeof configSchema>;

/** Every kind the configuration names, plus the built-in ones. */
export function knownKinds(raw: Pick<RawConfig, 'policy' | 'bridge'>): Set<string> {
  const kinds = new Set(BUILTIN_KINDS);
  for (const b of Object.values(raw.policy.boundaries)) for (const k of b.kinds) kinds.add(k);
  for (const t of Object.values(raw.bridge.tools)) for (const e of [t].flat()) kinds.add(e.kind);
  for (const r of raw.bridge.routes) kinds.add(r.kind);
  kinds.add('tool');
  return kinds;
}
