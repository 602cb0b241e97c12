/**
 * Writes test/fixtures/saml-xsd/: the OASIS SAML 2.0 schemas (metadata, assertion, protocol, the
 * MDUI extension), the W3C schemas they import (XML Signature, XML Encryption, xml.xsd) and
 * Shibboleth's metadata extension (shibmd:Scope), as Debian ships them in its packages
 * `opensaml-schemas`, `xmltooling-schemas` and `shibboleth-sp-common` (Shibboleth's copies of the
 * published schemas). No npm package carries the metadata schema: the samlify
 * validators ship only assertion, protocol, xmldsig and xenc.
 *
 * Every `schemaLocation` that points at the web (w3.org) is rewritten to the file beside it, so
 * validation (test/integration/saml-schema.test.ts) never fetches anything.
 *
 *   node scripts/saml-xsd.mjs        (needs apt-get and dpkg-deb: a Debian or Ubuntu machine)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures/saml-xsd');
const files = {
  opensaml: [
    'saml-schema-metadata-2.0.xsd',
    'saml-schema-assertion-2.0.xsd',
    'saml-schema-protocol-2.0.xsd',
    'sstc-saml-metadata-ui-v1.0.xsd',
  ],
  xmltooling: ['xmldsig-core-schema.xsd', 'xenc-schema.xsd', 'xml.xsd'],
  shibboleth: ['shibboleth-metadata-1.0.xsd'],
};
const packages = ['opensaml-schemas', 'xmltooling-schemas', 'shibboleth-sp-common'];

const work = mkdtempSync(path.join(tmpdir(), 'saml-xsd-'));
try {
  execFileSync('apt-get', ['download', ...packages], { cwd: work, stdio: 'inherit' });
  const versions = [];
  for (const deb of readdirSync(work).filter((f) => f.endsWith('.deb'))) {
    execFileSync('dpkg-deb', ['-x', deb, 'root'], { cwd: work });
    versions.push(deb.replace(/_all\.deb$/, '').replace('_', ' '));
  }
  mkdirSync(out, { recursive: true });
  const local = Object.values(files).flat();
  for (const [dir, names] of Object.entries(files)) {
    for (const name of names) {
      let text = readFileSync(path.join(work, 'root/usr/share/xml', dir, name), 'utf8');
      text = text.replace(/schemaLocation=(["'])https?:\/\/[^"']*\/([^/"']+\.xsd)\1/g, (whole, quote, file) => {
        if (!local.includes(file)) throw new Error(`${name} imports ${file}, which is not copied`);
        return `schemaLocation=${quote}${file}${quote}`;
      });
      if (/schemaLocation=["']https?:/.test(text)) throw new Error(`${name} still imports from the web`);
      writeFileSync(path.join(out, name), text);
    }
  }
  writeFileSync(path.join(out, 'SOURCE'), `${versions.sort().join('\n')}\n`);
  console.log(`wrote ${local.length} schemas to ${out} from ${versions.join(', ')}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
