import type { TSchema } from '@sinclair/typebox';
import { SHARED_COMPONENTS } from '../http/schemas.ts';
import { SESSION_COMPONENTS } from './session-schemas.ts';

/**
 * Every named schema of the API, registered once by the app (`addSchema`): routes refer to them
 * with `Ref`, the OpenAPI document lists them under components.schemas by their `$id`, and the
 * body validators resolve the same references.
 */
export const COMPONENT_SCHEMAS: TSchema[] = [...SHARED_COMPONENTS, ...SESSION_COMPONENTS];
