import { html, type SafeHtml } from './html.ts';
import { ICONS } from './icons.ts';
import { layout } from './layout.ts';

/** A page that says one thing: not found, refused, gone, or a fault on our side. */
export interface Message {
  /** A short line above the heading, e.g. "Page not found". */
  eyebrow?: string;
  heading: string;
  text: string;
  tone?: 'neutral' | 'failure';
  sandbox?: boolean;
  /** A way on, e.g. back to the sandbox wallet's start. */
  link?: { href: string; label: string };
}

export function messagePage(message: Message): SafeHtml {
  const tone = message.tone ?? 'neutral';
  const main = html`<section class="card message final-${tone}" aria-labelledby="message-heading">
  ${tone === 'failure' ? ICONS.cross : ICONS.stop}
  ${message.eyebrow ? html`<p class="eyebrow">${message.eyebrow}</p>` : ''}
  <h1 id="message-heading">${message.heading}</h1>
  <p>${message.text}</p>
  ${message.link ? html`<p><a class="button button-secondary" href="${message.link.href}">${message.link.label}</a></p>` : ''}
</section>`;
  return layout({ title: message.heading, main, sandbox: message.sandbox });
}

/** The friendly 404 of every /verify and /wallet address that leads nowhere. */
export function notFoundPage(): SafeHtml {
  return messagePage({
    eyebrow: 'Page not found',
    heading: 'We can’t find this verification',
    text: 'The link may be mistyped, or the code may belong to another service. Ask for a new code, or scan the QR code again.',
  });
}

/** A fault on our side: said plainly, detailed only in the log. */
export function faultPage(requestId: string): SafeHtml {
  return messagePage({
    heading: 'Something went wrong on our side',
    text: `Please try again in a moment. If it keeps happening, quote this reference: ${requestId}.`,
    tone: 'failure',
  });
}
