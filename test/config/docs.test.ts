import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTING_NAMES } from '../../src/config/index.js';

// docs/configuration.md owns every setting's documentation: a table row (its first cell names one
// or more variables) for each setting the schema reads, and no row for one it does not.
const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
const documented = new Set(
  doc
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) =>
      [...(line.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] as string),
    ),
);
/** Read by the OpenTelemetry exporter itself, not by the schema. */
const OTEL = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_SERVICE_NAME'];

describe('docs/configuration.md', () => {
  it('documents every setting in a table row', () => {
    expect(SETTING_NAMES.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('documents no setting the schema does not read', () => {
    const known = new Set<string>([...SETTING_NAMES, ...OTEL]);
    expect([...documented].filter((name) => !known.has(name))).toEqual([]);
  });
});
