import { packageVersion, temporalSdkVersion, workflowBuildId } from '../../tooling/build-info.js';
import { type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, stringOptions } from '../cli-support.js';

export const versionHelp = `Usage: skewless version [--output json|text]   (also: skewless --version)

Prints what this copy of skewless is: the package version, the workflow build id (the first 12 hex
digits of the workflow bundle's SHA-256: two workers run the same workflow code exactly when their
build ids match) and the Temporal TypeScript SDK it runs on. Reads local files only.`;

export interface VersionInfo {
  version: string;
  /** null before `npm run build` wrote the workflow bundle (a checkout only; the package ships it). */
  workflowBuildId: string | null;
  temporalSdk: string;
}

export function versionInfo(): VersionInfo {
  return { version: packageVersion(), workflowBuildId: workflowBuildId() ?? null, temporalSdk: temporalSdkVersion() };
}

export async function versionCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, stringOptions('output'));
  if (helpAsked(values, versionHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const info = versionInfo();
  if (output === 'json') io.out(JSON.stringify(info));
  else
    io.out(
      [
        `skewless ${info.version}`,
        `workflow build ${info.workflowBuildId ?? '(none: run npm run build)'}`,
        `Temporal TypeScript SDK ${info.temporalSdk}`,
      ].join('\n'),
    );
  return EXIT.ok;
}
