import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '../domain/clock.ts';
import type { Environment } from '../domain/environment.ts';
import type { EventData, EventOf, EventType } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import type { Db } from '../store/db.ts';
import { insideTransactionOf } from '../store/dialect.ts';
import type { NewDelivery } from '../store/webhook-deliveries/recording.ts';
import { transitionSession, transitionValuesOf, type Transition } from '../store/session-transitions.ts';
import {
  moveSessionRecording,
  outboxIsOneStatement,
  notifyWorkers,
  writeEvent,
  writeEventToSubscribers,
} from '../webhooks/outbox.ts';
import type { DeliveryWakeups } from '../webhooks/wake.ts';

/** The application an event is about, and its organization. */
export interface EventSource {
  appId: string;
  orgId: string;
  environment: Environment;
}

/** What a use case may do inside its unit of work. */
export interface Work {
  /** The transaction: every write of the use case goes through it. */
  readonly db: Db;
  /**
   * Records an event in the outbox with one delivery per subscribed endpoint of its application:
   * it commits with the state change that caused it, or neither does. `data` is typed by the
   * event's schema (domain/events.ts), the one the events route and the webhook body use.
   */
  record<E extends EventType>(source: EventSource, type: E, data: EventData<E>): Promise<EventOf<E>>;
  /** Records an event delivered to exactly these endpoints, whatever they subscribe to (a test event). */
  recordFor<E extends EventType>(
    source: EventSource,
    type: E,
    data: EventData<E>,
    endpointIds: string[],
  ): Promise<{ event: EventOf<E>; deliveries: NewDelivery[] }>;
  /** Existing deliveries became due without a new event (a manual retry, an endpoint enabled again). */
  deliveriesDue(): void;
}

/**
 * Runs one use case: its writes in one transaction, the events it records enqueued in that same
 * transaction, and the delivery workers woken once it has committed (in this process through
 * {@link DeliveryWakeups}, in every process through NOTIFY on PostgreSQL). A rollback wakes
 * nobody. No service wakes a worker by hand: a state change that records an event here cannot
 * forget to. The same holds for the status requests waiting on a session its events name.
 */
export interface UnitOfWork {
  <T>(work: (w: Work) => Promise<T>): Promise<T>;
  /**
   * Moves `session` as `transition` says (store/session-transitions.ts transitionSession: only from a state
   * that may lead there) and, only if this call moved it, records `type` about it, as a unit of
   * work of the two would, with the same wake-ups after commit. On PostgreSQL that is one statement
   * committed alone (webhooks/outbox.ts moveSessionRecording): one round trip where BEGIN, the
   * UPDATE, the event and COMMIT took four. Inside another unit of work it joins that one.
   * @returns whether this call moved the session.
   */
  moveSession<E extends EventType>(
    session: EventSource & { id: string },
    transition: Transition,
    type: E,
    data: EventData<E>,
  ): Promise<boolean>;
}

/** The unit of work under way in this async context, per root database: a nested call joins it. */
const current = new AsyncLocalStorage<{ db: Db; work: Work }>();

/** Who learns, after commit, which sessions a unit of work changed (services/session-watch.ts). */
export interface SessionChanges {
  changed(sessionId: string): void;
}

export function createUnitOfWork(deps: {
  db: Db;
  clock: Clock;
  wakeups: DeliveryWakeups;
  sessions?: SessionChanges;
}): UnitOfWork {
  const { clock } = deps;
  const envelope = <E extends EventType>(source: EventSource, type: E, data: EventData<E>) =>
    ({
      id: newId('event', clock),
      event: type,
      createdAt: clock.now().toISOString(),
      appId: source.appId,
      environment: source.environment,
      data,
    }) as EventOf<E>;

  const { origin } = deps.wakeups;
  async function unitOfWork<T>(work: (w: Work) => Promise<T>): Promise<T> {
    // Called from inside another unit of work on the same database (a use case composed of
    // others): join its transaction. A second transaction would wait forever on SQLite's one
    // connection, which the outer one holds, and on PostgreSQL would commit apart from it. The
    // events it records wake the workers when the outer one commits.
    const outer = current.getStore();
    if (outer?.db === deps.db) return work(outer.work);
    let due = false;
    // The endpoints of the deliveries enqueued here; unknown once deliveriesDue() was called.
    let endpoints: Set<string> | undefined = new Set();
    const enqueued = (deliveries: NewDelivery[]) => {
      if (deliveries.length > 0) due = true;
      for (const d of deliveries) endpoints?.add(d.endpointId);
      return deliveries;
    };
    // Each event queues the NOTIFY naming its own deliveries' endpoints as it is written.
    let dueUnannounced = false;
    // Every session event names its session: whoever waits for it looks again after commit.
    const sessions = new Set<string>();
    const touched = (data: object) => {
      if ('sessionId' in data && typeof data.sessionId === 'string') sessions.add(data.sessionId);
    };
    const result = await deps.db.transaction().execute(async (trx) => {
      const w: Work = {
        db: trx,
        async record(source, type, data) {
          const event = envelope(source, type, data);
          enqueued(await writeEventToSubscribers(trx, event, source.orgId, { clock, origin }));
          touched(data);
          return event;
        },
        async recordFor(source, type, data, endpointIds) {
          const event = envelope(source, type, data);
          const deliveries = enqueued(await writeEvent(trx, event, source.orgId, endpointIds, { clock, origin }));
          touched(data);
          return { event, deliveries };
        },
        deliveriesDue() {
          due = true;
          dueUnannounced = true;
          endpoints = undefined;
        },
      };
      // Inside: a query through the root database (not w.db) fails at once on SQLite instead of
      // waiting for the connection this transaction holds (store/dialect.ts).
      const value = await current.run({ db: deps.db, work: w }, () => insideTransactionOf(deps.db, () => work(w)));
      if (dueUnannounced) await notifyWorkers(trx, undefined, origin);
      return value;
    });
    if (due) deps.wakeups.notify(endpoints);
    for (const sessionId of sessions) deps.sessions?.changed(sessionId);
    return result;
  }

  async function moveSession<E extends EventType>(
    session: EventSource & { id: string },
    transition: Transition,
    type: E,
    data: EventData<E>,
  ): Promise<boolean> {
    if (current.getStore()?.db === deps.db || !outboxIsOneStatement(deps.db))
      return unitOfWork(async (work) => {
        if (!(await transitionSession(work.db, session.id, transition))) return false;
        await work.record(session, type, data);
        return true;
      });
    const event = envelope(session, type, data);
    const move = transitionValuesOf(session.id, transition);
    const deliveries = await moveSessionRecording(deps.db, move, event, session.orgId, { clock, origin });
    if (!deliveries) return false;
    if (deliveries.length > 0) deps.wakeups.notify(new Set(deliveries.map((d) => d.endpointId)));
    deps.sessions?.changed(session.id);
    return true;
  }

  return Object.assign(unitOfWork, { moveSession });
}
