#!/usr/bin/env node
// The `skewless` command: runs the compiled CLI (npm ci compiles it through the prepare script).
import { main } from '../dist/client/cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
