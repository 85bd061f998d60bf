import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { errnoCode } from '../errors.js';
import type { Segments } from './files.js';

/**
 * Reads a journal's files as the one stream of bytes the session index's offsets are in: a
 * read stops at the end of the file holding its position (lines never span files). Files are
 * opened on first use and closed together.
 */
export class SegmentReader {
  readonly #segments: Segments;
  readonly #open = new Map<string, FileHandle | null>();

  constructor(segments: Segments) {
    this.#segments = segments;
  }

  /** The offset of the oldest byte still on disk. */
  get start(): number {
    return this.#segments.start;
  }

  /** Like FileHandle.read; 0 bytes past the end or in a file no longer there. */
  async read(
    buf: Buffer,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }> {
    const found = this.#segments.find(position);
    if (found === null) return { bytesRead: 0 };
    const fh = await this.#handle(found.segment.path);
    if (fh === null) return { bytesRead: 0 };
    const n = Math.min(length, found.end - position);
    return fh.read(buf, offset, n, position - found.segment.base);
  }

  async close(): Promise<void> {
    for (const fh of this.#open.values()) await fh?.close();
    this.#open.clear();
  }

  async #handle(path: string): Promise<FileHandle | null> {
    if (this.#open.has(path)) return this.#open.get(path) ?? null;
    let fh: FileHandle | null = null;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      // Deleted by `keep` since it was listed: its events are gone.
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    this.#open.set(path, fh);
    return fh;
  }
}
