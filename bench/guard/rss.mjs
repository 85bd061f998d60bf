// Preloaded into a measured child (node --import): reports its peak RSS on exit, on stderr.
process.on('exit', () => {
  process.stderr.write(`\nPEAK_RSS_KB=${process.resourceUsage().maxRSS}\n`);
});
