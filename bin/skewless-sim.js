#!/usr/bin/env node
// The simulated cluster's command (test infrastructure): skewless-sim up|down|status|fault.
import { simMain } from '../dist/sim/cli.js';

simMain(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
