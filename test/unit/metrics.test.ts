import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/review/metrics.js';

const line = (text: string, prefix: string) =>
  text.split('\n').find((l) => l.startsWith(prefix + ' '));

describe('metrics counted on the hot path, rendered when scraped', () => {
  it('event counts reach trajgate_events_total once, however often it is scraped', async () => {
    const m = new Metrics({ held: () => 0, paused: () => 0, sessions: () => 0 });
    for (let i = 0; i < 3; i++) m.event('proxy', 'network', 'ALLOW');
    m.event('bridge', 'write', 'PAUSE');
    const allow = 'trajgate_events_total{source="proxy",kind="network",verdict="ALLOW"}';
    expect(line(await m.text(), allow)).toBe(`${allow} 3`);
    expect(line(await m.text(), allow)).toBe(`${allow} 3`);
    m.event('proxy', 'network', 'ALLOW');
    const text = await m.text();
    expect(line(text, allow)).toBe(`${allow} 4`);
    const pause = 'trajgate_events_total{source="bridge",kind="write",verdict="PAUSE"}';
    expect(line(text, pause)).toBe(`${pause} 1`);
  });

  it("Node's process and heap metrics follow the gateway's; gateways in one process coexist", async () => {
    const a = new Metrics({ held: () => 0, paused: () => 0, sessions: () => 0 });
    const b = new Metrics({ held: () => 0, paused: () => 0, sessions: () => 0 });
    a.journalFailures.inc();
    const [textA, textB] = await Promise.all([a.text(), b.text()]);
    for (const text of [textA, textB]) {
      expect(text).toContain('# TYPE process_resident_memory_bytes gauge');
      expect(Number(line(text, 'nodejs_heap_size_used_bytes')?.split(' ')[1])).toBeGreaterThan(0);
      expect(text).toMatch(/\n\n# HELP process_cpu_user_seconds_total /);
    }
    expect(line(textA, 'trajgate_journal_failures_total')).toBe(
      'trajgate_journal_failures_total 1',
    );
    expect(line(textB, 'trajgate_journal_failures_total')).toBe(
      'trajgate_journal_failures_total 0',
    );
  });

  it('journal write times render as a Prometheus histogram: cumulative buckets, sum, count', async () => {
    const m = new Metrics({ held: () => 0, paused: () => 0, sessions: () => 0 });
    for (const s of [0.00002, 0.003, 0.004, 1]) m.journalWrite.observe(s);
    const text = await m.text();
    const name = 'trajgate_journal_write_seconds';
    expect(text).toContain(`# TYPE ${name} histogram`);
    expect(line(text, `${name}_bucket{le="0.00001"}`)).toMatch(/ 0$/);
    expect(line(text, `${name}_bucket{le="0.00005"}`)).toMatch(/ 1$/);
    expect(line(text, `${name}_bucket{le="0.001"}`)).toMatch(/ 1$/);
    expect(line(text, `${name}_bucket{le="0.005"}`)).toMatch(/ 3$/);
    expect(line(text, `${name}_bucket{le="0.05"}`)).toMatch(/ 3$/);
    expect(line(text, `${name}_bucket{le="+Inf"}`)).toMatch(/ 4$/);
    expect(line(text, `${name}_count`)).toBe(`${name}_count 4`);
    expect(Number(line(text, `${name}_sum`)?.split(' ')[1])).toBeCloseTo(1.00702, 10);
  });
});

describe('shared state store metrics', () => {
  it('memory mode: store up, no op series yet, the families declared', async () => {
    const text = await new Metrics({ held: () => 0, paused: () => 0, sessions: () => 0 }).text();
    expect(line(text, 'trajgate_store_up')).toBe('trajgate_store_up 1');
    expect(text).toContain('# TYPE trajgate_store_seconds histogram');
    expect(text).toContain('# TYPE trajgate_store_errors_total counter');
    expect(text).not.toMatch(/^trajgate_store_(seconds|errors_total)[{_ ]/m);
  });

  it('store op times render per op as histograms; errors count per op; up follows the store', async () => {
    const m = new Metrics({ held: () => 0, paused: () => 0, sessions: () => 0 });
    for (const s of [0.00005, 0.0003, 0.002]) m.storeOp('claim', s);
    m.storeOp('refresh', 2);
    m.storeError('claim');
    m.storeError('claim');
    m.storeError('publish');
    m.storeUp(false);
    let text = await m.text();
    const name = 'trajgate_store_seconds';
    expect(line(text, `${name}_bucket{le="0.0001",op="claim"}`)).toMatch(/ 1$/);
    expect(line(text, `${name}_bucket{le="0.0005",op="claim"}`)).toMatch(/ 2$/);
    expect(line(text, `${name}_bucket{le="0.0025",op="claim"}`)).toMatch(/ 3$/);
    expect(line(text, `${name}_bucket{le="+Inf",op="claim"}`)).toMatch(/ 3$/);
    expect(line(text, `${name}_count{op="claim"}`)).toBe(`${name}_count{op="claim"} 3`);
    expect(Number(line(text, `${name}_sum{op="claim"}`)?.split(' ')[1])).toBeCloseTo(0.00235, 10);
    expect(line(text, `${name}_bucket{le="1",op="refresh"}`)).toMatch(/ 0$/);
    expect(line(text, `${name}_bucket{le="+Inf",op="refresh"}`)).toMatch(/ 1$/);
    expect(line(text, 'trajgate_store_errors_total{op="claim"}')).toMatch(/ 2$/);
    expect(line(text, 'trajgate_store_errors_total{op="publish"}')).toMatch(/ 1$/);
    expect(line(text, 'trajgate_store_up')).toBe('trajgate_store_up 0');
    m.storeUp(true);
    text = await m.text();
    expect(line(text, 'trajgate_store_up')).toBe('trajgate_store_up 1');
    // The unlabelled journal histogram is unchanged: one series, rendered before any write.
    expect(line(text, 'trajgate_journal_write_seconds_count')).toBe(
      'trajgate_journal_write_seconds_count 0',
    );
  });
});
