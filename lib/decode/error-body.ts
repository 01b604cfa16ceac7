// What kind of error object a 4xx/5xx body is. OpenAI's shape is `{"error": {"message", "type", "param", "code"}}`
// (OpenAI API reference, "Error codes"); real servers also send a flat object (vLLM before v0.10.1:
// `{"object":"error","message",…}`), a string (`{"error":"msg"}`, Ollama native), or FastAPI's `{"detail": …}`
// (vllm-mlx). Clients that read `error.message` show nothing useful for the last three, so checks tell them apart.
import { isJsonObject } from '../json.ts';

type ErrorShape = 'openai' | 'error-string' | 'flat' | 'detail' | 'none';

interface ErrorBody {
  shape: ErrorShape;
  /** The human-readable message, wherever the shape keeps it. */
  message?: string;
  /** error.type / object / code where present. */
  type?: string;
  /** Why it is not the OpenAI shape (for messages). */
  note: string;
}

export const OPENAI_ERROR_SHAPE = '{"error": {"message": "…", "type": "…", "param": …, "code": …}}';

/** Classify a parsed JSON body (undefined when the body was not JSON). */
export function classifyErrorBody(json: unknown): ErrorBody {
  if (!isJsonObject(json))
    return { shape: 'none', note: json === undefined ? 'the body is not JSON' : 'the body is JSON but not an object' };
  const e = json.error;
  if (isJsonObject(e) && typeof e.message === 'string') {
    return {
      shape: 'openai',
      message: e.message,
      ...(typeof e.type === 'string' ? { type: e.type } : {}),
      note: 'OpenAI error object',
    };
  }
  if (typeof e === 'string')
    return { shape: 'error-string', message: e, note: '`error` is a string, not an object with `message`' };
  if (isJsonObject(e)) return { shape: 'flat', note: '`error` is an object without a string `message`' };
  if (typeof json.message === 'string') {
    return {
      shape: 'flat',
      message: json.message,
      ...(typeof json.type === 'string' ? { type: json.type } : {}),
      note: 'flat error object (message at the top level, no `error` object)',
    };
  }
  if (json.detail !== undefined) {
    return {
      shape: 'detail',
      message: typeof json.detail === 'string' ? json.detail : JSON.stringify(json.detail).slice(0, 200),
      note: 'FastAPI `detail` object, no `error` object',
    };
  }
  return { shape: 'none', note: 'a JSON object with no `error`, `message` or `detail`' };
}
