import type { CredentialProfile } from './credential-profiles.ts';

/**
 * The profiles every installation knows (docs/credential-profiles.md shows each). A
 * CREDENTIAL_PROFILES_FILE entry with the same id replaces one.
 */

/** Matricula's own SD-JWT VC: our claim names, one to one. */
export const STUDENT_CREDENTIAL_PROFILE: CredentialProfile = {
  id: 'student_credential',
  name: 'Matricula StudentCredential (SD-JWT VC)',
  format: 'dc+sd-jwt',
  vct: ['StudentCredential'],
  claims: {
    is_active_student: { from: 'claim', path: ['is_active_student'], values: [true] },
    university_domain: { from: 'claim', path: ['university_domain'] },
    academic_level: { from: 'claim', path: ['academic_level'] },
    valid_until: { from: 'claim', path: ['valid_until'] },
  },
};

/**
 * An enrolment attestation as the EU wallet pilots issue them: a URN `vct`, the student's European
 * Student Identifier, the ISCED 2011 level of the programme and an enrolment status the request pins.
 */
export const ENROLMENT_ATTESTATION_PROFILE: CredentialProfile = {
  id: 'enrolment_attestation',
  name: 'Enrolment attestation (SD-JWT VC, EU wallet pilots)',
  format: 'dc+sd-jwt',
  vct: ['urn:eudi:enrolment:1'],
  claims: {
    is_active_student: { from: 'claim', path: ['enrolment_status'], values: ['enrolled'], pinned: true },
    university_domain: { from: 'esi', path: ['schacPersonalUniqueCode'] },
    academic_level: {
      from: 'claim',
      path: ['isced_level'],
      map: { '5': 'vocational', '6': 'undergraduate', '7': 'postgraduate', '8': 'doctoral' },
    },
    valid_until: { from: 'claim', path: ['date_of_expiry'] },
  },
};

/** DC4EU's European Student Card as an EBSI Verifiable Attestation (W3C VCDM 1.1, JWT). */
export const EUROPEAN_STUDENT_CARD_PROFILE: CredentialProfile = {
  id: 'european_student_card',
  name: 'European Student Card (EBSI Verifiable Attestation, VCDM 1.1)',
  format: 'jwt_vc_json',
  types: ['VerifiableCredential', 'VerifiableAttestation', 'EuropeanStudentCard'],
  claims: {
    is_active_student: { from: 'validity' },
    university_domain: { from: 'esi', path: ['esi'] },
    academic_level: {
      from: 'claim',
      path: ['academicLevel'],
      map: { Bachelor: 'undergraduate', Master: 'postgraduate', PhD: 'doctoral' },
    },
    valid_until: { from: 'expirationDate' },
  },
};

/** EBSI's Verifiable Educational ID (W3C VCDM 1.1, JWT): eduPerson and SCHAC attributes. */
export const VERIFIABLE_EDUCATIONAL_ID_PROFILE: CredentialProfile = {
  id: 'verifiable_educational_id',
  name: 'Verifiable Educational ID (EBSI, VCDM 1.1)',
  format: 'jwt_vc_json',
  types: ['VerifiableCredential', 'VerifiableAttestation', 'VerifiableEducationalID'],
  claims: {
    is_active_student: { from: 'claim', path: ['eduPersonPrimaryAffiliation'], values: ['student'] },
    university_domain: { from: 'esi', path: ['schacPersonalUniqueCode'] },
    valid_until: { from: 'expirationDate' },
  },
};

export const BUILT_IN_PROFILES: readonly CredentialProfile[] = [
  STUDENT_CREDENTIAL_PROFILE,
  ENROLMENT_ATTESTATION_PROFILE,
  EUROPEAN_STUDENT_CARD_PROFILE,
  VERIFIABLE_EDUCATIONAL_ID_PROFILE,
];
