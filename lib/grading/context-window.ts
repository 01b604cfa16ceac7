// The window a server serves: context.served-window (against the model's trained context) and context.max-accepted
// (the largest prompt it accepts, by bisection).
// Pure (the bisection's probe is injected), unit-tested in test/context-grading.test.ts. Sizes in tokens as the server
// counts them (usage.prompt_tokens, calibrated).

// ---------------------------------------------------------------------------------------------------------------
// context.served-window

interface Figure {
  value: number;
  source: string;
}

/** Served per-request window against the model's trained context: below `minFraction` of it is a finding. */
export function gradeServedWindow(
  window: Figure,
  trained: Figure | undefined,
  minFraction: number,
): { outcome: 'pass' | 'fail' | 'skip'; reason: string; fraction?: number } {
  if (!trained)
    return {
      outcome: 'skip',
      reason:
        "the model's trained context is unknown (the server does not report it): set context.modelTrained in the profile to compare",
    };
  const fraction = window.value / trained.value;
  const both = `served window ${window.value} tokens (${window.source}); model trained context ${trained.value} tokens (${trained.source})`;
  if (fraction < minFraction)
    return {
      outcome: 'fail',
      reason: `${both}: the server serves only ${(fraction * 100).toFixed(1)} % of what the model supports`,
      fraction,
    };
  return { outcome: 'pass', reason: `${both}: ${(fraction * 100).toFixed(1)} % served`, fraction };
}

// ---------------------------------------------------------------------------------------------------------------
// context.max-accepted

export type ProbeAnswer = 'accepted' | 'rejected' | 'error';

interface BisectOptions {
  /** A size known to be accepted (e.g. the calibration prompts). */
  lo: number;
  /** The first size probed (e.g. 1.25x the window). */
  hi: number;
  /** If `hi` is accepted, double up to this size looking for a rejection. */
  growUntil: number;
  /** Stop when the bracket is this narrow (tokens). */
  resolution: number;
  maxProbes: number;
}

interface BisectResult {
  largestAccepted: number;
  /** Undefined when nothing up to growUntil was rejected. */
  smallestRejected?: number;
  probes: { tokens: number; answer: ProbeAnswer }[];
  /** Why it stopped. */
  stop: 'resolution' | 'max-probes' | 'no-limit-found';
}

/**
 * Bisect the largest accepted prompt size with an injected probe. An `error` answer (5xx, dropped) counts as
 * not accepted. The probe decides what accepted means (no 4xx within a bound).
 */
export async function bisectLargestAccepted(
  probe: (tokens: number) => Promise<ProbeAnswer>,
  o: BisectOptions,
): Promise<BisectResult> {
  const probes: BisectResult['probes'] = [];
  const ask = async (n: number) => {
    const a = await probe(n);
    probes.push({ tokens: n, answer: a });
    return a;
  };
  let lo = o.lo;
  let hi = o.hi;
  while (probes.length < o.maxProbes) {
    if ((await ask(hi)) !== 'accepted') break;
    lo = hi;
    if (hi >= o.growUntil) return { largestAccepted: lo, probes, stop: 'no-limit-found' };
    hi = Math.min(o.growUntil, hi * 2);
  }
  if (probes.length >= o.maxProbes && probes[probes.length - 1].answer === 'accepted')
    return { largestAccepted: lo, probes, stop: 'max-probes' };
  while (hi - lo > o.resolution) {
    if (probes.length >= o.maxProbes) return { largestAccepted: lo, smallestRejected: hi, probes, stop: 'max-probes' };
    const mid = Math.round((lo + hi) / 2);
    if ((await ask(mid)) === 'accepted') lo = mid;
    else hi = mid;
  }
  return { largestAccepted: lo, smallestRejected: hi, probes, stop: 'resolution' };
}
