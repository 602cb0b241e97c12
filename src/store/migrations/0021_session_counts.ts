import { sql, type Kysely, type RawBuilder } from 'kysely';
import { capabilitiesOf, keyTextType } from '../dialect.ts';

/**
 * Issue 28: an application's session counts by outcome, kept by triggers on `sessions` in the
 * transaction of every insert, status change and delete, so the application page reads a few rows
 * (store/metrics.ts) instead of counting the application's whole history.
 *
 * A counter row per application would be one row every session of the application locks until
 * its transaction commits; the rows are split by the last character of the session id (random,
 * 32 values), so concurrent transitions of one application rarely wait on each other. Redaction
 * keeps `status` and `verified`, so it moves no count.
 *
 * On PostgreSQL a multi-row INSERT (store/session-inserts.ts) updates its counter rows once per
 * statement from the transition table, in key order, so two concurrent batches cannot deadlock on
 * them; status changes and deletes update one row each, and only when the status or the outcome
 * changed (the trigger's WHEN). The backfill runs after the triggers exist, in the migration's
 * transaction: CREATE TRIGGER locks out writers until it commits, so no session is counted twice
 * or missed.
 */

const COUNTS = ['pending', 'consented', 'verified', 'not_verified', 'expired', 'cancelled', 'declined'] as const;

/** 1 when the session row `r` (NEW, OLD, or a table alias) falls in `count`, else 0. */
function inCount(r: string, count: (typeof COUNTS)[number]): string {
  if (count === 'verified') return `(case when ${r}.status = 'completed' and ${r}.verified = 1 then 1 else 0 end)`;
  if (count === 'not_verified')
    return `(case when ${r}.status = 'completed' and coalesce(${r}.verified, 0) <> 1 then 1 else 0 end)`;
  return `(case when ${r}.status = '${count}' then 1 else 0 end)`;
}

const SHARD = (r: string) => `substr(${r}.id, length(${r}.id))`;

/** The upsert adding `delta(count)` to the counter row of (app, shard). */
function upsert(app: string, shard: string, delta: (count: (typeof COUNTS)[number]) => string): string {
  return `insert into session_counts (app_id, shard, ${COUNTS.join(', ')})
  values (${app}, ${shard}, ${COUNTS.map(delta).join(', ')})
  on conflict (app_id, shard) do update set ${COUNTS.map((c) => `${c} = session_counts.${c} + excluded.${c}`).join(', ')}`;
}

const CHANGED = `old.status is distinct from new.status or old.verified is distinct from new.verified`;

function statements(db: Kysely<any>): string[] {
  if (capabilitiesOf(db).name === 'sqlite')
    return [
      `create trigger session_counts_insert after insert on sessions begin
  ${upsert('new.app_id', SHARD('new'), (c) => inCount('new', c))}; end`,
      `create trigger session_counts_update after update of status, verified on sessions
  when old.status is not new.status or old.verified is not new.verified begin
  ${upsert('new.app_id', SHARD('new'), (c) => `${inCount('new', c)} - ${inCount('old', c)}`)}; end`,
      `create trigger session_counts_delete after delete on sessions begin
  ${upsert('old.app_id', SHARD('old'), (c) => `- ${inCount('old', c)}`)}; end`,
    ];
  return [
    `create function session_counts_inserted() returns trigger language plpgsql as $$ begin
  insert into session_counts (app_id, shard, ${COUNTS.join(', ')})
  select app_id, ${SHARD('inserted')}, ${COUNTS.map((c) => `sum(${inCount('inserted', c)})`).join(', ')}
  from inserted group by 1, 2 order by 1, 2
  on conflict (app_id, shard) do update set ${COUNTS.map((c) => `${c} = session_counts.${c} + excluded.${c}`).join(', ')};
  return null; end $$`,
    `create function session_counts_changed() returns trigger language plpgsql as $$ begin
  if tg_op = 'UPDATE' then
    ${upsert('new.app_id', SHARD('new'), (c) => `${inCount('new', c)} - ${inCount('old', c)}`)};
  else
    ${upsert('old.app_id', SHARD('old'), (c) => `- ${inCount('old', c)}`)};
  end if;
  return null; end $$`,
    `create trigger session_counts_insert after insert on sessions referencing new table as inserted
  for each statement execute function session_counts_inserted()`,
    `create trigger session_counts_update after update of status, verified on sessions for each row
  when (${CHANGED}) execute function session_counts_changed()`,
    `create trigger session_counts_delete after delete on sessions for each row execute function session_counts_changed()`,
  ];
}

function backfill(): RawBuilder<unknown> {
  return sql.raw(`insert into session_counts (app_id, shard, ${COUNTS.join(', ')})
  select app_id, ${SHARD('s')}, ${COUNTS.map((c) => `sum(${inCount('s', c)})`).join(', ')}
  from sessions s group by 1, 2`);
}

export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);
  let table = db.schema
    .createTable('session_counts')
    .addColumn('app_id', key, (c) => c.notNull())
    .addColumn('shard', key, (c) => c.notNull());
  for (const count of COUNTS) table = table.addColumn(count, 'integer', (c) => c.notNull().defaultTo(0));
  await table.addPrimaryKeyConstraint('session_counts_pk', ['app_id', 'shard']).execute();
  for (const statement of statements(db)) await sql.raw(statement).execute(db);
  await backfill().execute(db);
}
