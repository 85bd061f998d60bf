// Readings from /proc: peak RSS of a process group, and how much CPU went to processes that
// are not part of the benchmark — on a shared 2-core box that load skews every figure.
import { readFileSync, readdirSync } from 'node:fs';
import { sleep } from './procs.mjs';

/** Fields of /proc/PID/stat after the command name; [2] is pgrp, [11..14] utime..cstime. */
const statFields = (pid) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};

/** utime + stime of a process, in clock ticks (100 per second on Linux). */
export function cpuTicks(pid) {
  const fields = statFields(pid);
  return Number(fields[11]) + Number(fields[12]);
}

function groupMembers(pgid) {
  return readdirSync('/proc').filter((pid) => {
    try {
      return /^\d+$/.test(pid) && Number(statFields(pid)[2]) === pgid;
    } catch {
      return false; // ended between listing and reading
    }
  });
}

/** CPU ticks (100 per second) of the processes in `pgid`'s group so far. */
export function groupCpuTicks(pgid) {
  let ticks = 0;
  for (const pid of groupMembers(pgid)) {
    try {
      ticks += cpuTicks(pid);
    } catch {
      // ended between listing and reading
    }
  }
  return ticks;
}

/** Sum of VmHWM (peak RSS) over the processes in `pgid`'s group, in MB, and how many. */
export function peakRssMB(pgid) {
  let kb = 0;
  let processes = 0;
  for (const pid of groupMembers(pgid)) {
    try {
      const hwm = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (!hwm) continue;
      kb += Number(hwm[1]);
      processes++;
    } catch {
      // ended between listing and reading
    }
  }
  return processes === 0 ? null : { mb: kb / 1024, processes };
}

function systemTicks() {
  const n = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1);
  const ticks = n.map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { total, busy: total - ticks[3] - ticks[4] };
}

/**
 * CPU ticks so far: the whole system, and ours — this process, its reaped children (wrk, the
 * tunnel client) and the live process groups given (upstream, proxy under test).
 */
export function cpuSnapshot(pgids) {
  const self = statFields(process.pid).slice(11, 15).map(Number);
  let ours = self.reduce((a, b) => a + b, 0);
  for (const pid of pgids.flatMap(groupMembers)) {
    try {
      const [utime, stime] = statFields(pid).slice(11, 13).map(Number);
      ours += utime + stime;
    } catch {
      // ended between listing and reading
    }
  }
  return { ...systemTicks(), ours };
}

/** Share of all CPU time between two snapshots spent by processes that are not ours. */
export const otherLoad = (a, b) =>
  Math.max(0, (b.busy - a.busy - (b.ours - a.ours)) / (b.total - a.total || 1));

/** Share of all CPU time spent busy over `ms`. */
export async function cpuBusy(ms = 1000) {
  const a = systemTicks();
  await sleep(ms);
  const b = systemTicks();
  return (b.busy - a.busy) / (b.total - a.total || 1);
}
