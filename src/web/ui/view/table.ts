// Tables in a run's output, when a block of lines is plainly one: CSV (the same number of
// comma-separated cells on each line) or a pandas DataFrame as print() shows it (a header of
// names, then rows that begin with their index). Anything less regular stays text.

export interface Table {
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

const MAX_ROWS = 500;
const MAX_SCAN_CHARS = 200_000;

/** The tables among `text`'s blocks (runs of lines between blank lines). */
export function tablesIn(text: string): Table[] {
  if (text.length > MAX_SCAN_CHARS) return [];
  return text
    .split(/\n\s*\n/)
    .map((block) => block.split('\n').filter((line) => line.trim() !== ''))
    .filter((lines) => lines.length >= 2)
    .flatMap((lines) => {
      const table = csv(lines) ?? frame(lines);
      return table ? [table] : [];
    });
}

/** One CSV line's cells: commas split, double quotes group (and "" is one quote). */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quoted && char === '"' && line[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (char === '"') quoted = !quoted;
    else if (char === ',' && !quoted) {
      out.push(cell);
      cell = '';
    } else cell += char;
  }
  out.push(cell);
  return out;
}

function csv(lines: readonly string[]): Table | undefined {
  const rows = lines.map(cells);
  const width = rows[0]?.length ?? 0;
  if (width < 2 || rows.some((row) => row.length !== width)) return undefined;
  const [header = [], ...body] = rows;
  return { header, rows: body.slice(0, MAX_ROWS) };
}

/** pandas: `   a  b` then `0  1  4`: one more cell per row than names, the first the index. */
function frame(lines: readonly string[]): Table | undefined {
  const [first = '', ...rest] = lines;
  if (!/^\s/.test(first)) return undefined;
  const header = first.trim().split(/\s+/);
  const rows = rest.map((line) => line.trim().split(/\s+/));
  if (header.length < 1 || rows.some((row) => row.length !== header.length + 1)) return undefined;
  return { header: ['', ...header], rows: rows.slice(0, MAX_ROWS) };
}
