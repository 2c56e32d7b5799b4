import { describe, expect, it } from 'vitest';
import { type ScriptMetadata, searchScripts } from '../../src/library/index.js';

const script = (
  name: string,
  description: string,
  tags: string[],
  language: ScriptMetadata['language'] = 'python',
) =>
  ({
    script_id: `script_${name}`,
    name,
    description,
    language,
    tags,
    packages: [],
    created_at: '',
    updated_at: '',
    last_run_at: null,
    run_count: 0,
    last_run_success: null,
    source_execution_id: null,
    version: 1,
  }) satisfies ScriptMetadata;

const library = [
  script('clean-csv-data', 'Removes empty rows from CSV exports', ['csv', 'cleaning'], 'node'),
  script('excel-to-pdf', 'Converts spreadsheets to PDF', ['excel', 'pdf']),
  script(
    'parse-excel-report',
    'Parses monthly Excel reports from finance, extracts summary rows, outputs CSV',
    ['excel', 'finance', 'parsing'],
  ),
  script('backup-db', 'Dumps the database to a file', ['backup'], 'bash'),
];

describe('searchScripts', () => {
  it('ranks the seed example first for "excel parsing"', () => {
    const hits = searchScripts(library, 'excel parsing');
    expect(hits.map((h) => h.metadata.name)).toEqual(['parse-excel-report', 'excel-to-pdf']);
    expect(hits[0]?.relevance).toBe('name_match');
    expect(hits[0]?.matched).toEqual(['name_match', 'tag_match', 'description_match']);
  });

  it('matches descriptions and word forms, and returns nothing for unrelated words', () => {
    expect(searchScripts(library, 'database dump')[0]?.metadata.name).toBe('backup-db');
    expect(searchScripts(library, 'cleaning csv')[0]?.metadata.name).toBe('clean-csv-data');
    expect(searchScripts(library, 'kubernetes')).toEqual([]);
    expect(searchScripts(library, '  !!  ')).toEqual([]);
  });
});
