import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { routeOf } from './route-options.ts';

/**
 * Control characters are refused at the edge, before validation and before any query: PostgreSQL
 * cannot store a NUL in text (it answered a 500 and logged a stack trace), and a tab or line break
 * in an id, a cursor or a name only ever means a forged or broken request.
 *
 * - NUL and the other C0 control characters (U+0000 to U+001F but tab, line feed and carriage
 *   return) are refused in every string of the path, the query and the body, and in object keys.
 * - Tab, line feed and carriage return are refused too, except in body fields whose schema is
 *   marked multi-line (`MultilineText` in http/schemas.ts, e.g. descriptions).
 */
const NUL = '\u0000';
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;
const LINE = /[\t\n\r]/;

/** The schema keyword that allows tab and line breaks in a body string. */
export const MULTILINE = 'x-multiline';

type Schema = Record<string, unknown> | undefined;

function problem(text: string, multiline: boolean): string | undefined {
  if (text.includes(NUL)) return 'must not contain a NUL character';
  if (CONTROL.test(text)) return 'must not contain control characters';
  if (!multiline && LINE.test(text)) return 'must be a single line (no tab or line break)';
  return undefined;
}

function variants(schema: Schema): Schema[] {
  if (!schema) return [undefined];
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  return Array.isArray(union) ? union.flatMap(variants) : [schema];
}

const isMultiline = (schema: Schema) => variants(schema).some((s) => s?.[MULTILINE] === true);

/** The schema of `value` among a union's variants: the one of its JSON type, if any. */
function pick(schema: Schema, value: unknown): Schema {
  const type = Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : 'other';
  return variants(schema).find((s) => s?.type === type) ?? undefined;
}

function childSchema(schema: Schema, key: string): Schema {
  if (!schema) return undefined;
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (properties && key in properties) return properties[key];
  const patterns = schema.patternProperties as Record<string, Schema> | undefined;
  if (patterns) return Object.values(patterns)[0];
  return typeof schema.additionalProperties === 'object' ? (schema.additionalProperties as Schema) : undefined;
}

/** A step of the walk below: where it stands, as a link to its parent (no path copied per step). */
interface Step {
  value: unknown;
  schema: Schema;
  key?: string;
  parent?: Step;
}

/** The keys from the root to `step`. */
function pathOf(step: Step | undefined): string[] {
  const path: string[] = [];
  for (let s = step; s?.key !== undefined; s = s.parent) path.push(s.key);
  return path.reverse();
}

/**
 * The first bad string under `root`, walked without recursion (a deeply nested body cannot overflow
 * the stack), each step linked to its parent: a copy of the path at every step made the walk of a
 * body nested 20,000 deep take 10 s (quadratic), where the path is needed only for the one answer.
 */
function findProblem(root: unknown, rootSchema: Schema): { path: string[]; problem: string } | undefined {
  const stack: Step[] = [{ value: root, schema: rootSchema }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const { value, schema } = step;
    if (typeof value === 'string') {
      const found = problem(value, isMultiline(schema));
      if (found) return { path: pathOf(step), problem: found };
    } else if (Array.isArray(value)) {
      const items = pick(schema, value)?.items as Schema;
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], schema: items, key: String(i), parent: step });
    } else if (value && typeof value === 'object') {
      const objectSchema = pick(schema, value);
      const entries = Object.entries(value as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        const keyProblem = problem(key, false);
        if (keyProblem) return { path: [...pathOf(step), key], problem: `(a key) ${keyProblem}` };
        stack.push({ value: child, schema: childSchema(objectSchema, key), key, parent: step });
      }
    }
  }
  return undefined;
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const C0 = /[\u0000-\u001f]/;

/**
 * Whether any string or key under `root` holds a C0 control character at all: the cheap test
 * every request runs, before {@link findProblem} works out which one and whether its schema allows
 * it (most requests hold none, and the walk with paths and schemas cost 4 µs of a GET).
 */
function anyControl(root: unknown): boolean {
  const stack = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (C0.test(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value && typeof value === 'object') {
      for (const key of Object.keys(value)) {
        if (C0.test(key)) return true;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ANY_CONTROL = /[\u0000-\u001f]/g;
/** A key as the error message shows it: a control character as \uXXXX. */
const printable = (name: string) =>
  name.replace(ANY_CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function check(request: FastifyRequest): void {
  // Most requests hold no control character at all: nothing is made for them.
  if (!anyControl(request.params) && !anyControl(request.query) && !anyControl(request.body)) return;
  const parts = [
    { where: 'path parameter', value: request.params, schema: () => undefined },
    { where: 'query parameter', value: request.query, schema: () => undefined },
    { where: 'field', value: request.body, schema: () => routeOf(request).schema?.body as Schema },
  ];
  for (const part of parts) {
    if (!anyControl(part.value)) continue;
    const found = findProblem(part.value, part.schema());
    if (!found) continue;
    const param = printable(found.path.join('.'));
    const subject = param ? `${part.where} '${param}'` : 'the request body';
    throw new ApiError('invalid_request', `Invalid ${subject}: ${found.problem}.`, param ? { param } : {});
  }
}

/** Installs the control-character check on every route, before schema validation. */
export function installTextGuard(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    check(request);
    done();
  });
}
