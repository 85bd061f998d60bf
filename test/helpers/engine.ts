/**
 * `config` with the engine the gateways of a test run use: TRAJGATE_TEST_ENGINE (`lean` or
 * `node`) runs every suite whose gateways the helpers start (in process, from a file, as a child)
 * on that engine, without a copy of any test. A config that names `engine` keeps its own.
 */
export function withTestEngine(config: Record<string, unknown>): Record<string, unknown> {
  const engine = process.env.TRAJGATE_TEST_ENGINE;
  if (engine === undefined || engine === '' || 'engine' in config) return config;
  // Last, so the lines of the keys a test wrote stay where it expects them.
  return { ...config, engine };
}
