#!/usr/bin/env node
// The CLI's entry. Node 20 cannot run TypeScript itself: tsx's loader is registered here, resolved from this package
// (a shebang `node --import tsx` would resolve tsx from the user's folder, where it may not be).
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`llm-server-conformance needs Node.js 20.19 or later (this is ${process.versions.node}).`);
  process.exit(2);
}
// A run loads Vitest and Vite (about a thousand modules): loaded before tsx's loader is registered they skip its
// hooks, which made the start 3-4x slower (measured: 0.45 s instead of 3.0 s for vitest/node on 2 busy cores).
const args = process.argv.slice(2);
const LIGHT = new Set(['help', 'list', 'explain', 'report', 'compare', 'merge']);
if (!LIGHT.has(args[0]) && !args.some((a) => a === '--help' || a === '-h' || a === '--version'))
  await import('vitest/node');
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(args);
