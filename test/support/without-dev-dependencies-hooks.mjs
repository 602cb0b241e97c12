import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url).href;
const devDependencies = new Set(
  Object.keys(JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).devDependencies),
);

function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Module resolution hook: a devDependency imported by a project file is not found. */
export async function resolve(specifier, context, next) {
  const fromProject = context.parentURL?.startsWith(root) && !context.parentURL.includes('/node_modules/');
  if (fromProject && devDependencies.has(packageName(specifier))) {
    const error = new Error(
      `Cannot find package '${specifier}' imported from ${context.parentURL} (devDependencies are not installed)`,
    );
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
