// The npm cache key of action.yml: hashFiles() and setup-node's `cache` only see files under GITHUB_WORKSPACE, and
// the action's lockfile lives in the action's own folder. Plain node (no tsx): it runs before `npm ci`.
// Appends key=conformance-npm-<os>-<arch>-node<version>-<sha256 of package-lock.json, 16 hex> to $GITHUB_OUTPUT.
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lock = createHash('sha256')
  .update(readFileSync(join(root, 'package-lock.json')))
  .digest('hex')
  .slice(0, 16);
const os = (process.env.RUNNER_OS || process.platform).toLowerCase();
const arch = (process.env.RUNNER_ARCH || process.arch).toLowerCase();
const key = `conformance-npm-${os}-${arch}-node${process.versions.node}-${lock}`;
if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, `key=${key}\n`);
process.stdout.write(`${key}\n`);
