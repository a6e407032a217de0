import type { Connection } from '@temporalio/client';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';

// The stack's server gets them at every start; the demo and the tests' dev servers too (a plain
// `temporal server start-dev` has none of them).
/** Registers skewless's search attributes on a reused server that lacks them (a plain `temporal server start-dev`). */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = ALL_SEARCH_ATTRIBUTES.filter((a) => customAttributes?.[a.name] === undefined);
  if (missing.length === 0) return [];
  const type = (t: string) => ({ KEYWORD: 2, TEXT: 1, INT: 3, DOUBLE: 4, BOOL: 5, DATETIME: 6, KEYWORD_LIST: 7 })[t] ?? 2;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((a) => [a.name, type(a.type)])),
  });
  return missing.map((a) => a.name);
}
