/**
 * Summarizes a V8 .cpuprofile (node --cpu-prof, e.g. from bench/sessions.ts --cpu-prof DIR): the
 * functions with the most self time, the most total time (each function counted once per sample
 * it is on the stack of), and self time grouped by package (node_modules/<name>, node: internals,
 * our src/).
 *
 *   node --import tsx bench/cpuprofile.ts FILE.cpuprofile [--top 25] [--skip-ms N]
 *
 * By default the samples before the first one where Fastify sends a reply are left out (the
 * process starting: tsx compiling, migrations, the sandbox issuers' keys), so that the figures
 * describe the load alone; `--skip-ms` leaves out the first N ms instead.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, 'skip-ms': { type: 'string' } },
});
if (positionals.length !== 1) {
  console.error('usage: node --import tsx bench/cpuprofile.ts FILE.cpuprofile [--top 25] [--skip-ms N]');
  process.exit(2);
}
const TOP = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0], 'utf8')) as Profile;

function shortUrl(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const src = url.lastIndexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  return url.replace(/^file:\/\//, '');
}

function packageOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return url.split('/')[0];
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const src = url.lastIndexOf('/src/');
  return src >= 0 ? `src/${url.slice(src + 5).split('/')[0]}` : url;
}

const keyOf = (frame: CallFrame) =>
  `${frame.functionName || '(anonymous)'}  ${frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : ''}`.trim();

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

/** Microseconds from the profile's start to the first sample with Fastify sending a reply on its stack. */
function firstRequestAt(): number {
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (frame.functionName === 'onSendEnd' && frame.url.includes('node_modules/fastify/lib/reply.js')) return at;
    }
  }
  return 0;
}
const SKIP_US = values['skip-ms'] === undefined ? firstRequestAt() : Number(values['skip-ms']) * 1000;

const self = new Map<string, number>();
const total = new Map<string, number>();
const packages = new Map<string, number>();
let measured = 0;
let elapsed = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0;
  elapsed += delta;
  if (elapsed < SKIP_US) continue;
  measured += delta;
  const leaf = byId.get(profile.samples[i])!;
  self.set(keyOf(leaf.callFrame), (self.get(keyOf(leaf.callFrame)) ?? 0) + delta);
  packages.set(packageOf(leaf.callFrame), (packages.get(packageOf(leaf.callFrame)) ?? 0) + delta);
  const seen = new Set<string>();
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const key = keyOf(byId.get(id)!.callFrame);
    if (seen.has(key)) continue;
    seen.add(key);
    total.set(key, (total.get(key) ?? 0) + delta);
  }
}

function table(title: string, entries: Map<string, number>): void {
  console.log(`\n${title}\n     ms      %  function`);
  for (const [key, us] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`${(us / 1000).toFixed(0).padStart(7)} ${((100 * us) / measured).toFixed(1).padStart(6)}  ${key}`);
}

console.log(
  `${positionals[0]}: ${(measured / 1000).toFixed(0)} ms of samples (the first ${(SKIP_US / 1000).toFixed(0)} ms skipped)`,
);
table('self time by package', packages);
table('self time by function', self);
table('total time by function (inclusive)', total);
