/**
 * Members of an organization and what each role may do in the dashboard (docs/dashboard.md).
 * The table is the one place a permission is decided; the dashboard's routes ask it on the server
 * before calling a service, whatever the page showed.
 */
export const MEMBER_ROLES = ['owner', 'developer', 'viewer'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

export function isMemberRole(value: string): value is MemberRole {
  return (MEMBER_ROLES as readonly string[]).includes(value);
}

/** Every action a member can take; reading is `view`. */
export const DASHBOARD_ACTIONS = {
  view: ['owner', 'developer', 'viewer'],
  'application.create': ['owner', 'developer'],
  'application.update': ['owner', 'developer'],
  'key.create': ['owner', 'developer'],
  'key.revoke': ['owner', 'developer'],
  'webhook.create': ['owner', 'developer'],
  'webhook.rotate_secret': ['owner', 'developer'],
  'webhook.test': ['owner', 'developer'],
  'delivery.retry': ['owner', 'developer'],
  'delivery.replay': ['owner', 'developer'],
  'session.redact': ['owner', 'developer'],
  'member.invite': ['owner'],
  'member.remove': ['owner'],
  'passkey.register': ['owner', 'developer', 'viewer'],
} as const satisfies Record<string, readonly MemberRole[]>;
export type DashboardAction = keyof typeof DASHBOARD_ACTIONS;

export function may(role: MemberRole, action: DashboardAction): boolean {
  return (DASHBOARD_ACTIONS[action] as readonly MemberRole[]).includes(role);
}

/** E-mail addresses compare trimmed and lowercased: one member per address. */
export function normalizedEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Plausible e-mail address: something@domain, no spaces, at most 254 characters. */
export function isEmail(email: string): boolean {
  return email.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email);
}

/** Shortest password accepted (NIST SP 800-63B: at least 8; we ask for more, as a passphrase). */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;
