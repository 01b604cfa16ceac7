#!/usr/bin/env node
// The CLI's entry. Node 20 cannot run TypeScript itself: tsx's loader is registered here, resolved from this package
// (a shebang `node --import tsx` would resolve tsx from the user's folder, where it may not be).
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`llm-server-conformance needs Node.js 20.19 or later (this is ${process.versions.node}).`);
  process.exit(2);
}
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
