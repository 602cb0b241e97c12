/**
 * Sandbox universities: seeded into the trust registry on first start, trusted only for sandbox
 * sessions. Their keys are derived from the published seeds below (like test card numbers), so
 * anyone can issue sandbox credentials. The key of format F is derived from `${seed}:${F}` by
 * that format's `sandboxIssuerKeyPair` (see docs/sessions.md, "Credentials and trust").
 */
export interface SandboxUniversity {
  domain: string;
  name: string;
  country: string;
  seed: string;
}

export const SANDBOX_UNIVERSITIES: readonly SandboxUniversity[] = [
  {
    domain: 'sandbox-state.example',
    name: 'Sandbox State University',
    country: 'US',
    seed: 'matricula-sandbox-v1:sandbox-state.example',
  },
  {
    domain: 'pruebas.example',
    name: 'Universidad de Pruebas',
    country: 'ES',
    seed: 'matricula-sandbox-v1:pruebas.example',
  },
];

export function sandboxUniversity(domain: string): SandboxUniversity | undefined {
  return SANDBOX_UNIVERSITIES.find((u) => u.domain === domain);
}

/** The seed a format derives its sandbox issuer key from. */
export function formatSeed(university: SandboxUniversity, format: string): string {
  return `${university.seed}:${format}`;
}
