// The Action's sticky pull-request comment: one comment per job/leg, found again by a hidden marker and updated on
// each run. Talks to the GitHub REST API with fetch; never throws: whatever goes wrong comes back as a line for
// the log (a warning), so a comment that could not be posted never changes the gate. The token travels only in the
// Authorization header; every line returned is redacted of it.
import { readFileSync } from 'node:fs';
import { redact } from '../lib/config/secrets.ts';

interface CommentTarget {
  /** https://api.github.com, or GITHUB_API_URL (GitHub Enterprise, or a local stand-in in the self-tests). */
  apiUrl: string;
  /** owner/name */
  repository: string;
  issue: number;
  token: string;
}

interface CommentResult {
  /** posted / updated: done; skipped: nothing to do (not a pull request, no token); failed: a warning. */
  status: 'posted' | 'updated' | 'skipped' | 'failed';
  /** One line for the log; warnings start with ::warning::. */
  line: string;
}

/** Calls are bounded: a stuck API must not hold the job until its timeout. */
const CALL_TIMEOUT_MS = 15_000;
/** 100 comments a page, at most this many pages: a PR with more comments gets a new comment rather than a long scan. */
const MAX_PAGES = 10;

function marker(key: string): string {
  // "--" would end the HTML comment early.
  return `<!-- llm-server-conformance:${key.replace(/--+/g, '-')} -->`;
}

/** Where to comment, from the workflow's environment, or why not. */
function commentTarget(env: NodeJS.ProcessEnv, token: string): CommentTarget | { skip: string } {
  const event = env.GITHUB_EVENT_NAME ?? '';
  if (event !== 'pull_request' && event !== 'pull_request_target')
    return { skip: `not a pull_request event (${event || 'no GITHUB_EVENT_NAME'})` };
  if (!token) return { skip: 'no token (input github-token is empty)' };
  if (!env.GITHUB_REPOSITORY || !/^[^/\s]+\/[^/\s]+$/.test(env.GITHUB_REPOSITORY))
    return { skip: 'GITHUB_REPOSITORY is not set' };
  let issue: unknown;
  try {
    const payload = JSON.parse(readFileSync(env.GITHUB_EVENT_PATH ?? '', 'utf8')) as {
      pull_request?: { number?: unknown };
      number?: unknown;
    };
    issue = payload.pull_request?.number ?? payload.number;
  } catch (e) {
    return { skip: `the event payload (GITHUB_EVENT_PATH) could not be read: ${(e as Error).message}` };
  }
  if (typeof issue !== 'number' || !Number.isInteger(issue) || issue <= 0)
    return { skip: 'the event payload has no pull request number' };
  return {
    apiUrl: (env.GITHUB_API_URL || 'https://api.github.com').replace(/\/+$/, ''),
    repository: env.GITHUB_REPOSITORY,
    issue,
    token,
  };
}

async function call(t: CommentTarget, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${t.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${t.token}`,
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      'user-agent': 'llm-server-conformance-action',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  if (!res.ok)
    throw new Error(
      `${method} ${path}: HTTP ${res.status}${text ? ` ${text.replace(/\s+/g, ' ').slice(0, 200)}` : ''}`,
    );
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/** The id of our comment (by its marker) among the pull request's comments, if there is one. */
async function findComment(t: CommentTarget, mark: string): Promise<number | undefined> {
  for (let page = 1; page <= MAX_PAGES; page++) {
    const list = await call(t, 'GET', `/repos/${t.repository}/issues/${t.issue}/comments?per_page=100&page=${page}`);
    if (!Array.isArray(list)) throw new Error('the comments listing is not an array');
    const mine = list.find(
      (c: { id?: unknown; body?: unknown }) =>
        typeof c?.body === 'string' && c.body.includes(mark) && typeof c.id === 'number',
    );
    if (mine) return (mine as { id: number }).id;
    if (list.length < 100) return undefined;
  }
  return undefined;
}

/** Post the body as the one comment of this marker, or update it. Never throws. */
async function upsertComment(t: CommentTarget, key: string, body: string): Promise<CommentResult> {
  const mark = marker(key);
  const text = `${mark}\n${body}`;
  try {
    const id = await findComment(t, mark);
    if (id !== undefined) {
      await call(t, 'PATCH', `/repos/${t.repository}/issues/comments/${id}`, { body: text });
      return {
        status: 'updated',
        line: `conformance action: updated the pull request comment (#${t.issue}, comment ${id})`,
      };
    }
    await call(t, 'POST', `/repos/${t.repository}/issues/${t.issue}/comments`, { body: text });
    return { status: 'posted', line: `conformance action: posted a pull request comment (#${t.issue})` };
  } catch (e) {
    const why =
      (e as Error).name === 'TimeoutError' ? `no answer within ${CALL_TIMEOUT_MS / 1000} s` : (e as Error).message;
    return {
      status: 'failed',
      line: `::warning::conformance action: could not post the pull request comment (the gate is unchanged): ${redact(why, [t.token])}`,
    };
  }
}

/** Comment when asked and possible; returns the line to print. */
export async function stickyComment(
  env: NodeJS.ProcessEnv,
  token: string,
  key: string,
  body: string,
): Promise<CommentResult> {
  const target = commentTarget(env, token);
  if ('skip' in target)
    return {
      status: 'skipped',
      line: `conformance action: no pull request comment posted: ${redact(target.skip, [token])}`,
    };
  return upsertComment(target, key, body);
}
