import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { parseFleetSpec, type FleetSpec } from '../rules/index.js';
import { UsageError } from './cli-support.js';

/**
 * Reads and judges a fleet file (YAML; JSON is YAML too) before Temporal is contacted: a file that
 * cannot be read or parsed, or whose content the rules refuse (rules/fleet-spec.ts), is one line, exit 2.
 */
export function readFleetFile(path: string): FleetSpec {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read fleet file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let doc: unknown;
  try {
    // uniqueKeys: a cluster listed twice under one key would silently lose one of them.
    doc = parseYaml(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (err) {
    throw new UsageError(`fleet file ${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  return parseFleetSpec(doc);
}
