// `npm run build`'s last step: dist/workflow-bundle.js, which `skewless worker` loads instead of bundling at start.
import { prebuiltBundlePath, writeWorkflowBundle } from './workflow-bundle.js';

const bytes = await writeWorkflowBundle();
console.log(`workflow bundle: ${prebuiltBundlePath} (${(bytes / 1048576).toFixed(2)} MiB)`);
