// One ajv instance (draft 2020-12) for every schema we read or write; each schema compiled once.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const SCHEMA_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'schemas');
const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);

const cache = new Map<string, ValidateFunction>();

/** Compile fixtures/schemas/<file> once per process. */
export function compileSchema(file: string): ValidateFunction {
  let v = cache.get(file);
  if (!v) {
    const schema = JSON.parse(readFileSync(resolve(SCHEMA_DIR, file), 'utf8')) as { $id?: string };
    v = (schema.$id && ajv.getSchema(schema.$id)) || ajv.compile(schema);
    cache.set(file, v);
  }
  return v;
}

/** Validation errors as short lines: "/choices/0/delta must be object". */
export function schemaErrors(v: ValidateFunction): string[] {
  return (v.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? e.keyword}`);
}
