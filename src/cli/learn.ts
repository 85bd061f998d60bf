import { parseArgs } from 'node:util';
import { TrajgateError } from '../errors.js';
import { journalFiles } from '../journal/files.js';
import { readJournal } from '../journal/reader.js';
import type { Conflict, Proposal, ProposedEntry } from '../review/learn-patterns.js';
import { propose } from '../review/learn-patterns.js';
import { RequestLog } from '../review/learn-requests.js';

/**
 * `trajgate learn --from JOURNAL… [--agent ID] [--json]`: the least-privilege allow entries
 * that would have admitted what the journals show allowed or approved, and nothing they show
 * refused, as a YAML patch for the config (network.allow, or the agent's allow), each entry
 * with its count and the first and last time seen. Reads the journals (rotated files too,
 * oldest first) without changing them and judges nothing again.
 */
export function learn(
  argv: string[],
  print: (line: string) => void,
  warn: (line: string) => void,
): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      from: { type: 'string', multiple: true },
      agent: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const journals = [...new Set([...(values.from ?? []), ...positionals])];
  if (journals.length === 0) {
    throw new TrajgateError('E_USAGE', 'learn: name the journals: --from JOURNAL…');
  }
  const agent = values.agent;
  if (agent === '') throw new TrajgateError('E_USAGE', 'learn: --agent needs an agent id');
  const log = new RequestLog();
  let files = 0;
  journals.forEach((journal, n) => {
    const each = journalFiles(journal);
    if (each.length === 0) throw new TrajgateError('E_INPUT_READ', `${journal}: no such journal`);
    files += each.length;
    for (const file of each) {
      readJournal(
        file,
        (record) => log.add(record, n),
        (m) => warn(`trajgate: warning: ${m}`),
        {
          repair: false,
        },
      );
    }
  });
  const requests = log.requests().filter((r) => agent === undefined || r.session === agent);
  const proposal = propose(requests);
  const admitted = requests.filter((r) => r.admitted).length;
  const summary = {
    journals,
    files,
    requests: requests.length,
    admitted,
    refused: requests.length - admitted,
    unreadable: log.unreadable,
  };
  if (values.json) {
    const scope = agent === undefined ? 'network.allow' : `agents[${agent}].allow`;
    print(JSON.stringify({ scope, agent: agent ?? null, ...summary, ...proposal }, null, 2));
  } else {
    for (const line of yamlPatch(proposal, agent, summary)) print(line);
  }
  return 0;
}

type Summary = {
  journals: readonly string[];
  files: number;
  requests: number;
  admitted: number;
  refused: number;
  unreadable: number;
};

/** The patch: comments say where each entry comes from; quoted scalars are JSON (valid YAML). */
function yamlPatch(p: Proposal, agent: string | undefined, s: Summary): string[] {
  const q = JSON.stringify;
  const lines = [
    `# trajgate learn: ${s.requests} network request(s) in ${s.files} file(s) of ${s.journals.map((j) => q(j)).join(', ')}${agent === undefined ? '' : ` for agent ${q(agent)}`}`,
    `# ${s.admitted} admitted (allowed or approved), ${s.refused} refused; no entry below admits a refused one.`,
    '# Review each entry before merging it into the config.',
  ];
  if (s.unreadable > 0)
    lines.push(`# ${s.unreadable} event(s) with an unreadable target left out.`);
  const entries = p.entries.flatMap((e) => entryLines(e, agent === undefined ? '    ' : '      '));
  if (agent === undefined) {
    lines.push('network:', p.entries.length === 0 ? '  allow: []' : '  allow:', ...entries);
  } else {
    lines.push('agents:', `  - id: ${q(agent)}`);
    lines.push(p.entries.length === 0 ? '    allow: []' : '    allow:', ...entries);
  }
  if (p.conflicts.length > 0) {
    lines.push('# Not proposed: admitted requests no entry admits without a refused one:');
    for (const c of p.conflicts) lines.push(conflictLine(c));
  }
  return lines;
}

function entryLines(e: ProposedEntry, indent: string): string[] {
  const what = e.kind === 'tunnel' ? 'blind tunnel(s)' : 'request(s)';
  const sessions = e.sessions.map((x) => JSON.stringify(x)).join(', ');
  return [
    `${indent}# ${e.count} ${what}, first ${e.first}, last ${e.last}; session(s) ${sessions}`,
    `${indent}- ${JSON.stringify(e.pattern)}`,
  ];
}

function conflictLine(c: Conflict): string {
  const r = c.refused;
  const why =
    r === undefined
      ? 'no pattern admits it'
      : `would admit #${r.seq} ${JSON.stringify(r.target)} (${r.why})`;
  return `#   ${JSON.stringify(c.target)} (${c.count} request(s)): ${why}`;
}
