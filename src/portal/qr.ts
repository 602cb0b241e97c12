import QRCode from 'qrcode';
import { escapeHtml, trusted, type SafeHtml } from './html.ts';

/** Largest edge of the drawn code, CSS pixels; the actual edge is a whole number of pixels per module. */
const TARGET_EDGE_PX = 300;

/**
 * The QR code of a payload as inline SVG, rendered on the server: no script, no image request,
 * and read by a screen reader as one labelled image. It is drawn at a whole number of pixels per
 * module, so every module has the same size on screen (crisp for cameras); smaller screens scale
 * it down. The quiet zone (4 modules) is part of the drawing so that scanners find the code on
 * any background.
 */
export async function qrSvg(payload: string, label: string): Promise<SafeHtml> {
  const svg = await QRCode.toString(payload, {
    type: 'svg',
    errorCorrectionLevel: 'M',
    margin: 4,
    color: { dark: '#000000', light: '#ffffff' },
  });
  const modules = Number(/viewBox="0 0 (\d+) \1"/.exec(svg)?.[1]);
  if (!svg.startsWith('<svg ') || !Number.isInteger(modules))
    throw new Error('qrcode did not produce the expected SVG');
  const edge = modules * Math.max(3, Math.floor(TARGET_EDGE_PX / modules));
  return trusted(
    svg
      .replace(
        '<svg ',
        `<svg class="qr-code" width="${edge}" height="${edge}" role="img" aria-label="${escapeHtml(label)}" focusable="false" `,
      )
      .trim(),
  );
}
