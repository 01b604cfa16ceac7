// Escaping for the HTML report and its inline SVG: every string that came from a results file (messages,
// wire excerpts, server names, check ids) passes through here before it is written into markup.

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or attribute value: `& < > " '` replaced, so a hostile string can open no tag and leave no attribute. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Number for a data-* attribute: full precision so a test can read the value back exactly; '' when not finite. */
export function numAttr(x: number | undefined): string {
  return typeof x === 'number' && Number.isFinite(x) ? String(x) : '';
}

/** A figure for people: 3 significant digits, thousands compact (1.2k), 'n/a' when missing. */
export function fmtNum(x: number | undefined, unit = ''): string {
  if (typeof x !== 'number' || !Number.isFinite(x)) return 'n/a';
  const a = Math.abs(x);
  let s: string;
  if (a >= 1e6) s = `${trim((x / 1e6).toPrecision(3))}M`;
  else if (a >= 1e4) s = `${trim((x / 1e3).toPrecision(3))}k`;
  else if (a >= 100 || (Number.isInteger(x) && a < 1e4)) s = x.toFixed(0);
  else if (a >= 10) s = x.toFixed(1);
  else if (a === 0) s = '0';
  else s = trim(x.toPrecision(3));
  return unit ? `${s} ${unit}` : s;
}

function trim(s: string): string {
  return s.includes('.') && !s.includes('e') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}
