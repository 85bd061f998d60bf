import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Egress } from '../../src/action/egress.js';
import { Credentials } from '../../src/gateway/credentials.js';
import { FlowRegistry } from '../../src/action/flow-registry.js';
import type { Basis, FlowKind } from '../../src/action/flows.js';
import { parseConfig } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { lapse, rejudgeFlows } from '../../src/pipeline/flow-basis.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The one judgement of whether what admitted a live flow still holds, rule by
 * rule: credentials, agents, deny patterns, approvals, CONNECT ports and the dialled address.
 */
const dir = tempDir();
const TOKEN = 'agent-1-token-0123456789abcdef';
const configOf = (network: Record<string, unknown>, agents = true) =>
  parseConfig(
    stringify({
      version: 1,
      workspace: '/tmp/agent-demo',
      ...(agents ? { agents: [{ id: 'agent-1', token: TOKEN }] } : {}),
      network: { allowPrivate: ['127.0.0.1/32'], ...network },
    }),
    'test',
    dir,
  );

function partsFor(network: Record<string, unknown>, agents = true) {
  const config = configOf(network, agents);
  const guard = new Guard(compilePolicy(config));
  const egress = new Egress({ allowPrivate: config.network.allowPrivate, timeoutMs: 1_000 });
  const flows = new FlowRegistry(
    60_000,
    () => true,
    () => false,
  );
  return { config, guard, egress, flows, credentials: new Credentials([], config.agents) };
}

const basis = (target: string, kind: FlowKind = 'connect', port = 443): Basis => ({
  session: 'agent-1',
  kind,
  target,
  rid: 1,
  event: normalizeEvent(
    { kind: 'network', target },
    { session: 'agent-1', source: 'proxy', ts: 1_000, workspace: '/tmp/agent-demo' },
  ),
  approved: true,
  expiresAt: null,
  dial: { address: '127.0.0.1', port },
});

const NONE: ReadonlySet<string> = new Set();

describe('lapse: why a flow basis no longer holds', () => {
  const allowed = { allow: ['127.0.0.1'] };
  const cases: [
    string,
    Record<string, unknown>,
    Basis,
    ReadonlySet<string> | 'all',
    string | null,
  ][] = [
    ['everything still holds', allowed, basis('127.0.0.1:443'), NONE, null],
    [
      'its token rotated',
      allowed,
      basis('127.0.0.1:443'),
      new Set(['agent-1']),
      'its agent credentials changed or were removed',
    ],
    [
      'credentials required or dropped',
      allowed,
      basis('127.0.0.1:443'),
      'all',
      'its agent credentials changed or were removed',
    ],
    ['another agent rotated', allowed, basis('127.0.0.1:443'), new Set(['agent-2']), null],
    [
      'no allow entry covers it',
      { allow: [] },
      basis('127.0.0.1:443'),
      NONE,
      'no approval or allowlist entry covers it any more',
    ],
    [
      'a deny refuses it',
      { allow: ['127.0.0.1'], deny: ['127.0.0.1'] },
      basis('127.0.0.1:443'),
      NONE,
      'network.deny: 127.0.0.1 refuses it now',
    ],
    [
      'its CONNECT port left network.ports',
      { ...allowed, ports: [80] },
      basis('127.0.0.1:443'),
      NONE,
      'port 443 is no longer allowed (network.ports)',
    ],
    [
      'a request, not a CONNECT: ports do not apply',
      { ...allowed, ports: [80] },
      basis('https://127.0.0.1/x', 'request'),
      NONE,
      null,
    ],
    [
      'an approval naming the port keeps it',
      { allow: ['127.0.0.1:8443'], ports: [443] },
      basis('127.0.0.1:8443', 'connect', 8443),
      NONE,
      null,
    ],
    [
      'allowPrivate narrowed',
      { ...allowed, allowPrivate: [] },
      basis('127.0.0.1:443'),
      NONE,
      'its address is no longer allowed: private address (loopback 127.0.0.1)',
    ],
  ];
  it.each(cases)('%s', (_name, network, b, rotated, expected) => {
    expect(lapse(partsFor(network), b, rotated)).toBe(expected);
  });

  it('an agent no longer configured', () => {
    const parts = partsFor(allowed);
    const other = { ...basis('127.0.0.1:443'), session: 'agent-9' };
    expect(lapse(parts, other, NONE)).toBe('its agent is no longer configured');
  });

  it('a tunnel judged request by request inside follows only its credentials', () => {
    const inner = { ...basis('127.0.0.1:443', 'read'), event: null, dial: null };
    expect(lapse(partsFor({ allow: [] }), inner, NONE)).toBeNull();
    expect(lapse(partsFor({ allow: [] }), inner, new Set(['agent-1']))).not.toBeNull();
  });
});

describe('rejudgeFlows', () => {
  it('closes exactly the flows whose basis went, each with the cause; counts them', () => {
    const recorded: string[] = [];
    const parts = partsFor({ allow: ['127.0.0.1', 'localhost'] });
    const flows = new FlowRegistry(
      60_000,
      (b, change, reason) => !!recorded.push(`${b.target} ${change}: ${reason}`),
      () => false,
    );
    const kept = flows.open(basis('localhost:443'));
    const gone = flows.open(basis('127.0.0.1:443'));
    parts.guard.addDeny({ pattern: '127.0.0.1', session: null, id: 'd1', by: 'op' });
    expect(rejudgeFlows({ ...parts, flows }, 'a deny pattern was added')).toBe(1);
    expect(gone.closed).toMatch(/refuses it now \(a deny pattern was added\)$/);
    expect(kept.closed).toBeNull();
    expect(flows.of('agent-1')).toEqual([kept]);
    expect(recorded).toEqual([`127.0.0.1:443 closed: ${gone.closed}`]);
  });
});
