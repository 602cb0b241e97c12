// Preload with `--import` (or NODE_OPTIONS) to run as after `npm ci --omit=dev`: the project's
// own files cannot load any package of package.json's devDependencies. Packages that other
// packages depend on stay loadable from them, as npm would still install those.
import { register } from 'node:module';

register(new URL('./without-dev-dependencies-hooks.mjs', import.meta.url));
