// Secrets go into the Authorization header and nowhere else: every string we write passes through redact().

const registered = new Set<string>();

/** Remember a secret value so every later redact() call scrubs it. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 4) registered.add(value);
}

/** Remove credentials from a URL (user:password@host) and return the clean URL plus what was removed. */
export function stripUrlCredentials(url: string): { url: string; secrets: string[] } {
  try {
    const u = new URL(url);
    const secrets = [u.username, u.password].filter((s) => s.length > 0).map((s) => decodeURIComponent(s));
    if (secrets.length === 0) return { url, secrets: [] };
    u.username = '';
    u.password = '';
    return { url: u.toString().replace(/\/$/, url.endsWith('/') ? '/' : ''), secrets };
  } catch {
    // Not parseable as a URL, e.g. a profile template "http://user:pass@127.0.0.1:{port}": strip userinfo by shape.
    const m = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@/i.exec(url);
    if (!m) return { url, secrets: [] };
    const [user, ...rest] = m[2].split(':');
    const dec = (s: string) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    };
    const secrets = [user, rest.join(':')].filter((s) => s.length > 0).map(dec);
    return { url: m[1] + url.slice(m[0].length), secrets };
  }
}

/** Replace every known secret (registered + extra) in a string. */
export function redact(text: string, extra: readonly string[] = []): string {
  let out = text;
  for (const s of [...registered, ...extra]) {
    if (s && s.length >= 4) out = out.split(s).join('[REDACTED]');
  }
  // Bearer tokens that were never registered (e.g. echoed by a server) are scrubbed by shape.
  return out.replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g, '$1[REDACTED]');
}

/** Deep-redact any JSON-like value (used before writing results, logs and badges). */
export function redactDeep<T>(value: T, extra: readonly string[] = []): T {
  if (typeof value === 'string') return redact(value, extra) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, extra)) as T;
  if (value && typeof value === 'object' && !(value instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = /^(authorization|api[-_]?key|x-api-key)$/i.test(k) ? '[REDACTED]' : redactDeep(v, extra);
    }
    return out as T;
  }
  return value;
}
