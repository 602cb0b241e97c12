import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateXML } from 'xmllint-wasm';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/saml-xsd');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.xsd'))
  .map((fileName) => ({ fileName, contents: readFileSync(path.join(dir, fileName), 'utf8') }));

/**
 * Validates `xml` against an OASIS SAML 2.0 schema with libxml2 (xmllint-wasm). The schemas are
 * test/fixtures/saml-xsd/ (scripts/saml-xsd.mjs), every import a file beside them: nothing is
 * fetched. The MDUI and shibmd schemas are loaded too, so md:Extensions' mdui:UIInfo and
 * shibmd:Scope are checked, not skipped (extension content is validated laxly: known if loaded).
 * Returns libxml2's messages, empty when the document is valid.
 */
export async function samlSchemaErrors(xml: string, schema: 'metadata' | 'protocol'): Promise<string[]> {
  const root = schema === 'metadata' ? 'saml-schema-metadata-2.0.xsd' : 'saml-schema-protocol-2.0.xsd';
  // A driver schema importing the root and the extensions, so lax extension content is validated.
  const driver = {
    fileName: 'driver.xsd',
    contents: `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:import namespace="${schema === 'metadata' ? 'urn:oasis:names:tc:SAML:2.0:metadata' : 'urn:oasis:names:tc:SAML:2.0:protocol'}" schemaLocation="${root}"/>
  <xs:import namespace="urn:oasis:names:tc:SAML:metadata:ui" schemaLocation="sstc-saml-metadata-ui-v1.0.xsd"/>
  <xs:import namespace="urn:mace:shibboleth:metadata:1.0" schemaLocation="shibboleth-metadata-1.0.xsd"/>
</xs:schema>`,
  };
  const result = await validateXML({
    xml: { fileName: 'document.xml', contents: xml },
    schema: driver,
    preload: files,
    // No network and no DTDs: every import resolves to the preloaded files.
    modifyArguments: (args) => ['--nonet', ...args],
  });
  return result.valid ? [] : result.errors.map((e) => e.rawMessage);
}
