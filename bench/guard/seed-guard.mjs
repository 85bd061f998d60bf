// The seed article's TrajectoryGuard, ported line for line to JavaScript: the baseline the
// production guard is measured against (it knows two boundaries and one session).
export class SeedGuard {
  constructor(workspace) {
    this.workspace = workspace;
    this.counts = new Map();
  }

  inspect(event) {
    const boundary = this.boundary(event);
    if (boundary === null || event.approved) return 'ALLOW';
    const n = (this.counts.get(boundary) ?? 0) + 1;
    this.counts.set(boundary, n);
    if (boundary === 'workspace' || n >= 2) return 'PAUSE: ' + boundary;
    return 'REVIEW: ' + boundary;
  }

  boundary(event) {
    if (event.kind === 'network') return 'network';
    if (event.kind === 'write' || event.kind === 'command') {
      const t = event.target;
      return t === this.workspace || t.startsWith(this.workspace + '/') ? null : 'workspace';
    }
    return null;
  }
}
