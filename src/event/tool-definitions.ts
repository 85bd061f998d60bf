import { createHash } from 'node:crypto';
import type { ToolDefinitionView } from '../wire.js';

export type { ToolDefinitionView };

/** The fields of a tool that are pinned, in the order they are kept (the name aside). */
export const TOOL_FIELDS = [
  'title',
  'description',
  'inputSchema',
  'outputSchema',
  'annotations',
] as const;
export type ToolField = (typeof TOOL_FIELDS)[number];

/**
 * What is kept of one tool's fields, in characters: a server's tool list is the server's to
 * size, not the journal's. The digest covers every field whole; past this a field is cut and
 * says so (CUT), a schema then kept as the start of its canonical JSON.
 */
export const KEPT_PER_TOOL = 65_536;
/** Longer names are no names a client shows or calls; JSON deeper than this is no schema. */
const MAX_NAME = 1024;
const MAX_DEPTH = 64;
/** Marks a field cut to KEPT_PER_TOOL; its count is of the characters left out. */
export const CUT = /… \[cut: \d+ more characters; the digest covers all of it\]$/;

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * JSON with object keys sorted at every depth and arrays in order (the contract's canonical
 * form, so that two servers sending the same tool in another key order pin alike). Throws a
 * RangeError past MAX_DEPTH.
 */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_DEPTH) throw new RangeError(`nested deeper than ${MAX_DEPTH} levels`);
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k], depth + 1)}`).join(',')}}`;
}

/** SHA-256 hex of a list: its tools' digests sorted by tool name, joined with `\n`. */
export function listDigest(tools: readonly ToolDefinitionView[]): string {
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sha256(sorted.map((t) => t.digest).join('\n'));
}

/** A server's `tools/list` as pinned and compared: each tool's definition, in its order. */
export interface ToolList {
  readonly tools: ToolDefinitionView[];
  readonly digest: string;
  /** Tools that are no tool (no string name, a name twice, a field of the wrong type). */
  readonly malformed: number;
}

/**
 * Reads the tools a server sent. A tool that is malformed is not skipped (a server could hide
 * one so): it stands in the list as `(tool #N)` with the reason as its description, so the
 * list differs from any pinned one and a reviewer is shown why.
 */
export function readToolList(raw: readonly unknown[]): ToolList {
  const names = new Set<string>();
  let malformed = 0;
  const tools = raw.map((value, i) => {
    const why = problemOf(value, names);
    if (why === null) return definition(value as Record<string, unknown>);
    malformed++;
    return malformedTool(i + 1, why, value);
  });
  return { tools, digest: listDigest(tools), malformed };
}

/** Why a tool is no tool, or null; a good one's name is added to `names`. */
function problemOf(value: unknown, names: Set<string>): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const t = value as Record<string, unknown>;
  if (typeof t.name !== 'string' || t.name === '') return 'no string "name"';
  if (t.name.length > MAX_NAME) return `a "name" longer than ${MAX_NAME} characters`;
  if (names.has(t.name)) return `a second tool named ${JSON.stringify(t.name)}`;
  for (const field of ['title', 'description'] as const)
    if (t[field] !== undefined && typeof t[field] !== 'string')
      return `${JSON.stringify(t.name)}: "${field}" is not a string`;
  for (const field of ['inputSchema', 'outputSchema', 'annotations'] as const) {
    const v = t[field];
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v)))
      return `${JSON.stringify(t.name)}: "${field}" is not an object`;
  }
  try {
    canonicalJson(value);
  } catch (err) {
    return `${JSON.stringify(t.name)}: ${(err as Error).message}`;
  }
  names.add(t.name);
  return null;
}

/** A good tool's definition: digest over its whole fields, each kept whole or cut. */
function definition(t: Record<string, unknown>): ToolDefinitionView {
  const whole: Record<string, unknown> = { name: t.name };
  for (const field of TOOL_FIELDS) if (t[field] !== undefined) whole[field] = t[field];
  const digest = sha256(canonicalJson(whole));
  const kept: Record<string, unknown> = { name: t.name };
  let left = KEPT_PER_TOOL;
  for (const field of TOOL_FIELDS) {
    const v = whole[field];
    if (v === undefined) continue;
    const text = typeof v === 'string' ? v : canonicalJson(v);
    if (text.length <= left) kept[field] = typeof v === 'string' ? v : JSON.parse(text);
    else kept[field] = cut(text, left);
    left = Math.max(0, left - text.length);
  }
  return { ...(kept as { name: string }), digest };
}

/** `text` cut to `max` characters (never inside a surrogate pair), saying how much went. */
function cut(text: string, max: number): string {
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (end > 0 && code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}… [cut: ${text.length - end} more characters; the digest covers all of it]`;
}

function malformedTool(n: number, why: string, value: unknown): ToolDefinitionView {
  let text: string;
  try {
    text = canonicalJson(value);
  } catch {
    // Too deep for the canonical form: still what was sent, in the order it was sent.
    text = tryStringify(value);
  }
  const name = `(tool #${n})`;
  const description = `malformed: ${why}`;
  return { name, description, digest: sha256(`${name}\n${description}\n${text}`) };
}

function tryStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return '(too deep to write)';
  }
}
