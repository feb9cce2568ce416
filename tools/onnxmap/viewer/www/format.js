// Formatting for display: byte sizes, integers, decoded values, dims, name prefixes and node
// labels. Plain functions of their arguments, returning strings; imports nothing.

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 1024-based size with one decimal: "511.3 KiB"; bytes below 1 KiB are whole: "128 B". */
export function formatBytes(bytes) {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) return '—';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

/** An integer with thousands separators ("259,392"); "—" when not a number. */
export function formatInt(n) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en-US') : '—';
}

/** A decoded tensor value or statistic: numbers to 6 significant digits, "nan"/"inf" kept,
 *  [re, im] pairs as "re+imi", strings as they are, null as "—". */
export function formatValue(v) {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v) && v.length === 2) {
    const im = formatValue(v[1]);
    return `${formatValue(v[0])}${im.startsWith('-') ? '' : '+'}${im}i`;
  }
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e9)) return v.toExponential(5).replace(/\.?0+e/, 'e');
  return String(Number(v.toPrecision(6)));
}

/** Dims as "[256, 64]" ("[]" for a scalar). */
export function formatDims(dims) {
  return `[${(dims ?? []).join(', ')}]`;
}

/** The segments of a name prefix, each ending after "." or "/": "a.b/c" -> ["a.", "b/", "c"]. */
export function splitPrefix(prefix) {
  return prefix.match(/[^./]*[./]|[^./]+$/g) ?? [];
}

/** Node name for display: the name, or "(unnamed)". */
export function nodeLabel(node) {
  return node.name || `(unnamed ${node.op_type || 'node'})`;
}

/** A tensor's name as shown: "(no name)" for a tensor without one (a Constant's in a subgraph). */
export function tensorName(name) {
  return name || '(no name)';
}
