// The families' own MUST (and SHOULD) judges, run on the bytes a client library was given, so a client check can
// say whether the server also broke the API reference (naming the check) or only that client's expectations.
// The judges are the checks' pure functions; ids and levels are read from the check declarations.

import { compileSchema, schemaErrors } from '../../lib/config/schemas.ts';
import { judgeEventLines, judgeEventSequence } from '../../lib/grading/anthropic.ts';
import { judgeDoneLine, judgeNdjsonFraming, makeNdjsonSample } from '../../lib/grading/ollama.ts';
import { judgeChunkSchema, judgeFinishOnce, judgeRoleFirst, judgeUsageChunk } from '../../lib/grading/sse-chunks.ts';
import {
  judgeContentType,
  judgeDataPrefix,
  judgeDoneTerminator,
  judgeEventTerminator,
  judgeNoLoneCr,
  judgeOneJsonPerEvent,
  judgeUnknownFields,
} from '../../lib/grading/sse-framing.ts';
import { makeSample, type Sample } from '../../lib/grading/sse-samples.ts';
import { bodyJson } from '../../lib/http/recorder.ts';
import type { CheckDef } from '../../lib/model/check.ts';
import type { ApiFlavour, Level, Recording, Verdict } from '../../lib/model/types.ts';
import { checks as anthropicChecks } from '../anthropic.ts';
import { checks as apiChecks } from '../api.ts';
import { checks as ollamaChecks } from '../ollama.ts';
import { checks as sseChecks } from '../sse.ts';

interface RuleBreak {
  id: string;
  level: Level;
  /** First line of the judge's message (its requirement or actual). */
  summary: string;
}

export interface WireRules {
  /** The checks judged on these bytes. */
  judged: Array<{ id: string; level: Level }>;
  broken: RuleBreak[];
}

const ALL: CheckDef[] = [...sseChecks, ...anthropicChecks, ...ollamaChecks, ...apiChecks];
function levelOf(id: string): Level {
  const c = ALL.find((x) => x.id === id);
  if (!c) throw new Error(`harness bug: no check ${id} to name in a client verdict`);
  return c.level;
}

/** The line of a failure message that says what was wrong (Actual), else its first line. */
function summaryOf(v: Verdict): string {
  const actual = /^\s*Actual:\s*(.*)$/m.exec(v.message)?.[1];
  return (actual ?? v.message.split('\n')[0] ?? '').trim().slice(0, 300);
}

function judgeAll(rules: Array<[string, () => Verdict]>): WireRules {
  const broken: RuleBreak[] = [];
  for (const [id, judge] of rules) {
    const v = judge();
    if (v.outcome === 'fail') broken.push({ id, level: levelOf(id), summary: summaryOf(v) });
  }
  return { judged: rules.map(([id]) => ({ id, level: levelOf(id) })), broken };
}

/** A streamed chat response: the sse family's rules (usage-chunk only when usage was asked for). */
function chatStreamRules(s: Sample, askedUsage: boolean): Array<[string, () => Verdict]> {
  return [
    ['sse.content-type', () => judgeContentType([s])],
    ['sse.event-terminator', () => judgeEventTerminator([s])],
    ['sse.data-prefix', () => judgeDataPrefix([s])],
    ['sse.one-json-per-event', () => judgeOneJsonPerEvent([s])],
    ['sse.done-terminator', () => judgeDoneTerminator([s])],
    [
      'sse.chunk-schema',
      () =>
        judgeChunkSchema([s], {
          schemaFile: 'chat-completion-chunk.schema.json',
          objectName: 'chat.completion.chunk',
          createdSlackS: 2,
        }),
    ],
    ['sse.finish-once', () => judgeFinishOnce([s])],
    ...(askedUsage ? [['sse.usage-chunk', () => judgeUsageChunk(s)] as [string, () => Verdict]] : []),
    ['sse.no-lone-cr', () => judgeNoLoneCr([s])],
    ['sse.unknown-fields', () => judgeUnknownFields([s])],
    ['sse.role-first', () => judgeRoleFirst([s])],
  ];
}

type Rules = Array<[string, () => Verdict]>;

/** Per API: the check that owns a refused stream, and the rules a streamed body is judged by. */
const STREAM_RULES: Partial<
  Record<ApiFlavour, { statusId: string; rules(rec: Recording, askedUsage: boolean): Rules }>
> = {
  'openai-chat': {
    statusId: 'sse.content-type',
    rules: (rec, askedUsage) => chatStreamRules(makeSample('stream', rec), askedUsage),
  },
  'anthropic-messages': {
    statusId: 'anthropic.event-lines',
    rules(rec) {
      const s = makeSample('stream', rec);
      return [
        ['anthropic.event-lines', () => judgeEventLines(s)],
        ['anthropic.event-sequence', () => judgeEventSequence(s)],
        ['sse.one-json-per-event', () => judgeOneJsonPerEvent([s])],
        ['sse.no-lone-cr', () => judgeNoLoneCr([s])],
        ['sse.unknown-fields', () => judgeUnknownFields([s])],
      ];
    },
  },
  'ollama-native': {
    statusId: 'ollama.ndjson-framing',
    rules(rec) {
      const s = makeNdjsonSample(rec);
      return [
        ['ollama.ndjson-framing', () => judgeNdjsonFraming(s)],
        ['ollama.done-line', () => judgeDoneLine(s)],
      ];
    },
  },
};

/** A valid request answered with anything but 200 (every API's MUST); `id` names the check that owns it, if one does. */
function statusBreak(rec: Recording, id: string | undefined): RuleBreak | undefined {
  if (rec.status === 200) return undefined;
  const what =
    rec.status === undefined
      ? `no response (${rec.failure?.kind ?? 'unknown'}: ${rec.failure?.message ?? ''})`
      : `HTTP ${rec.status}`;
  return {
    id: id ?? 'HTTP status',
    level: id ? levelOf(id) : 'MUST',
    summary: `a valid request was answered with ${what}`,
  };
}

/** The non-streamed chat body: api.chat-basic's schema. */
function chatBodyRules(rec: Recording): WireRules {
  const validate = compileSchema('chat-completion.schema.json');
  const { json, error } = bodyJson(rec);
  const summary = error
    ? `the body is ${error}`
    : !validate(json)
      ? `chat.completion schema: ${schemaErrors(validate).slice(0, 3).join('; ')}`
      : undefined;
  return {
    judged: [{ id: 'api.chat-basic', level: levelOf('api.chat-basic') }],
    broken: summary ? [{ id: 'api.chat-basic', level: levelOf('api.chat-basic'), summary }] : [],
  };
}

/**
 * Judge the bytes of one exchange. `stream` says which kind of response was asked for; the rules are those of the
 * family that owns that API (for the non-streamed Messages and /api/chat bodies, which no check covers, only the status).
 */
export function judgeWire(flavour: ApiFlavour, stream: boolean, rec: Recording, askedUsage: boolean): WireRules {
  const owner = stream ? STREAM_RULES[flavour]?.statusId : flavour === 'openai-chat' ? 'api.chat-basic' : undefined;
  const bad = statusBreak(rec, owner);
  if (bad) return { judged: owner ? [{ id: owner, level: bad.level }] : [], broken: [bad] };
  if (!stream) return flavour === 'openai-chat' ? chatBodyRules(rec) : { judged: [], broken: [] };
  const r = STREAM_RULES[flavour];
  return r ? judgeAll(r.rules(rec, askedUsage)) : { judged: [], broken: [] };
}
