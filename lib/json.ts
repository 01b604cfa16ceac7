// What parsed JSON is, for code that reads bodies, events and results files it did not write.

/** A JSON object: not null, not an array. */
type JsonObject = Record<string, unknown>;

/** Whether a parsed JSON value is an object (not null, not an array): its fields can be read by name. */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
