// `npm run bench`: performance targets of the instrument itself (never timed asserts in unit tests).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [],
    benchmark: { include: ['bench/**/*.bench.ts'], outputJson: 'reports/bench.json' },
  },
});
