/** The boundary of trajgate's own files: never approvable, it pauses at the first crossing. */
export const TRAJGATE_FILES = 'trajgate-files';

/**
 * The boundary of credential sentinels found where they do not belong: never approvable, it
 * pauses at the first crossing. A sentinel is worthless outside its hosts, so what it proves is
 * the attempt: the person deciding sees it with the events before it.
 */
export const CREDENTIAL_EXFILTRATION = 'credential-exfiltration';

/**
 * The boundary of a tool list that differs from the one pinned for its server: the session
 * shown it pauses at its next event. Unlike the other own boundaries, pinning the new list (or
 * resuming) is how it goes on: no approval covers it.
 */
export const TOOL_CHANGED = 'tool-changed';

/**
 * What a budget's pause is counted under (`PAUSE: budget`, `rule` naming the budget): a top-up
 * is how it goes on, no approval covers it.
 */
export const BUDGET = 'budget';

/** trajgate's boundaries: no config may name them, no approval suggested covers them. */
export const OWN_BOUNDARIES: ReadonlySet<string> = new Set([
  TRAJGATE_FILES,
  CREDENTIAL_EXFILTRATION,
  TOOL_CHANGED,
  BUDGET,
]);
