import { trusted, type SafeHtml } from './html.ts';

/** Decorative icons (hidden from screen readers: the text beside them says the same). */
const icon = (path: string): SafeHtml =>
  trusted(
    `<svg class="icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="${path}" fill="currentColor"/></svg>`,
  );

export const ICONS = {
  check: icon('M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20Zm-1.2 14.2-4.3-4.3 1.4-1.4 2.9 2.9 5.9-5.9 1.4 1.4-7.3 7.3Z'),
  cross: icon(
    'M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20Zm4.2 12.8-1.4 1.4L12 13.4l-2.8 2.8-1.4-1.4 2.8-2.8-2.8-2.8 1.4-1.4 2.8 2.8 2.8-2.8 1.4 1.4-2.8 2.8 2.8 2.8Z',
  ),
  clock: icon('M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20Zm1 10.4 3.5 2.1-1 1.7L11 13.5V6h2v6.4Z'),
  stop: icon('M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20Zm-6 9h12v2H6v-2Z'),
  hand: icon(
    'M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20Zm0 2a8 8 0 0 1 6.3 12.9L7.1 5.7A8 8 0 0 1 12 4Zm0 16a8 8 0 0 1-6.3-12.9l11.2 11.2A8 8 0 0 1 12 20Z',
  ),
  wait: icon('M12 4V1L8 5l4 4V6a6 6 0 1 1-6 6H4a8 8 0 1 0 8-8Z'),
} as const;
