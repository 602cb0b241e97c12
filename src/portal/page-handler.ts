import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import type { SafeHtml } from './html.ts';
import { sendPage } from './layout.ts';
import { faultPage, notFoundPage } from './message-page.ts';

/** A page: its status and markup. */
export interface PageResult {
  status: number;
  page: SafeHtml;
  /** Headers beyond those every page carries (a Set-Cookie, say). */
  headers?: Record<string, string>;
  /** Origins that may frame it (layout.ts sendPage); none by default. */
  frameAncestors?: readonly string[];
  /** The page may use the Digital Credentials API (layout.ts sendPage). */
  digitalCredentials?: boolean;
}

/**
 * Wraps a page handler so that a person never sees JSON: an unknown resource is the friendly 404
 * page, and a fault is a plain apology with the request id (details go to the log only).
 */
export function pageHandler<R extends FastifyRequest>(render: (request: R) => Promise<PageResult>) {
  return async (request: R, reply: FastifyReply): Promise<FastifyReply> => {
    try {
      const { status, page, headers, frameAncestors, digitalCredentials } = await render(request);
      if (headers) reply.headers(headers);
      return sendPage(reply, status, page, { frameAncestors, digitalCredentials });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return sendPage(reply, 404, notFoundPage());
      request.log.error({ err: error }, 'page failed');
      return sendPage(reply, 500, faultPage(String(request.id)));
    }
  };
}
