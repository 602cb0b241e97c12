// The aggregate worker when the service runs from TypeScript sources (tsx: `npm start`, the tests):
// tsx's ESM hooks do not reach into worker threads on Node 20, so they are registered here, as
// proofs/worker/tsx-entry.mjs does. Compiled (dist/), aggregate-worker.js is started directly.
import { register } from 'tsx/esm/api';

register();
await import('./aggregate-worker.ts');
