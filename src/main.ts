import { ConfigError, loadConfig, type Config } from './config.ts';
import { parseServerArgs, SERVER_USAGE, ServerArgsError, serverVersion } from './server-args.ts';

/**
 * The entry point: the command line and the configuration, then the service (serve.ts), loaded
 * only when it is to run, so that `--help`, `--version` and a bad flag or setting answer at once
 * (loading the whole service took about 2 s of the 2.4 s they took).
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    const argv = process.argv.slice(2);
    // --help and --version answer and exit before any configuration is read or port opened.
    const args = parseServerArgs(argv);
    if (args.action !== 'run') {
      process.stdout.write(`${args.action === 'help' ? SERVER_USAGE : serverVersion()}\n`);
      return;
    }
    config = loadConfig(process.env, argv);
  } catch (err) {
    if (err instanceof ServerArgsError) {
      process.stderr.write(`Error: ${err.message}\n\n${SERVER_USAGE}\n`);
      process.exit(2);
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const { serve } = await import('./serve.ts');
  await serve(config);
}

main().catch((err) => {
  process.stderr.write(`Matricula failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
