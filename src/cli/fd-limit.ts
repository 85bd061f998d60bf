import { connectionsFor, FILES_PER_CONNECTION, OWN_FILES } from '../ingress/open-files.js';

/**
 * What `start` says about the open-files limit and the connections it allows, and a warning
 * when `limits.maxConnections` needs more files than the limit leaves: the proxy then refuses
 * connections at what the limit allows (503, `RLIMIT_NOFILE`) before reaching maxConnections.
 */
export function fdLines(
  config: { readonly limits: { readonly maxConnections: number } },
  limit: number,
): string[] {
  const max = config.limits.maxConnections;
  const needed = max * FILES_PER_CONNECTION + OWN_FILES;
  const shown = limit === Infinity ? 'unlimited' : String(limit);
  const allowed = Math.min(max, connectionsFor(limit));
  const line = `trajgate: open files limit ${shown} (ulimit -n); allows ${allowed} client connection(s) at once (limits.maxConnections ${max}, up to ${FILES_PER_CONNECTION} files each)`;
  if (needed <= limit) return [line];
  return [
    line,
    `  warning: limits.maxConnections ${max} may need ${needed} open files, more than the limit ${limit}: connections past ${allowed} are refused (503). Raise ulimit -n (docs/deploy.md) or lower limits.maxConnections to ${allowed}.`,
  ];
}
