import type { AnswerMethod } from '../domain/identity-providers.ts';
import type { Db } from './db.ts';

/** The channels an application or a session accepts; undefined when it set none (every channel). */
export async function findAnswerMethods(db: Db, ownerId: string): Promise<AnswerMethod[] | undefined> {
  const row = await db
    .selectFrom('answer_methods')
    .select('methods')
    .where('owner_id', '=', ownerId)
    .executeTakeFirst();
  return row && (JSON.parse(row.methods) as AnswerMethod[]);
}

/** Sets (or, with undefined, clears) the channels of an application or a session. */
export async function setAnswerMethods(db: Db, ownerId: string, methods: AnswerMethod[] | undefined): Promise<void> {
  await db.deleteFrom('answer_methods').where('owner_id', '=', ownerId).execute();
  if (methods)
    await db
      .insertInto('answer_methods')
      .values({ owner_id: ownerId, methods: JSON.stringify(methods) })
      .execute();
}
