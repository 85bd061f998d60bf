/** A plain text table: columns padded to their widest cell; control characters made visible. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (cell: string) => cell.replace(/[\u0000-\u001f\u007f]/g, '?');
  const all = [head, ...rows].map((row) => row.map(clean));
  const widths = head.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all
    .map((row) =>
      row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '),
    )
    .join('\n');
}
