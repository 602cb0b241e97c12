/**
 * The layer check (`npm run lint:layers`, part of `npm run lint` and of CI). Paths are matched
 * from the repository root; the command cruises src/ only.
 *
 *   routes ─▶ services ─▶ store ─▶ domain        http: request plumbing shared by routes
 *   http ───▶ services                           cli: the operator's commands (command.ts opens the store)
 *   cli ────▶ services
 *                 └──────▶ proofs ─▶ domain      webhooks: signing and delivery, below services
 *                 └──────▶ outbound ─▶ domain    outbound: the guarded HTTP client (SSRF, limits)
 *   jobs ─▶ services                             jobs: the periodic jobs and their schedules
 *
 * Type-only imports count (tsPreCompilationDeps): a layer that names another layer's types
 * depends on it as surely as one that calls it. They do not count for devDependencies, which
 * are about what the running service loads.
 * @type {import('dependency-cruiser').IConfiguration}
 */

/** Every kind of dependency that is not a file of ours: Node builtins and npm packages. */
const NOT_OURS = ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files import each other in a cycle: module start-up order then decides what is undefined.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment:
        'src/domain holds the vocabulary (ids, claims, states, events) every layer shares; it may ' +
        'import Node builtins, npm packages and src/domain, nothing else of ours.',
      from: { path: '^src/domain/' },
      to: { pathNot: '^src/domain/', dependencyTypesNot: NOT_OURS },
    },
    {
      name: 'proofs-no-store',
      severity: 'error',
      comment:
        'src/proofs verifies presentations from what it is given (the TrustRegistry interface); ' +
        'it must not reach into persistence, use cases or HTTP.',
      from: { path: '^src/proofs/' },
      to: { path: '^src/(store|services|routes|http)/' },
    },
    {
      name: 'outbound-only-domain',
      severity: 'error',
      comment:
        'src/outbound is the guarded HTTP client every outgoing fetch goes through (webhooks, issuer ' +
        'metadata, status lists); it may import Node builtins, npm packages, src/domain and itself.',
      from: { path: '^src/outbound/' },
      to: { pathNot: '^src/(outbound|domain)/', dependencyTypesNot: NOT_OURS },
    },
    {
      name: 'jobs-through-services',
      severity: 'error',
      comment:
        'src/jobs schedules use cases: a job step calls src/services, never the store, routes or ' +
        'HTTP plumbing directly, and nothing but the composition root starts jobs.',
      from: { path: '^src/jobs/' },
      to: { path: '^src/(store|routes|http|webhooks|proofs|cli|portal)/' },
    },
    {
      name: 'nothing-imports-jobs',
      severity: 'error',
      comment: 'Only the composition root (src/serve.ts) builds and starts the periodic jobs.',
      from: { pathNot: '^src/(serve\\.ts$|jobs/)' },
      to: { path: '^src/jobs/' },
    },
    {
      name: 'cli-through-services',
      severity: 'error',
      comment:
        'The CLI runs the same use cases as the API (src/services); only its composition root ' +
        '(src/cli/command.ts, which opens and migrates the store) touches src/store.',
      from: { path: '^src/cli/', pathNot: '^src/cli/command\\.ts$' },
      to: { path: '^src/store/' },
    },
    {
      name: 'http-through-services',
      severity: 'error',
      comment:
        'src/http is the request plumbing (authentication, idempotency, errors); the statements it ' +
        'runs come through src/services, like the routes it serves.',
      from: { path: '^src/http/' },
      to: { path: '^src/store/' },
    },
    {
      name: 'routes-through-services',
      severity: 'error',
      comment: 'Routes go through src/services for every use case; they never touch src/store.',
      from: { path: '^src/routes/' },
      to: { path: '^src/store/' },
    },
    {
      name: 'store-below-services',
      severity: 'error',
      comment:
        'src/store implements repositories over domain types; it knows nothing of the use cases, ' +
        'HTTP, proof formats or webhook delivery above it.',
      from: { path: '^src/store/' },
      to: { path: '^src/(services|routes|http|proofs|webhooks|outbound|jobs)/' },
    },
    {
      name: 'services-not-http',
      severity: 'error',
      comment: 'Use cases do not depend on the HTTP adapter: the CLI and jobs call them too.',
      from: { path: '^src/services/' },
      to: { path: '^src/(routes|http)/' },
    },
    {
      name: 'webhooks-not-up',
      severity: 'error',
      comment: 'Webhook signing and delivery sit below the use cases and know nothing of HTTP routes.',
      from: { path: '^src/webhooks/' },
      to: { path: '^src/(services|routes|http|jobs)/' },
    },
    {
      name: 'outbox-through-unit-of-work',
      severity: 'error',
      comment:
        'Events are recorded and workers woken by the unit of work only (services/unit-of-work.ts): a use case that wrote the outbox itself could forget the wake-up.',
      from: { path: '^src/(services|routes|http|proofs|cli)/', pathNot: '^src/services/unit-of-work\\.ts$' },
      to: { path: '^src/webhooks/outbox\\.ts$' },
    },
    {
      name: 'http-not-routes',
      severity: 'error',
      comment: 'src/http is plumbing the routes use (auth, errors, schemas); it must not import them back.',
      from: { path: '^src/http/' },
      to: { path: '^src/routes/' },
    },
    {
      name: 'not-to-dev-dep',
      severity: 'error',
      comment:
        'The service must not statically import a devDependency: `npm ci --omit=dev` leaves it out ' +
        '(and snarkjs/circomlibjs are GPL). Type-only imports are erased; a dynamic import() ' +
        'loaded only by dev-time paths (the sandbox proof builder) is allowed.',
      from: { path: '^src/' },
      to: {
        dependencyTypes: ['npm-dev'],
        dependencyTypesNot: ['type-only', 'dynamic-import'],
        pathNot: '^node_modules/@types/',
      },
    },
    {
      name: 'no-non-package-json',
      severity: 'error',
      comment: 'An npm package that package.json does not declare: it works only by hoisting luck.',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment:
        'An import that cannot be resolved to a file. Also the guard of this check itself: a ' +
        'specifier it fails to resolve would silently escape every layer rule above.',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-orphans',
      severity: 'error',
      comment: 'A file nothing imports: dead code, or an entry point to list here.',
      from: {
        orphan: true,
        pathNot: [
          '\\.d\\.(c|m)?ts$',
          // Entry points: the server, the CLI (bin/matricula), the package exports.
          '^src/main\\.ts$',
          '^src/cli/main\\.ts$',
          '^src/index\\.ts$',
          // Browser scripts the portal serves as files (src/portal/assets.ts), never imported.
          '^src/portal/assets/',
        ],
      },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/proofs/groth16/artifacts/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
      extensions: ['.ts', '.d.ts', '.js', '.mjs', '.cjs', '.json'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
