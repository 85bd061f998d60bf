// What the journal's hash chain costs the writer alone, per record: the same event records
// appended through JournalWriter with `chain` on and off, alternated (on, off, … : drift hits
// both), the fastest round of each. Complements the wrk figure, which other load on the host
// blurs more than a few µs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export async function writerChainCost(root, { records = 100_000, rounds = 5 } = {}) {
  const { JournalWriter } = await import(join(root, 'dist/journal/writer.js'));
  const dir = mkdtempSync(join(tmpdir(), 'trajgate-chain-'));
  const record = (i) => ({
    type: 'event',
    session: `agent-${i % 100}`,
    source: 'proxy',
    kind: 'network',
    target: `http://127.0.0.1:8000/packages/${i}/index.json`,
    method: 'GET',
    approved: true,
    verdict: 'ALLOW',
    boundary: null,
    count: 0,
    reason: 'allowlisted: 127.0.0.1:8000',
    approvedBy: '127.0.0.1:8000',
  });
  const best = { on: Infinity, off: Infinity };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const chain of [true, false]) {
        const path = join(dir, `j-${round}-${chain}.jsonl`);
        const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 60_000, chain });
        const began = performance.now();
        // One write(2) per record, as the gateway writes a decision.
        for (let i = 0; i < records; i++) w.append(record(i));
        const us = ((performance.now() - began) * 1000) / records;
        w.close();
        rmSync(path);
        const key = chain ? 'on' : 'off';
        best[key] = Math.min(best[key], us);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { usOn: best.on, usOff: best.off, usPerRecord: best.on - best.off, records, rounds };
}
