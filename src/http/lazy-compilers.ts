import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

/**
 * Schemas compiled on a route's first use instead of at start-up. Fastify compiles every route's
 * validators (Ajv) and response serializers (fast-json-stringify) when the app becomes ready: about
 * 0.5 s of CPU for this API, paid by every process start and every test file that builds the app,
 * although most processes answer a handful of routes. A route's first request pays its own compile
 * (a few milliseconds) instead.
 */

/** What an Ajv-compiled validator is to Fastify: called, then read for `errors`. */
interface Validator {
  (data: unknown, context?: Parameters<ValidateFunction>[1]): boolean;
  errors?: FastifySchemaValidationError[] | null;
  schemaEnv?: true;
}

/**
 * A validator that compiles on its first call. It claims `schemaEnv` so that Fastify passes the
 * parent data, as it does to an Ajv function (root values may then be coerced in place).
 */
export function lazyValidator(compile: () => ValidateFunction): Validator {
  let compiled: ValidateFunction | undefined;
  const validate: Validator = (data, context) => {
    compiled ??= compile();
    const result = compiled(data, context);
    validate.errors = compiled.errors;
    return result;
  };
  validate.schemaEnv = true;
  return validate;
}

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** Fastify's own serializer factory, with each route's serializer built on its first reply. */
export function lazySerializerFactory(): SerializerFactory {
  const eager = SerializerSelector();
  return (externalSchemas, options) => {
    const build = eager(externalSchemas, options);
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data: unknown) => (serialize ??= build(route) as (data: unknown) => string)(data);
    };
  };
}
