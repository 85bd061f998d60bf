/**
 * The example config's `drift-after-failure` rule (config/trajgate.example.yaml; the
 * trajectories test holds the two equal): after a failure, a crossing of the network boundary
 * within 5 events pauses the session.
 */
export const DRIFT_AFTER_FAILURE = {
  name: 'drift-after-failure',
  after: { failed: true },
  then: { crossing: 'network' },
  within: '5 events',
  verdict: 'PAUSE',
};

/**
 * The example config's `secret-then-egress` rule on `targets` (default `**\/.ssh/**`): a read
 * of one of them, then any network request within an hour, pauses the session.
 */
export function secretThenEgress(targets: readonly string[] = ['**/.ssh/**']) {
  return {
    name: 'secret-then-egress',
    after: { kind: 'read', target: [...targets] },
    then: { kind: 'network' },
    within: '1h',
    verdict: 'PAUSE',
  };
}
