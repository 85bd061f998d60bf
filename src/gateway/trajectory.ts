import type { Logger } from 'pino';
import type { Lookup } from '../action/egress.js';
import { Egress } from '../action/egress.js';
import { FlowRegistry } from '../action/flow-registry.js';
import { HeldRequests } from '../action/hold.js';
import type { Config } from '../config/load.js';
import type { Slice } from '../config/parts.js';
import { built, fixed, live, part, pick } from '../config/parts.js';
import { compilePolicy, POLICY } from '../guard/compile.js';
import { Guard } from '../guard/guard.js';
import { HookCalls } from '../ingress/hook-calls.js';
import { JournalHealth } from '../journal/health.js';
import { openJournal } from '../journal/open.js';
import { applyRecord } from '../journal/rebuild.js';
import type { JournalRecord } from '../journal/records.js';
import { SessionIndex } from '../journal/session-index.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Deciding } from '../pipeline/flow-basis.js';
import { DECIDING, rejudgeFlows } from '../pipeline/flow-basis.js';
import type { Credentials } from './credentials.js';
import { Metrics } from '../review/metrics.js';
import { Denials } from '../review/pause-ends.js';
import { Review } from '../review/review.js';
import { Sessions } from '../review/sessions.js';
import { snapshotOptions } from '../review/snapshot.js';
import type { OpenedStore } from '../state/open.js';
import { openStore } from '../state/open.js';
import type { ConfigParts } from './config-parts.js';
import { IdleSweep } from './idle-sweep.js';
import { ToolPinState } from './tool-pin-state.js';
import { ToolPins } from './tool-pins.js';
import { Telemetry } from '../telemetry/telemetry.js';
import type { Teardown } from './teardown.js';

/** What the store and the journal's snapshots keep of each session: fixed while they run. */
const STORE = { state: ['store', 'redis'], policy: ['recentEvents'] } as const;
const JOURNAL = {
  journal: ['path', 'rotate', 'keep', 'keepFor', 'chain'],
  journalFsync: true,
  policy: ['recentEvents'],
} as const;
const HOLDS = { policy: ['holdTimeout'] } as const;
const IDLE = { policy: ['sessionIdle'] } as const;
const EGRESS = { network: ['allowPrivate'], limits: ['connectTimeout'] } as const;

/** How egress runs on its slice: which private ranges it may dial, and how long a dial takes. */
const egressOptions = (config: Slice<typeof EGRESS>) => ({
  allowPrivate: config.network.allowPrivate,
  timeoutMs: config.limits.connectTimeout,
});

/** What each part opens with: the log, where its close goes and where its config part goes. */
export interface Opening {
  readonly log: Logger;
  readonly parts: ConfigParts;
  readonly teardown: Teardown;
}

/** What the trajectory opens on: the credentials in force too (a flow's basis names them). */
export type TrajectoryOpening = Opening & { readonly credentials: Credentials };

/** What remembers the trajectory and decides from it: every listener's handlers use these. */
export interface Trajectory {
  readonly metrics: Metrics;
  readonly store: OpenedStore;
  readonly guard: Guard;
  readonly review: Review;
  readonly held: HeldRequests;
  readonly index: SessionIndex;
  readonly denials: Denials;
  readonly calls: HookCalls;
  readonly health: JournalHealth;
  readonly journal: JournalWriter;
  /** Records read back from the journal at start. */
  readonly restored: number;
  readonly flows: FlowRegistry;
  readonly egress: Egress;
  readonly sessions: Sessions;
  /** What deciding and judging flows read (a reload replaces it). */
  readonly deciding: Deciding;
  readonly credentials: Credentials;
  /** Pinned tool definitions and the sessions shown a changed list (gateway/tool-pins.ts). */
  readonly toolPins: ToolPins;
}

/**
 * Opens the state store, rebuilds the guard and review from the journal, and starts sharing
 * (state.store: redis), each close pushed on `teardown` as it opens and each part's slice of
 * the config added to `parts`.
 */
