import { harnessStreams, measuredHarnessRound, harnessLag } from '../lib/preflight.ts';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
const url = process.argv[2]!;
await harnessStreams(url, 32, 60);
const s = new Session(); s.connect(); await s.post('Profiler.enable'); await s.post('Profiler.start');
for (let i = 0; i < 2; i++) {
  const r = await measuredHarnessRound(url, 32, 132);
  const l = harnessLag(r);
  console.log('cpu/event', (r.cpuUs / r.events).toFixed(1), 'lag', 'lag' in l ? JSON.stringify(l.lag) : l.error);
}
const { profile } = await s.post('Profiler.stop');
writeFileSync('/tmp/prof3.cpuprofile', JSON.stringify(profile));
