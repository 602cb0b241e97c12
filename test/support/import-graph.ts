import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A package a project file imports, as `import … from` or `export … from` (not `import()`). */
export interface PackageImport {
  /** Package name: `snarkjs`, `@noble/curves`. */
  name: string;
  /** The project file that imports it, relative to the root. */
  importer: string;
}

/**
 * The files and packages reachable from `entries` through static imports, as they run: type-only
 * imports and exports are erased and not followed, `import()` is not followed (it loads on use).
 * Relative imports are followed through the project's own files; packages are listed, not entered.
 */
export function staticImportGraph(entries: string[]): { files: string[]; packages: PackageImport[] } {
  const seen = new Set<string>();
  const packages: PackageImport[] = [];
  const queue = entries.map((entry) => resolve(ROOT, entry));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of runtimeSpecifiers(file)) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier);
        if (/\.[cm]?[jt]s$/.test(target) && existsSync(target)) queue.push(target);
      } else if (!isBuiltin(specifier)) {
        packages.push({ name: packageName(specifier), importer: relative(ROOT, file) });
      }
    }
  }
  return { files: [...seen].map((file) => relative(ROOT, file)), packages };
}

function runtimeSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const specifiers: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && !isTypeOnlyImport(statement)) {
      specifiers.push((statement.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && !isTypeOnlyExport(statement)) {
      specifiers.push((statement.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  return specifiers;
}

/** `import type …`, or `import { type A, type B }` (erased whole: verbatimModuleSyntax is off). */
function isTypeOnlyImport(statement: ts.ImportDeclaration): boolean {
  const clause = statement.importClause;
  if (!clause) return false;
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    !clause.name &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

function isTypeOnlyExport(statement: ts.ExportDeclaration): boolean {
  if (statement.isTypeOnly) return true;
  const clause = statement.exportClause;
  return (
    clause !== undefined &&
    ts.isNamedExports(clause) &&
    clause.elements.length > 0 &&
    clause.elements.every((e) => e.isTypeOnly)
  );
}

function isBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]);
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}
