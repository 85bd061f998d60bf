import { TrajgateError } from '../errors.js';
import { diffSummary } from '../event/tool-diff.js';
import type { ToolPinsView } from '../wire.js';
import { usageOf } from './help.js';
import { table, terminalText } from './table.js';

type Call = (method: 'GET' | 'POST', path: string, body?: object) => Promise<unknown>;

/** Digests as tables show them. */
const short = (digest: string) => digest.slice(0, 12);
/** A description's first line, bounded: a server's text, one cell of a table. */
const DESCRIPTION_CHARS = 80;

/**
 * `trajgate tools` lists each server's pinned tool list; `tools SERVER` its tools and the lists
 * pending review; `tools approve SERVER [--digest D]` pins a pending one (without `--digest`:
 * the only one pending), which resumes the sessions it paused.
 */
export async function tools(
  call: Call,
  args: readonly string[],
  digest: string | undefined,
  write: ((text: string) => void) | null,
): Promise<unknown> {
  const path = (server: string) => `/api/tools/${encodeURIComponent(server)}`;
  if (args[0] === 'approve' && args.length === 2) {
    const server = args[1] as string;
    const d = digest ?? onlyPending((await call('GET', path(server))) as ToolPinsView);
    const result = (await call('POST', `${path(server)}/approve`, { digest: d })) as {
      resumed: string[];
    };
    const resumed = result.resumed.length > 0 ? result.resumed.join(', ') : 'none';
    write?.(
      terminalText(`pinned tool list ${short(d)} of ${server}; sessions resumed: ${resumed}`),
    );
    return result;
  }
  if (digest !== undefined || args.length > 1 || args[0] === 'approve')
    throw new TrajgateError('E_USAGE', usageOf('tools'));
  if (args.length === 0) {
    const list = (await call('GET', '/api/tools')) as ToolPinsView[];
    write?.(serversTable(list));
    return list;
  }
  const view = (await call('GET', path(args[0] as string))) as ToolPinsView;
  write?.(serverText(view));
  return view;
}

/** The digest of the one list pending for the server; none or several: an error naming them. */
function onlyPending(view: ToolPinsView): string {
  const [first, ...more] = view.pending;
  if (first !== undefined && more.length === 0) return first.digest;
  const why =
    first === undefined
      ? `nothing is pending for ${view.server}: its pinned list is the one it sends`
      : `${view.pending.length} lists are pending for ${view.server}: name one with --digest`;
  throw new TrajgateError(
    'E_USAGE',
    why,
    view.pending.map((p) => `${p.digest}: ${diffSummary(p.diff)}`),
  );
}

function serversTable(list: readonly ToolPinsView[]): string {
  if (list.length === 0) return 'no tool lists seen yet';
  return table(
    ['SERVER', 'DIGEST', 'PINNED AT', 'BY', 'TOOLS', 'PENDING'],
    list.map((v) => [
      v.server,
      short(v.digest),
      v.pinnedAt || '-',
      v.by || '(nothing pinned)',
      String(v.tools.length),
      String(v.pending.length),
    ]),
  );
}

function serverText(v: ToolPinsView): string {
  const pinned = v.by === '' ? 'nothing pinned' : `pinned ${v.pinnedAt} by ${v.by}`;
  const head = terminalText(`${v.server}: tool list ${short(v.digest)}, ${pinned}`);
  const rows = v.tools.map((t) => [t.name, short(t.digest), firstLine(t.description)]);
  const tools =
    rows.length === 0 ? 'no tools pinned' : table(['TOOL', 'DIGEST', 'DESCRIPTION'], rows);
  const pending = v.pending.map((p) =>
    terminalText(
      `pending ${p.digest}: ${diffSummary(p.diff)} (pin: trajgate tools approve ${v.server} --digest ${p.digest})`,
    ),
  );
  return [head, tools, ...pending].join('\n');
}

function firstLine(text: string | undefined): string {
  const line = (text ?? '').split(/\r?\n/, 1)[0] as string;
  const chars = [...line];
  return chars.length > DESCRIPTION_CHARS
    ? `${chars.slice(0, DESCRIPTION_CHARS - 1).join('')}…`
    : line;
}
