// `npm run build`'s last step: dist/workflow-bundle.js, which `skewless worker` loads instead of bundling at start.
// `--if-stale` (the test tiers' quick build): keep a bundle no compiled workflow is newer than.
import { prebuiltBundle, prebuiltBundlePath, writeWorkflowBundle } from './workflow-bundle.js';

if (process.argv.includes('--if-stale') && prebuiltBundle()) {
  console.log(`workflow bundle: ${prebuiltBundlePath} is up to date`);
} else {
  const bytes = await writeWorkflowBundle();
  console.log(`workflow bundle: ${prebuiltBundlePath} (${(bytes / 1048576).toFixed(2)} MiB)`);
}
