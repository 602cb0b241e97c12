import type { Metric, Registry } from 'prom-client';

const DURATION = 'matricula_http_request_duration_seconds';
const TOTAL = 'matricula_http_requests_total';
/** The duration histogram's upper bounds, seconds. */
export const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** A sample as prom-client's registry reads it from a metric's `get()`. */
interface Sample {
  metricName?: string;
  /** On a bucket: none, as prom-client's histogram without exemplars. */
  exemplar?: null;
  value: number;
  labels: Record<string, string | number>;
}

/** One label set's requests: how many fell in each bucket (not cumulative), their sum and count. */
interface Tally {
  labels: { method: string; route: string; status: string };
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * The HTTP requests' duration histogram and request counter, tallied here and handed to
 * prom-client's registry when it is scraped; prom-client still writes the exposition.
 *
 * prom-client's `observe` and `inc` check the label names and build a string key from the label
 * values on every call: together some 10,000 instructions of a session GET under callgrind, a
 * twentieth of the request (bench/README.md, twenty-sixth sitting). A request is tallied here by
 * its route pattern, method and status in maps of the values themselves: the route pattern is the
 * same string on every request of a route, so no key is built. The two metrics are what prom-client's
 * Histogram and Counter with these names, help and buckets would show of the same requests
 * (test/services/http-metrics.test.ts holds them equal).
 */
export class HttpRequestMetrics {
  readonly #byRoute = new Map<string, Map<string, Map<number, Tally>>>();
  /** Every tally, in the order of their first request: prom-client's order. */
  readonly #tallies: Tally[] = [];

  constructor(registry: Registry) {
    registry.registerMetric(
      this.#metric(DURATION, 'Time to answer an HTTP request, by method, route pattern and status.', 'histogram'),
    );
    registry.registerMetric(
      this.#metric(TOTAL, 'HTTP requests answered, by method, route pattern and status.', 'counter'),
    );
  }

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.#byRoute.get(route);
    if (!byMethod) this.#byRoute.set(route, (byMethod = new Map<string, Map<number, Tally>>()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map<number, Tally>()));
    let tally = byStatus.get(status);
    if (!tally) {
      tally = {
        labels: { method, route, status: String(status) },
        buckets: HTTP_DURATION_BUCKETS.map(() => 0),
        sum: 0,
        count: 0,
      };
      byStatus.set(status, tally);
      this.#tallies.push(tally);
    }
    // The first bound at or above the value, as prom-client's; above the last, only +Inf counts it.
    const bucket = HTTP_DURATION_BUCKETS.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) tally.buckets[bucket]++;
    tally.sum += seconds;
    tally.count++;
  }

  /** The values of the histogram, or of the counter, in prom-client's order for each label set. */
  #values(type: 'histogram' | 'counter'): Sample[] {
    const values: Sample[] = [];
    for (const { labels, buckets, sum, count } of this.#tallies) {
      if (type === 'counter') {
        values.push({ value: count, labels });
        continue;
      }
      let cumulative = 0;
      HTTP_DURATION_BUCKETS.forEach((le, i) => {
        cumulative += buckets[i];
        values.push({ metricName: `${DURATION}_bucket`, value: cumulative, exemplar: null, labels: { le, ...labels } });
      });
      values.push(
        { metricName: `${DURATION}_bucket`, value: count, exemplar: null, labels: { le: '+Inf', ...labels } },
        { metricName: `${DURATION}_sum`, value: sum, labels },
        { metricName: `${DURATION}_count`, value: count, labels },
      );
    }
    return values;
  }

  /**
   * A metric as prom-client's registry reads one: its name, help, type and, when scraped, its
   * samples (the shape of prom-client's own metrics' `get()`).
   */
  #metric(name: string, help: string, type: 'histogram' | 'counter'): Metric {
    const metric = {
      name,
      help,
      type,
      aggregator: 'sum',
      get: () => Promise.resolve({ name, help, type, aggregator: 'sum', values: this.#values(type) }),
      reset: () => {
        this.#byRoute.clear();
        this.#tallies.length = 0;
      },
    };
    return metric as unknown as Metric;
  }
}
