// The proof pool's worker module when the service runs from TypeScript sources (tsx: `npm start`,
// the tests). A worker thread inherits `--import tsx`, but on Node 20 tsx's ESM hooks do not
// reach into worker threads: only its require hook does, which loads entry.ts yet fails on the
// dynamic import() of a builder. Registering tsx's ESM hooks here, inside the thread, fixes both.
// Compiled (dist/), the pool loads entry.js directly and this file is not used.
import { register } from 'tsx/esm/api';

register();
const { default: run } = await import('./entry.ts');
export default run;
