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
