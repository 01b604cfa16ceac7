// The real-llama project: the whole catalogue against a real llama.cpp llama-server, in three configurations
// (tiny model with 4 slots and with 1, bandwidth-bound model with 4). Without the bundle it skips with one line,
// also under CI=true; only CONFORMANCE_REQUIRE_LLAMA=1 makes a missing bundle fail. A binary that cannot run here
// skips naming why.
import { test } from 'vitest';
import {
  describeLlamaConfig,
  llamaAvailability,
  llamaRequired,
  REQUIRE_LLAMA_ENV,
  selectedConfigs,
} from './harness.ts';

const available = await llamaAvailability();
if (available.bundle) {
  for (const cfg of selectedConfigs()) describeLlamaConfig(cfg, available.bundle);
} else if (available.missing && llamaRequired()) {
  test(`real-llama: the llama.cpp bundle is present (required by ${REQUIRE_LLAMA_ENV}=1)`, () => {
    throw new Error(`real-llama: ${available.skip}`);
  });
} else {
  console.warn(`[real-llama] skipped: ${available.skip}`);
  test.skip(`real-llama skipped: ${available.skip}`, () => undefined);
}
