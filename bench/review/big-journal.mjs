// A large journal, quickly: `lines` records as trajgate writes them (an event then its outcome,
// round-robin over `sessions` agents), and a session `archived` whose events all lie in the
// first 2 % of the file: the worst case of a backwards scan.
import { closeSync, openSync, writeSync } from 'node:fs';

const ARCHIVED = 'archived';

/** Writes the journal; returns how many lines, bytes, and each session's event count. */
export function writeBigJournal(path, { lines, sessions }) {
  const fd = openSync(path, 'w', 0o600);
  const events = new Map();
  const t0 = Date.now() - 3_600_000;
  let seq = 0;
  let bytes = 0;
  let chunk = '';
  const flush = () => {
    bytes += writeSync(fd, chunk);
    chunk = '';
  };
  const line = (text) => {
    chunk += `${text}\n`;
    if (chunk.length > 8 << 20) flush();
  };
  while (seq < lines) {
    const i = seq >> 1;
    const session = seq < lines / 50 && i % 4 === 0 ? ARCHIVED : sessions[i % sessions.length];
    events.set(session, (events.get(session) ?? 0) + 1);
    const ts = new Date(t0 + Math.floor(seq / 1000)).toISOString();
    const target = `http://registry.example.com/packages/${session}/${i}/index.json`;
    const rid = ++seq;
    line(
      `{"seq":${rid},"ts":"${ts}","type":"event","session":"${session}","source":"proxy","kind":"network","target":"${target}","method":"GET","approved":true,"verdict":"ALLOW","boundary":null,"count":0,"reason":"allowlisted: registry.example.com"}`,
    );
    line(
      `{"seq":${++seq},"ts":"${ts}","type":"outcome","rid":${rid},"session":"${session}","status":200,"bytesUp":0,"bytesDown":${300 + (i % 900)},"durationMs":${i % 40}}`,
    );
  }
  flush();
  closeSync(fd);
  return { lines: seq, bytes, events };
}

export { ARCHIVED };
