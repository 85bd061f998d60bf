import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeEvent } from '../../src/event/normalize.js';
import type { Decision } from '../../src/guard/guard.js';
import { recordFields } from '../../src/journal/json.js';
import {
  COMMAND_BYTES,
  journaledCommand,
  journaledTarget,
  TARGET_BYTES,
  TEXT_BYTES,
  withJournaledTarget,
} from '../../src/journal/long-target.js';
import type { JournalRecord, Unstamped } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A target over TARGET_BYTES of UTF-8 is journaled as its prefix (cut
 * between characters) with the whole's size and SHA-256, in every record that carries one.
 */
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

describe('journaledTarget', () => {
  it('keeps a target of up to TARGET_BYTES whole, with no more fields', () => {
    expect(journaledTarget('http://example.com/x')).toEqual({ target: 'http://example.com/x' });
    const exact = 'é'.repeat(TARGET_BYTES / 2);
    expect(journaledTarget(exact)).toEqual({ target: exact });
    expect(journaledTarget('a'.repeat(TARGET_BYTES))).toEqual({ target: 'a'.repeat(TARGET_BYTES) });
  });

  it.each([
    ['ASCII, one byte over', 'a'.repeat(TARGET_BYTES + 1)],
    ['ASCII', 'a'.repeat(15 * 1024)],
    ['two-byte characters', 'é'.repeat(1000)],
    ['three-byte characters', '道'.repeat(1000)],
    ['surrogate pairs', `a${'😀'.repeat(1000)}`],
    ['a character across the cut', `${'a'.repeat(TARGET_BYTES - 1)}😀tail`],
  ])('%s: a prefix cut between characters, the size and SHA-256 of the whole', (_n, target) => {
    const j = journaledTarget(target);
    expect(Buffer.byteLength(j.target)).toBeLessThanOrEqual(TARGET_BYTES);
    expect(Buffer.byteLength(j.target)).toBeGreaterThan(TARGET_BYTES - 4);
    expect(target.startsWith(j.target)).toBe(true);
    expect(Buffer.from(j.target).toString()).toBe(j.target);
    expect(j.targetBytes).toBe(Buffer.byteLength(target));
    expect(j.targetSha256).toBe(sha256(target));
    // Another target with the same prefix is not the one journaled.
    expect(journaledTarget(`${target}x`).targetSha256).not.toBe(j.targetSha256);
  });

  it('withJournaledTarget leaves a record with a short target (or none) as it is', () => {
    const short = { type: 'tunnel', target: 'h:443' };
    expect(withJournaledTarget(short)).toBe(short);
    const none = { type: 'deny' };
    expect(withJournaledTarget(none)).toBe(none);
    const long = { type: 'tunnel', target: 'h'.repeat(600), reason: 'r' };
    expect(withJournaledTarget(long)).toEqual({ ...long, ...journaledTarget(long.target) });
  });

  it('a free text quoting the whole target quotes its prefix; any free text is bounded', () => {
    const target = `/w/${'道'.repeat(400)}`;
    const quoted = withJournaledTarget({ type: 'event', target, reason: `read of ${target}: x` });
    expect(quoted.reason).toBe(`read of ${journaledTarget(target).target}…: x`);
    // Text that quotes something else the agent chose (a long host name, an upstream's error).
    const host = `${'h'.repeat(5000)}.example`;
    const outcome = {
      type: 'outcome',
      error: `cannot resolve ${host}`,
      denied: host,
      reason: 'é'.repeat(3000),
    };
    const bounded = withJournaledTarget(outcome);
    for (const k of ['error', 'denied', 'reason'] as const) {
      expect(Buffer.byteLength(bounded[k])).toBeLessThanOrEqual(TEXT_BYTES);
      expect(Buffer.byteLength(bounded[k])).toBeGreaterThan(TEXT_BYTES - 6);
      expect(bounded[k].endsWith('…')).toBe(true);
      expect(outcome[k].startsWith(bounded[k].slice(0, -1))).toBe(true);
    }
    const short = { type: 'outcome', error: 'e'.repeat(TEXT_BYTES) };
    expect(withJournaledTarget(short)).toBe(short);
  });
});

const DECISION: Decision = {
  verdict: 'ALLOW',
  approved: false,
  boundary: null,
  count: 0,
  reason: 'allowed by network.allow',
  counted: null,
} as unknown as Decision;

