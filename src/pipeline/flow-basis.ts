import type { ArmedCredential } from '../config/credential-values.js';
import type { Egress } from '../action/egress.js';
import type { FlowRegistry } from '../action/flow-registry.js';
import type { Basis } from '../action/flows.js';
import type { Shape, Slice } from '../config/parts.js';
import type { Guard } from '../guard/guard.js';
import type { CredentialsInForce } from '../event/credential-set.js';

/** What deciding and judging a flow's basis read of the config, each time (a reload replaces it). */
export const DECIDING = {
  policy: ['review', 'pause', 'holdTimeout'],
  network: ['ports'],
  agents: true,
} as const satisfies Shape;

export type Deciding = Slice<typeof DECIDING>;

/** What a change to the rules leaves standing: the parts a flow's basis is checked against. */
export interface BasisParts {
  readonly config: Deciding;
  readonly guard: Guard;
  readonly egress: Egress;
  readonly flows: FlowRegistry;
  readonly credentials: CredentialsInForce<ArmedCredential>;
}

/**
 * Why what admitted a flow no longer holds, or null while it does: the agent it belongs to is no
 * longer configured or its token changed (`rotated`), a deny pattern refuses its event now, no
 * approval or allowlist entry covers what one admitted, its CONNECT port or dialled address is
 * no longer allowed. The generalisation of Guard.lapsed to every part of a flow's basis: pause,
 * resume and deny reach flows through the registry, every other change through this.
 */
export function lapse(
  parts: BasisParts,
  basis: Basis,
  rotated: ReadonlySet<string> | 'all',
): string | null {
  const { config, guard, egress } = parts;
  const agents = config.agents;
  if (rotated === 'all' || rotated.has(basis.session))
    return 'its agent credentials changed or were removed';
  if (agents !== null && !agents.some((agent) => agent.id === basis.session))
    return 'its agent is no longer configured';
  const event = basis.event;
  if (event !== null) {
    const lapsed = guard.lapsed(event, basis.approved);
    if (lapsed === 'unapproved') return 'no approval or allowlist entry covers it any more';
    if (lapsed !== null) return `${lapsed.deniedBy} refuses it now`;
    // A request carrying a credential's value stops when the credential is revoked or taken away.
    const carried = event.credentials;
    const gone = carried?.length ? parts.credentials.current.lapsed(carried, basis.session) : null;
    if (gone !== null) return gone;
  }
  const dial = basis.dial;
  if (dial === null) return null;
  if (
    basis.kind === 'connect' &&
    !config.network.ports.includes(dial.port) &&
    !(event !== null && guard.approvalFor(event)?.namesPort === true)
  )
    return `port ${dial.port} is no longer allowed (network.ports)`;
  const refused = egress.refuses(dial.address, dial.port);
  return refused === null ? null : `its address is no longer allowed: ${refused}`;
}

/**
 * Closes every live flow (of `session`, or all) whose basis no longer holds, each journaled
 * with its reason and `cause` (what changed); returns how many. Called before the change that
 * caused it is answered.
 */
export function rejudgeFlows(
  parts: BasisParts,
  cause: string,
  options: { rotated?: ReadonlySet<string> | 'all'; session?: string } = {},
): number {
  const rotated = options.rotated ?? NONE;
  return parts.flows.closeWhere((basis) => {
    const why = lapse(parts, basis, rotated);
    return why === null ? null : `${why} (${cause})`;
  }, options.session);
}

const NONE: ReadonlySet<string> = new Set();
