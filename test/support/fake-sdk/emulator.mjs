#!/usr/bin/env node
// The fake Android SDK's `emulator` command. It loads the TypeScript fake (a virtual phone as
// its guest) through tsx, so tests need no build; see fake-emulator.ts for what it does.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./fake-emulator.ts');
process.exitCode = await main(process.argv.slice(2));
