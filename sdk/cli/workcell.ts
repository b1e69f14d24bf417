#!/usr/bin/env node
// The package's `workcell` bin (dist/cli/workcell.js): the client commands of this CLI.
import { main } from "./main.ts";

process.exitCode = await main(process.argv.slice(2));
