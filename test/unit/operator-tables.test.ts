import { describe, expect, it } from 'vitest';
import { eventsTable, sessionsTable } from '../../src/cli/operator-tables.js';
import type { SessionView } from '../../src/review/api.js';
import { eventRecord } from '../helpers/event-record.js';

/** `trajgate events` and `trajgate sessions`: a sequence rule and the event it fired after. */
const event = eventRecord;

const session = (over: Partial<SessionView>): SessionView => ({
  id: 's',
  state: 'paused',
  flagged: 0,
  counts: {},
  pausedAt: '2026-03-01T10:00:00.000Z',
  pausedBy: 'secret-then-egress',
  pausedRule: { name: 'secret-then-egress', after: 41 },
  held: 1,
  lastActivity: '2026-03-01T10:00:00.000Z',
  events: 57,
  credentialNames: [],
  ...over,
});

describe('operator tables', () => {
  it('events: the rule that named a verdict and the earlier event it fired after', () => {
    const rows = eventsTable([
      event(57, {
        kind: 'network',
        target: 'example.com:443',
        method: 'CONNECT',
        verdict: 'PAUSE',
        boundary: 'secret-then-egress',
        reason: 'secret-then-egress: network to example.com:443 after #41 read /h/.ssh/id',
        rule: { name: 'secret-then-egress', after: 41 },
      }),
      event(50, { verdict: 'REVIEW', boundary: 'egress-volume', rule: { name: 'egress-volume' } }),
      event(45, { verdict: 'REVIEW', boundary: 'network', count: 1 }),
      event(41, { target: '/h/.ssh/id', marks: ['secret-then-egress'] }),
    ]).split('\n');
    expect(rows[0]).toMatch(/^SEQ +TIME +VERDICT +KIND +TARGET +REASON$/);
    expect(rows[1]).toMatch(
      /^57 +\S+ +PAUSE: secret-then-egress after #41 +network +CONNECT example\.com:443 +secret-then-egress: .* after #41 read \/h\/\.ssh\/id$/,
    );
    expect(rows[2]).toMatch(/^50 +\S+ +REVIEW: egress-volume +read /);
    expect(rows[3]).toMatch(/^45 +\S+ +REVIEW: network +read /);
    expect(rows[4]).toMatch(/^41 +\S+ +ALLOW +read +\/h\/\.ssh\/id +ok$/);
  });

  it('events: a path as resolved when judged, where it differs from what was sent', () => {
    const rows = eventsTable([
      event(4, { kind: 'write', target: 'notes.txt', resolved: '/ws/notes.txt' }),
      event(3, { kind: 'read', target: 'link/../x', resolved: '/outside/x', alias: '/ws/x' }),
      event(2, { kind: 'read', target: 'loop/a', resolved: null }),
      event(1, { kind: 'read', target: '/ws/a', resolved: '/ws/a' }),
    ]).split('\n');
    expect(rows[1]).toMatch(/ write +notes\.txt → \/ws\/notes\.txt +ok$/);
    expect(rows[2]).toMatch(/ read +link\/\.\.\/x → \/outside\/x +ok$/);
    expect(rows[3]).toMatch(/ read +loop\/a → \(unresolvable: judged as outside\) +ok$/);
    expect(rows[4]).toMatch(/ read +\/ws\/a +ok$/);
  });

  it('events: a command line after its folder, one line, cut, control characters made visible', () => {
    const rows = eventsTable([
      event(3, { kind: 'command', target: '/w', command: 'npm test' }),
      event(2, {
        kind: 'command',
        target: '/w',
        command: `echo 'a\nb' \u001b[2J${'x'.repeat(200)}`,
      }),
      event(1, { kind: 'command', target: '/w', command: 'ls', commandBytes: 9000 }),
    ]).split('\n');
    expect(rows[1]).toMatch(/^3 +\S+ +ALLOW +command +\/w \$ npm test +ok$/);
    expect(rows[2]).toContain(`/w $ echo 'a?b' ?[2J${'x'.repeat(120 - 15)}… `);
    expect(rows[3]).toMatch(/ \/w \$ ls… +ok$/);
  });

  it('sessions: a session a rule paused names the rule and the earlier event', () => {
    const rows = sessionsTable([
      session({}),
      session({ id: 't', pausedBy: 'egress-volume', pausedRule: { name: 'egress-volume' } }),
      session({ id: 'u', pausedBy: 'network', pausedRule: null, counts: { network: 2 } }),
    ]).split('\n');
    expect(rows[1]).toMatch(/^s +PAUSED \(secret-then-egress after #41\) +- +2026\S+ +1 /);
    expect(rows[2]).toMatch(/^t +PAUSED \(egress-volume\) +- /);
    expect(rows[3]).toMatch(/^u +PAUSED \(network\) +network=2 /);
  });

  it('sessions: the credentials a session carried, by name', () => {
    const rows = sessionsTable([
      session({ credentialNames: ['github', 'npm-reg'] }),
      session({ id: 't' }),
    ]).split('\n');
    expect(rows[0]).toMatch(/ +LAST ACTIVITY +CREDENTIALS$/);
    expect(rows[1]).toMatch(/ 2026\S+ +github npm-reg$/);
    expect(rows[2]).toMatch(/ 2026\S+ +-$/);
  });
});
