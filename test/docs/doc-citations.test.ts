import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { test } from 'node:test';

/**
 * Comments and docs cite what a reader of the repository can open: docs/*.md, ARCHITECTURE.md,
 * the OpenAPI document. The design notes and the interface specification the project started from
 * are not in the repository, so "DESIGN §3" or "spec 6.3" points nowhere: say the reason in place,
 * or cite the doc that now holds it.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const SCANNED = [
  'src',
  'test',
  'bench',
  'scripts',
  'packages',
  'docs',
  'README.md',
  'ARCHITECTURE.md',
  'CONTRIBUTING.md',
];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'build', 'fixtures', '.git']);
const TEXT = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.md', '.sh', '.yaml', '.yml']);

/** Citations of documents outside the repository, by section. */
const OUTSIDE_CITATIONS: readonly RegExp[] = [
  /\bDESIGN(?:\.md)?\s*§/, // "DESIGN §6"
  /\bDESIGN\.md\b/,
  /\b[Ss]pec(?:ification)?(?:'s)?\b[^\n§]{0,24}\(?§\s*\d/, // "spec §4", "the spec's recipe (§6.2)"
  /\b[Ss]pec(?:ification)?(?:'s)?\s+(?:sections?\s+)?\d+(?:\.\d+)*\b/, // "spec 6.3", "Spec sections 2.1"
  /\bthe \d+\.\d+ (?:fields|keys|envelope|event)\b|\brest of \d+\.\d+\b/, // "exactly the 2.1 fields"
];

function filesUnder(path: string): string[] {
  const entries = readdirSync(path, { withFileTypes: true });
  return entries.flatMap((entry) => {
    const full = join(path, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : filesUnder(full);
    return entry.isFile() && TEXT.has(extname(entry.name)) ? [full] : [];
  });
}

function scannedFiles(): string[] {
  return SCANNED.flatMap((name) => {
    const full = join(ROOT, name);
    return extname(name) === '.md' ? [full] : filesUnder(full);
  });
}

/** `file:line: text` of every line that cites a section of a document outside the repository. */
export function outsideCitations(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, index) =>
      OUTSIDE_CITATIONS.some((pattern) => pattern.test(line)) ? [`${file}:${index + 1}: ${line.trim()}`] : [],
    );
}

test('the patterns catch each form of citation and leave ordinary words alone', () => {
  const cited = [
    'the delivery worker (DESIGN §6): claims',
    'see DESIGN.md',
    'The credential formats (spec §4).',
    'the interface spec §6.2',
    "The spec's recipe (§6.2), written out",
    'verification.completed data: spec 6.3, plus',
    'Spec 2.4: the envelope',
    "spec 2.1's fields only",
    'Spec sections 2.1, 3, 4.1–4.3',
    'returns exactly the 2.1 fields',
    'null for the 6.3 keys not asked for',
    'POST, the 2.4 envelope, the six headers',
  ];
  for (const line of cited) assert.equal(outsideCitations('x', line).length, 1, line);
  const fine = [
    'export async function resolve(specifier, context, next) {',
    'async function cert(spec: Spec): Promise<Issued> {',
    'as the Standard Webhooks spec names them',
    'see docs/webhooks.md (Events)',
    'RFC 5280 §4.2.1.10 dNSName',
    'KeyGen of the draft (§3.4.1)',
  ];
  for (const line of fine) assert.deepEqual(outsideCitations('x', line), [], line);
});

test('no comment or doc cites a section of a document outside the repository', () => {
  const self = relative(ROOT, import.meta.filename);
  const found = scannedFiles()
    .map((file) => relative(ROOT, file))
    .filter((file) => file !== self)
    .flatMap((file) => outsideCitations(file, readFileSync(join(ROOT, file), 'utf8')));
  assert.deepEqual(found, [], 'cite docs/*.md, ARCHITECTURE.md or the OpenAPI document instead, or say why in place');
});
