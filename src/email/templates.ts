// Renders the service's emails as a plain-text and an HTML part from one description.

export interface EmailContent {
  subject: string;
  /** Paragraphs of plain text, in order. */
  paragraphs: string[];
  /** The one call to action: the link carries the token, nothing else in the message does. */
  action?: { label: string; url: string };
  /** A closing line after the link (e.g. its validity). */
  footer?: string;
}

const escapeHtml = (value: string) =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

export function renderEmail(content: EmailContent): { subject: string; text: string; html: string } {
  const text = [
    ...content.paragraphs,
    ...(content.action ? [`${content.action.label}: ${content.action.url}`] : []),
    ...(content.footer ? [content.footer] : []),
  ].join('\n\n');
  const html = [
    '<!doctype html><html><body style="font-family: sans-serif; line-height: 1.5">',
    ...content.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    ...(content.action ? [`<p><a href="${escapeHtml(content.action.url)}">${escapeHtml(content.action.label)}</a></p>`] : []),
    ...(content.footer ? [`<p style="color: #666">${escapeHtml(content.footer)}</p>`] : []),
    '</body></html>',
  ].join('\n');
  return { subject: content.subject, text: `${text}\n`, html };
}