export async function openTrajectory(
  config: Config,
  lookup: Lookup | undefined,
  { log, parts, teardown, credentials }: TrajectoryOpening,
): Promise<Trajectory> {
  const metrics = new Metrics();
  // What the guard and review remember, in one place (see TrajectoryStore).
  const store = openStore(config.state, log, metrics, config.policy.recentEvents);
  teardown.push('state store', () => store.close());
  const guard = new Guard(compilePolicy(pick(config, POLICY)), store.store);
  const review = new Review(config, log, store.store);
  const pins = new ToolPinState();
  review.toolChange = (server, digest) => pins.change(server, digest);
  const held = new HeldRequests(config.policy.holdTimeout);
  parts.add(
    fixed('state store', STORE),
    part({
      name: 'guard policy',
      reads: POLICY,
      configure: (next) =>
        built(
          () => compilePolicy(next),
          (policy) => guard.replacePolicy(policy),
        ),
    }),
    fixed('review trails', { policy: ['recentEvents'] }),
  );
  // Paused sessions are counted by the admin API's sessions list (openAdmin).
  metrics.gauges({ held: () => held.count(), sessions: () => review.size });
  const index = new SessionIndex();
  const denials = new Denials();
  const calls = new HookCalls();
  const health = new JournalHealth(config.journal.path, log, () => metrics.journalFailures.inc());
  teardown.push('journal health', () => health.close());
  const snapshot = {
    guard,
    credentials,
    toolPins: pins,
    store: store.store,
    review,
    denials,
    index,
    recentEvents: config.policy.recentEvents,
  };
  // Closed after the journal (pushed before it): it gets every record, the last outcomes too.
  const telemetry = new Telemetry(config.telemetry.otlp, metrics.registry, log);
  teardown.push('telemetry', () => telemetry.close());
  parts.add(telemetry.part());
  const { writer: journal, restored } = store.locally(() =>
    openJournal(
      config.journal.path,
      (record) => {
        // A shared store holds the guard's state; this journal is this gateway's audit trail.
        if (store.rebuildsFromJournal) applyRecord(guard, record);
        if (record.type === 'credential') credentials.apply(record);
        pins.apply(record);
        review.restore(record);
        calls.restore(record);
      },
      {
        fsyncMs: config.journalFsync,
        warn: (m) => log.warn(m),
        onWrite: (s) => metrics.journalWrite.observe(s),
        health,
        onWritten: telemetry.written,
        onAppend: (record, seq, offset, bytes) => {
          index.add(record, seq, offset, bytes);
          denials.observe(record, seq);
          review.noteHandshake(record, seq);
          store.written(record as JournalRecord);
          // A resume clears its session's tool-change mark (tool pins apply their own records).
          if (record.type === 'resume') pins.apply(record);
        },
        // Rotation's snapshots hold, and a restart restores, what `apply` rebuilds.
        ...snapshotOptions(config.journal, snapshot, (m) => log.warn(m)),
      },
    ),
  );
  teardown.push('journal', () => journal.close());
  parts.add(fixed('journal', JOURNAL));
  const flows = new FlowRegistry(
    config.policy.holdTimeout,
    (basis, change, reason) => {
      try {
        journal.append({
          type: basis.kind === 'request' || basis.kind === 'tool' ? 'flow' : 'tunnel',
          flow: basis.kind,
          session: basis.session,
          target: basis.target,
          rid: basis.rid ?? undefined,
          change,
          reason,
        });
        return true;
      } catch {
        return false;
      }
    },
    (session) => guard.session(session)?.pausedAt != null,
  );
  const egress = new Egress({ ...egressOptions(config), ...(lookup ? { lookup } : {}) });
  const deciding = live('decisions', DECIDING, config);
  parts.add(
    part({
      name: 'hold timeout',
      reads: HOLDS,
      configure: (next) => ({
        install: () => {
          held.setTimeout(next.policy.holdTimeout);
          flows.setHoldTimeout(next.policy.holdTimeout);
        },
      }),
    }),
    part({
      name: 'egress',
      reads: EGRESS,
      configure: (next) => ({ install: () => egress.configure(egressOptions(next)) }),
    }),
    deciding.part,
  );
  // Pause, resume and deny reach flows through the registry; every other change through
  // flow-basis's one judgement of what still holds.
  const watcher = {
    paused: (session: string) => flows.paused(session),
    resumed: (session: string) => flows.resumed(session),
    denied: (session: string) => flows.denied(session),
    rejudge: (cause: string) =>
      rejudgeFlows({ config: deciding.value, guard, egress, flows, credentials }, cause),
  };
  const sessions = new Sessions(guard, journal, held, review, watcher, store.replica);
  const evicted = () => metrics.sessionsEvicted.inc();
  const idle = { guard, review, held, flows, calls, journal, log, evicted };
  const sweep = new IdleSweep(idle, config.policy.sessionIdle);
  // A shared store's sessions are every gateway's: none evicts them (docs/shared-state.md).
  if (store.rebuildsFromJournal) sweep.start();
  teardown.push('idle sessions', () => sweep.close());
  parts.add(
    part({
      name: 'idle sessions',
      reads: IDLE,
      configure: (next) => ({ install: () => sweep.configure(next.policy.sessionIdle) }),
    }),
  );
  await store.start({ guard, review, sessions, log, history: restored > 0 });
  const opened = { metrics, store, guard, review, held, index, denials, calls, health, journal };
  const toolPins = new ToolPins(journal, pins, { sessions, review });
  const decided = { deciding: deciding.value, credentials, toolPins };
  return { ...opened, restored, flows, egress, sessions, ...decided };
}
