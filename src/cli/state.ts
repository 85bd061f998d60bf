import { parseArgs } from 'node:util';
import { loadOperatorConfig, needSet } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import { connectRedis, redisWhere, storeDown } from '../state/connect.js';
import { StoreKeys } from '../state/keys.js';
import { rebuildFromJournals, writeRebuilt } from '../state/rebuild.js';

/**
 * `trajgate state rebuild --from JOURNAL… --config FILE [--force]`: fills the shared store the
 * config names from every gateway's journal (the recovery after Redis came back empty).
 */
export async function state(
  argv: string[],
  print: (line: string) => void,
  warn: (line: string) => void,
): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'rebuild') {
    throw new TrajgateError(
      'E_USAGE',
      `state: unknown action ${JSON.stringify(action ?? '')} (state rebuild)`,
    );
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      from: { type: 'string', multiple: true },
      config: { type: 'string' },
      force: { type: 'boolean', default: false },
    },
  });
  const journals = [...(values.from ?? []), ...positionals];
  if (journals.length === 0) {
    throw new TrajgateError('E_USAGE', 'state rebuild: name the journals: --from JOURNAL…');
  }
  if (values.config === undefined) {
    throw new TrajgateError(
      'E_USAGE',
      'state rebuild: --config FILE names the store (state.redis)',
    );
  }
  const config = loadOperatorConfig(values.config);
  needSet(config, 'state.redis.url');
  const redis = config.state.redis;
  if (config.state.store !== 'redis' || redis === undefined) {
    throw new TrajgateError(
      'E_USAGE',
      `${config.source}: state.store is not redis: nothing to rebuild`,
    );
  }
  const rebuilt = rebuildFromJournals(journals, config, (m) => warn(`trajgate: warning: ${m}`));
  const client = connectRedis(redis, 'rebuild');
  try {
    await client.connect().catch((err: unknown) => {
      throw storeDown(redis, err);
    });
    const { sessions, rules } = await writeRebuilt(
      client,
      new StoreKeys(redis.prefix),
      rebuilt,
      values.force === true,
    );
    print(
      `rebuilt ${redisWhere(redis)} (prefix ${redis.prefix}) from ${journals.length} journal(s), ${rebuilt.records} records: ${sessions} session(s), ${rules} operator rule(s)`,
    );
    return 0;
  } finally {
    client.disconnect();
  }
}
