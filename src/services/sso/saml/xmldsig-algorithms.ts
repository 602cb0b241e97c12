import { createSign, createVerify, type KeyLike } from 'node:crypto';
import type { SignedXml } from 'xml-crypto';

/**
 * The XML signature algorithms accepted where we verify with xml-crypto ourselves (federation
 * metadata aggregates): RSA PKCS#1 v1.5 and RSA-PSS with SHA-256 or better, and ECDSA with SHA-256
 * or better (RFC 4051 / XML Signature 1.1), whose SignatureValue is r‖s, not DER. SHA-1, HMAC and
 * anything unknown are refused: xml-crypto finds no implementation for them and fails the check.
 */
export const ECDSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256';
export const ECDSA_SHA384 = 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384';
export const ECDSA_SHA512 = 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512';

function ecdsa(uri: string, hash: string) {
  return class {
    getAlgorithmName() {
      return uri;
    }
    getSignature(signedInfo: string | Buffer, privateKey: KeyLike): string {
      return createSign(hash)
        .update(signedInfo)
        .sign({ key: privateKey as never, dsaEncoding: 'ieee-p1363' })
        .toString('base64');
    }
    verifySignature(material: string, key: KeyLike, signatureValue: string): boolean {
      return createVerify(hash)
        .update(material)
        .verify({ key: key as never, dsaEncoding: 'ieee-p1363' }, signatureValue.replace(/\s+/g, ''), 'base64');
    }
  };
}

/** Restricts `signed` to the accepted algorithms (and adds ECDSA); returns it. */
export function withStrongAlgorithms(signed: SignedXml): SignedXml {
  const rsa = signed.SignatureAlgorithms;
  signed.SignatureAlgorithms = {
    'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256': rsa['http://www.w3.org/2001/04/xmldsig-more#rsa-sha256']!,
    'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512': rsa['http://www.w3.org/2001/04/xmldsig-more#rsa-sha512']!,
    'http://www.w3.org/2007/05/xmldsig-more#sha256-rsa-MGF1':
      rsa['http://www.w3.org/2007/05/xmldsig-more#sha256-rsa-MGF1']!,
    [ECDSA_SHA256]: ecdsa(ECDSA_SHA256, 'sha256'),
    [ECDSA_SHA384]: ecdsa(ECDSA_SHA384, 'sha384'),
    [ECDSA_SHA512]: ecdsa(ECDSA_SHA512, 'sha512'),
  };
  const hashes = signed.HashAlgorithms;
  signed.HashAlgorithms = {
    'http://www.w3.org/2001/04/xmlenc#sha256': hashes['http://www.w3.org/2001/04/xmlenc#sha256']!,
    'http://www.w3.org/2001/04/xmlenc#sha512': hashes['http://www.w3.org/2001/04/xmlenc#sha512']!,
  };
  return signed;
}
