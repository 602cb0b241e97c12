/**
 * HTML built from template literals, escaped by default: every interpolated value is text unless
 * it is already {@link SafeHtml} (the output of `html` itself, or markup we generated, such as the
 * QR code's SVG). Session purposes and application names come from integrators and end up in
 * pages a student trusts, so nothing reaches the markup unescaped by accident.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for element content and for quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Markup we produced ourselves and vouch for. Never pass user input here. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(
    typeof value === 'object' ? JSON.stringify(value) : String(value as string | number | boolean | bigint),
  );
}

/** Tagged template: `html\`<p>${text}</p>\`` escapes `text`; arrays are concatenated; null, undefined and false render nothing. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}
