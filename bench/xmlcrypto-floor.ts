/**
 * The floor of federation.ts's memory figure: xml-crypto's `checkSignature` alone on the aggregate,
 * in a process of its own, configured as saml/aggregate.ts configures it (the pinned certificate,
 * the strong algorithms). Whatever reads the aggregate with xml-crypto needs at least this much:
 * it parses the whole document into a DOM, clones it to canonicalize it, and builds the canonical
 * text. Prints one JSON line: the peak resident set above the process's own base, in MB (VmHWM
 * after, less VmRSS before, the high-water mark reset first; Linux /proc).
 *
 *   node --expose-gc --import tsx bench/xmlcrypto-floor.ts AGGREGATE.xml CERTIFICATE.pem
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { SignedXml } from 'xml-crypto';
import { withStrongAlgorithms } from '../src/services/sso/saml/xmldsig-algorithms.ts';

const [file, certificateFile] = process.argv.slice(2);
if (!file || !certificateFile) throw new Error('usage: xmlcrypto-floor.ts AGGREGATE.xml CERTIFICATE.pem');
const xml = readFileSync(file, 'utf8');
const certificate = readFileSync(certificateFile, 'utf8');
const signature = /<((?:[A-Za-z_][\w.-]*:)?)Signature[\s>][\s\S]*?<\/\1Signature>/.exec(xml)?.[0];
if (!signature) throw new Error('the aggregate is not signed');

const statusMb = (field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
(globalThis as { gc?: () => void }).gc?.();
writeFileSync('/proc/self/clear_refs', '5'); // the high-water mark starts again from the RSS now
const baseMb = statusMb('VmRSS');
const signed = withStrongAlgorithms(new SignedXml({ publicCert: certificate, getCertFromKeyInfo: () => null }));
signed.loadSignature(signature);
const ok = signed.checkSignature(xml);
const peakMb = statusMb('VmHWM') - baseMb;
console.log(JSON.stringify({ ok, baseMb, peakMb }));
