import { AhoCorasick } from './aho-corasick.js';
import { JsonPass, PercentPass, RawPass, WrappedPass, type Escape } from './sentinel-passes.js';
import { SENTINEL } from './sentinels.js';
import { TrajgateError } from '../errors.js';

export type { Escape };
/**
 * How a sentinel was spelled where it was found. `base64` stands for base64url too (RFC 4648
 * § 4, § 5): their alphabets differ only in `+/` against `-_`, and the fixed characters of a
 * sentinel's encoding are never those, since each 6 bits of ASCII word characters is below 62.
 * `percent+base64` is base64 with %XX escapes in it, `wrapped+base64` base64 in lines.
 */
export type Spelling = 'raw' | Escape | 'base64' | `${Escape}+base64`;

export interface SentinelFinding {
  /** The credential's name; never its value. */
  readonly name: string;
  readonly spelling: Spelling;
}

const ESCAPES = [null, 'percent', 'json', 'wrapped'] as const;
/** Indexed by the escape's index in ESCAPES, plus ESCAPES.length for base64. */
const SPELLINGS: readonly Spelling[] = [
  ...ESCAPES.map((e) => e ?? 'raw'),
  ...ESCAPES.map((e): Spelling => (e === null ? 'base64' : `${e}+base64`)),
];

/** A needle: one sentinel as is or encoded, before any escape. */
interface Needle {
  readonly owner: number;
  readonly base64: boolean;
}

/**
 * The sentinel's base64 at each of the 3 byte alignments it can have inside a larger blob,
 * trimmed to the characters whose 6 bits all come from the sentinel (the rest depend on the
 * bytes around it).
 */
function base64Needles(sentinel: Buffer): string[] {
  return [0, 1, 2].map((align) =>
    Buffer.concat([Buffer.alloc(align), sentinel])
      .toString('base64')
      .slice(Math.ceil((8 * align) / 6), Math.floor((8 * (align + sentinel.length)) / 6)),
  );
}

/**
 * Finds credential sentinels in bodies, URLs and arguments however an upstream could read them:
 * as is, percent-encoded, JSON-escaped, and base64 or base64url-encoded at any byte alignment
 * (also under either escape). Built once per set of sentinels; `start()` gives a scan that
 * takes a body chunk by chunk, so a sentinel split across chunks is found as if whole.
 */
export class SentinelScanner {
  readonly names: readonly string[];
  readonly automaton: AhoCorasick;
  readonly needles: readonly Needle[];

  constructor(sentinels: readonly { readonly name: string; readonly sentinel: string }[]) {
    this.names = sentinels.map((s) => s.name);
    const needles: Needle[] = [];
    const texts: string[] = [];
    const add = (text: string, owner: number, base64: boolean) => {
      texts.push(text);
      needles.push({ owner, base64 });
    };
    sentinels.forEach(({ name, sentinel }, owner) => {
      // Short ones would match noise; others could encode to `+/` (see Spelling).
      if (!SENTINEL.test(sentinel)) {
        throw new TrajgateError('E_CONFIG_INVALID', `credentials: ${name}: unusable sentinel`);
      }
      add(sentinel, owner, false);
      for (const text of base64Needles(Buffer.from(sentinel))) add(text, owner, true);
    });
    this.needles = needles;
    this.automaton = new AhoCorasick(texts.map((t) => Buffer.from(t, 'latin1')));
  }

  start(): SentinelScan {
    return new SentinelScan(this);
  }

  /** Every finding in one whole body. */
  scan(body: Uint8Array | string): readonly SentinelFinding[] {
    const scan = this.start();
    scan.write(typeof body === 'string' ? Buffer.from(body) : body);
    return scan.findings;
  }
}

const NONE: readonly SentinelFinding[] = Object.freeze([]);

/** One body's scan: each sentinel reported once per spelling, in the order first seen. */
export class SentinelScan {
  private readonly found: SentinelFinding[] = [];
  /** Per sentinel, a bit per spelling (SPELLINGS) already reported. */
  private readonly seen: Uint16Array;
  private readonly passes: readonly { write(chunk: Uint8Array): void }[];

  constructor(private readonly scanner: SentinelScanner) {
    this.seen = new Uint16Array(scanner.names.length);
    const report = this.report.bind(this);
    this.passes = [
      new RawPass(scanner.automaton, report),
      new PercentPass(scanner.automaton, report),
      new JsonPass(scanner.automaton, report),
      new WrappedPass(scanner.automaton, report),
    ];
  }

  get findings(): readonly SentinelFinding[] {
    return this.found;
  }

  /** Scans the next chunk; answers what it found first (empty where nothing new). */
  write(chunk: Uint8Array): readonly SentinelFinding[] {
    const before = this.found.length;
    for (const pass of this.passes) pass.write(chunk);
    return this.found.length === before ? NONE : this.found.slice(before);
  }

  private report(needle: number, escape: Escape | null): void {
    const { owner, base64 } = this.scanner.needles[needle]!;
    const spelling = ESCAPES.indexOf(escape) + (base64 ? ESCAPES.length : 0);
    if ((this.seen[owner]! & (1 << spelling)) !== 0) return;
    this.seen[owner]! |= 1 << spelling;
    this.found.push({ name: this.scanner.names[owner]!, spelling: SPELLINGS[spelling]! });
  }
}
