/**
 * An injective encoding of a list of strings: each as a 4-byte big-endian byte length followed by
 * its UTF-8 bytes. Two different lists never give the same bytes, whatever the strings contain,
 * which a separator (`audience|nonce`) cannot promise when the caller picks both (issue 10,
 * finding 2). Used for what binds a presentation to its audience, nonce and time: the BBS
 * presentation header and the Groth16 nonceField. Documented in docs/credentials-bbs.md and
 * docs/zk-groth16.md.
 */
export function lengthPrefixed(fields: readonly string[]): Uint8Array {
  const encoded = fields.map((field) => new TextEncoder().encode(field));
  const bytes = new Uint8Array(encoded.reduce((length, field) => length + 4 + field.length, 0));
  const view = new DataView(bytes.buffer);
  let offset = 0;
  for (const field of encoded) {
    view.setUint32(offset, field.length);
    bytes.set(field, offset + 4);
    offset += 4 + field.length;
  }
  return bytes;
}
