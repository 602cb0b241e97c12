/**
 * Preloaded into every process of a coverage run (`MATRICULA_TEST_COVERAGE=1 npm test`, through
 * NODE_OPTIONS: scripts/test.ts `coverageEnv`). NODE_V8_COVERAGE has V8 count how often each block
 * of JavaScript runs, node_modules' included; the report only asks whether a line ran. This switches
 * V8 to recording that alone (block coverage, binary), which costs less: a suite bundle of route
 * tests took 12 % more CPU with counts and 7 % with this, against no coverage, and its report was
 * the same line for line (2026-11-28). V8's mode is the isolate's: node's own coverage session,
 * which writes the file as the process exits, collects in it. Without NODE_V8_COVERAGE, nothing.
 */
import { Session } from 'node:inspector';

if (process.env.NODE_V8_COVERAGE) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.startPreciseCoverage', { callCount: false, detailed: true });
  // Kept connected for the life of the process: disconnected, it would stop the coverage it
  // started, and V8 would fall back to whole functions (a function that ran, every line covered).
  globalThis[Symbol.for('matricula.coverageSession')] = session;
}
