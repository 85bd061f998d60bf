// CPU time per request for bench/state/run.mjs: utime + stime of the gateways (and Redis) between
// two readings of /proc, divided by the requests answered meanwhile. Unlike req/s this hardly
// moves when other work shares the host, so it is the figure to compare across runs.
import { readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

function ticks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0; // gone
  }
}

/** A reading of `pids` now; `since(reading, requests)` gives µs of CPU per request for each. */
export function cpuReading(pids) {
  const before = pids.map(ticks);
  return {
    perRequestUs(requests) {
      const used = pids.map((pid, i) => (ticks(pid) - before[i]) * TICK_MS * 1000);
      return used.map((us) => (requests > 0 ? Number((us / requests).toFixed(1)) : null));
    },
  };
}
