import { ANSWER_METHODS, type AnswerMethod } from '../domain/identity-providers.ts';
import type { Session } from '../domain/session.ts';
import { findAnswerMethods } from '../store/answer-methods.ts';
import type { Db } from '../store/db.ts';

/**
 * The channels a session accepts (`allowedMethods`, docs/university-login.md): its own setting,
 * else its application's, else every channel. Read only when an answer arrives, never on the
 * session's hot paths.
 */
export async function acceptedMethods(
  deps: { db: Db },
  session: Pick<Session, 'id' | 'appId'>,
): Promise<AnswerMethod[]> {
  return (
    (await findAnswerMethods(deps.db, session.id)) ??
    (await findAnswerMethods(deps.db, session.appId)) ?? [...ANSWER_METHODS]
  );
}
