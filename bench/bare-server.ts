/**
 * The baseline of bench/sessions.ts: a bare node:http server, in a process of its own as the
 * service is, that answers POST with BARE_CREATE_BODY (201) and anything else with BARE_READ_BODY
 * (200). It parses a POST body as JSON, as any server would. Listens on 127.0.0.1:BARE_PORT and
 * prints "listening" once it does. With BARE_WORK_US it first spends that many microseconds of
 * CPU on each request (a busy loop): the calibration of `--calibrate`, what ratio a server that
 * does a known amount of work more than the bare one reaches under the same client.
 */
import { createServer } from 'node:http';

const createBody = process.env.BARE_CREATE_BODY ?? '{}';
const readBody = process.env.BARE_READ_BODY ?? '{}';
const workUs = Number(process.env.BARE_WORK_US ?? 0);

/** Spends `workUs` of this process's CPU time (not wall time: a loop descheduled spends none). */
function work(): void {
  if (workUs === 0) return;
  const start = process.cpuUsage();
  for (;;) {
    const spent = process.cpuUsage(start);
    if (spent.user + spent.system >= workUs) return;
  }
}
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    work();
    if (req.method === 'POST') JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(req.method === 'POST' ? createBody : readBody);
  });
});
server.listen(Number(process.env.BARE_PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
