import type { CredentialFormat, PresentationBuilder } from './types.ts';

/**
 * Holder side of every format, for the sandbox web wallet and the CLI wallet simulator. A builder
 * is loaded on first use, never imported by the service: groth16's prover needs snarkjs and
 * circomlibjs, devDependencies (GPL), which an install with `npm ci --omit=dev` lacks. The
 * service must start and verify without them; the wallets then offer the other formats and say
 * why not this one.
 */

/** Imports a module by specifier. Injectable so that tests can make a package missing. */
export type ModuleLoader = (specifier: string) => Promise<unknown>;

/** Whether this installation can build a format's presentations: the builder, or why not. */
export type HolderBuilder = { available: true; builder: PresentationBuilder } | { available: false; reason: string };

export type HolderBuilders = Readonly<Record<CredentialFormat, HolderBuilder>>;

type BuilderSource =
  | {
      /** devDependencies the builder loads at run time. */
      devPackages: readonly string[];
      load(): Promise<PresentationBuilder>;
    }
  /** A format the service verifies but the simulated wallets do not hold a credential in. */
  | { unavailable: string };

const SOURCES: Record<CredentialFormat, BuilderSource> = {
  'sd-jwt-vc': { devPackages: [], load: async () => (await import('./sd-jwt-vc/builder.ts')).sdJwtVcBuilder },
  'jwt-vc': {
    unavailable:
      'The simulated wallets hold a StudentCredential SD-JWT VC only: answer jwt-vc from a wallet holding a W3C credential (docs/credential-profiles.md).',
  },
  bbs: { devPackages: [], load: async () => (await import('./bbs/builder.ts')).bbsBuilder },
  groth16: {
    devPackages: ['snarkjs', 'circomlibjs'],
    load: async () => (await import('./groth16/builder.ts')).groth16Builder,
  },
};

const importModule: ModuleLoader = (specifier) => import(specifier);

/**
 * The format's builder if it can run here. A format whose devDependencies do not load is
 * unavailable, with a sentence that says what to install; the builder module is loaded only then.
 */
export async function loadHolderBuilder(
  format: CredentialFormat,
  load: ModuleLoader = importModule,
): Promise<HolderBuilder> {
  const source = SOURCES[format];
  if ('unavailable' in source) return { available: false, reason: source.unavailable };
  const loaded = await Promise.all(
    source.devPackages.map((name) =>
      load(name).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (loaded.includes(false)) {
    return {
      available: false,
      reason: `${format} needs the development dependencies ${source.devPackages.join(' and ')} (npm ci without --omit=dev).`,
    };
  }
  return { available: true, builder: await source.load() };
}

/** {@link loadHolderBuilder} for every format. */
export async function loadHolderBuilders(load: ModuleLoader = importModule): Promise<HolderBuilders> {
  const formats = Object.keys(SOURCES) as CredentialFormat[];
  const builders = await Promise.all(formats.map((format) => loadHolderBuilder(format, load)));
  return Object.fromEntries(formats.map((format, i) => [format, builders[i]])) as Record<
    CredentialFormat,
    HolderBuilder
  >;
}

let installed: Promise<HolderBuilders> | undefined;

/** The builders of this installation, found on the first call: what is installed does not change while the process runs. */
export function installedHolderBuilders(): Promise<HolderBuilders> {
  return (installed ??= loadHolderBuilders());
}