describe('records with long targets', () => {
  it('an event record: prefix and digest, written as JSON.stringify would', () => {
    const url = `http://127.0.0.1:8080/${'q'.repeat(2000)}`;
    const event = normalizeEvent(
      { kind: 'network', target: url, method: 'GET' },
      { session: 's', source: 'proxy', ts: 0, workspace: '/tmp' },
    );
    const record = eventRecord(event, DECISION);
    expect(record).toMatchObject({
      target: url.slice(0, TARGET_BYTES),
      targetBytes: url.length,
      targetSha256: sha256(event.target),
    });
    expect(`{${recordFields(record)}`).toBe(JSON.stringify(record));
    const short = eventRecord({ ...event, target: 'http://h/x' }, DECISION);
    expect(short.targetSha256).toBeUndefined();
    expect(`{${recordFields(short)}`).toBe(JSON.stringify(short));
  });

  it('the writer bounds every record type that carries a target, whoever built it', () => {
    const path = join(tempDir(), 'journal.jsonl');
    const seen: Unstamped<JournalRecord>[] = [];
    const writer = new JournalWriter(path, {
      lastSeq: 0,
      fsyncMs: 0,
      onAppend: (r) => seen.push(r),
    });
    const long = `evil.test:443${'/x'.repeat(400)}`;
    const records: Unstamped<JournalRecord>[] = [
      { type: 'tunnel', session: 's', target: long, change: 'closed', reason: 'r' },
      {
        type: 'refusal',
        source: 'proxy',
        client: '127.0.0.1',
        status: 400,
        reason: 'r',
        target: long,
      },
      { type: 'result', session: 's', rid: null, kind: 'command', target: long, ok: true },
    ];
    for (const r of records) writer.append(r);
    writer.close();
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const [i, line] of lines.entries()) {
      const r = JSON.parse(line) as { type: string; target: string };
      expect(r).toMatchObject({
        type: records[i]?.type,
        target: long.slice(0, TARGET_BYTES),
        targetBytes: long.length,
        targetSha256: sha256(long),
      });
      expect(Buffer.byteLength(line)).toBeLessThan(TARGET_BYTES + 400);
      // What the writer tells the index is what the file holds.
      expect(seen[i]).toMatchObject({ target: r.target, targetSha256: sha256(long) });
    }
  });
});

describe('command lines: bounded as JSON writes them', () => {
  /** Bytes of a string as the journal writes it, quotes left out. */
  const jsonBytes = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2;
  it('a command line of up to COMMAND_BYTES is kept whole', () => {
    expect(journaledCommand('npm test')).toEqual({ command: 'npm test' });
    const exact = 'é'.repeat(COMMAND_BYTES / 2);
    expect(journaledCommand(exact)).toEqual({ command: exact });
  });

  it.each([
    ['ASCII', 'x'.repeat(60_000)],
    ['control characters (six bytes each in JSON)', '\u0001'.repeat(5_000)],
    ['newlines and quotes (two each)', '"\n\\'.repeat(3_000)],
    ['surrogate pairs', '😀'.repeat(2_000)],
    ['lone surrogates', '\ud800'.repeat(2_000)],
    ['an escape across the cut', `${'a'.repeat(COMMAND_BYTES - 3)}\u0002tail`],
  ])('%s: a prefix whose JSON fits, the size and SHA-256 of the whole', (_n, command) => {
    const j = journaledCommand(command);
    expect(jsonBytes(j.command)).toBeLessThanOrEqual(COMMAND_BYTES);
    expect(jsonBytes(j.command)).toBeGreaterThan(COMMAND_BYTES - 7);
    expect(command.startsWith(j.command)).toBe(true);
    expect(j.commandBytes).toBe(Buffer.byteLength(command));
    expect(j.commandSha256).toBe(sha256(command));
  });

  it('an event record: redacted, then bounded, written as JSON.stringify would, well under 12 KB', () => {
    const line = `curl -H 'Authorization: Bearer s3cr3t-t0ken' ${'\u001b[31m'.repeat(5_000)}`;
    const event = normalizeEvent(
      { kind: 'command', target: '/w', command: line },
      { session: 's', source: 'ingest', ts: 0, workspace: '/w' },
    );
    expect(event.command?.startsWith("curl -H 'Authorization: [redacted]' ")).toBe(true);
    const record = eventRecord(event, DECISION);
    expect(record.command).toBe(journaledCommand(event.command as string).command);
    expect(record.commandSha256).toBe(sha256(event.command as string));
    const text = `{${recordFields(record)}`;
    expect(text).toBe(JSON.stringify(record));
    expect(text).not.toContain('s3cr3t');
    expect(Buffer.byteLength(text)).toBeLessThan(4_000);
  });
});
