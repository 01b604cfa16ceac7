// The profile a run works with: what the user declared, and where they left it open, what setup discovered (the
// model id the server lists, its slots, the APIs its probes did not rule out). Declared values win.
import type { ApiFlavour, Profile, ServerInfo } from '../model/types.ts';

/** A profile that names no model (or "default") means the server's one model. */
export function wantsServerModel(model: string): boolean {
  return model.trim() === '' || model === 'default';
}

/**
 * The profile as checks see it: the resolved model id, slots declared or discovered (undefined = unknown), and the
 * APIs declared or not ruled out by discovery. Declared wins.
 */
export function effectiveProfile(profile: Profile, server: ServerInfo): Profile {
  return {
    ...profile,
    model: wantsServerModel(profile.model) ? (server.model?.value ?? profile.model) : profile.model,
    slots: profile.slots ?? server.slots?.value,
    apis: effectiveApis(profile, server),
  };
}

/** The APIs the run tests: the declared ones (in the profile's order), then those discovery did not rule out. */
function effectiveApis(profile: Profile, server: ServerInfo): ApiFlavour[] {
  const found = (server.discovery?.apis ?? []).filter((f) => f.source === 'probed' && f.tested).map((f) => f.api);
  return [...profile.apis, ...found.filter((a) => !profile.apis.includes(a))];
}
