// Timing figures servers report about themselves, read per source (units differ: llama.cpp and vLLM ms, oMLX s,
// Ollama ns). The metrics family compares them with the client's measurement; lib/grading/phantom.ts judges bursts against
// the decode rate they report.
import type { ServerTimings } from './stream-events.ts';

interface ServerDecode {
  /** Decode rate the server reports (tok/s) and the field it came from. */
  tps?: number;
  tpsField?: string;
  /** Time before the first token the server reports (prefill or TTFT, ms): never more than the client saw. */
  preMs?: number;
  preField?: string;
}

function n(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function serverDecode(st: ServerTimings, completionTokens: number | undefined): ServerDecode {
  const v = st.value;
  const out: ServerDecode = {};
  switch (st.source) {
    case 'timings': {
      const pps = n(v.predicted_per_second);
      const pn = n(v.predicted_n);
      const pms = n(v.predicted_ms);
      if (pps !== undefined && pps > 0) {
        out.tps = pps;
        out.tpsField = 'timings.predicted_per_second';
      } else if (pn !== undefined && pms !== undefined && pms > 0) {
        out.tps = (pn / pms) * 1000;
        out.tpsField = 'timings.predicted_n / predicted_ms';
      }
      const prompt = n(v.prompt_ms);
      if (prompt !== undefined) {
        out.preMs = prompt;
        out.preField = 'timings.prompt_ms';
      }
      break;
    }
    case 'metrics': {
      const tps = n(v.tokens_per_second);
      const gen = n(v.generation_time_ms);
      if (tps !== undefined && tps > 0) {
        out.tps = tps;
        out.tpsField = 'metrics.tokens_per_second';
      } else if (gen !== undefined && gen > 0 && completionTokens !== undefined) {
        out.tps = (completionTokens / gen) * 1000;
        out.tpsField = 'usage.completion_tokens / metrics.generation_time_ms';
      }
      const ttft = n(v.time_to_first_token_ms);
      if (ttft !== undefined) {
        out.preMs = ttft;
        out.preField = 'metrics.time_to_first_token_ms';
      }
      break;
    }
    case 'usage': {
      const tps = n(v.generation_tokens_per_second);
      const dur = n(v.generation_duration);
      if (tps !== undefined && tps > 0) {
        out.tps = tps;
        out.tpsField = 'usage.generation_tokens_per_second';
      } else if (dur !== undefined && dur > 0 && completionTokens !== undefined) {
        out.tps = completionTokens / dur;
        out.tpsField = 'usage.completion_tokens / usage.generation_duration';
      }
      const ttft = n(v.time_to_first_token);
      if (ttft !== undefined) {
        out.preMs = ttft * 1000;
        out.preField = 'usage.time_to_first_token (s)';
      }
      break;
    }
    case 'ollama': {
      const c = n(v.eval_count);
      const d = n(v.eval_duration);
      if (c !== undefined && d !== undefined && d > 0) {
        out.tps = (c / d) * 1e9;
        out.tpsField = 'eval_count / eval_duration (ns)';
      }
      const p = n(v.prompt_eval_duration);
      if (p !== undefined) {
        out.preMs = p / 1e6;
        out.preField = 'prompt_eval_duration (ns)';
      }
      break;
    }
  }
  return out;
}
