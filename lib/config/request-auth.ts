// The one place request credentials are built, for checks and for the readiness, health and restart probes alike:
// a key from the profile's apiKeyEnv goes into `Authorization: Bearer`, else credentials in the base URL
// (user:password@host) into `Authorization: Basic`. Every secret is registered, so redact() scrubs it everywhere.
import type { Profile } from '../model/types.ts';
import { registerSecret, stripUrlCredentials } from './secrets.ts';

interface RequestAuth {
  /** Headers to send with every request to the server (empty when it needs none). */
  headers: Record<string, string>;
  /** Every secret value involved, for redact(). */
  secrets: string[];
}

/** Read a profile's API key from the environment variable it names (never stored anywhere else). */
export function apiKeyOf(
  profile: Pick<Profile, 'apiKeyEnv'>,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return profile.apiKeyEnv ? env[profile.apiKeyEnv] || undefined : undefined;
}

export function requestAuth(
  profile: Pick<Profile, 'apiKeyEnv' | 'baseUrl'>,
  env: NodeJS.ProcessEnv = process.env,
): RequestAuth {
  const urlSecrets = stripUrlCredentials(profile.baseUrl).secrets;
  const key = apiKeyOf(profile, env);
  const secrets = [...urlSecrets, ...(key ? [key] : [])];
  for (const s of secrets) registerSecret(s);
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  else if (urlSecrets.length) headers.authorization = `Basic ${Buffer.from(urlSecrets.join(':')).toString('base64')}`;
  return { headers, secrets };
}
