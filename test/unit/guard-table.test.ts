import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { formatVerdict, Guard } from '../../src/guard/guard.js';
import { layout, tempDir } from '../helpers/tmp.js';

/**
 * Table-driven guard tests: each YAML file under test/fixtures/guard is a policy, an optional
 * file-system layout and a list of steps (events with the expected verdict, or operator
 * actions). `{tmp}` stands for a fresh temp folder holding the layout.
 */
interface Step {
  session?: string;
  kind?: string;
  target?: string;
  approved?: boolean;
  method?: string;
  ts?: number;
  expect?: string;
  count?: number;
  approvedBy?: string;
  paused?: boolean;
  approve?: { pattern: string; kind?: string; session?: string; expiresAt?: number };
  resume?: { session: string; reset: boolean };
  /** An operator's deny pattern (Guard.addDeny) and its removal (Guard.revoke) by id. */
  denyPattern?: { pattern: string; session?: string; id: string };
  revoke?: string;
  /** Text the decision's reason contains. */
  reason?: string;
  /** The deny pattern's reason that refused it (the record's `denied`). */
  deniedBy?: string;
}

interface Fixture {
  name: string;
  workspace: string;
  setup?: { dirs: string[]; links?: Record<string, string> };
  config?: Record<string, unknown>;
  steps: Step[];
}

const dir = join(import.meta.dirname, '../fixtures/guard');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));

describe.each(files)('guard fixture %s', (file) => {
  const tmp = tempDir();
  const text = readFileSync(join(dir, file), 'utf8').replaceAll('{tmp}', tmp);
  const fixture = parse(text) as Fixture;
  if (fixture.setup) layout(tmp, fixture.setup.dirs, fixture.setup.links);
  const config = parseConfig(
    stringify({ version: 1, workspace: fixture.workspace, ...fixture.config }),
    file,
    tmp,
  );
  const guard = new Guard(compilePolicy(config));

  it(`${fixture.name}: every step as expected`, () => {
    fixture.steps.forEach((step, i) => {
      const at = `${file} step ${i + 1}`;
      if (step.approve) {
        guard.approve(step.approve);
        return;
      }
      if (step.resume) {
        guard.resume(step.resume.session, step.resume.reset);
        return;
      }
      if (step.denyPattern) {
        guard.addDeny(step.denyPattern);
        return;
      }
      if (step.revoke) {
        expect(guard.revoke(step.revoke), `${at}: revoke ${step.revoke}`).toBeDefined();
        return;
      }
      const session = step.session ?? 'replay';
      const event = normalizeEvent(
        {
          kind: step.kind as string,
          target: step.target as string,
          ...(step.method === undefined ? {} : { method: step.method }),
        },
        {
          session,
          source: 'replay',
          ts: step.ts ?? 1000 + i,
          workspace: guard.policy.workspaceFor(session),
          approved: step.approved === true,
        },
      );
      const decision = guard.inspect(event);
      guard.commit(session, event.ts, decision);
      expect(formatVerdict(decision), `${at}: ${decision.reason}`).toBe(step.expect);
      if (step.count !== undefined) expect(decision.count, `${at} count`).toBe(step.count);
      if (step.approvedBy !== undefined)
        expect(decision.approvedBy, `${at} approvedBy`).toBe(step.approvedBy);
      if (step.reason !== undefined) expect(decision.reason, `${at} reason`).toContain(step.reason);
      if (step.deniedBy !== undefined)
        expect(decision.deniedBy, `${at} deniedBy`).toBe(step.deniedBy);
      if (step.paused !== undefined) {
        expect(guard.session(session)?.pausedAt != null, `${at} paused`).toBe(step.paused);
      }
    });
  });
});
