/**
 * A `tools/list` answer as the bridge read it, handed on before the agent is given it: what
 * pins a server's tools (gateway/tool-pins.ts) sees every list the server sends, unfiltered.
 */
export interface ToolListSeen {
  /** The bridged server's name (bridgeServer). */
  readonly server: string;
  readonly session: string;
  /** The tools as the server sent them, in order, unvalidated (each should be an object). */
  readonly tools: readonly unknown[];
  /** The request named no cursor and the answer no nextCursor: the whole list. */
  readonly complete: boolean;
}

/** Resolves once what the list changes is journaled; the answer waits for it. */
export interface ToolListObserver {
  seen(list: ToolListSeen): Promise<void>;
}

/** The name a bridged server goes by when `bridge.name` is not set. */
export const DEFAULT_SERVER = 'bridge';

/** The name pins, tool patterns and `trajgate tools` know the bridged server by. */
export const bridgeServer = (bridge: { readonly name?: string | undefined }): string =>
  bridge.name ?? DEFAULT_SERVER;
