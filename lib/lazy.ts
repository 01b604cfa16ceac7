// Fields computed on first read: what a live stream need not keep (lib/decode/stream-decoder.ts, lib/http/recorder.ts).

/** Defines getters (own, enumerable: spread, JSON and deep-equality see values) that run `build` once, on first read. */
export function lazyFields<T extends object, K extends keyof T>(
  target: T,
  keys: readonly K[],
  build: () => Pick<T, K>,
): T {
  let built: Pick<T, K> | undefined;
  for (const k of keys)
    Object.defineProperty(target, k, {
      enumerable: true,
      configurable: true,
      get: () => {
        built ??= build();
        return built[k];
      },
    });
  return target;
}
