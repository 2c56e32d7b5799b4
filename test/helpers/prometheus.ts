// A reader of the Prometheus text format (0.0.4) strict enough to fail on a malformed line.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`);
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const HELP = new RegExp(`^# HELP (${NAME}) `);

/** Parse the text; throws on any line that is not a comment, a TYPE/HELP line or a sample. */
export function parsePrometheus(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = TYPE.exec(line);
    if (type?.[1] && type[2]) {
      types.set(type[1], type[2]);
      continue;
    }
    if (HELP.test(line)) continue;
    const sample = SAMPLE.exec(line);
    if (!sample?.[1] || sample[3] === undefined)
      throw new Error(`not Prometheus text: ${JSON.stringify(line)}`);
    const value = numberOf(sample[3]);
    if (value === undefined) throw new Error(`bad value: ${JSON.stringify(line)}`);
    const base = sample[1].replace(/_(bucket|sum|count)$/, '');
    if (!types.has(sample[1]) && !types.has(base)) throw new Error(`sample without # TYPE: ${line}`);
    samples.push({ name: sample[1], labels: parseLabels(sample[2] ?? '', line), value });
  }
  return { types, samples };
}

/** Values as Prometheus reads them (Go's ParseFloat: NaN and Inf in any case). */
function numberOf(text: string): number | undefined {
  if (/^nan$/i.test(text)) return Number.NaN;
  const infinite = /^([+-]?)inf$/i.exec(text);
  if (infinite) return infinite[1] === '-' ? -Infinity : Infinity;
  const value = Number(text);
  return text.trim() === '' || Number.isNaN(value) ? undefined : value;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const match = LABEL.exec(text);
    if (!match?.[1] || match[2] === undefined || LABEL.lastIndex === start)
      throw new Error(`bad labels: ${JSON.stringify(line)}`);
    labels[match[1]] = match[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return labels;
}

/** The value of the one sample named `name` whose labels include `labels` (0 when none). */
export function sampleValue(
  exposition: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = exposition.samples.filter(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}
